import Foundation
import PlayoutCodec
import PlayoutCore
import PlayoutTesting
import Testing

@Suite("FFmpeg decoder", .enabled(if: FFmpeg.isAvailable, "ffmpeg is not on PATH (make setup installs it)"))
struct FFmpegDecoderTests {
    /// The MD5 of every decoded video frame as `ffmpeg -f framemd5` prints it.
    static func referenceMD5s(of file: URL) throws -> [String] {
        let text = String(decoding: try FFmpeg.run(["-i", file.path, "-map", "0:v:0", "-f", "framemd5", "-"]), as: UTF8.self)
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { line in
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            return fields.count >= 6 ? fields[5] : nil
        }
    }

    /// A 1 s testsrc clip of `size`, encoded with `encoding` into `name`: its packets (read back
    /// as `rawFormat`) and ffmpeg's framemd5 of its pictures. The file is removed.
    static func clip(_ name: String, size: String, encoding: [String], rawFormat: String) throws -> (packets: [[UInt8]], expected: [String]) {
        let clip = FFmpeg.temporaryFile(name)
        defer { try? FileManager.default.removeItem(at: clip) }
        try FFmpeg.run(["-f", "lavfi", "-i", "testsrc=size=\(size):rate=30:duration=1"] + encoding + [clip.path])
        return (try FFmpeg.packets(of: clip, rawFormat: rawFormat), try referenceMD5s(of: clip))
    }

    static let x264 = ["-c:v", "libx264", "-g", "15", "-pix_fmt", "yuv420p"]

    static func decode(_ packets: [[UInt8]], codec: Codec, threading: FFmpegDecoder.Configuration.Threading = .slice) throws -> (md5s: [String], decoder: FFmpegDecoder) {
        let decoder = try FFmpegDecoder(codec: codec, configuration: .init(threading: threading))
        var md5s: [String] = []
        for packet in packets {
            try decoder.decode(packet) { frame in md5s.append(frame.pictureMD5 ?? "") }
        }
        try decoder.flush { frame in md5s.append(frame.pictureMD5 ?? "") }
        return (md5s, decoder)
    }

    @Test("H.264: every decoded frame hashes as ffmpeg's framemd5, with slice and frame threads", arguments: [
        FFmpegDecoder.Configuration.Threading.slice, .frame,
    ])
    func h264(threading: FFmpegDecoder.Configuration.Threading) throws {
        let (packets, expected) = try Self.clip("clip.ts", size: "1280x720", encoding: Self.x264, rawFormat: "h264")
        let (md5s, decoder) = try Self.decode(packets, codec: .h264, threading: threading)
        #expect(expected.count == 30)
        #expect(md5s == expected)
        #expect(decoder.statistics.framesDecoded == 30)
        #expect(decoder.statistics.keyFramesDecoded == 2)
        #expect(decoder.statistics.decodeErrors == 0)
        #expect(decoder.statistics.totalDecodeTime > .zero)
    }

    @Test("retained frames keep their pixels while the decoder goes on (held ahead of their render time)", arguments: [
        FFmpegDecoder.Configuration.Threading.slice, .frame,
    ])
    func retainedFrames(threading: FFmpegDecoder.Configuration.Threading) throws {
        let (packets, expected) = try Self.clip("retained.ts", size: "640x360", encoding: Self.x264, rawFormat: "h264")
        let decoder = try FFmpegDecoder(codec: .h264, configuration: .init(threading: threading))
        var held: [RetainedFrame] = []
        for packet in packets {
            try decoder.decode(packet) { frame in
                if let kept = frame.retained() { held.append(kept) }
            }
        }
        try decoder.flush { frame in
            if let kept = frame.retained() { held.append(kept) }
        }
        // Every picture is read only now, after all of them were decoded.
        let md5s = held.map { kept in kept.withDecodedFrame { $0.pictureMD5 ?? "" } }
        #expect(md5s == expected)
        #expect(held.allSatisfy { kept in kept.withDecodedFrame { $0.width == 640 && $0.height == 360 } })
    }

    @Test("VP8: every decoded frame hashes as ffmpeg's framemd5")
    func vp8() throws {
        let (packets, expected) = try Self.clip("clip.ivf", size: "320x240", encoding: ["-c:v", "libvpx", "-g", "10"], rawFormat: "data")
        let (md5s, decoder) = try Self.decode(packets, codec: .vp8)
        #expect(expected.count == 30)
        #expect(md5s == expected)
        #expect(decoder.statistics.keyFramesDecoded == 3)
    }

    @Test("the frame reports size, format and key frames")
    func frameProperties() throws {
        let clip = FFmpeg.temporaryFile("props.ts")
        defer { try? FileManager.default.removeItem(at: clip) }
        try FFmpeg.run(["-f", "lavfi", "-i", "testsrc=size=320x240:rate=30:duration=0.2", "-c:v", "libx264", "-pix_fmt", "yuv420p", clip.path])
        let decoder = try FFmpegDecoder(codec: .h264)
        var seen: [(Int, Int, String, Bool)] = []
        for packet in try FFmpeg.packets(of: clip, rawFormat: "h264") {
            try decoder.decode(packet) { seen.append(($0.width, $0.height, $0.formatName, $0.isKeyframe)) }
        }
        try decoder.flush { seen.append(($0.width, $0.height, $0.formatName, $0.isKeyframe)) }
        #expect(seen.count == 6)
        #expect(seen.allSatisfy { $0.0 == 320 && $0.1 == 240 && $0.2 == "yuv420p" })
        #expect(seen.first?.3 == true)
    }

    @Test("decode without output keeps later frames exact; a corrupt frame is counted and decoding goes on")
    func skipAndCorruption() throws {
        let (packets, expected) = try Self.clip("skip.ts", size: "320x240", encoding: ["-c:v", "libx264", "-g", "10", "-bf", "0", "-pix_fmt", "yuv420p"], rawFormat: "h264")

        // Frames 3…6 decoded without output: the rest still hash exactly.
        let decoder = try FFmpegDecoder(codec: .h264, configuration: .init(threadCount: 1))
        var md5s: [String] = []
        for (index, packet) in packets.enumerated() {
            try decoder.decode(packet, output: !(3...6).contains(index)) { md5s.append($0.pictureMD5 ?? "") }
        }
        try decoder.flush { md5s.append($0.pictureMD5 ?? "") }
        #expect(md5s == expected.enumerated().filter { !(3...6).contains($0.offset) }.map(\.element))

        // A frame of garbage: an error (or concealment), never a crash; the next key frame decodes exactly.
        let damaged = try FFmpegDecoder(codec: .h264, configuration: .init(threadCount: 1))
        var afterKey: [String] = []
        for (index, packet) in packets.enumerated() {
            let bytes = index == 4 ? [0, 0, 0, 1, 0x41] + [UInt8](repeating: 0xFF, count: 300) : packet
            do {
                try damaged.decode(bytes) { frame in if index >= 10 { afterKey.append(frame.pictureMD5 ?? "") } }
            } catch let error {
                #expect(error.code == .invalidData || error.message.contains("h264") || error.message.contains("H264"))
            }
        }
        try damaged.flush { afterKey.append($0.pictureMD5 ?? "") }
        #expect(Array(afterKey.prefix(20)) == Array(expected[10..<30]), "decoding recovers at the next key frame")
    }

    @Test("every codec the depacketizers deliver has a decoder here", arguments: [Codec.h264, .h265, .vp8, .vp9, .opus, .aac, .pcmu, .pcma])
    func opens(codec: Codec) throws {
        _ = try FFmpegDecoder(codec: codec, sampleRate: codec.kind == .audio ? 48_000 : 0, channelCount: codec.kind == .audio ? 2 : 0)
    }
}
