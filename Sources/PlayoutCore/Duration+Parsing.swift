/// Why a duration string such as `"230ms"` could not be parsed. Each case's description says what
/// to type instead.
public enum DurationParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The text was empty.
    case empty
    /// A number without a unit, e.g. `"230"`.
    case missingUnit(String)
    /// An unknown unit, e.g. `"230 parsecs"`.
    case unknownUnit(String)
    /// The number part is malformed, e.g. `"1.2.3s"`.
    case invalidNumber(String)
    /// A negative duration where only non-negative ones make sense.
    case negative(String)
    /// More than ``Duration/maximumParsed`` (100 years).
    case outOfRange(String)

    public var description: String {
        switch self {
        case .empty:
            return "empty duration: give a number and a unit, e.g. 230ms or 1.5s"
        case .missingUnit(let text):
            return "duration '\(text)' has no unit: write \(text)ms or \(text)s"
        case .unknownUnit(let text):
            return "duration '\(text)' has an unknown unit: use ns, us, ms, s, m or h (e.g. 230ms, 1.5s)"
        case .invalidNumber(let text):
            return "duration '\(text)' is not a number with a unit, e.g. 230ms or 1.5s"
        case .negative(let text):
            return "duration '\(text)' is negative: durations here are 0 or more"
        case .outOfRange(let text):
            return "duration '\(text)' is too large: at most \(Duration.maximumParsed.compactDescription) (100 years)"
        }
    }
}

extension Duration {
    /// The longest duration ``init(parsing:)`` accepts: 100 years (36,525 days), far inside what
    /// the monotonic clock's nanoseconds hold, so that now + a parsed duration never overflows.
    public static let maximumParsed: Duration = .seconds(36_525 * 86_400)

    /// The units accepted by ``init(parsing:)``, with their length in nanoseconds.
    static let parsingUnits: [(suffix: String, nanoseconds: Int64)] = [
        ("ns", 1), ("us", 1_000), ("µs", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000),
        ("min", 60_000_000_000), ("m", 60_000_000_000), ("h", 3_600_000_000_000),
    ]

    /// Parses a duration as written on the command line: a decimal number and a unit, e.g.
    /// `230ms`, `1.5s`, `250us`, `2m`. Exact to the nanosecond (no floating point): `"0.1s"` is
    /// exactly 100 ms. Surrounding spaces and a space before the unit are allowed; negative values
    /// are rejected.
    public init(parsing text: some StringProtocol) throws(DurationParseError) {
        let trimmed = text.trimmingWhitespace
        guard !trimmed.isEmpty else { throw .empty }
        let numberEnd = trimmed.firstIndex { !($0.isASCII && ($0.isNumber || $0 == ".")) } ?? trimmed.endIndex
        if trimmed.first == "-" { throw .negative(trimmed) }
        let number = trimmed[..<numberEnd]
        let unit = trimmed[numberEnd...].trimmingWhitespace
        guard !number.isEmpty else { throw .invalidNumber(trimmed) }
        guard !unit.isEmpty else { throw .missingUnit(trimmed) }
        guard let scale = Duration.parsingUnits.first(where: { $0.suffix == unit })?.nanoseconds else {
            throw .unknownUnit(trimmed)
        }
        let parts = number.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count <= 2, parts.allSatisfy({ $0.allSatisfy(\.isASCII) }),
              !(parts.count == 2 && parts[0].isEmpty && parts[1].isEmpty)
        else { throw .invalidNumber(trimmed) }
        // Whole part.
        var total: Int64 = 0
        for digit in parts[0] {
            let (times10, o1) = total.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(Int64(digit.wholeNumberValue!))
            guard !o1, !o2 else { throw .outOfRange(trimmed) }
            total = sum
        }
        let (wholeNanos, o3) = total.multipliedReportingOverflow(by: scale)
        guard !o3 else { throw .outOfRange(trimmed) }
        // Fractional part, rounded to the nearest nanosecond.
        var fraction: Int64 = 0
        if parts.count == 2 {
            var place = scale
            var remainder: Int64 = 0  // numerator over `scale`-sized tenths, for rounding
            for digit in parts[1] {
                let value = Int64(digit.wholeNumberValue!)
                if place >= 10 {
                    place /= 10
                    fraction += value * place
                } else {
                    // Beyond nanosecond precision: round on the first dropped digit.
                    remainder = value
                    break
                }
            }
            if remainder >= 5 { fraction += 1 }
        }
        let (nanos, o4) = wholeNanos.addingReportingOverflow(fraction)
        guard !o4, nanos <= Duration.maximumParsed.nanoseconds else { throw .outOfRange(trimmed) }
        self = .nanoseconds(nanos)
    }

    /// The shortest exact form in the syntax ``init(parsing:)`` reads: `230ms`, `1.5s`, `0s`,
    /// `250us`, `40ns`. Parsing it gives back the same duration.
    public var compactDescription: String {
        let nanos = nanoseconds
        if nanos == 0 { return "0s" }
        let sign = nanos < 0 ? "-" : ""
        let magnitude = nanos.magnitude
        func decimal(_ value: UInt64, scale: UInt64, unit: String) -> String {
            let whole = value / scale
            var fraction = value % scale
            guard fraction != 0 else { return "\(sign)\(whole)\(unit)" }
            var digits = String(scale).count - 1
            while fraction % 10 == 0 {
                fraction /= 10
                digits -= 1
            }
            let text = String(fraction)
            return "\(sign)\(whole)." + String(repeating: "0", count: digits - text.count) + text + unit
        }
        switch magnitude {
        case 1_000_000_000...: return decimal(magnitude, scale: 1_000_000_000, unit: "s")
        case 1_000_000...: return decimal(magnitude, scale: 1_000_000, unit: "ms")
        case 1_000...: return decimal(magnitude, scale: 1_000, unit: "us")
        default: return "\(sign)\(magnitude)ns"
        }
    }
}

extension StringProtocol {
    var trimmingWhitespace: String {
        var text = Substring(self)
        while text.first?.isWhitespace == true { text.removeFirst() }
        while text.last?.isWhitespace == true { text.removeLast() }
        return String(text)
    }
}
