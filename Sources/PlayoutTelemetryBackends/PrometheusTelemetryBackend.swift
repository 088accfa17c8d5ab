public import PlayoutTelemetry
public import Prometheus
import Synchronization

/// Telemetry records as Prometheus metrics by Prometheus' conventions, in a
/// `PrometheusCollectorRegistry` (served by ``PrometheusEndpoint``): `# HELP` and `# TYPE` on every
/// metric, cumulative values as counters named `…_total`, the unit in the name (`_seconds`,
/// `_bytes`; Prometheus' base units, so a bit rate is exposed in bytes per second), the track
/// kind as the `kind` label, identities as labels.
///
/// | record | metric | labels |
/// |---|---|---|
/// | event | counter `playout_events_total` | `event` (its name), then the tags |
/// | heartbeat, a track's counter (`video.framesRendered`) | counter `playout_frames_rendered_total` | `kind`, `session`, then the tags |
/// | heartbeat, a track's gauge (`video.bitrate`, bits/s) | gauge `playout_bitrate_bytes_per_second` (÷ 8) | `kind`, `session`, then the tags |
/// | heartbeat, a track's identity (`video.ssrc`) | gauge `playout_ssrc_info` = 1 | `kind`, `ssrc`, `session`, then the tags |
/// | heartbeat, the session's (`playoutDelay`) | gauge `playout_playout_delay_seconds` | `session`, then the tags |
/// | heartbeat, a field the schema does not know | gauge `playout_heartbeat_<snake_case>` | (`kind`,) `session`, then the tags |
/// | `viewend`'s KPIs (`playing_time`) | gauge `playout_view_playing_time_seconds` | `session`, then the tags |
/// | metric | gauge `playout_metric_<snake_case>` | `session`, then the tags |
///
/// The schema (``TelemetrySchema``) says which field is which; top-level fields that repeat the
/// tracks' (totals, copies) are left out — `sum by (session) (…)` gives a total — and so are
/// text fields and `timeSince…` attributes. A counter takes the heartbeat's cumulative value
/// (it restarts from it when the value went down). At most ``maximumSeries`` series are kept;
/// records for further series, or for a name already used by a metric of another type, are
/// counted in ``droppedSeriesCount``.
///
/// ```swift
/// let endpoint = try PrometheusEndpoint(host: "127.0.0.1", port: 9464)
/// let backend = PrometheusTelemetryBackend(registry: endpoint.registry, schema: .subscriber)   // .subscriber: in Playout
/// let instrument = try TelemetryInstrument(backends: [backend])
/// // curl http://127.0.0.1:9464/metrics → playout_frames_rendered_total{kind="video",session="…"} 300
/// ```
public final class PrometheusTelemetryBackend: TelemetryBackend {
    /// The counter of events.
    public static let eventsCounter = "playout_events_total"
    /// The default bound of series kept: 10,000.
    public static let defaultMaximumSeries = 10_000

    /// `prometheus` or the name given.
    public let name: String
    /// Where the metrics are registered.
    public let registry: PrometheusCollectorRegistry
    /// What the heartbeat fields mean.
    public let schema: TelemetrySchema
    /// Labels added to every series after the record's tags.
    public let tags: [TelemetryField]
    /// The most series kept.
    public let maximumSeries: Int

    private struct State {
        /// Each metric name's type and help, as registered (a later use must match).
        var families: [String: (counter: Bool, help: String)] = [:]
        var counters: [String: (counter: Counter, last: Double)] = [:]
        var gauges: [String: Gauge] = [:]
        /// The identity series in effect per (name, kind, session), set to 0 when it changes.
        var identities: [String: String] = [:]
        var droppedSeries = 0
    }
    private let state = Mutex(State())

    /// Labels added to a series whose record and ``tags`` have none of that name.
    public let defaultTags: [TelemetryField]

    /// A backend registering its metrics in `registry`, reading fields by `schema`; `defaultTags`
    /// (default: this machine's `host`) label the series whose record and `tags` lack them.
    public init(registry: PrometheusCollectorRegistry, schema: TelemetrySchema, tags: [TelemetryField] = [],
                defaultTags: [TelemetryField] = TelemetryField.hostDefaults,
                maximumSeries: Int = PrometheusTelemetryBackend.defaultMaximumSeries, name: String = "prometheus") {
        self.registry = registry
        self.schema = schema
        self.tags = tags
        self.defaultTags = defaultTags
        self.maximumSeries = max(0, maximumSeries)
        self.name = name
    }

    /// Records that could not be shown (``maximumSeries`` reached, or a name taken by another type).
    public var droppedSeriesCount: Int { state.withLock { $0.droppedSeries } }

    /// Counts the events, sets the gauges and counters. Never fails.
    public func deliver(_ batch: [TelemetryRecord]) throws(TelemetryDeliveryError) {
        for record in batch {
            let recordTags = TelemetryField.merging(record.tags + tags, defaults: defaultTags, unlessIn: [])
            switch record.kind {
            case .event:
                increment(Self.eventsCounter, help: "Player events, by name (the Mux vocabulary).", MetricsBackend.dimensions([("event", record.name)], recordTags))
                if record.name == "viewend" { view(record, recordTags) }
            case .heartbeat:
                heartbeat(record, recordTags)
            case .metric:
                guard let value = record[field: "value"]?.number else { continue }
                let name = "playout_metric_" + TelemetrySchema.snakeCase(record.name)
                set(name, help: "The metric \(record.name).", MetricsBackend.dimensions([("session", record.sessionId)], recordTags), to: value)
            }
        }
    }

    private func heartbeat(_ record: TelemetryRecord, _ recordTags: [TelemetryField]) {
        for field in record.fields {
            let (description, kind, derived, known) = schema.describe(field.name)
            guard !derived, !(kind == nil && !known && field.name.hasPrefix("timeSince")) else { continue }
            var first: [(String, String)] = kind.map { [("kind", $0)] } ?? []
            if description.type == .identity {
                guard case .int(let value) = field.value else { continue }
                let label = TelemetrySchema.snakeCase(description.name)
                first.append((label, String(value)))
                first.append(("session", record.sessionId))
                identity("playout_\(description.exportedName)_info", help: description.help, key: "\(label)\u{0}\(kind ?? "")\u{0}\(record.sessionId)",
                         MetricsBackend.dimensions(first, recordTags))
                continue
            }
            guard let number = field.value.number else { continue }
            first.append(("session", record.sessionId))
            let dimensions = MetricsBackend.dimensions(first, recordTags)
            let (exported, value) = Self.baseUnit(known ? description.exportedName : "heartbeat_" + TelemetrySchema.snakeCase(description.name), description, number)
            if description.type == .counter {
                setCounter("playout_\(exported)_total", help: description.help, dimensions, to: value)
            } else {
                set("playout_\(exported)", help: description.help, dimensions, to: value)
            }
        }
    }

    private func view(_ record: TelemetryRecord, _ recordTags: [TelemetryField]) {
        let dimensions = MetricsBackend.dimensions([("session", record.sessionId)], recordTags)
        for field in record.fields {
            guard let description = schema.viewFields[field.name], let number = field.value.number else { continue }
            let (exported, value) = Self.baseUnit(description.exportedName, description, number)
            set("playout_view_\(exported)", help: "Of the view, once it ended: " + description.help, dimensions, to: value)
        }
    }

    // MARK: - Series

    /// Registers `name` as a counter or gauge with `help`, or says it is taken by another.
    private func admit(_ name: String, counter: Bool, help: String, key: String, in state: inout State) -> Bool {
        if let family = state.families[name], family.counter != counter || family.help != help {
            state.droppedSeries += 1
            return false
        }
        let known = counter ? state.counters[key] != nil : state.gauges[key] != nil
        guard known || state.counters.count + state.gauges.count < maximumSeries else {
            state.droppedSeries += 1
            return false
        }
        state.families[name] = (counter, help)
        return true
    }

    private func increment(_ name: String, help: String, _ dimensions: [(String, String)]) {
        let key = Self.key(name, dimensions)
        let counter = state.withLock { state -> Counter? in
            guard admit(name, counter: true, help: help, key: key, in: &state) else { return nil }
            if let existing = state.counters[key] { return existing.counter }
            let counter = registry.makeCounter(descriptor: Self.descriptor(name, help), labels: dimensions)
            state.counters[key] = (counter, 0)
            return counter
        }
        counter?.increment()
    }

    private func setCounter(_ name: String, help: String, _ dimensions: [(String, String)], to value: Double) {
        guard value.isFinite, value >= 0 else { return }
        let key = Self.key(name, dimensions)
        state.withLock { state in
            guard admit(name, counter: true, help: help, key: key, in: &state) else { return }
            let (counter, last) = state.counters[key] ?? (registry.makeCounter(descriptor: Self.descriptor(name, help), labels: dimensions), 0)
            if value >= last {
                if value > last { counter.increment(by: value - last) }
            } else {
                counter.reset()
                counter.increment(by: value)
            }
            state.counters[key] = (counter, value)
        }
    }

    private func set(_ name: String, help: String, _ dimensions: [(String, String)], to value: Double) {
        let key = Self.key(name, dimensions)
        let gauge = state.withLock { state -> Gauge? in
            guard admit(name, counter: false, help: help, key: key, in: &state) else { return nil }
            if let existing = state.gauges[key] { return existing }
            let gauge = registry.makeGauge(descriptor: Self.descriptor(name, help), labels: dimensions)
            state.gauges[key] = gauge
            return gauge
        }
        gauge?.set(to: value)
    }

    /// Sets the info series `dimensions` to 1, and the one it replaces (same `identity`) to 0.
    private func identity(_ name: String, help: String, key identity: String, _ dimensions: [(String, String)]) {
        let key = Self.key(name, dimensions)
        let previous = state.withLock { state -> String? in
            defer { state.identities[identity] = key }
            return state.identities[identity].flatMap { $0 == key ? nil : $0 }
        }
        if let previous { state.withLock { $0.gauges[previous] }?.set(to: 0) }
        set(name, help: help, dimensions, to: 1)
    }

    /// `exported` and `value` in Prometheus' base units: bits per second become bytes per second.
    static func baseUnit(_ exported: String, _ field: TelemetrySchema.Field, _ value: Double) -> (String, Double) {
        guard field.unit == .bitsPerSecond, exported.hasSuffix("_bits_per_second") else { return (exported, value) }
        return (String(exported.dropLast("_bits_per_second".count)) + "_bytes_per_second", value / 8)
    }

    /// `name` whole (its unit already in it) with `help`.
    private static func descriptor(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }

    private static func key(_ name: String, _ dimensions: [(String, String)]) -> String {
        var key = name
        for (label, value) in dimensions { key += "\u{0}\(label)\u{0}\(value)" }
        return key
    }
}
