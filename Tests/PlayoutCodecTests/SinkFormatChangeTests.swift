import Foundation
import InMemoryLogging
import Logging
import PlayoutCodec
import PlayoutCore
import PlayoutTesting
import Testing

/// A stream whose pictures or audio change format mid-way (issue 14, item 3): a file sink never
/// writes frames its header does not describe.
@Suite("Sinks: a format change mid-stream", .enabled(if: FFmpeg.isAvailable, "ffmpeg is not on PATH"))
struct SinkFormatChangeTests {
    /// Encodes one MPEG-TS segment per entry of `segments` (lavfi source, ffmpeg options) and
    /// joins them with the concat demuxer into one stream with continuous timestamps.
    static func joinedStream(_ name: String, segments: [(source: String, options: [String])]) throws -> (URL, cleanup: () -> Void) {
        var parts: [URL] = []
        for (index, segment) in segments.enumerated() {
            let part = FFmpeg.temporaryFile("\(index)-\(name).ts")
            try FFmpeg.run(["-f", "lavfi", "-i", segment.source] + segment.options + ["-f", "mpegts", part.path])
            parts.append(part)
        }
        let list = FFmpeg.temporaryFile("\(name).txt")
        try parts.map { "file '\($0.path)'" }.joined(separator: "\n").write(to: list, atomically: true, encoding: .utf8)
        let joined = FFmpeg.temporaryFile("\(name).ts")
        try FFmpeg.run(["-f", "concat", "-safe", "0", "-i", list.path, "-c", "copy", joined.path])
        let cleanup = {
            for file in parts + [list, joined] { try? FileManager.default.removeItem(at: file) }
        }
        return (joined, cleanup)
    }

    /// 320x240 → 1280x720 → 320x240 H.264, one second (30 frames) each.
    static func resolutionChange() throws -> (URL, cleanup: () -> Void) {
        let x264 = ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-bf", "0", "-g", "30"]
        return try joinedStream("sizes", segments: [
            ("testsrc=size=320x240:rate=30:duration=1", x264), ("testsrc=size=1280x720:rate=30:duration=1", x264),
            ("testsrc=size=320x240:rate=30:duration=1", x264),
        ])
    }

    /// Decodes every video frame of `file` with FFmpegDecoder and hands each to `body`, with
    /// the encoded frame that produced it.
    static func decodeVideo(_ file: URL, _ body: (EncodedFrame, borrowing DecodedFrame) throws -> Void) throws {
        let demuxer = try FFmpegDemuxer(url: file.path)
        let decoder = try FFmpegDecoder(codec: .h264, configuration: .init(threadCount: 1))
        var failure: (any Error)?
        while let frame = try demuxer.read() {
            try decoder.decode(frame.bytes) { picture in
                do { try body(frame, picture) } catch { failure = failure ?? error }
            }
        }
        if let failure { throw failure }
    }

    /// Each frame's "width,height[,pix_fmt]" as ffprobe decodes `file`.
    static func probeFrames(_ file: URL, entries: String = "width,height") throws -> [Substring] {
        try FFmpeg.probe(["-v", "error", "-show_entries", "frame=\(entries)", "-of", "csv=p=0", file.path]).split(separator: "\n")
            .map { $0.hasSuffix(",") ? $0.dropLast() : $0 }  // key frames end with an empty side-data field
            .filter { !$0.isEmpty }
    }

    static func warnings(_ handler: InMemoryLogHandler) -> [String] {
        handler.entries.filter { $0.level == .warning }.map { $0.message.description }
    }

    @Test("y4m: 320x240 → 1280x720 → 320x240 is written as 90 frames of 320x240, the 720p ones scaled as ffmpeg scales them, with one warning")
    func y4mScalesToTheHeader() throws {
        let (stream, cleanup) = try Self.resolutionChange()
        defer { cleanup() }
        let output = FFmpeg.temporaryFile("change.y4m")
        defer { try? FileManager.default.removeItem(at: output) }
        let log = InMemoryLogHandler()
        let sink = try Y4MSink(path: output.path, logger: Logger(label: "test") { _ in log })
        var sizes: [String] = []
        try Self.decodeVideo(stream) { _, picture in
            sizes.append("\(picture.width)x\(picture.height)")
            try sink.render(picture)
        }
        sink.finish()
        #expect(sizes == Array(repeating: "320x240", count: 30) + Array(repeating: "1280x720", count: 30) + Array(repeating: "320x240", count: 30))
        #expect(sink.framesWritten == 90 && sink.framesScaled == 30 && sink.failure == nil)
        #expect(Self.warnings(log) == ["scaling 1280x720 to the file's 320x240"])

        let frames = try Self.probeFrames(output)
        #expect(frames.count == 90 && frames.allSatisfy { $0 == "320,240" }, "\(Set(frames))")
        let header = "YUV4MPEG2 W320 H240 F30:1 Ip A1:1 C420jpeg\n"
        let size = try FileManager.default.attributesOfItem(atPath: output.path)[.size] as? Int
        #expect(size == header.utf8.count + 90 * ("FRAME\n".utf8.count + 320 * 240 * 3 / 2))
        #expect(try Data(contentsOf: output).prefix(header.utf8.count) == Data(header.utf8))
        // Byte for byte what ffmpeg writes when it scales the same stream to 320x240 (bicubic).
        func md5s(_ arguments: [String]) throws -> [Substring] {
            String(decoding: try FFmpeg.run(arguments + ["-f", "framemd5", "-"]), as: UTF8.self).split(separator: "\n")
                .filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: ",").last }
        }
        #expect(try md5s(["-i", output.path]) == (try md5s(["-i", stream.path, "-vf", "scale=320:240", "-pix_fmt", "yuv420p"])))
    }

    @Test("y4m: a pixel format y4m cannot carry becomes yuv420p; a format change mid-stream is converted; a stream flapping every 3 frames logs 10 changes and one line more")
    func y4mConvertsFormats() throws {
        // 64x48 10-bit 4:2:0 (which y4m, as written here, cannot carry) and 96x64 yuv422p, alternating.
        let small = ("testsrc=size=64x48:rate=30:duration=0.1", ["-c:v", "libx264", "-pix_fmt", "yuv420p10le", "-bf", "0"])
        let large = ("testsrc=size=96x64:rate=30:duration=0.1", ["-c:v", "libx264", "-pix_fmt", "yuv422p", "-bf", "0"])
        let (stream, cleanup) = try Self.joinedStream("flap", segments: Array(repeating: [small, large], count: 12).flatMap { $0 })
        defer { cleanup() }
        let output = FFmpeg.temporaryFile("flap.y4m")
        defer { try? FileManager.default.removeItem(at: output) }
        let log = InMemoryLogHandler()
        let sink = try Y4MSink(path: output.path, logger: Logger(label: "test") { _ in log })
        try Self.decodeVideo(stream) { _, picture in try sink.render(picture) }
        sink.finish()
        #expect(sink.framesWritten == 72 && sink.framesScaled == 72)
        let warnings = Self.warnings(log)
        #expect(warnings.prefix(2) == ["converting 64x48 yuv420p10le to the file's 64x48 yuv420p", "scaling 96x64 yuv422p to the file's 64x48 yuv420p"])
        #expect(warnings.count == 11 && warnings.last == "the stream keeps changing format: further changes are not logged", "\(warnings)")
        let frames = try Self.probeFrames(output, entries: "width,height,pix_fmt")
        #expect(frames.count == 72 && frames.allSatisfy { $0 == "64,48,yuv420p" }, "\(Set(frames))")
        let size = try FileManager.default.attributesOfItem(atPath: output.path)[.size] as? Int
        #expect(size == "YUV4MPEG2 W64 H48 F30:1 Ip A1:1 C420jpeg\n".utf8.count + 72 * (6 + 64 * 48 * 3 / 2))
    }

    @Test("wav: 48 kHz stereo → 44.1 kHz mono → 48 kHz stereo is written as 48 kHz stereo, the middle resampled and remixed, with one warning")
    func wavResamplesToTheHeader() throws {
        let aac48 = ["-ac", "2", "-c:a", "aac"]
        let (stream, cleanup) = try Self.joinedStream("rates", segments: [
            ("sine=frequency=440:sample_rate=48000:duration=1", aac48), ("sine=frequency=440:sample_rate=44100:duration=1", ["-ac", "1", "-c:a", "aac"]),
            ("sine=frequency=440:sample_rate=48000:duration=1", aac48),
        ])
        defer { cleanup() }
        let output = FFmpeg.temporaryFile("change.wav")
        defer { try? FileManager.default.removeItem(at: output) }
        let log = InMemoryLogHandler()
        let sink = try WAVSink(path: output.path, logger: Logger(label: "test") { _ in log })
        let demuxer = try FFmpegDemuxer(url: stream.path)
        let audio = demuxer.streams[0]
        let decoder = try FFmpegDecoder(codec: .aac, extradata: audio.extradata, sampleRate: audio.sampleRate, channelCount: audio.channelCount)
        var formats: [String] = []
        var native = 0
        var resampledInput = 0
        var failure: SinkError?
        func render(_ frame: borrowing DecodedFrame) {
            let format = "\(frame.sampleRate)/\(frame.channelCount)"
            if formats.last != format { formats.append(format) }
            if frame.sampleRate == 48_000 { native += frame.sampleCount } else { resampledInput += frame.sampleCount }
            do { try sink.render(frame) } catch { failure = error }
        }
        while let frame = try demuxer.read() { try decoder.decode(frame) { render($0) } }
        try decoder.flush { render($0) }
        sink.finish()
        #expect(failure == nil && sink.failure == nil)
        #expect(formats == ["48000/2", "44100/1", "48000/2"])
        #expect(Self.warnings(log) == ["resampling 44100 Hz mono to the file's 48000 Hz stereo"])
        // Every sample in the file is 48 kHz stereo: native ones as decoded, the rest resampled.
        let expected = Double(native) + Double(resampledInput) * 48_000 / 44_100
        #expect(abs(Double(sink.samplesWritten) - expected) <= 2, "\(sink.samplesWritten) samples, expected ≈ \(expected)")
        let bytes = try Data(contentsOf: output)
        #expect(bytes.count == 44 + sink.samplesWritten * 2 * 4)
        #expect(try FFmpeg.probe(["-v", "error", "-show_entries", "stream=sample_rate,channels,duration_ts", "-of", "csv=p=0", output.path]) == "48000,2,\(sink.samplesWritten)")
        #expect(try FFmpeg.decodingErrors(of: output) == "")
        // The middle second is the 440 Hz tone at 48 kHz, the same on both channels (written raw
        // at 44.1 kHz it would read as 479 Hz).
        let samples = bytes.dropFirst(44).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let middle = stride(from: 2 * (native / 2 + 4_800), to: 2 * (native / 2 + 43_200), by: 2).map { (left: samples[$0], right: samples[$0 + 1]) }
        #expect(middle.allSatisfy { $0.left == $0.right })
        let crossings = zip(middle, middle.dropFirst()).filter { $0.left < 0 && $1.left >= 0 }.count
        #expect(abs(Double(crossings) / 0.8 - 440) < 3, "\(Double(crossings) / 0.8) Hz")
    }

    @Test("remux: 320x240 → 1280x720 → 320x240 H.264 stays one file that ffmpeg decodes without an error, every frame at its own size", arguments: ["mkv", "mp4"])
    func remuxKeepsTheChangeInBand(container: String) throws {
        let (stream, cleanup) = try Self.resolutionChange()
        defer { cleanup() }
        let output = FFmpeg.temporaryFile("change.\(container)")
        defer { try? FileManager.default.removeItem(at: output) }
        let log = InMemoryLogHandler()
        let clockRate = try FFmpegDemuxer(url: stream.path).streams[0].clockRate
        let sink = try RemuxSink(
            path: output.path, streams: [EncodedStreamDescription(codec: .h264, clockRate: clockRate)], logger: Logger(label: "test") { _ in log }
        )
        // As the renderer does: each decoded picture's size, then its encoded frame.
        try Self.decodeVideo(stream) { frame, picture in
            sink.setPictureSize(width: picture.width, height: picture.height, stream: 0)
            try sink.write(frame, stream: 0)
        }
        try sink.finish()
        #expect(sink.framesWritten == 90 && sink.pictureSizeChanges == 2 && sink.failure == nil)
        #expect(Self.warnings(log).count == 2)
        #expect(Self.warnings(log).first?.hasPrefix("video stream 0 changed size from 320x240 to 1280x720") == true, "\(Self.warnings(log))")
        #expect(try FFmpeg.decodingErrors(of: output) == "")
        let frames = try Self.probeFrames(output)
        #expect(frames == Array(repeating: "320,240", count: 30) + Array(repeating: "1280,720", count: 30) + Array(repeating: "320,240", count: 30))
    }
}
