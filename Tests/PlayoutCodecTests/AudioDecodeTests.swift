import Foundation
import PlayoutCodec
import PlayoutCore
import PlayoutTesting
import Testing

@Suite("Audio decoding", .enabled(if: FFmpeg.isAvailable, "ffmpeg is not on PATH (make setup installs it)"))
struct AudioDecodeTests {
    /// Per-frame MD5s of the decoded audio as `ffmpeg -c:a pcm_f32le -f framemd5` prints them.
    static func referenceMD5s(of file: URL, stream: String = "0:a:0") throws -> [String] {
        String(decoding: try FFmpeg.run(["-i", file.path, "-map", stream, "-c:a", "pcm_f32le", "-f", "framemd5", "-"]), as: UTF8.self)
            .split(separator: "\n").filter { !$0.hasPrefix("#") }
            .map { $0.split(separator: ",").dropFirst(5).first!.trimmingCharacters(in: .whitespaces) }
    }

    @Test("Opus decodes frame-exact against ffmpeg's framemd5")
    func opus() throws {
        let clip = FFmpeg.temporaryFile("tone.ogg")
        defer { try? FileManager.default.removeItem(at: clip) }
        try FFmpeg.run(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1", "-c:a", "libopus", clip.path])
        let demuxer = try FFmpegDemuxer(url: clip.path)
        let stream = try #require(demuxer.streams.first)
        let decoder = try FFmpegDecoder(codec: .opus, extradata: stream.extradata, sampleRate: stream.sampleRate, channelCount: stream.channelCount)
        var md5s: [String] = []
        while let frame = try demuxer.read() { try decoder.decode(frame) { md5s.append($0.audioMD5 ?? "") } }
        try decoder.flush { md5s.append($0.audioMD5 ?? "") }
        let expected = try Self.referenceMD5s(of: clip)
        #expect(md5s.count == expected.count)
        #expect(md5s == expected)
    }
}

@Suite("An MKV with video and audio", .enabled(if: FFmpeg.isAvailable, "ffmpeg is not on PATH (make setup installs it)"))
struct AudioVideoFileTests {
    @Test("both streams decode frame-exact through the null sink; counts equal ffprobe -count_frames")
    func mkv() throws {
        let clip = FFmpeg.temporaryFile("both.mkv")
        defer { try? FileManager.default.removeItem(at: clip) }
        try FFmpeg.run([
            "-f", "lavfi", "-i", "testsrc=size=1280x720:rate=30:duration=1", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1",
            "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "libopus", clip.path,
        ])
        let demuxer = try FFmpegDemuxer(url: clip.path)
        let video = demuxer.streams[0]
        let audio = demuxer.streams[1]
        let videoDecoder = try FFmpegDecoder(codec: .h264)
        let audioDecoder = try FFmpegDecoder(codec: .opus, extradata: audio.extradata, sampleRate: audio.sampleRate, channelCount: audio.channelCount)
        let sink = NullSink(hashes: true)
        var audioMD5s: [String] = []
        while let frame = try demuxer.read() {
            if frame.track.rawValue == UInt32(video.index) {
                try videoDecoder.decode(frame) { sink.render($0) }
            } else {
                try audioDecoder.decode(frame) { audioMD5s.append($0.audioMD5 ?? "") }
            }
        }
        try videoDecoder.flush { sink.render($0) }
        try audioDecoder.flush { audioMD5s.append($0.audioMD5 ?? "") }

        let videoReference = String(decoding: try FFmpeg.run(["-i", clip.path, "-map", "0:v", "-f", "framemd5", "-"]), as: UTF8.self)
            .split(separator: "\n").filter { !$0.hasPrefix("#") }.map { $0.split(separator: ",").last!.trimmingCharacters(in: .whitespaces) }
        #expect(sink.pictureMD5s == videoReference)
        #expect(audioMD5s == (try AudioDecodeTests.referenceMD5s(of: clip)))

        // ffprobe's frame counts.
        let counts = try FFmpeg.probe(["-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", clip.path])
            .split(separator: "\n").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        #expect(counts == [sink.framesRendered, audioMD5s.count])
    }
}
