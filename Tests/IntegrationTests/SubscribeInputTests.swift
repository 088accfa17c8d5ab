import Foundation
import Playout
import PlayoutSender
import PlayoutTesting
import RealTimeTesting
import Testing

/// `playout subscribe` on libavformat inputs: a file played in real time, and a live URL whose
/// sender stops and comes back.
@Suite("playout subscribe on files and URLs", .realTime, .serialized)
struct SubscribeInputTests {
    /// The pictures' hashes of a video, as `ffmpeg -f framemd5` prints them (hash column only).
    static func pictureHashes(_ file: URL) throws -> [String] {
        let output = try FFmpeg.run(["-v", "error", "-i", file.path, "-map", "0:v", "-f", "framemd5", "-"])
        return String(decoding: output, as: UTF8.self).split(separator: "\n")
            .filter { !$0.hasPrefix("#") }
            .compactMap { $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) } }
    }

    @Test("an MKV with B-frames plays in real time: every picture reaches the .y4m sink exactly as ffmpeg decodes it")
    func fileWithBFrames() throws {
        let clip = FFmpeg.temporaryFile("bframes-2s.mkv")
        _ = try FFmpeg.run([
            "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30:duration=2",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=2",
            "-c:v", "libx264", "-g", "30", "-bf", "2", "-pix_fmt", "yuv420p", "-c:a", "libopus", clip.path,
        ])
        let output = FFmpeg.temporaryFile("bframes-out.y4m")
        let started = ContinuousClock.now
        let result = try runPlayout(["subscribe", clip.path, "--json", "--sink", "file:\(output.path)"])
        let elapsed = ContinuousClock.now - started
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try #require(result.stdout.split(separator: "\n").last.flatMap { jsonObject(String($0)) })
        let video = try #require(summary["video"] as? [String: Any])
        let audio = try #require(summary["audio"] as? [String: Any])
        // Failing, the whole summary says where a frame went (late, skipped, not decoded) and when.
        #expect(video["framesRendered"] as? Int == 60, "\(result.stdout)")
        #expect(video["framesSkipped"] as? Int == 0)
        #expect(audio["framesSkipped"] as? Int == 0)
        #expect(try Self.pictureHashes(output) == Self.pictureHashes(clip), "the sink holds the source's pictures, in order")
        #expect(elapsed > .seconds(2), "played in real time, not as fast as possible")
    }

    @Test("an MP4 (H.264 avcC with B-frames + AAC) remuxed by --sink file:out.mkv: the same packets, the same pictures in presentation order, no re-encode")
    func remuxesFile() throws {
        let clip = FFmpeg.temporaryFile("remux-2s.mp4")
        let output = FFmpeg.temporaryFile("remux-out.mkv")
        defer {
            try? FileManager.default.removeItem(at: clip)
            try? FileManager.default.removeItem(at: output)
        }
        _ = try FFmpeg.run([
            "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=2",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=2",
            "-c:v", "libx264", "-g", "30", "-bf", "2", "-pix_fmt", "yuv420p", "-c:a", "aac", clip.path,
        ])
        let result = try runPlayout(["subscribe", clip.path, "--json", "--sink", "file:\(output.path)"])
        #expect(result.status == 0, "\(result.stderr)")
        func packets(_ file: URL, _ stream: String) throws -> String {
            try FFmpeg.probe(["-v", "error", "-count_packets", "-select_streams", stream, "-show_entries", "stream=codec_name,nb_read_packets", "-of", "csv=p=0", file.path])
        }
        #expect(try packets(output, "v:0") == "h264,60")
        #expect(try packets(output, "a:0") == (try packets(clip, "a:0")))
        #expect(try FFmpeg.decodingErrors(of: output) == "")
        #expect(try Self.pictureHashes(output) == Self.pictureHashes(clip), "the source's pictures, in order")
        // B-frames keep their composition offsets: decoded pictures come out with rising
        // timestamps, one frame interval (33 ms at 30 fps, ± a render-time jitter) apart.
        let times = try FFmpeg.probe(["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time", "-of", "csv=p=0", output.path])
            .split(separator: "\n").compactMap { line in line.split(separator: ",").first.flatMap { Double($0) } }
        #expect(times.count == 60)
        let steps = zip(times, times.dropFirst()).map { $1 - $0 }
        #expect(steps.allSatisfy { $0 > 0.020 && $0 < 0.047 }, "presentation steps: \(steps)")
    }

    @Test("a live UDP MPEG-TS source that stops is reopened with backoff and plays again when the sender comes back")
    func reopensLiveSource() throws {
        let clip = FFmpeg.temporaryFile("reopen-2s.mkv")
        _ = try FFmpeg.run([
            "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=2",
            "-c:v", "libx264", "-g", "15", "-bf", "0", "-pix_fmt", "yuv420p", clip.path,
        ])
        let url = "udp://127.0.0.1:\(try SocketAddress.freeLoopbackPorts(count: 1).lowerBound)"
        let send = ["-re", "-i", clip.path, "-c", "copy", "-f", "mpegts", "\(url)?pkt_size=1316"]
        let first = try FFmpeg.start(send, captureOutput: true)
        let subscriber = try RunningPlayout(["subscribe", url, "--json", "--duration", "9s"])
        try FFmpeg.finish(first, arguments: send, deadline: .now + .seconds(20))
        #expect(subscriber.waitForLine(containing: "\"connecting\"", after: "\"playing\"", timeout: .seconds(8)), "the ended source is being reopened")
        let second = try FFmpeg.start(send, captureOutput: true)
        try FFmpeg.finish(second, arguments: send, deadline: .now + .seconds(20))
        let result = subscriber.finish()
        #expect(result.status == 0, "\(result.stderr)")
        let states = result.lines.compactMap(jsonObject).filter { $0["name"] as? String == "stateChanged" }.compactMap { $0["state"] as? String }
        let firstPlay = try #require(states.firstIndex(of: "playing"))
        let reconnect = try #require(states[firstPlay...].firstIndex(of: "connecting"))
        #expect(states[reconnect...].contains("playing"), "plays again after the reopen: \(states)")
        let summary = try #require(result.lines.last.flatMap(jsonObject))
        let video = try #require(summary["video"] as? [String: Any])
        #expect((video["framesRendered"] as? Int ?? 0) > 60, "frames of both sends rendered")
        #expect((video["framesReceived"] as? Int ?? 0) > 60)
    }

    @Test("rtp:// and srtp:// URLs (MPEG-TS over RTP, as ffmpeg -f rtp_mpegts sends it) play through libavformat", arguments: [false, true])
    func rtpURLs(encrypted: Bool) throws {
        let clip = FFmpeg.temporaryFile("rtp-url-3s.mkv")
        _ = try FFmpeg.run([
            "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=3",
            "-c:v", "libx264", "-g", "15", "-bf", "0", "-pix_fmt", "yuv420p", clip.path,
        ])
        let port = try SocketAddress.freeLoopbackPorts(count: 2).lowerBound  // RTP and RTCP
        let key = "WbTBosdVUZqEb6Htqhn+m3z7wUh4RJVR8nE15GbN"
        let scheme = encrypted ? "srtp" : "rtp"
        let url = "\(scheme)://127.0.0.1:\(port)"
        let protection = encrypted ? ["-srtp_out_suite", "AES_CM_128_HMAC_SHA1_80", "-srtp_out_params", key] : []
        let send = ["-re", "-i", clip.path, "-c", "copy", "-f", "rtp_mpegts"] + protection + [url]
        let sender = try FFmpeg.start(send, captureOutput: true)
        defer { sender.terminate() }
        let result = try runPlayout(["subscribe", url, "--json", "--duration", "4s"] + (encrypted ? ["--srtp-key", key] : []))
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try #require(result.stdout.split(separator: "\n").last.flatMap { jsonObject(String($0)) })
        let video = try #require(summary["video"] as? [String: Any])
        // Opened while the sender runs: most of its 90 frames arrive and render.
        #expect((video["framesRendered"] as? Int ?? 0) >= 45, "\(video)")
        #expect(video["decodeErrors"] as? Int == 0)
    }
}
