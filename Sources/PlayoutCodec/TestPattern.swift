internal import CFFmpeg

/// A synthetic moving test picture (planar YUV 4:2:0) for the test publisher, with the frame
/// number and the capture time drawn into it as a block code, so a receiver can check order and
/// measure end-to-end latency from the decoded picture alone.
///
/// The code is two rows of 32 blocks of 8 × 8 pixels at the top left: the first row the frame
/// number, the second the capture time in milliseconds (both 32 bits, most significant first,
/// white = 1). Blocks that large survive lossy encoding at any sensible bitrate.
public struct TestPattern: Sendable {
    /// The code's block size in pixels.
    static let block = 8
    /// Bits per row.
    static let bits = 32

    /// Picture width in pixels.
    public let width: Int
    /// Picture height in pixels.
    public let height: Int

    /// A pattern of `width × height` (even, at least 256 × 32 so the code fits).
    public init(width: Int, height: Int) {
        precondition(width >= 256 && height >= 32 && width % 2 == 0 && height % 2 == 0, "a test pattern is at least 256 × 32, even")
        self.width = width
        self.height = height
    }

    /// The packed YUV 4:2:0 picture of frame `frameNumber` captured at `captureTime`
    /// (milliseconds, wrapping at 2^32): a bar sweeping across colour stripes, a band of noise
    /// that changes every frame (so the encoder spends a realistic bitrate), and the code.
    ///
    /// Built row by row (one luma row, copied), so a 720p picture costs well under a
    /// millisecond even in a debug build.
    public func picture(frameNumber: UInt32, captureTimeMilliseconds: UInt32) -> [UInt8] {
        let lumaSize = width * height
        var picture = [UInt8](repeating: 0, count: lumaSize + lumaSize / 2)
        let bar = Int(frameNumber) * 8 % width
        var row = [UInt8](repeating: 0, count: width)
        for x in 0..<width {
            row[x] = abs(x - bar) < 16 ? 235 : 16 + UInt8((x * 8 / width) * 32) / 2
        }
        picture.withUnsafeMutableBufferPointer { pixels in
            let base = pixels.baseAddress!
            row.withUnsafeBufferPointer { source in
                for y in 0..<height { (base + y * width).update(from: source.baseAddress!, count: width) }
            }
            // Noise: from the second macroblock row below the code to a third of the height.
            let noiseStart = 2 * Self.block + 16
            let noiseEnd = max(noiseStart, height / 3)
            var state = UInt64(frameNumber) &* 0x9E37_79B9_7F4A_7C15 | 1
            UnsafeMutableRawPointer(base + noiseStart * width).withMemoryRebound(to: UInt64.self, capacity: (noiseEnd - noiseStart) * width / 8) { words in
                for index in 0..<((noiseEnd - noiseStart) * width / 8) {
                    state ^= state << 13
                    state ^= state >> 7
                    state ^= state << 17
                    words[index] = (state & 0x3F3F_3F3F_3F3F_3F3F) &+ 0x6060_6060_6060_6060  // 96…159
                }
            }
            let chroma = base + lumaSize
            let chromaWidth = width / 2
            for x in 0..<chromaWidth { chroma[x] = UInt8(truncatingIfNeeded: 128 + (x * 4 / width) * 20) }
            for y in 1..<(height / 2) { (chroma + y * chromaWidth).update(from: chroma, count: chromaWidth) }
            for y in 0..<(height / 2) {
                (chroma + lumaSize / 4 + y * chromaWidth).update(repeating: UInt8(truncatingIfNeeded: 128 - (y * 4 / height) * 20), count: chromaWidth)
            }
            for (codeRow, value) in [frameNumber, captureTimeMilliseconds].enumerated() {
                for bit in 0..<Self.bits {
                    let level: UInt8 = (value >> UInt32(Self.bits - 1 - bit)) & 1 == 1 ? 235 : 16
                    for y in (codeRow * Self.block)..<((codeRow + 1) * Self.block) {
                        (base + y * width + bit * Self.block).update(repeating: level, count: Self.block)
                    }
                }
            }
        }
        return picture
    }

    /// Reads the frame number and capture time back from a decoded picture, or nil when the
    /// frame is not a picture of this pattern's kind.
    public static func read(_ frame: borrowing DecodedFrame) -> (frameNumber: UInt32, captureTimeMilliseconds: UInt32)? {
        guard frame.width >= 256, frame.height >= 16, let luma = frame.frame.pointee.data.0 else { return nil }
        let stride = Int(frame.frame.pointee.linesize.0)
        var values: [UInt32] = [0, 0]
        for row in 0..<2 {
            for bit in 0..<bits {
                var sum = 0
                for y in (row * block + 2)..<((row + 1) * block - 2) {
                    for x in (bit * block + 2)..<((bit + 1) * block - 2) { sum += Int(luma[y * stride + x]) }
                }
                let average = sum / ((block - 4) * (block - 4))
                values[row] = values[row] << 1 | (average >= 128 ? 1 : 0)
            }
        }
        return (values[0], values[1])
    }
}
