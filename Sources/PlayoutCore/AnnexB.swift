/// Annex B byte streams (ITU-T H.264/H.265 Annex B): NAL units after `00 00 01` or
/// `00 00 00 01` start codes — the framing of H.264/H.265 ``EncodedFrame`` bytes.
package enum AnnexB {
    /// Calls `body` with the byte range of each NAL unit of `stream` (without start code or
    /// trailing zero bytes). A stream without any start code is one NAL unit.
    public static func forEachNALUnit(in stream: UnsafeRawBufferPointer, _ body: (Range<Int>) throws -> Void) rethrows {
        let count = stream.count
        var index = 0
        var nalStart = -1
        func emit(to end: Int) throws {
            var end = end
            while end > nalStart, stream[end - 1] == 0 { end -= 1 }  // trailing_zero_8bits, next start code's zero
            if end > nalStart { try body(nalStart..<end) }
        }
        while index + 2 < count {
            if stream[index] == 0, stream[index + 1] == 0, stream[index + 2] == 1 {
                if nalStart >= 0 { try emit(to: index) }
                index += 3
                nalStart = index
            } else {
                index += 1
            }
        }
        if nalStart >= 0 {
            try emit(to: count)
        } else if count > 0 {
            try body(0..<count)
        }
    }
}

extension AnnexB {
    /// The NAL units of `stream`, as byte arrays (allocates; for tools and tests).
    public static func nalUnits(of stream: [UInt8]) -> [[UInt8]] {
        stream.withUnsafeBytes { buffer in
            var units: [[UInt8]] = []
            forEachNALUnit(in: buffer) { units.append(Array(buffer[$0])) }
            return units
        }
    }
}
