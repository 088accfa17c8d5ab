/// SplitMix64 (Steele, Lea and Flood, 2014): a tiny, fast, seeded random number generator, so
/// randomized decisions (RTCP report times, simulated impairments) and hostile-input tests replay
/// exactly.
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

extension SeededRandomNumberGenerator {
    /// Uniform in [0, 1), with 53 random bits.
    public mutating func nextFraction() -> Double {
        Double(next() >> 11) * 0x1p-53
    }
}
