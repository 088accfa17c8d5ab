import Playout
public import PlayoutCore

/// One service-level objective of a swarm run, `--slo 'startupTime.p95<2s,freezeRatio.p99<1%'`:
/// a measure's statistic across viewers, compared with a bound at the end of the run. A breach
/// makes `playout swarm` exit non-zero, for CI.
///
/// - The measure is a ``ViewerSnapshot/measures`` name (`startupTime`, `renderedRatio`,
///   `freezeRatio`, `endToEndLatency`, `jitterBufferDelay`, `framesPerSecond`, `bitrate`,
///   `packetsLost`, `nackCount`, `startup.ice_connected` …; `startup`, `rebufferingRatio` and
///   `latency` are accepted for `startupTime`, `freezeRatio` and `endToEndLatency`) followed by
///   `.min`, `.p50`, `.p95`, `.p99` or `.max`; or a count of viewers: `failed`, `connected`,
///   `connecting`.
/// - The comparison is `<`, `<=`, `>` or `>=`.
/// - The bound is a number with an optional unit: `ms` or `s` (seconds), `%` (a ratio), `k` or
///   `M` (thousands, millions: bits/s).
///
/// ```swift
/// let objectives = try SwarmObjective.parseList("startupTime.p95<2s,freezeRatio.p99<1%,failed<1")
/// let verdicts = objectives.map { $0.verdict(final) }
/// ```
public struct SwarmObjective: Equatable, Sendable {
    /// How the measured value must compare with the bound.
    public enum Comparison: String, Sendable, CaseIterable {
        case below = "<"
        case atMost = "<="
        case above = ">"
        case atLeast = ">="

        func holds(_ value: Double, _ bound: Double) -> Bool {
            switch self {
            case .below: value < bound
            case .atMost: value <= bound
            case .above: value > bound
            case .atLeast: value >= bound
            }
        }
    }

    /// The objective as written.
    public let text: String
    /// The measure's name (aliases resolved), or a count: `failed`, `connected`, `connecting`.
    public let measure: String
    /// `min`, `p50`, `p95`, `p99` or `max` (nil for a count).
    public let statistic: String?
    public let comparison: Comparison
    /// The bound in the measure's unit (seconds, a ratio, a count, bits/s).
    public let bound: Double

    private static let aliases = ["startup": "startupTime", "rebufferingRatio": "freezeRatio", "latency": "endToEndLatency"]
    private static let counts = ["failed", "connected", "connecting"]
    private static let statistics = ["min", "p50", "p95", "p99", "max"]

    /// Parses one objective, e.g. `startupTime.p95<2s`.
    ///
    /// - Throws: ``PlayoutError`` naming the objective and what is wrong with it.
    public init(parsing text: String) throws(PlayoutError) {
        let trimmed = text.trimmingSpaces
        func refuse(_ why: String) -> PlayoutError {
            PlayoutError(.invalidOption, "--slo \(trimmed): \(why); e.g. startupTime.p95<2s, freezeRatio.p99<1%, failed<1")
        }
        // The longest operator at the first operator character.
        guard let at = trimmed.firstIndex(where: { $0 == "<" || $0 == ">" }) else { throw refuse("no comparison (<, <=, >, >=)") }
        let rest = trimmed[at...]
        let comparison = rest.hasPrefix("<=") ? Comparison.atMost : rest.hasPrefix(">=") ? .atLeast : rest.hasPrefix("<") ? .below : .above
        let left = String(trimmed[..<at])
        let right = String(rest.dropFirst(comparison.rawValue.count))
        if Self.counts.contains(left) {
            measure = left
            statistic = nil
        } else {
            guard let dot = left.lastIndex(of: "."), Self.statistics.contains(String(left[left.index(after: dot)...])) else {
                throw refuse("name a statistic across viewers: MEASURE.min, .p50, .p95, .p99 or .max (or failed, connected, connecting)")
            }
            let name = String(left[..<dot])
            guard !name.isEmpty else { throw refuse("no measure before the statistic") }
            measure = Self.aliases[name] ?? name
            statistic = String(left[left.index(after: dot)...])
        }
        guard let bound = Self.value(right) else { throw refuse("the bound \(right.isEmpty ? "is missing" : "'\(right)' is not a number with ms, s, %, k or M")") }
        self.text = trimmed
        self.comparison = comparison
        self.bound = bound
    }

    /// A comma-separated list of objectives (empty: none).
    public static func parseList(_ text: String) throws(PlayoutError) -> [SwarmObjective] {
        var objectives: [SwarmObjective] = []
        for part in text.split(separator: ",") where !part.trimmingSpaces.isEmpty {
            objectives.append(try SwarmObjective(parsing: String(part)))
        }
        return objectives
    }

    /// Its verdict on `sample` (the run's last): the measured value and whether it held. A
    /// measure no viewer had a value of is a breach (nothing was shown to hold).
    public func verdict(_ sample: SwarmSample) -> SLOVerdict {
        let measured: Double? = switch measure {
        case "failed": Double(sample.failed)
        case "connected": Double(sample.connected)
        case "connecting": Double(sample.connecting)
        default: statistic.flatMap { sample[measure]?.value(of: $0) }
        }
        return SLOVerdict(objective: text, measured: measured, bound: bound, held: measured.map { comparison.holds($0, bound) } ?? false)
    }

    private static func value(_ text: String) -> Double? {
        let units: [(String, Double)] = [("ms", 1e-3), ("s", 1), ("%", 1e-2), ("k", 1e3), ("M", 1e6)]
        for (suffix, scale) in units where text.hasSuffix(suffix) {
            return Double(text.dropLast(suffix.count)).flatMap { $0.isFinite ? $0 * scale : nil }
        }
        return Double(text).flatMap { $0.isFinite ? $0 : nil }
    }
}

extension StringProtocol {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
