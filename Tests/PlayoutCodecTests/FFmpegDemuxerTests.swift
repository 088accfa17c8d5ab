import Foundation
import PlayoutCodec
import PlayoutCore
import PlayoutTesting
import Testing

@Suite("FFmpeg demuxer", .enabled(if: FFmpeg.isAvailable, "ffmpeg is not on PATH (make setup installs it)"))
struct FFmpegDemuxerTests {
    @Test("MP4 H.264 comes out in Annex B, as RTP delivers it, and decodes frame-exact")
    func mp4ToAnnexB() throws {
        let clip = FFmpeg.temporaryFile("clip.mp4")
        defer { try? FileManager.default.removeItem(at: clip) }
        try FFmpeg.run(["-f", "lavfi", "-i", "testsrc=size=320x240:rate=30:duration=1", "-c:v", "libx264", "-g", "10", "-pix_fmt", "yuv420p", clip.path])
        let demuxer = try FFmpegDemuxer(url: clip.path)
        #expect(demuxer.streams.count == 1)
        let stream = try #require(demuxer.streams.first)
        #expect(stream.codec == .h264 && stream.kind == .video && stream.width == 320 && stream.height == 240)
        #expect(stream.extradata.first == 1, "MP4 keeps avcC")
        var frames: [EncodedFrame] = []
        while let frame = try demuxer.read() { frames.append(frame) }
        #expect(frames.count == 30)
        #expect(frames.allSatisfy { Array($0.bytes.prefix(4)) == [0, 0, 0, 1] || Array($0.bytes.prefix(3)) == [0, 0, 1] })
        #expect(frames.filter(\.isKeyframe).count == 3)
        let decoder = try FFmpegDecoder(codec: .h264)
        var md5s: [String] = []
        for frame in frames { try decoder.decode(frame.bytes) { md5s.append($0.pictureMD5 ?? "") } }
        try decoder.flush { md5s.append($0.pictureMD5 ?? "") }
        let text = String(decoding: try FFmpeg.run(["-i", clip.path, "-f", "framemd5", "-"]), as: UTF8.self)
        let expected = text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { $0.split(separator: ",").last!.trimmingCharacters(in: .whitespaces) }
        #expect(md5s == expected)
    }

    @Test("MKV with H.264 and Opus: both streams, every packet, in order")
    func mkvAudioVideo() throws {
        let clip = FFmpeg.temporaryFile("clip.mkv")
        defer { try? FileManager.default.removeItem(at: clip) }
        try FFmpeg.run([
            "-f", "lavfi", "-i", "testsrc=size=320x240:rate=30:duration=1", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1",
            "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "libopus", clip.path,
        ])
        let demuxer = try FFmpegDemuxer(url: clip.path)
        #expect(demuxer.streams.map(\.codec) == [.h264, .opus])
        #expect(demuxer.streams[1].sampleRate == 48_000)
        var video = 0
        var audio: [EncodedFrame] = []
        while let frame = try demuxer.read() {
            if frame.track == 0 { video += 1 } else { audio.append(frame) }
        }
        #expect(video == 30)
        let listing = String(decoding: try FFmpeg.run(["-i", clip.path, "-map", "0:1", "-c", "copy", "-f", "framecrc", "-"]), as: UTF8.self)
        let expectedAudio = listing.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            // stream, dts, pts, duration, size, checksum[, side data]
            line.split(separator: ",").dropFirst(4).prefix(2).map { $0.trimmingCharacters(in: .whitespaces) }
        }
        #expect(audio.count == expectedAudio.count && audio.count >= 50, "1 s of 20 ms Opus packets")
        #expect(audio.map { ["\($0.bytes.count)", "0x" + String(format: "%08x", adler32($0.bytes))] } == expectedAudio)
        #expect(zip(audio, audio.dropFirst()).allSatisfy { $0.mediaTime < $1.mediaTime })
    }

    @Test("an input that cannot be opened is a clear error naming it")
    func missingInput() {
        #expect {
            _ = try FFmpegDemuxer(url: "/no/such/clip.mp4")
        } throws: { error in
            (error as? CodecError)?.message.contains("/no/such/clip.mp4") == true
        }
    }

    @Test("the real-time pacer releases frames at their media time on the clock")
    func pacer() async throws {
        let clock = ManualClock(start: MonotonicInstant(nanoseconds: 5_000))
        var pacer = RealTimePacer(clock: clock)
        #expect(pacer.dueInstant(for: .seconds(10)) == MonotonicInstant(nanoseconds: 5_000), "the first frame sets the origin")
        #expect(pacer.dueInstant(for: .milliseconds(10_040)) == MonotonicInstant(nanoseconds: 5_000 + 40_000_000))
        let waiting = Task { [pacer] in
            var pacer = pacer
            try await pacer.wait(for: .milliseconds(10_100))
            return clock.now
        }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .milliseconds(100))
        #expect(try await waiting.value == MonotonicInstant(nanoseconds: 5_000 + 100_000_000))
    }
}
