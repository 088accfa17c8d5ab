import Playout

/// A swarm run read back from its store: one outcome per viewer across all shards, with what
/// was left out — the duplicates a retried shard wrote and the records that could not be read —
/// and the aggregate `playout swarm report` prints (``table()``, ``jsonLine()``).
///
/// A viewer written more than once (a retried Slurm task or Kubernetes pod writes its viewers
/// again, later) counts once: its latest record is kept, the others are duplicates. Viewers are
/// told apart by their global number, so one written by two shards is a duplicate too.
///
/// States: a viewer whose state starts with `failed` is failed, one that starts with
/// `connecting` or `reconnecting` is connecting, any other (`playing`, `ended` …) connected.
///
/// ```swift
/// let run = try SwarmStore.readRun(from: "victoria:http://127.0.0.1:8428", run: "nightly-42")
/// print(run.viewers.count, run.viewersPerShard, run.duplicates)   // 30 [0: 10, 1: 10, 2: 10] 0
/// ```
public struct SwarmRun: Equatable, Sendable {
    /// The run id.
    public var run: String
    /// The store it was read from, as given (`--from`).
    public var source: String
    /// One outcome per viewer, by viewer number.
    public var viewers: [ViewerOutcome]
    /// Records beyond the first of the same viewer (left out of everything else).
    public var duplicates: Int
    /// The viewers written more than once, by number.
    public var duplicatedViewers: [Int]
    /// Records the store held for the run that lacked a field or had one of the wrong type.
    public var unreadable: Int

    /// A run from the records read (any order; `time` in nanoseconds decides which of a
    /// viewer's records is kept: the latest, the first read of equal times).
    public init(run: String, source: String, records: [(outcome: ViewerOutcome, time: Int64)], unreadable: Int = 0) {
        self.run = run
        self.source = source
        self.unreadable = unreadable
        var latest: [Int: (outcome: ViewerOutcome, time: Int64)] = [:]
        var counts: [Int: Int] = [:]
        for record in records {
            counts[record.outcome.viewer, default: 0] += 1
            if let kept = latest[record.outcome.viewer], kept.time >= record.time { continue }
            latest[record.outcome.viewer] = record
        }
        viewers = latest.values.map(\.outcome).sorted { $0.viewer < $1.viewer }
        duplicates = records.count - latest.count
        duplicatedViewers = counts.filter { $0.value > 1 }.map(\.key).sorted()
    }

    /// How many viewers each shard ran (shards with none are not listed).
    public var viewersPerShard: [Int: Int] {
        viewers.reduce(into: [:]) { $0[$1.shard, default: 0] += 1 }
    }

    /// Viewers whose state starts with `failed`.
    public var failed: Int { viewers.count { Self.isFailed($0.state) } }
    /// Viewers still connecting (or reconnecting) when they were written.
    public var connecting: Int { viewers.count { Self.isConnecting($0.state) } }
    /// Viewers neither failed nor connecting.
    public var connected: Int { viewers.count - failed - connecting }

    /// The aggregate across the run's viewers (``ViewerOutcome/measures(_:)``).
    public var measures: [(name: String, spread: Spread)] { ViewerOutcome.measures(viewers) }

    static func isFailed(_ state: String) -> Bool { state.lowercased().hasPrefix("failed") }
    static func isConnecting(_ state: String) -> Bool {
        let lowered = state.lowercased()
        return lowered.hasPrefix("connecting") || lowered.hasPrefix("reconnecting")
    }

    /// The table `playout swarm report` prints: the viewers in total and per shard, connected /
    /// connecting / failed, duplicates, then one row per measure with its min, p50, p95, p99 and
    /// max across viewers (seconds as ms, ratios as %, bits/s as kbit/s) and how many viewers had
    /// a value.
    public func table() -> String {
        var lines: [String] = []
        let shards = viewersPerShard.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
        lines.append("run \(run) from \(source): \(viewers.count) viewers in \(viewersPerShard.count) shards (\(shards))")
        var counts = "connected \(connected), connecting \(connecting), failed \(failed), duplicates \(duplicates)"
        if !duplicatedViewers.isEmpty {
            let listed = duplicatedViewers.prefix(10).map(String.init).joined(separator: ", ")
            counts += " (viewers \(listed)\(duplicatedViewers.count > 10 ? ", …" : ""))"
        }
        if unreadable > 0 { counts += ", unreadable records \(unreadable)" }
        lines.append(counts)
        lines.append("")
        let headers = ["measure", "viewers", "min", "p50", "p95", "p99", "max"]
        var rows: [[String]] = []
        for (name, spread) in measures {
            let unit = SwarmMeasure.named(name).unit
            let values = [spread.min, spread.p50, spread.p95, spread.p99, spread.max].map { Self.format($0, unit) }
            rows.append(["\(name) \(Self.unitLabel(unit))".trimmingSpaces(), "\(spread.count)"] + values)
        }
        var widths = headers.map(\.count)
        for row in rows { for (index, value) in row.enumerated() { widths[index] = Swift.max(widths[index], value.count) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, value in
                let padding = String(repeating: " ", count: widths[index] - value.count)
                return index == 0 ? value + padding : padding + value
            }.joined(separator: "  ")
        }
        lines.append(line(headers))
        lines.append(line(widths.map { String(repeating: "─", count: $0) }))
        lines += rows.map(line)
        if rows.isEmpty { lines.append("(no measure has a value)") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The `--json` line: `{"type":"summary","run":…,"viewers":N,"shards":{"0":n0,…},
    /// "duplicates":D,"failed":F,"connecting":C,"connected":K,"unreadable":U,"<measure>":{"min":…,
    /// "p50":…,"p95":…,"p99":…,"max":…,"count":…},…}` in the measures' own units (seconds, ratios,
    /// bits/s), each measure as the swarm's own lines write it (``SwarmJSON/spread(_:)``), without a
    /// final newline.
    public func jsonLine() -> String {
        var fields: [(String, String)] = [
            ("type", SwarmJSON.string("summary")), ("run", SwarmJSON.string(run)), ("viewers", "\(viewers.count)"),
            ("shards", "{" + viewersPerShard.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"),
            ("duplicates", "\(duplicates)"), ("failed", "\(failed)"), ("connecting", "\(connecting)"), ("connected", "\(connected)"),
            ("unreadable", "\(unreadable)"),
        ]
        for (name, spread) in measures { fields.append((name, SwarmJSON.spread(spread))) }
        return SwarmJSON.object(fields)
    }

    /// `value` in the table's unit: ms with 1 decimal, % with 2, kbit/s with 1, counts whole (or
    /// with 1 decimal when not whole).
    static func format(_ value: Double, _ unit: SwarmMeasure.Unit) -> String {
        switch unit {
        case .seconds: fixed(value * 1_000, 1)
        case .ratio: fixed(value * 100, 2)
        case .bitsPerSecond: fixed(value / 1_000, 1)
        case .framesPerSecond: fixed(value, 1)
        case .count: value == value.rounded() ? fixed(value, 0) : fixed(value, 1)
        }
    }

    static func unitLabel(_ unit: SwarmMeasure.Unit) -> String {
        switch unit {
        case .framesPerSecond: "fps"
        case .seconds: "ms"
        case .ratio: "%"
        case .bitsPerSecond: "kbit/s"
        case .count: ""
        }
    }
}

extension String {
    /// `self` without spaces at the end.
    func trimmingSpaces() -> String {
        var text = self
        while text.hasSuffix(" ") { text.removeLast() }
        return text
    }
}
