import Foundation
import Playout
import PlayoutRTP
import PlayoutSender
import PlayoutTesting
import RealTimeTesting
import Testing

/// The built binary under the signals and closed standard streams a service manager, `timeout` or
/// a careless shell gives it (issue 26, items 5, 6 and 8).
@Suite("playout binary: signals and closed standard streams", .realTime, .serialized)
struct CLISignalTests {
    static let binary = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent(".build/debug/playout").path

    /// A running `playout` whose stdout is collected as it comes.
    final class Running: @unchecked Sendable {
        let process = Process()
        private let lock = NSLock()
        private var out = Data()
        private var err = Data()

        init(_ arguments: [String]) throws {
            process.executableURL = URL(fileURLWithPath: CLISignalTests.binary)
            process.arguments = arguments
            let stdout = Pipe()
            let stderr = Pipe()
            process.standardOutput = stdout
            process.standardError = stderr
            stdout.fileHandleForReading.readabilityHandler = { [self] handle in
                let data = handle.availableData
                lock.withLock { out.append(data) }
            }
            stderr.fileHandleForReading.readabilityHandler = { [self] handle in
                let data = handle.availableData
                lock.withLock { err.append(data) }
            }
            try process.run()
        }

        var stdout: String { lock.withLock { String(decoding: out, as: UTF8.self) } }
        var stderr: String { lock.withLock { String(decoding: err, as: UTF8.self) } }

        /// Waits (bounded) until stdout holds `text`.
        func waitFor(_ text: String, within limit: Duration = .seconds(20)) -> Bool {
            let end = ContinuousClock.now + limit
            while ContinuousClock.now < end, process.isRunning {
                if stdout.contains(text) { return true }
                Thread.sleep(forTimeInterval: 0.02)
            }
            return stdout.contains(text)
        }

        /// Waits (bounded) for the end; false when it is still running.
        func waitForExit(within limit: Duration) -> Bool {
            let end = ContinuousClock.now + limit
            while process.isRunning, ContinuousClock.now < end { Thread.sleep(forTimeInterval: 0.02) }
            if process.isRunning { return false }
            Thread.sleep(forTimeInterval: 0.1)  // the last bytes of the pipes
            return true
        }
    }

    @Test("SIGTERM and SIGHUP end a run as Ctrl-C does: summary, ended and viewend, telemetry drained, the .mp4 sink readable", arguments: [SIGTERM, SIGHUP, SIGINT])
    func endsCleanly(signal number: Int32) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("playout-signal-\(getpid())-\(number)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let movie = directory.appendingPathComponent("out.mp4").path
        let events = directory.appendingPathComponent("events.jsonl").path
        let port = try Publisher.freeLoopbackDestination().port
        let run = try Running([
            "demo", "--port", "\(port)", "--duration", "60s", "--size", "320x240", "--json", "--sink", "file:\(movie)", "--telemetry", "jsonl:\(events)",
        ])
        #expect(run.waitFor("\"type\":\"qos\""), "no QoS line: \(run.stderr)")
        kill(run.process.processIdentifier, number)
        #expect(run.waitForExit(within: .seconds(15)))
        #expect(run.process.terminationStatus == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n")
        #expect(lines.last?.contains("\"type\":\"summary\"") == true, "\(lines.suffix(2))")
        #expect(lines.contains { $0.contains("\"type\":\"event\"") && $0.contains("\"state\":\"ended\"") }, "the JSON Lines say the run ended")
        let recorded = (try? String(contentsOfFile: events, encoding: .utf8)) ?? ""
        #expect(recorded.contains("\"viewend\""), "telemetry shut down with viewend")
        let probe = try runProgram("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", movie])
        #expect(probe.status == 0 && String(decoding: probe.stdout, as: UTF8.self).contains("h264"), "ffprobe: \(probe.stderr)")
    }

    @Test("a second signal ends the run at once, also while an unreachable telemetry backend holds the exit")
    func secondSignal() throws {
        let port = try Publisher.freeLoopbackDestination().port
        let run = try Running([
            "demo", "--port", "\(port)", "--duration", "60s", "--size", "320x240", "--json",
            "--telemetry", "graphite:127.0.0.1:\(ScriptedTCPServer.unusedPort())",
        ])
        #expect(run.waitFor("\"type\":\"qos\""), "no QoS line: \(run.stderr)")
        kill(run.process.processIdentifier, SIGTERM)
        Thread.sleep(forTimeInterval: 0.3)
        let start = ContinuousClock.now
        kill(run.process.processIdentifier, SIGTERM)
        #expect(run.waitForExit(within: .seconds(3)))
        #expect(ContinuousClock.now - start < .seconds(2))
        #expect([0, 128 + SIGTERM].contains(run.process.terminationStatus), "\(run.process.terminationStatus): \(run.stderr)")
    }

    @Test("playout publish survives hostile RTCP: a TMMBR with exponent 63 (it trapped, exit 132), REMB 0 raised to the 100 kbit/s floor, a stranger's NACKs refused; text and --json show the target and the counts", arguments: [false, true])
    func publishHostileRTCP(json: Bool) throws {
        let port = try Publisher.freeLoopbackDestination().port
        let receiver = try UDPReceiver(bindingTo: try SocketAddress(host: "127.0.0.1", port: port + 1))  // the stream's RTCP destination
        let run = try Running(["publish", "testsrc", "--to", "127.0.0.1:\(port)", "--duration", "3s", "--size", "320x240", "--no-audio"] + (json ? ["--json"] : []))
        // The publisher's control port and the video SSRC, from its first sender report.
        var control: SocketAddress?
        var ssrc: UInt32 = 0
        let end = ContinuousClock.now + .seconds(5)
        while control == nil, ContinuousClock.now < end {
            _ = try receiver.receive(timeout: .milliseconds(100)) { datagram in
                guard datagram.bytes.count >= 8, datagram.bytes[1] == 200 else { return }
                control = datagram.source
                ssrc = datagram.bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self).bigEndian
            }
        }
        let destination = try #require(control, "no sender report: \(run.stderr)")
        // TMMBR (RFC 5104 §4.2.1): exponent 63, mantissa 0x1FFFF, about the video stream.
        let word: UInt32 = 63 << 26 | 0x1_FFFF << 9 | 40
        var tmmbr: [UInt8] = [0x83, 205, 0, 4, 0, 0, 0, 9, 0, 0, 0, 0]
        tmmbr += [UInt8(ssrc >> 24), UInt8(ssrc >> 16 & 0xFF), UInt8(ssrc >> 8 & 0xFF), UInt8(ssrc & 0xFF)]
        tmmbr += [UInt8(word >> 24), UInt8(word >> 16 & 0xFF), UInt8(word >> 8 & 0xFF), UInt8(word & 0xFF)]
        try tmmbr.withUnsafeBytes { try receiver.send($0, to: destination) }
        let remb = RTCPPacket.serializeCompound([.feedback(RTCPFeedback(senderSSRC: 9, mediaSSRC: 0, message: .receiverEstimatedMaximumBitrate(bitrate: 0, ssrcs: [ssrc])))])
        try remb.withUnsafeBytes { try receiver.send($0, to: destination) }
        let stranger = try UDPSender(to: destination)
        let nack = RTCPPacket.serializeCompound([.feedback(RTCPFeedback(senderSSRC: 9, mediaSSRC: ssrc, message: .nack((0..<1_024).map { UInt16($0) })))])
        for _ in 0..<20 { try stranger.send(nack) }
        #expect(run.waitForExit(within: .seconds(10)))
        #expect(run.process.terminationStatus == 0, "\(run.process.terminationStatus): \(run.stderr)")
        if json {
            let object = try #require(jsonObject(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "\(run.stdout)")
            let rtcp = try #require(object["rtcp"] as? [String: Any])
            #expect((rtcp["refused"] as? Int ?? 0) >= 20 && (rtcp["accepted"] as? Int ?? 0) >= 2, "\(rtcp)")
            let video = try #require(object["video"] as? [String: Any])
            #expect(video["targetBitrate"] as? Int == 80_000, "80 % of the 100 kbit/s floor: \(video)")
            let feedback = try #require(video["feedback"] as? [String: Any])
            #expect(feedback["bitrateRequestsClamped"] as? Int == 1 && feedback["tmmbrReceived"] as? Int == 1 && feedback["nacksReceived"] as? Int == 0, "\(feedback)")
        } else {
            let line = try #require(run.stdout.split(separator: "\n").first { $0.hasPrefix("feedback: ") }, "\(run.stdout)")
            #expect(line.contains("refused (not from the destination)") && line.contains("video target 80000 bit/s (receiver's limit 100000 bit/s)"), "\(line)")
        }
    }

    @Test("with stdout closed (>&-) the JSON Lines do not land in the sink file: it starts as a Y4M file", arguments: ["1", "0", "2"])
    func closedStandardStreams(descriptor: String) throws {
        let sink = FileManager.default.temporaryDirectory.appendingPathComponent("playout-closed-\(getpid())-\(descriptor).y4m").path
        defer { try? FileManager.default.removeItem(atPath: sink) }
        let port = try Publisher.freeLoopbackDestination().port
        let result = try runProgram("/bin/sh", [
            "-c", "exec \"$0\" \"$@\" \(descriptor)>&-", Self.binary,
            "demo", "--port", "\(port)", "--duration", "2s", "--size", "320x240", "--json", "--sink", "file:\(sink)",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let head = try #require(FileManager.default.contents(atPath: sink)).prefix(10)
        #expect(String(decoding: head, as: UTF8.self).hasPrefix("YUV4MPEG2"), "the sink starts with \(String(decoding: head, as: UTF8.self))")
    }
}
