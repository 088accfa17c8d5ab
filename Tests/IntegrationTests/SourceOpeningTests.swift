import Foundation
import Playout
import PlayoutSender
import PlayoutTesting
import RealTimeTesting
import Testing

/// Opening a source honours the run's bounds (issue 14, items 1, 2 and 9), on the built binary.
@Suite("playout subscribe: opening a source", .realTime)
struct SourceOpeningTests {
    static func temporaryPath(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("playout-\(UInt32.random(in: 0...UInt32.max))-\(name)").path
    }

    /// One H.264 track on free loopback ports (the subscriber binds it and its RTCP).
    static func sdp() throws -> String {
        """
        v=0
        o=- 0 0 IN IP4 127.0.0.1
        s=test
        c=IN IP4 127.0.0.1
        t=0 0
        m=video \(try SocketAddress.freeLoopbackPorts(count: 2).lowerBound) RTP/AVP 96
        a=rtpmap:96 H264/90000

        """
    }

    @Test("a FIFO with no writer ends at --duration with one line, not a hang")
    func fifoWithoutWriter() throws {
        let path = Self.temporaryPath("fifo.sdp")
        #expect(mkfifo(path, 0o600) == 0)
        defer { unlink(path) }
        let started = ContinuousClock.now
        let result = try runPlayout(["subscribe", path, "--duration", "1s"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("no complete SDP before the end of the run"), "\(result.stderr)")
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    @Test("a FIFO whose writer holds it open after v=0 ends at --duration too")
    func fifoHeldOpen() throws {
        let path = Self.temporaryPath("held.sdp")
        #expect(mkfifo(path, 0o600) == 0)
        defer { unlink(path) }
        // The writer: a shell that writes v=0 and keeps the FIFO open for 20 s.
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/bin/sh")
        writer.arguments = ["-c", "exec 3>'\(path)'; printf 'v=0\\n' >&3; sleep 20"]
        try writer.run()
        defer { writer.terminate() }
        let result = try runPlayout(["subscribe", path, "--duration", "1s"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("(4 bytes read)"), "\(result.stderr)")
    }

    @Test("an SDP from a FIFO whose writer closes it plays as from a file")
    func fifoWithSDP() throws {
        let path = Self.temporaryPath("ok.sdp")
        #expect(mkfifo(path, 0o600) == 0)
        defer { unlink(path) }
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/bin/sh")
        writer.arguments = ["-c", "printf '%s' '\(try Self.sdp())' > '\(path)'"]
        try writer.run()
        let result = try runPlayout(["subscribe", path, "--duration", "1s", "--json"])
        writer.waitUntilExit()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("\"type\":\"summary\""))
    }

    @Test("Ctrl-C while a FIFO has no writer ends the process (no hang)")
    func fifoInterrupted() throws {
        let path = Self.temporaryPath("interrupted.sdp")
        #expect(mkfifo(path, 0o600) == 0)
        defer { unlink(path) }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let process = Process()
        process.executableURL = root.appendingPathComponent(".build/debug/playout")
        process.arguments = ["subscribe", path]
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Whenever the signal lands — before or while the FIFO is waited on — the process ends.
        process.interrupt()
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal || process.terminationStatus != 0)
    }

    @Test("an SDP whose sections clash on ports says so", arguments: [
        ("m=video 47660 RTP/AVP 96\na=rtpmap:96 H264/90000\nm=audio 47660 RTP/AVP 97\na=rtpmap:97 opus/48000/2\n", "both on port 47660"),
        ("m=video 47660 RTP/AVP 96\na=rtpmap:96 H264/90000\nm=audio 47661 RTP/AVP 97\na=rtpmap:97 opus/48000/2\n", "audio on port 47661, which video uses for RTCP"),
    ])
    func portClash(media: String, expected: String) throws {
        let path = Self.temporaryPath("clash.sdp")
        let text = "v=0\no=- 0 0 IN IP4 127.0.0.1\ns=t\nc=IN IP4 127.0.0.1\nt=0 0\n" + media
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8)))
        defer { unlink(path) }
        let result = try runPlayout(["subscribe", path, "--duration", "1s"])
        #expect(result.status == 1)
        #expect(result.stderr.contains(expected), "\(result.stderr)")
        #expect(!result.stderr.contains("stop the program"), "not reported as a port in use")
    }

    @Test("a 1 GB file that starts with v= is refused with the size limit, without reading it whole")
    func hugeSDP() throws {
        let path = Self.temporaryPath("huge.sdp")
        #expect(FileManager.default.createFile(atPath: path, contents: Data("v=0\n".utf8)))
        defer { unlink(path) }
        #expect(truncate(path, 1 << 30) == 0)  // sparse
        let started = ContinuousClock.now
        let result = try runPlayout(["subscribe", path, "--duration", "1s"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("SDP is 1073741824 bytes: at most 65536 bytes are accepted"), "\(result.stderr)")
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    @Test("an --override above the cap is refused at start, as --playout-delay is")
    func overrideAboveCap() throws {
        let path = Self.temporaryPath("cap.sdp")
        #expect(FileManager.default.createFile(atPath: path, contents: Data(try Self.sdp().utf8)))
        defer { unlink(path) }
        let result = try runPlayout(["subscribe", path, "--override", "40s@1s", "--duration", "2s"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("at most 30s"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
    }
}

/// A sink whose file cannot be written ends the run (issue 14, item 5), on the built binary.
@Suite("playout subscribe: a sink that fails", .realTime)
struct FailedSinkTests {
    @Test("a full disk (.y4m, .wav, .mp4 on /dev/full): one line, exit 1, no frame counted as rendered", arguments: ["y4m", "wav", "mp4"])
    func fullDisk(format: String) throws {
        let clip = FFmpeg.temporaryFile("clip.mkv")
        let sink = FFmpeg.temporaryFile("full.\(format)")
        defer {
            try? FileManager.default.removeItem(at: clip)
            try? FileManager.default.removeItem(at: sink)
        }
        _ = try FFmpeg.run([
            "-f", "lavfi", "-i", "testsrc=size=320x240:rate=30:duration=1", "-f", "lavfi", "-i", "sine=duration=1",
            "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "libopus", "-y", clip.path,
        ])
        try FileManager.default.createSymbolicLink(atPath: sink.path, withDestinationPath: "/dev/full")
        let result = try runPlayout(["subscribe", clip.path, "--sink", "file:\(sink.path)", "--json"])
        #expect(result.status == 1)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines.first?.contains("No space left on device") == true, "\(result.stderr)")
        let summary = try #require(result.stdout.split(separator: "\n").last.flatMap { jsonObject(String($0)) })
        #expect(summary["state"] as? String == "failed")
        let kind = format == "wav" ? "audio" : "video"
        #expect((summary[kind] as? [String: Any])?["framesRendered"] as? Int == 0, "\(summary)")
    }
}

/// The JSON stream's `"event"` objects (issue 14, item 9).
@Suite("playout subscribe: JSON events", .realTime)
struct JSONEventTests {
    @Test("overrideApplied and overrideReleased carry playoutDelay as a number of seconds, as qos objects do")
    func playoutDelayIsANumber() throws {
        let clip = FFmpeg.temporaryFile("clip.mkv")
        defer { try? FileManager.default.removeItem(at: clip) }
        _ = try FFmpeg.run(["-f", "lavfi", "-i", "testsrc=size=160x120:rate=30:duration=1.5", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-y", clip.path])
        let result = try runPlayout(["subscribe", clip.path, "--override", "500ms@300ms/400ms", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let events = result.stdout.split(separator: "\n")
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .filter { $0["type"] as? String == "event" }
        let applied = try #require(events.first { $0["name"] as? String == "overrideApplied" }, "\(result.stdout)")
        let released = try #require(events.first { $0["name"] as? String == "overrideReleased" }, "\(result.stdout)")
        #expect(applied["playoutDelay"] as? Double == 0.5)
        #expect(released["playoutDelay"] as? Double == 0.23)
        #expect(result.stdout.contains("\"playoutDelay\":0.5"), "a JSON number, not a string")
    }
}
