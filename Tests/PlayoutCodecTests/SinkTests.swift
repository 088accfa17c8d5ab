import Foundation
import PlayoutCodec
import PlayoutCore
import PlayoutTesting
import Testing

@Suite("Sinks")
struct SinkTests {
    @Test("sink specs parse; bad ones say what to type", arguments: [
        ("null", SinkSpec.null), ("file:out.y4m", .y4m(path: "out.y4m")), ("file:/tmp/a.wav", .wav(path: "/tmp/a.wav")),
        ("file:rec.mkv", .remux(path: "rec.mkv")), ("file:rec.MP4", .remux(path: "rec.MP4")),
    ])
    func parses(text: String, spec: SinkSpec) throws {
        #expect(try SinkSpec(parsing: text) == spec)
        #expect(spec.description == text)
    }

    @Test("bad specs", arguments: [
        ("file", "unknown sink 'file'"), ("file:", "sink 'file:' needs a path after file:, e.g. file:out.y4m"),
        ("file:out.txt", "cannot tell what to write"), ("screen", "unknown sink 'screen'"),
    ])
    func rejects(text: String, message: String) {
        #expect {
            _ = try SinkSpec(parsing: text)
        } throws: { error in
            (error as? SinkError)?.message.contains(message) == true
        }
    }

    @Test("an unwritable path is an error before anything starts")
    func unwritable() {
        #expect(throws: SinkError.self) { try Y4MSink(path: "/no/such/dir/out.y4m") }
        #expect(throws: SinkError.self) { try RemuxSink(path: "/no/such/dir/out.mkv", streams: [EncodedStreamDescription(codec: .h264, clockRate: 90_000)]) }
    }

    @Test("the y4m file plays back identical to the source decode; the null sink hashes the same", .enabled(if: FFmpeg.isAvailable, "ffmpeg is not on PATH"))
    func y4mAndNull() throws {
        let clip = FFmpeg.temporaryFile("clip.ts")
        let output = FFmpeg.temporaryFile("out.y4m")
        defer { try? FileManager.default.removeItem(at: clip); try? FileManager.default.removeItem(at: output) }
        try FFmpeg.run(["-f", "lavfi", "-i", "testsrc=size=320x240:rate=30:duration=1", "-c:v", "libx264", "-pix_fmt", "yuv420p", clip.path])
        let demuxer = try FFmpegDemuxer(url: clip.path)
        let decoder = try FFmpegDecoder(codec: .h264)
        let sink = try Y4MSink(path: output.path)
        let null = NullSink(hashes: true)
        func render(_ frame: borrowing DecodedFrame) {
            try? sink.render(frame)
            null.render(frame)
        }
        while let frame = try demuxer.read() { try decoder.decode(frame.bytes) { render($0) } }
        try decoder.flush { render($0) }
        sink.finish()
        func md5s(_ file: URL) throws -> [String] {
            String(decoding: try FFmpeg.run(["-i", file.path, "-f", "framemd5", "-"]), as: UTF8.self)
                .split(separator: "\n").filter { !$0.hasPrefix("#") }.map { $0.split(separator: ",").last!.trimmingCharacters(in: .whitespaces) }
        }
        let source = try md5s(clip)
        #expect(sink.framesWritten == 30 && null.framesRendered == 30)
        #expect(try md5s(output) == source)
        #expect(null.pictureMD5s == source)
    }

    @Test("the remuxed mkv passes ffprobe with the same packet count and decodes like the source", .enabled(if: FFmpeg.isAvailable, "ffmpeg is not on PATH"))
    func remux() throws {
        let clip = FFmpeg.temporaryFile("clip.ts")
        let output = FFmpeg.temporaryFile("out.mkv")
        defer { try? FileManager.default.removeItem(at: clip); try? FileManager.default.removeItem(at: output) }
        try FFmpeg.run(["-f", "lavfi", "-i", "testsrc=size=320x240:rate=30:duration=2", "-c:v", "libx264", "-g", "30", "-bf", "0", "-pix_fmt", "yuv420p", clip.path])
        let demuxer = try FFmpegDemuxer(url: clip.path)
        let sink = try RemuxSink(path: output.path, streams: [EncodedStreamDescription(codec: .h264, clockRate: demuxer.streams[0].clockRate, width: 320, height: 240)])
        while let frame = try demuxer.read() { try sink.write(frame, stream: 0) }
        try sink.finish()
        #expect(sink.framesWritten == 60)
        let report = try FFmpeg.probe(["-v", "error", "-count_packets", "-select_streams", "v:0", "-show_entries", "stream=codec_name,nb_read_packets", "-of", "csv=p=0", output.path])
        #expect(report == "h264,60")
        let decoded = String(decoding: try FFmpeg.run(["-i", output.path, "-f", "framemd5", "-"]), as: UTF8.self)
        let source = String(decoding: try FFmpeg.run(["-i", clip.path, "-f", "framemd5", "-"]), as: UTF8.self)
        func hashes(_ text: String) -> [String] { text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { String($0.split(separator: ",").last!) } }
        #expect(hashes(decoded) == hashes(source))
    }
}

extension SinkTests {
    @Test("remux holds frames until the video's size and parameter sets are known, then writes them all in order; Opus gets an OpusHead", .enabled(if: FFmpeg.isAvailable, "ffmpeg is not on PATH"))
    func remuxHoldsUntilDescribed() throws {
        let clip = FFmpeg.temporaryFile("av.mkv")
        let output = FFmpeg.temporaryFile("held.mkv")
        defer { try? FileManager.default.removeItem(at: clip); try? FileManager.default.removeItem(at: output) }
        try FFmpeg.run([
            "-f", "lavfi", "-i", "testsrc=size=320x240:rate=30:duration=1", "-f", "lavfi", "-i", "sine=sample_rate=48000:duration=1",
            "-c:v", "libx264", "-bf", "0", "-pix_fmt", "yuv420p", "-c:a", "libopus", clip.path,
        ])
        let demuxer = try FFmpegDemuxer(url: clip.path)
        // What an RTP receiver knows: codecs and clock rates; no size, no extradata.
        let sink = try RemuxSink(path: output.path, streams: [
            EncodedStreamDescription(codec: .h264, clockRate: demuxer.streams[0].clockRate),
            EncodedStreamDescription(codec: .opus, clockRate: demuxer.streams[1].clockRate, sampleRate: 48_000, channelCount: 1),
        ])
        var frames: [EncodedFrame] = []
        while let frame = try demuxer.read() { frames.append(frame) }
        for frame in frames.prefix(10) { try sink.write(frame, stream: Int(frame.track.rawValue)) }
        #expect(sink.framesWritten == 0, "held: the video's size is not known yet")
        sink.setPictureSize(width: 320, height: 240, stream: 0)
        for frame in frames.dropFirst(10) { try sink.write(frame, stream: Int(frame.track.rawValue)) }
        try sink.finish()
        #expect(sink.framesWritten == frames.count && sink.framesDropped == 0)
        for (index, (stream, codec)) in [("v:0", "h264"), ("a:0", "opus")].enumerated() {
            let count = frames.filter { $0.track.rawValue == UInt32(index) }.count
            #expect(try FFmpeg.probe(["-v", "error", "-count_packets", "-select_streams", stream, "-show_entries", "stream=codec_name,nb_read_packets", "-of", "csv=p=0", output.path]) == "\(codec),\(count)")
        }
        #expect(try FFmpeg.decodingErrors(of: output) == "")
    }

    @Test("remux: a video stream never described holds at most maximumHeldFrames; a codec the container cannot take is a clear error")
    func remuxLimits() throws {
        let output = FFmpeg.temporaryFile("limits.mkv")
        defer { try? FileManager.default.removeItem(at: output) }
        let sink = try RemuxSink(path: output.path, streams: [EncodedStreamDescription(codec: .vp8, clockRate: 90_000)])
        for index in 0..<(RemuxSink.maximumHeldFrames + 5) {
            let frame = EncodedFrame(
                track: 0, codec: .vp8, mediaTime: MediaTime(ticks: Int64(index) * 3_000, clockRate: 90_000),
                firstArrival: .zero, lastArrival: .zero, isKeyframe: index == 0, bytes: [0x10, 0x02, 0x00]
            )
            try sink.write(frame, stream: 0)
        }
        #expect(sink.framesWritten == 0 && sink.framesDropped == 5)
        #expect(throws: SinkError.self) { try sink.finish() }  // no picture size ever came
        let alaw = FFmpeg.temporaryFile("alaw.mp4")
        defer { try? FileManager.default.removeItem(at: alaw) }
        let audio = try RemuxSink(path: alaw.path, streams: [EncodedStreamDescription(codec: .pcma, clockRate: 8_000, sampleRate: 8_000, channelCount: 1)])
        let frame = EncodedFrame(
            track: 0, codec: .pcma, mediaTime: MediaTime(ticks: 0, clockRate: 8_000),
            firstArrival: .zero, lastArrival: .zero, isKeyframe: true, bytes: [UInt8](repeating: 0xD5, count: 160)
        )
        #expect(throws: SinkError.self) { try audio.write(frame, stream: 0) }
    }
}

@Suite("WAV sink", .enabled(if: FFmpeg.isAvailable, "ffmpeg is not on PATH"))
struct WAVSinkTests {
    @Test("the wav file holds exactly the samples ffmpeg decodes from the source")
    func wav() throws {
        let clip = FFmpeg.temporaryFile("tone.ogg")
        let output = FFmpeg.temporaryFile("out.wav")
        defer { try? FileManager.default.removeItem(at: clip); try? FileManager.default.removeItem(at: output) }
        try FFmpeg.run(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1", "-ac", "2", "-c:a", "libopus", clip.path])
        let demuxer = try FFmpegDemuxer(url: clip.path)
        let stream = demuxer.streams[0]
        let decoder = try FFmpegDecoder(codec: .opus, extradata: stream.extradata, sampleRate: stream.sampleRate, channelCount: stream.channelCount)
        let sink = try WAVSink(path: output.path)
        while let frame = try demuxer.read() { try decoder.decode(frame) { try? sink.render($0) } }
        try decoder.flush { try? sink.render($0) }
        sink.finish()
        func md5(_ file: URL) throws -> String {
            String(decoding: try FFmpeg.run(["-i", file.path, "-c:a", "pcm_f32le", "-f", "md5", "-"]), as: UTF8.self)
        }
        #expect(sink.framesWritten > 40)
        #expect(try md5(output) == (try md5(clip)))
    }
}
