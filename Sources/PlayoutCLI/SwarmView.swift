#if canImport(Glibc)
import Glibc
#endif
import Playout
import PlayoutCore
import PlayoutSwarm

/// What `playout swarm` writes: a `"swarm"` JSON line per interval and a `"summary"` (with
/// `--json`, or when stdout is not a terminal), else a one-screen live view updated in place and
/// a summary table.
final class SwarmView: Sendable {
    let title: String
    let json: Bool
    private let viewLines = LockedValue(0)

    /// The measures the live view and the table show (their units are ``SwarmMeasure``'s).
    static let shown = [
        "startupTime", "renderedRatio", "freezeRatio", "freezeCount", "endToEndLatency", "jitterBufferDelay", "framesPerSecond", "bitrate",
        "packetsLost", "nackCount", "framesDecoded",
    ]

    /// `value` of a measure in `unit` as the live view shows it: `412 ms`, `99.50 %`, `29.9`, `2.5 Mbit/s`.
    static func text(_ value: Double, _ unit: SwarmMeasure.Unit) -> String {
        switch unit {
        case .seconds: fixed(value * 1_000, 0) + " ms"
        case .ratio: fixed(value * 100, 2) + " %"
        case .count: fixed(value, 0)
        case .framesPerSecond: fixed(value, 1)
        case .bitsPerSecond: LiveView.bitrate(value)
        }
    }

    init(title: String, json: Bool) {
        self.title = title
        self.json = json
    }

    /// One interval's aggregate.
    func show(_ sample: SwarmSample) {
        if json {
            writeOut(SwarmJSON.line(sample) + "\n")
            return
        }
        let lines = Self.lines(sample, title: "\(title)  t=\(fixed(sample.elapsed.seconds, 1)) s")
        viewLines.withLock { count in
            var text = count > 0 ? "\u{1B}[\(count)A" : ""
            for line in lines { text += "\u{1B}[2K" + line + "\n" }
            count = lines.count
            writeOut(text)
        }
    }

    /// The final aggregate, the SLO verdicts and what the run cost.
    func summary(_ final: SwarmSample, run: String, shard: SwarmShard, sessions: Int, memoryPerViewer: Int?, verdicts: [SLOVerdict], warnings: [String]) {
        if json {
            var extra: [(String, String)] = [
                ("run", SwarmJSON.string(run)), ("shard", "\(shard.index)"), ("shards", "\(shard.count)"), ("sessions", "\(sessions)"),
                ("memoryPerViewer", memoryPerViewer.map { "\($0)" } ?? "null"),
            ]
            if !verdicts.isEmpty { extra.append(("slo", SwarmJSON.verdicts(verdicts))) }
            if !warnings.isEmpty { extra.append(("warnings", "[" + warnings.map(SwarmJSON.string).joined(separator: ",") + "]")) }
            writeOut(SwarmJSON.line(final, type: "summary", extra: extra) + "\n")
            return
        }
        var lines = Self.lines(final, title: "\(title) summary: run \(run), shard \(shard.index)/\(shard.count), \(fixed(final.elapsed.seconds, 1)) s")
        lines.append("sessions \(sessions) (\(final.viewers) viewers; more with churn)")
        if let memoryPerViewer { lines.append("memory per viewer  \(fixed(Double(memoryPerViewer) / 1_048_576, 2)) MiB") }
        for verdict in verdicts {
            lines.append("SLO \(verdict.objective)  \(verdict.held ? "held" : "BREACHED")  (measured \(verdict.measured.map { QoSJSONWriter.number($0) } ?? "nothing"))")
        }
        writeOut(lines.joined(separator: "\n") + "\n")
    }

    static func lines(_ sample: SwarmSample, title: String) -> [String] {
        var lines = [
            title,
            "viewers \(sample.viewers): connected \(sample.connected), connecting \(sample.connecting), failed \(sample.failed), ended \(sample.ended)",
            padded("", 20) + ["min", "p50", "p95", "p99", "max"].map { padded($0, 14) }.joined(),
        ]
        for name in shown {
            guard let spread = sample[name] else { continue }
            let unit = SwarmMeasure.named(name).unit
            lines.append(padded(name, 20) + [spread.min, spread.p50, spread.p95, spread.p99, spread.max].map { padded(text($0, unit), 14) }.joined())
        }
        let tester = sample.tester
        lines.append(
            "tester  CPU \(fixed(tester.cpuCores, 2)) of \(tester.cores) cores, \(fixed(Double(tester.residentBytes) / 1_048_576, 0)) MiB, "
                + "late polls \(tester.latePolls), render error p99 \(tester.renderErrorP99.map { text($0, .seconds) } ?? "–"), "
                + "telemetry dropped \(tester.droppedTelemetry)" + (tester.saturated ? "  SATURATED: the tester is the bottleneck" : ""))
        return lines
    }
}

/// The process's environment variables.
func currentEnvironment() -> [String: String] {
    var environment: [String: String] = [:]
    var entry = environ
    while let pointer = entry.pointee {
        let text = String(cString: pointer)
        if let equals = text.firstIndex(of: "=") { environment[String(text[..<equals])] = String(text[text.index(after: equals)...]) }
        entry += 1
    }
    return environment
}

/// Now, as an ISO 8601 UTC text (`2026-11-27T15:30:00Z`).
func isoNow() -> String {
    var now = time(nil)
    var parts = tm()
    gmtime_r(&now, &parts)
    func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
    return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
}
