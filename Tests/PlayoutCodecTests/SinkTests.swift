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
        ("file", "unknown sink 'file'"), ("file:", "--sink file needs a path, e.g. --sink file:out.y4m"),
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
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        probe.arguments = ["-v", "error", "-count_packets", "-select_streams", "v:0", "-show_entries", "stream=nb_read_packets,codec_name", "-of", "csv=p=0", output.path]
        let pipe = Pipe()
        probe.standardOutput = pipe
        try probe.run()
        probe.waitUntilExit()
        let report = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(probe.terminationStatus == 0)
        #expect(report == "h264,60")
        let decoded = String(decoding: try FFmpeg.run(["-i", output.path, "-f", "framemd5", "-"]), as: UTF8.self)
        let source = String(decoding: try FFmpeg.run(["-i", clip.path, "-f", "framemd5", "-"]), as: UTF8.self)
        func hashes(_ text: String) -> [String] { text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { String($0.split(separator: ",").last!) } }
        #expect(hashes(decoded) == hashes(source))
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
