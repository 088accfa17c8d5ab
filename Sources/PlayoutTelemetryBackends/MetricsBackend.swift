public import PlayoutTelemetry
public import CoreMetrics
import Synchronization

/// Feeds telemetry records into swift-metrics through a `MetricsFactory` the caller passes (it
/// never bootstraps the global `MetricsSystem`), so Prometheus (``PrometheusEndpoint``) or any
/// other metrics backend can show them.
///
/// The names follow the telemetry schema (``TelemetrySchema``, Docs/TelemetrySchema.md) as
/// ``PrometheusTelemetryBackend``'s do, the track kind a dimension:
///
/// | record | metric | dimensions | how |
/// |---|---|---|---|
/// | event | `Counter` `playout_events_total` | `event` (its name), then the tags | incremented per event |
/// | heartbeat, a field the schema counts (`video.framesRendered`) | `Counter` `playout_frames_rendered_total` | `kind`, `session`, then the tags | follows the cumulative value |
/// | heartbeat, any other numeric field (`video.bitrate`, `playoutDelay`) | `Gauge` `playout_bitrate_bits_per_second`, `playout_playout_delay_seconds` (the schema's name; `playout_heartbeat_<snake_case>` for a field it does not know) | (`kind`,) `session`, then the tags | set to the value (booleans 1/0) |
/// | metric | `Gauge` `playout_metric_NAME` | `session`, then the tags | set to its numeric `value` |
///
/// Identities (an SSRC), text fields, the totals that repeat the tracks' and `timeSince…`
/// attributes are not metrics. Tags are the record's, then the backend's. Names are snake_case and keep `a-z 0-9 _ :` (anything
/// else becomes `_`); dimension names keep `A-Z a-z 0-9 _`, do not start with a digit or `__`, and one that
/// repeats an earlier one gets a `_` appended, so every label set is valid Prometheus. Text fields
/// are not metrics and are skipped. Metric objects are created once per series and kept; at most
/// ``maximumSeries`` series are kept, and records for further series are counted in
/// ``droppedSeriesCount`` instead.
///
/// ```swift
/// let endpoint = try PrometheusEndpoint(host: "127.0.0.1", port: 9464)
/// let metrics = MetricsBackend(factory: endpoint.metricsFactory, tags: [TelemetryField("run", .string("r42"))])
/// try metrics.deliver(records)
/// // curl http://127.0.0.1:9464/metrics → playout_events_total{name="play",run="r42"} 1
/// ```
public final class MetricsBackend: TelemetryBackend {
    /// The label of the events counter.
    public static let eventsCounterLabel = "playout_events_total"
    /// The prefix of gauges for heartbeat fields the schema does not know (`playout_heartbeat_paused`).
    public static let heartbeatGaugePrefix = "playout_heartbeat_"
    /// The prefix of user metric gauges.
    public static let metricGaugePrefix = "playout_metric_"
    /// The default bound of series kept: 10,000.
    public static let defaultMaximumSeries = 10_000

    /// `metrics` or the name given, for statistics and messages.
    public let name: String
    /// Tags added to every series after the record's own.
    public let tags: [TelemetryField]
    /// The most series (counters and gauges) kept.
    public let maximumSeries: Int
    /// What the heartbeat fields mean.
    public let schema: TelemetrySchema

    private struct State {
        var counters: [String: Counter] = [:]
        /// The last cumulative value each counter series followed.
        var totals: [String: Double] = [:]
        var gauges: [String: Gauge] = [:]
        var droppedSeries = 0
    }
    private let factory: any MetricsFactory
    private let state = Mutex(State())

    /// A backend creating its metrics with `factory`.
    ///
    /// - Parameters:
    ///   - factory: Where the metrics go (`PrometheusMetricsFactory`, `TestMetrics`, …).
    ///   - tags: Dimensions added to every series after the record's tags.
    ///   - schema: What the heartbeat fields mean (a subscriber's is `TelemetrySchema.subscriber`).
    ///   - maximumSeries: The most series kept (a bound on memory when sessions come and go).
    ///   - name: The backend's name in statistics.
    public init(factory: any MetricsFactory, tags: [TelemetryField] = [], schema: TelemetrySchema = TelemetrySchema(),
                maximumSeries: Int = MetricsBackend.defaultMaximumSeries, name: String = "metrics") {
        self.factory = factory
        self.schema = schema
        self.tags = tags
        self.maximumSeries = max(0, maximumSeries)
        self.name = name
    }

    /// Records that could not be shown because ``maximumSeries`` was reached.
    public var droppedSeriesCount: Int { state.withLock { $0.droppedSeries } }

    /// Counts `batch`'s events and sets its gauges. Never fails.
    public func deliver(_ batch: [TelemetryRecord]) throws(TelemetryDeliveryError) {
        for record in batch {
            switch record.kind {
            case .event:
                let dimensions = Self.dimensions([("event", record.name)], record.tags + tags)
                counter(Self.eventsCounterLabel, dimensions)?.increment()
            case .heartbeat:
                heartbeat(record)
            case .metric:
                guard let value = record[field: "value"], value.number != nil else { continue }
                let dimensions = Self.dimensions([("session", record.sessionId)], record.tags + tags)
                set(value, in: gauge(Self.metricGaugePrefix + Self.metricName(record.name), dimensions))
            }
        }
    }

    /// A heartbeat's numeric fields, named and typed by the schema.
    private func heartbeat(_ record: TelemetryRecord) {
        for field in record.fields {
            let (description, kind, derived, known) = schema.describe(field.name)
            guard !derived, description.type != .identity, field.value.number != nil else { continue }
            guard known || kind != nil || !field.name.hasPrefix("timeSince") else { continue }
            let dimensions = Self.dimensions((kind.map { [("kind", $0)] } ?? []) + [("session", record.sessionId)], record.tags + tags)
            let exported = known ? description.exportedName : "heartbeat_" + TelemetrySchema.snakeCase(description.name)
            if description.type == .counter, let value = field.value.number {
                follow(counter("playout_\(exported)_total", dimensions), key: Self.key("playout_\(exported)_total", dimensions), to: value)
            } else {
                set(field.value, in: gauge("playout_\(exported)", dimensions))
            }
        }
    }

    /// Moves a counter series to the cumulative `value` (from it again when the value went down).
    private func follow(_ counter: Counter?, key: String, to value: Double) {
        guard let counter, value.isFinite, value >= 0 else { return }
        let last = state.withLock { state in
            defer { state.totals[key] = value }
            return state.totals[key] ?? 0
        }
        if value >= last {
            if value > last { counter.increment(by: Int64(value - last)) }
        } else {
            counter.reset()
            counter.increment(by: Int64(value))
        }
    }

    private func set(_ value: TelemetryValue, in gauge: Gauge?) {
        guard let gauge else { return }
        switch value {
        case .int(let number): gauge.record(number)
        case .double(let number): gauge.record(number)
        case .bool(let flag): gauge.record(flag ? 1 : 0)
        case .string: break
        }
    }

    private func counter(_ label: String, _ dimensions: [(String, String)]) -> Counter? {
        let key = Self.key(label, dimensions)
        return state.withLock { state -> Counter? in
            if let counter = state.counters[key] { return counter }
            guard state.counters.count + state.gauges.count < maximumSeries else {
                state.droppedSeries += 1
                return nil
            }
            let counter = Counter(label: label, dimensions: dimensions, factory: factory)
            state.counters[key] = counter
            return counter
        }
    }

    private func gauge(_ label: String, _ dimensions: [(String, String)]) -> Gauge? {
        let key = Self.key(label, dimensions)
        return state.withLock { state -> Gauge? in
            if let gauge = state.gauges[key] { return gauge }
            guard state.counters.count + state.gauges.count < maximumSeries else {
                state.droppedSeries += 1
                return nil
            }
            let gauge = Gauge(label: label, dimensions: dimensions, factory: factory)
            state.gauges[key] = gauge
            return gauge
        }
    }

    private static func key(_ label: String, _ dimensions: [(String, String)]) -> String {
        var key = label
        for (name, value) in dimensions { key += "\u{0}\(name)\u{0}\(value)" }
        return key
    }

    /// `first` then `tags` as dimensions with valid, distinct names.
    static func dimensions(_ first: [(String, String)], _ tags: [TelemetryField]) -> [(String, String)] {
        var used: Set<String> = []
        var result: [(String, String)] = []
        for (name, value) in first + tags.map({ ($0.name, $0.value.description) }) {
            var label = labelName(name)
            while used.contains(label) { label += "_" }
            used.insert(label)
            result.append((label, value))
        }
        return result
    }

    /// `text` as a Prometheus label name: `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__`.
    static func labelName(_ text: String) -> String {
        var name = String(text.unicodeScalars.map { scalar -> Character in
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", "_": Character(scalar)
            default: "_"
            }
        })
        if name.isEmpty || name.first!.isNumber || name.hasPrefix("__") { name = "tag_" + name }
        return name
    }

    /// `text` as the tail of a metric name in Prometheus' snake_case: `framesDecoded` →
    /// `frames_decoded`; `[a-z0-9_:]` kept, anything else `_`.
    static func metricName(_ text: String) -> String {
        guard !text.isEmpty else { return "_" }
        var name = ""
        var previous: Unicode.Scalar?
        for scalar in text.unicodeScalars {
            switch scalar {
            case "A"..."Z":
                if let previous, ("a"..."z").contains(previous) || ("0"..."9").contains(previous) { name += "_" }
                name.unicodeScalars.append(Unicode.Scalar(scalar.value + 32)!)
            case "a"..."z", "0"..."9", "_", ":":
                name.unicodeScalars.append(scalar)
            default:
                name += "_"
            }
            previous = scalar
        }
        return name
    }
}
