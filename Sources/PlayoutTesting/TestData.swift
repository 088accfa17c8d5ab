/// Tests and benchmarks name it from here, as they did before it moved to PlayoutCore.
@_exported public import struct PlayoutCore.SeededRandomNumberGenerator

extension [UInt8] {
    /// Bytes from hex digits, as test vectors are written (`"80 E0 AB CD"`); whitespace is
    /// ignored. For literals in tests: traps on malformed input.
    public init(hex: String) {
        let digits = hex.filter { !$0.isWhitespace }
        precondition(digits.count.isMultiple(of: 2), "odd number of hex digits")
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            guard let byte = UInt8(digits[index..<next], radix: 16) else { preconditionFailure("'\(digits[index..<next])' is not hex") }
            bytes.append(byte)
            index = next
        }
        self = bytes
    }

    /// The bytes as uppercase hex digits, two per byte.
    public var hex: String {
        map { byte in
            let digits = String(byte, radix: 16, uppercase: true)
            return digits.count == 1 ? "0" + digits : digits
        }.joined()
    }
}
