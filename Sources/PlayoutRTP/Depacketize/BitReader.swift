/// Reads big-endian bit fields: RFC 3640 AU headers, the VP9 uncompressed header.
struct BitReader {
    let bytes: UnsafeRawBufferPointer
    /// Bits read so far.
    private(set) var position = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// The next `count` bits (0…32) as an integer, or nil past the end.
    mutating func read(_ count: Int) -> Int? {
        guard position + count <= bytes.count * 8 else { return nil }
        var value = 0
        for _ in 0..<count {
            let bit = Int(bytes[position >> 3] >> (7 - UInt8(position & 7))) & 1
            value = value << 1 | bit
            position += 1
        }
        return value
    }
}
