import Foundation
import PlayoutCodec
import PlayoutCore
import Testing

@Suite("FFmpeg encoder and the test pattern")
struct FFmpegEncoderTests {
    @Test("H.264 and VP8: the frame number and capture time drawn into each picture survive encoding and decoding", arguments: [Codec.h264, .vp8])
    func videoRoundTrip(codec: Codec) throws {
        let pattern = TestPattern(width: 320, height: 240)
        let encoder = try FFmpegEncoder(video: .init(codec: codec, width: 320, height: 240, bitrate: 500_000, keyframeInterval: 10))
        let decoder = try FFmpegDecoder(codec: codec)
        var encoded: [EncodedFrame] = []
        for index in 0..<30 {
            let picture = pattern.picture(frameNumber: UInt32(index), captureTimeMilliseconds: UInt32(1_000_000 + index * 33))
            try encoder.encode(picture: picture, timestamp: Int64(index) * 3_000) { encoded.append($0) }
        }
        try encoder.flush { encoded.append($0) }
        #expect(encoded.count == 30)
        #expect(encoded.filter(\.isKeyframe).count == 3)
        let expectedTicks: [Int64] = (0..<30).map { Int64($0) * 3_000 }
        #expect(encoded.map(\.mediaTime.ticks) == expectedTicks)
        if codec == .h264 {
            #expect(encoded.allSatisfy { Array($0.bytes.prefix(4)) == [0, 0, 0, 1] || Array($0.bytes.prefix(3)) == [0, 0, 1] }, "Annex B")
        }
        var read: [(UInt32, UInt32)] = []
        for frame in encoded {
            try decoder.decode(frame.bytes) { if let code = TestPattern.read($0) { read.append(code) } }
        }
        try decoder.flush { if let code = TestPattern.read($0) { read.append(code) } }
        let expectedNumbers: [UInt32] = (0..<30).map { UInt32($0) }
        #expect(read.map(\.0) == expectedNumbers)
        let expectedTimes: [UInt32] = (0..<30).map { UInt32(1_000_000 + $0 * 33) }
        #expect(read.map(\.1) == expectedTimes)
    }

    @Test("Opus: a tone encodes in 20 ms frames and decodes back to audio")
    func opusTone() throws {
        let encoder = try FFmpegEncoder(audio: .init())
        #expect(encoder.audioFrameSize == 960)
        var encoded: [EncodedFrame] = []
        for block in 0..<50 {
            let samples = (0..<960).flatMap { index -> [Float] in
                let t = Float(block * 960 + index) / 48_000
                let value = 0.5 * sinf(2 * .pi * 440 * t)
                return [value, value]
            }
            try encoder.encode(samples: samples, timestamp: Int64(block * 960)) { encoded.append($0) }
        }
        try encoder.flush { encoded.append($0) }
        #expect(encoded.count >= 50)
        let decoder = try FFmpegDecoder(codec: .opus, sampleRate: 48_000, channelCount: 2)
        var samples = 0
        for frame in encoded {
            try decoder.decode(frame.bytes) { samples += $0.sampleCount; #expect($0.sampleRate == 48_000 && $0.channelCount == 2) }
        }
        #expect(samples >= 48_000, "1 s of audio comes back")
    }

    @Test("a picture of the wrong size is a clear error")
    func wrongSize() throws {
        let encoder = try FFmpegEncoder(video: .init(codec: .vp8, width: 320, height: 240))
        #expect(throws: CodecError.self) { try encoder.encode(picture: [0, 1, 2], timestamp: 0) { _ in } }
    }
}
