public import PlayoutCore

/// A ``Subscriber/limitBandwidth(_:)`` planned ahead: `bitsPerSecond` from `at` after the start,
/// released `hold` later (or held to the end) — the `--override` timetable for bandwidth. The
/// command line writes it `RATE@AT[/FOR]`, e.g. `1M@5s/10s`.
public struct ScheduledBandwidthLimit: Equatable, Sendable, CustomStringConvertible {
    /// The limit, bits per second.
    public var bitsPerSecond: UInt64
    /// When, after the start.
    public var at: Duration
    /// How long it is held (nil: until the end).
    public var hold: Duration?

    /// A limit of `bitsPerSecond` set `at` after the start and released `hold` later (nil: held
    /// to the end).
    public init(bitsPerSecond: UInt64, at: Duration, hold: Duration? = nil) {
        self.bitsPerSecond = bitsPerSecond
        self.at = at
        self.hold = hold
    }

    /// Parses `RATE@AT[/FOR]`: a rate in bits per second with an optional `k`, `M` or `G`, and
    /// durations with `ms` or `s`.
    ///
    /// - Throws: ``PlayoutError`` with code `invalidOption` and an example of the right form.
    public init(parsing text: String) throws(PlayoutError) {
        let example = "write RATE@AT[/FOR], e.g. 1M@5s/10s (1 Mbit/s, 5 s after start, for 10 s) or 800k@2s"
        let (value, at, hold) = try ScheduledOverride.timetableEntry(text, what: "a bandwidth limit", example: example)
        guard let rate = Self.bitsPerSecond(parsing: value) else {
            throw PlayoutError(.invalidOption, "'\(text)' is not a bandwidth limit: RATE '\(value)' is not 1 to 1T bits per second; \(example)")
        }
        bitsPerSecond = UInt64(rate)
        self.at = at
        self.hold = hold
    }

    /// A bit rate as the command line writes it — a number with an optional `k`, `M` (or `m`), `G`
    /// or `T`: `2.5M`, `800k`, `1234567`, `1T` — from 1 to 10^12 (1T) bits per second; nil otherwise.
    public static func bitsPerSecond(parsing text: Substring) -> Int? {
        var number = text
        var multiplier = 1.0
        if let last = number.last, let factor = ["k": 1e3, "K": 1e3, "M": 1e6, "m": 1e6, "G": 1e9, "T": 1e12][last] {
            multiplier = factor
            number.removeLast()
        }
        guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), let value = Double(number),
              value.isFinite, value * multiplier >= 1, value * multiplier <= 1e12
        else { return nil }
        return Int(value * multiplier)
    }

    /// A bit rate in its shortest form with at most three decimals: `2.5M`, `800k`, `1234567`
    /// (what ``bitsPerSecond(parsing:)`` reads back).
    public static func text(bitsPerSecond: Int) -> String {
        for (factor, suffix) in [(1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")] where bitsPerSecond >= factor {
            guard bitsPerSecond % (factor / 1_000) == 0 else { continue }
            let whole = bitsPerSecond / factor
            var decimals = String(bitsPerSecond % factor / (factor / 1_000))
            guard decimals != "0" else { return "\(whole)\(suffix)" }
            decimals = String(repeating: "0", count: 3 - decimals.count) + decimals
            while decimals.last == "0" { decimals.removeLast() }
            return "\(whole).\(decimals)\(suffix)"
        }
        return "\(bitsPerSecond)"
    }

    public var description: String {
        "\(Self.text(bitsPerSecond: Int(clamping: bitsPerSecond)))@\(at.compactDescription)" + (hold.map { "/\($0.compactDescription)" } ?? "")
    }
}
