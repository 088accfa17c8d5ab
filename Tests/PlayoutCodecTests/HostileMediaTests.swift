import Foundation
import PlayoutCodec
import PlayoutCore
import PlayoutTesting
import Testing

/// Broken inputs end with a clear error or counted decode errors — never a crash or a hang.
@Suite("Hostile media", .enabled(if: FFmpeg.isAvailable, "ffmpeg is not on PATH (make setup installs it)"))
struct HostileMediaTests {
    static func makeClip(_ name: String) throws -> URL {
        let clip = FFmpeg.temporaryFile(name)
        try FFmpeg.run(["-f", "lavfi", "-i", "testsrc=size=320x240:rate=30:duration=1", "-c:v", "libx264", "-g", "10", "-pix_fmt", "yuv420p", clip.path])
        return clip
    }

    /// Demuxes and decodes everything, returning frames decoded, decode errors and read errors.
    static func play(_ url: String) -> (decoded: Int, decodeErrors: Int, readError: CodecError?) {
        do {
            let demuxer = try FFmpegDemuxer(url: url)
            guard let stream = demuxer.streams.first, let codec = stream.codec else { return (0, 0, nil) }
            let decoder = try FFmpegDecoder(codec: codec, extradata: stream.extradata.first == 1 ? [] : stream.extradata)
            var decoded = 0
            do {
                while let frame = try demuxer.read() {
                    do {
                        try decoder.decode(frame.bytes) { _ in decoded += 1 }
                    } catch {}  // counted in statistics; decoding goes on
                }
                try? decoder.flush { _ in decoded += 1 }
            } catch let error {
                return (decoded, decoder.statistics.decodeErrors, error)
            }
            return (decoded, decoder.statistics.decodeErrors, nil)
        } catch let error {
            return (0, 0, error)
        }
    }

    @Test("a truncated file decodes what is there")
    func truncated() throws {
        let clip = try Self.makeClip("truncated.ts")
        defer { try? FileManager.default.removeItem(at: clip) }
        let data = try Data(contentsOf: clip)
        try data.prefix(data.count / 2).write(to: clip)
        let result = Self.play(clip.path)
        #expect(result.decoded > 0 && result.decoded < 30)
    }

    @Test("random bit flips in 1% of packets: decode errors are counted, decoding goes on")
    func bitFlips() throws {
        let clip = try Self.makeClip("flips.ts")
        defer { try? FileManager.default.removeItem(at: clip) }
        let packets = try FFmpeg.packets(of: clip, rawFormat: "h264")
        var random = SeededRandomNumberGenerator(seed: 99)
        let decoder = try FFmpegDecoder(codec: .h264, configuration: .init(threadCount: 1))
        var decoded = 0
        for _ in 0..<10 {  // 300 packets, ~3 damaged
            for var packet in packets {
                if Int.random(in: 0..<100, using: &random) == 0 {
                    for _ in 0..<8 { packet[Int.random(in: 4..<packet.count, using: &random)] ^= UInt8(1 << Int.random(in: 0..<8, using: &random)) }
                }
                do { try decoder.decode(packet) { _ in decoded += 1 } } catch {}
            }
        }
        try? decoder.flush { _ in decoded += 1 }
        #expect(decoded > 250)
    }

    @Test("a wrong parameter set: errors, not a crash")
    func wrongParameterSet() throws {
        let clip = try Self.makeClip("wrongsps.ts")
        defer { try? FileManager.default.removeItem(at: clip) }
        let packets = try FFmpeg.packets(of: clip, rawFormat: "h264")
        // Corrupt every SPS (NAL type 7) body: profile, level and dimensions become nonsense.
        let broken = packets.map { packet -> [UInt8] in
            var packet = packet
            var index = 0
            while index + 4 < packet.count {
                if packet[index] == 0, packet[index + 1] == 0, packet[index + 2] == 1, packet[index + 3] & 0x1F == 7 {
                    for offset in (index + 4)..<min(index + 12, packet.count) { packet[offset] = 0xFF }
                }
                index += 1
            }
            return packet
        }
        let decoder = try FFmpegDecoder(codec: .h264)
        for packet in broken { try? decoder.decode(packet) { _ in } }
        try? decoder.flush { _ in }
        #expect(decoder.statistics.decodeErrors > 0 || decoder.statistics.framesDecoded < 30)
    }

    @Test("a zero-byte file and a non-media file are clear errors", arguments: ["empty.mp4", "notes.mkv"])
    func notMedia(name: String) throws {
        let file = FFmpeg.temporaryFile(name)
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(name == "empty.mp4" ? [] : Array("These are not the frames you are looking for.\n".utf8)).write(to: file)
        #expect {
            _ = try FFmpegDemuxer(url: file.path)
        } throws: { error in
            (error as? CodecError)?.message.contains(file.path) == true
        }
    }

    @Test("random bytes fed to every decoder never crash")
    func randomBytes() throws {
        var random = SeededRandomNumberGenerator(seed: 5)
        for codec in [Codec.h264, .h265, .vp8, .vp9, .opus, .aac] {
            let decoder = try FFmpegDecoder(codec: codec, sampleRate: codec.kind == .audio ? 48_000 : 0, channelCount: codec.kind == .audio ? 2 : 0)
            for _ in 0..<200 {
                let bytes = (0..<Int.random(in: 1...2_000, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                try? decoder.decode(bytes) { _ in }
            }
            try? decoder.flush { _ in }
        }
    }
}
