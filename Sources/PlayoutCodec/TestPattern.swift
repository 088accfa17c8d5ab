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

    public let width: Int
    public let height: Int

    /// A pattern of `width × height` (even, at least 256 × 32 so the code fits).
    public init(width: Int, height: Int) {
        precondition(width >= 256 && height >= 32 && width % 2 == 0 && height % 2 == 0, "a test pattern is at least 256 × 32, even")
        self.width = width
        self.height = height
    }

    /// The packed YUV 4:2:0 picture of frame `frameNumber` captured at `captureTime`
    /// (milliseconds, wrapping at 2^32): a bar sweeping across colour stripes, and the code.
    public func picture(frameNumber: UInt32, captureTimeMilliseconds: UInt32) -> [UInt8] {
        let lumaSize = width * height
        var picture = [UInt8](repeating: 0, count: lumaSize + lumaSize / 2)
        let bar = Int(frameNumber) * 8 % width
        picture.withUnsafeMutableBufferPointer { pixels in
            for y in 0..<height {
                for x in 0..<width {
                    let stripe = UInt8((x * 8 / width) * 32)
                    pixels[y * width + x] = abs(x - bar) < 16 ? 235 : 16 + stripe / 2
                }
            }
            let chroma = pixels.baseAddress! + lumaSize
            for y in 0..<(height / 2) {
                for x in 0..<(width / 2) {
                    chroma[y * width / 2 + x] = UInt8(truncatingIfNeeded: 128 + (x * 4 / width) * 20)
                    chroma[lumaSize / 4 + y * width / 2 + x] = UInt8(truncatingIfNeeded: 128 - (y * 4 / height) * 20)
                }
            }
            for (row, value) in [frameNumber, captureTimeMilliseconds].enumerated() {
                for bit in 0..<Self.bits {
                    let level: UInt8 = (value >> UInt32(Self.bits - 1 - bit)) & 1 == 1 ? 235 : 16
                    for y in (row * Self.block)..<((row + 1) * Self.block) {
                        for x in (bit * Self.block)..<((bit + 1) * Self.block) {
                            pixels[y * width + x] = level
                        }
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
