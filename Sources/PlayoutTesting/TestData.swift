/// SplitMix64: a tiny, fast, seeded random number generator, so randomized and hostile-input tests
/// replay exactly.
///
/// ```swift
/// var random = SeededRandomNumberGenerator(seed: 42)
/// let size = Int.random(in: 0...1_500, using: &random)
/// ```
public struct SeededRandomNumberGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// Creates a generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

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
