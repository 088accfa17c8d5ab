import Foundation
import Playout
import PlayoutSender
import PlayoutTesting
import RealTimeTesting
import Testing

/// A `playout` process whose stdout is read line by line while it runs.
final class RunningPlayout {
    let process = Process()
    private let out = Pipe()
    private let err = Pipe()
    private var buffered = Data()
    private(set) var lines: [String] = []

    init(_ arguments: [String]) throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        process.executableURL = root.appendingPathComponent(".build/debug/playout")
        process.arguments = arguments
        process.standardOutput = out
        process.standardError = err
        try process.run()
    }

    /// Reads stdout until a line contains `text` — after a line containing `after`, when given —
    /// or the process ends, or `timeout` passes.
    func waitForLine(containing text: String, after: String? = nil, timeout: Duration = .seconds(20)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        func found() -> Bool {
            let start = after.map { marker in lines.firstIndex { $0.contains(marker) }.map { $0 + 1 } ?? lines.count } ?? 0
            return lines[start...].contains { $0.contains(text) }
        }
        while ContinuousClock.now < deadline {
            if found() { return true }
            let data = out.fileHandleForReading.availableData
            if data.isEmpty { return found() }  // EOF
            buffered.append(data)
            while let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                lines.append(String(decoding: buffered[buffered.startIndex..<newline], as: UTF8.self))
                buffered.removeSubrange(buffered.startIndex...newline)
            }
        }
        return false
    }

    /// Waits for the end; returns the exit status, all stdout lines and stderr.
    func finish() -> (status: Int32, lines: [String], stderr: String) {
        let rest = out.fileHandleForReading.readDataToEndOfFile()
        buffered.append(rest)
        lines += String(decoding: buffered, as: UTF8.self).split(separator: "\n").map(String.init)
        buffered.removeAll()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, lines, stderr)
    }
}

/// The JSON object of a line.
func jsonObject(_ line: String) -> [String: Any]? {
    (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
}

@Suite("playout subscribe against a real ffmpeg sender", .realTime(weight: 2))
struct SubscribeTests {
    static let key = "WbTBosdVUZqEb6Htqhn+m3z7wJJmc7ILrl2xLG4I"  // 30 bytes: master key + salt

    /// A 720p30 H.264 + Opus clip of `seconds`, and an SDP for sending it with SRTP to `port`.
    static func clipAndSDP(seconds: Int, port: Int) throws -> (clip: URL, sdp: URL, videoFrames: Int) {
        let clip = FFmpeg.temporaryFile("subscribe-\(seconds)s.mkv")
        if !FileManager.default.fileExists(atPath: clip.path) {
            _ = try FFmpeg.run([
                "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30:duration=\(seconds)",
                "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=\(seconds)",
                "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-g", "30", "-bf", "0", "-pix_fmt", "yuv420p",
                "-c:a", "libopus", "-b:a", "64k", clip.path,
            ])
        }
        // ffmpeg writes the SDP as it opens its outputs: a fifth of a second sent to the
        // discard port gives the SDP (parameter sets, key) the real send will use, before the
        // subscriber starts.
        let sdp = FFmpeg.temporaryFile("subscribe-\(port).sdp")
        _ = try FFmpeg.run(senderArguments(clip: clip, port: 9, sdp: sdp, realTime: false, limit: ["-t", "0.2"]))
        let text = try String(contentsOf: sdp, encoding: .utf8)
            .replacingOccurrences(of: "m=video 9 ", with: "m=video \(port) ")
            .replacingOccurrences(of: "m=audio 11 ", with: "m=audio \(port + 2) ")
        try text.write(to: sdp, atomically: true, encoding: .utf8)
        return (clip, sdp, seconds * 30)
    }

    /// ffmpeg sending `clip` over SRTP: video to `port`, audio to `port + 2`; `limit` goes
    /// before each output (output options apply to the next output only).
    static func senderArguments(clip: URL, port: Int, sdp: URL, realTime: Bool, limit: [String] = []) -> [String] {
        (realTime ? ["-re"] : []) + ["-i", clip.path] + limit + [
            "-map", "0:v", "-c", "copy", "-f", "rtp", "-srtp_out_suite", "AES_CM_128_HMAC_SHA1_80", "-srtp_out_params", key,
            "srtp://127.0.0.1:\(port)",
        ] + limit + [
            "-map", "0:a", "-c", "copy", "-f", "rtp", "-srtp_out_suite", "AES_CM_128_HMAC_SHA1_80", "-srtp_out_params", key,
            "srtp://127.0.0.1:\(port + 2)", "-sdp_file", sdp.path,
        ]
    }

    @Test("renders ≥ 98 % of the frames ffmpeg sends over SRTP (H.264 720p30 + Opus), with the default delay")
    func rendersWhatFFmpegSends() throws {
        let port = Int(try SocketAddress.freeLoopbackPorts(count: 4).lowerBound)  // video, audio and their RTCP
        let (clip, sdp, videoFrames) = try Self.clipAndSDP(seconds: 6, port: port)
        let subscriber = try RunningPlayout(["subscribe", sdp.path, "--json", "--duration", "8s"])
        #expect(subscriber.waitForLine(containing: "\"buffering\""), "the subscriber binds its ports")
        let sender = try FFmpeg.start(Self.senderArguments(clip: clip, port: port, sdp: FFmpeg.temporaryFile("sent-\(port).sdp"), realTime: true), captureOutput: true)
        try FFmpeg.finish(sender, arguments: [], deadline: .now + .seconds(30))
        let result = subscriber.finish()
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try #require(result.lines.last.flatMap(jsonObject))
        #expect(summary["type"] as? String == "summary")
        let video = try #require(summary["video"] as? [String: Any])
        let audio = try #require(summary["audio"] as? [String: Any])
        let rendered = try #require(video["framesRendered"] as? Int)
        #expect(Double(rendered) >= 0.98 * Double(videoFrames), "rendered \(rendered) of \(videoFrames) video frames")
        #expect(video["frameWidth"] as? Int == 1280)
        // Every rendered frame decoded; a decoded frame not rendered came too late for its render
        // time (beside a build on both cores: 180 decoded, 179 rendered) and is counted dropped.
        let decoded = video["framesDecoded"] as? Int ?? -1
        let dropped = video["framesDropped"] as? Int ?? 0
        #expect(decoded >= rendered && decoded - rendered <= dropped, "\(decoded) decoded, \(rendered) rendered, \(dropped) dropped")
        #expect(video["authFailures"] as? Int == 0)
        let audioRendered = try #require(audio["framesRendered"] as? Int)
        #expect(Double(audioRendered) >= 0.98 * 6 * 50, "rendered \(audioRendered) of 300 Opus frames")
        // Every qos line carries the contract's fields.
        let samples = result.lines.compactMap(jsonObject).filter { $0["type"] as? String == "qos" }
        #expect(samples.count >= 6)
        for sample in samples {
            #expect(sample["playoutDelay"] as? Double == 0.23)
            #expect(sample["playoutDelaySource"] as? String == "configured")
            #expect(sample["total"] is [String: Any])
        }
        let renderError = try #require(summary["renderError"] as? [String: Any])
        #expect((renderError["p50"] as? Double ?? 1) < 0.0334, "the median frame is presented within a frame interval")
    }

    @Test("a sender that stops and comes back with a new SSRC and sequence base is played again")
    func senderComesBack() throws {
        let port = Int(try SocketAddress.freeLoopbackPorts(count: 4).lowerBound)  // video, audio and their RTCP
        let (clip, sdp, videoFrames) = try Self.clipAndSDP(seconds: 3, port: port)
        let subscriber = try RunningPlayout(["subscribe", sdp.path, "--json", "--duration", "11s"])
        #expect(subscriber.waitForLine(containing: "\"buffering\""), "the subscriber binds its ports")
        // Each ffmpeg run picks a random SSRC and sequence base: the second is a new stream.
        let send = Self.senderArguments(clip: clip, port: port, sdp: FFmpeg.temporaryFile("again-\(port).sdp"), realTime: true)
        try FFmpeg.finish(try FFmpeg.start(send, captureOutput: true), arguments: [], deadline: .now + .seconds(30))
        #expect(subscriber.waitForLine(containing: "\"stalled\"", after: "\"playing\"", timeout: .seconds(5)), "nothing to render once the buffer drained")
        try FFmpeg.finish(try FFmpeg.start(send, captureOutput: true), arguments: [], deadline: .now + .seconds(30))
        let result = subscriber.finish()
        #expect(result.status == 0, "\(result.stderr)")
        let states = result.lines.compactMap(jsonObject).filter { $0["name"] as? String == "stateChanged" }.compactMap { $0["state"] as? String }
        let stall = try #require(states.firstIndex(of: "stalled"), "\(states)")
        #expect(states[stall...].contains("playing"), "plays again: \(states)")
        // Each track moved to the new SSRC after the old one's silence: one event each.
        let switches = result.lines.compactMap(jsonObject).filter { $0["name"] as? String == "sourceSwitch" }
        #expect(Set(switches.compactMap { $0["track"] as? String }) == ["video", "audio"], "\(switches)")
        #expect(switches.allSatisfy { ($0["fromSSRC"] as? Int) != ($0["toSSRC"] as? Int) })
        let summary = try #require(result.lines.last.flatMap(jsonObject))
        let video = try #require(summary["video"] as? [String: Any])
        let rendered = video["framesRendered"] as? Int ?? 0
        #expect(Double(rendered) >= 0.9 * Double(2 * videoFrames), "frames of both sends rendered: \(rendered) of \(2 * videoFrames)")
        #expect(video["authFailures"] as? Int == 0, "the same key, a new SRTP stream")
    }

    @Test("a wrong SRTP key fails the subscription with one line on stderr and a non-zero exit")
    func wrongKey() throws {
        let port = Int(try SocketAddress.freeLoopbackPorts(count: 4).lowerBound)  // video, audio and their RTCP
        let (clip, sdp, _) = try Self.clipAndSDP(seconds: 6, port: port)
        let wrong = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
        let subscriber = try RunningPlayout(["subscribe", sdp.path, "--json", "--duration", "8s", "--srtp-key", wrong])
        #expect(subscriber.waitForLine(containing: "\"buffering\""))
        let sender = try FFmpeg.start(Self.senderArguments(clip: clip, port: port, sdp: FFmpeg.temporaryFile("sent-\(port).sdp"), realTime: true), captureOutput: true)
        defer { sender.terminate() }
        let result = subscriber.finish()
        #expect(result.status != 0)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("wrong key"), "\(result.stderr)")
        #expect(result.lines.contains { $0.contains("\"failed\"") })
    }
}
