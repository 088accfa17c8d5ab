import Playout

/// Writes a swarm's aggregates as the JSON Lines of DESIGN.md's command-line contract: a
/// `"swarm"` object per interval and a last `"summary"` — `"t"`, `"viewers"`, `"connected"`,
/// `"connecting"`, `"failed"`, `"ended"`, then per measure an object of percentiles across
/// viewers (`min`, `p50`, `p95`, `p99`, `max`, and `count`, the viewers that had a value), then
/// `"tester"` (its CPU in cores, cores, late polls, render error p99, dropped telemetry, resident
/// bytes, saturated).
public enum SwarmJSON {
    /// The line of `sample`; `type` is `"swarm"` or `"summary"`, `extra` are JSON values already
    /// written, appended in order (the summary's `"run"`, `"slo"` …).
    public static func line(_ sample: SwarmSample, type: String = "swarm", extra: [(String, String)] = []) -> String {
        var fields: [(String, String)] = [
            ("type", string(type)), ("t", number(sample.elapsed.seconds)), ("viewers", "\(sample.viewers)"),
            ("connected", "\(sample.connected)"), ("connecting", "\(sample.connecting)"), ("failed", "\(sample.failed)"), ("ended", "\(sample.ended)"),
        ]
        for (name, spread) in sample.measures { fields.append((name, Self.spread(spread))) }
        let tester = sample.tester
        fields.append(("tester", object([
            ("cpu", number(tester.cpuCores)), ("cores", "\(tester.cores)"), ("latePolls", "\(tester.latePolls)"),
            ("renderErrorP99", tester.renderErrorP99.map(number) ?? "null"), ("droppedTelemetry", "\(tester.droppedTelemetry)"),
            ("residentBytes", "\(tester.residentBytes)"), ("saturated", tester.saturated ? "true" : "false"),
        ])))
        return object(fields + extra)
    }

    /// A measure's spread across viewers: `{"min":…,"p50":…,"p95":…,"p99":…,"max":…,"count":…}`
    /// (`count`: the viewers that had a value).
    public static func spread(_ spread: Spread) -> String {
        object([
            ("min", number(spread.min)), ("p50", number(spread.p50)), ("p95", number(spread.p95)), ("p99", number(spread.p99)),
            ("max", number(spread.max)), ("count", "\(spread.count)"),
        ])
    }

    /// The SLO verdicts as a JSON array: `[{"objective":…,"measured":…,"bound":…,"held":…}]`.
    public static func verdicts(_ verdicts: [SLOVerdict]) -> String {
        "[" + verdicts.map { verdict in
            object([
                ("objective", string(verdict.objective)), ("measured", verdict.measured.map(number) ?? "null"), ("bound", number(verdict.bound)),
                ("held", verdict.held ? "true" : "false"),
            ])
        }.joined(separator: ",") + "]"
    }

    /// A JSON object of fields already written.
    public static func object(_ fields: [(String, String)]) -> String {
        "{" + fields.map { string($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }

    /// A JSON number (non-finite: `null`).
    public static func number(_ value: Double) -> String {
        QoSJSONWriter.number(value)
    }

    /// A JSON string, escaped.
    public static func string(_ text: String) -> String {
        QoSJSONWriter.string(text)
    }
}
