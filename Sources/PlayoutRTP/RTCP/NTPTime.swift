/// 64-bit NTP timestamps (UQ32.32 seconds since 1900, RFC 5905 §6) to and from nanoseconds since
/// 1970, as RTCP sender reports and the `abs-capture-time` header extension carry them.
public enum NTPTime {
    /// Seconds from the NTP epoch (1900) to the Unix epoch (1970).
    public static let unixEpoch: Int64 = 2_208_988_800

    /// Nanoseconds since 1970 as an NTP timestamp (the seconds wrap every 2^32 s: era 1 starts in
    /// February 2036). Instants before 1970 round towards the past; no value traps.
    public static func ntp(unixNanoseconds nanoseconds: Int64) -> UInt64 {
        var (seconds, remainder) = nanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        if remainder < 0 {
            seconds -= 1
            remainder += 1_000_000_000
        }
        let wire = UInt64(truncatingIfNeeded: seconds + unixEpoch) & 0xFFFF_FFFF
        let fraction = (UInt64(remainder) << 32) / 1_000_000_000
        return wire << 32 | fraction
    }

    /// An NTP timestamp as nanoseconds since 1970; seconds with the top bit clear are in era 1
    /// (after February 2036), as RFC 4330 §3 resolves them (valid 1968–2104).
    public static func unixNanoseconds(ntp: UInt64) -> Int64 {
        let eraSeconds = Int64(ntp >> 32)
        let seconds = (eraSeconds < 0x8000_0000 ? eraSeconds + (1 << 32) : eraSeconds) - unixEpoch
        return seconds * 1_000_000_000 + Int64(((ntp & 0xFFFF_FFFF) * 1_000_000_000) >> 32)
    }
}
