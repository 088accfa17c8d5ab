import PlayoutCore
public import PlayoutTelemetry

/// OpenAVT's New Relic backend (`OAVTBackendNewrelic()`, guide "Choosing a Backend"): each event
/// becomes a New Relic custom event of type `OAVT` whose attributes are the event's attributes
/// plus `actionName` (the action's name); each metric becomes a metric with its name, category
/// `OAVT` and value — the two calls OpenAVT makes on the New Relic agent
/// (`recordCustomEvent(_:attributes:)`, `recordMetric(withName:category:value:)`).
///
/// The agent is an ``OpenAVTNewRelicCollector``: it keeps what would have been recorded and
/// writes it as New Relic's JSON (``OpenAVTNewRelicCollector/eventsJSON()``, an Event API insert
/// payload), so a test asserts the exact shape. Nothing is sent over the network: Playout has no
/// New Relic agent on Linux (the guide requires the Mobile Agent to be installed); post the JSON
/// to the Event API yourself if you need it there.
///
/// ```swift
/// let backend = OpenAVTNewRelicBackend()
/// let instrument = OpenAVTInstrument(engine: engine, hub: OpenAVTHubCore(), metricalc: OpenAVTMetricalcCore(), backend: backend)
/// // …
/// backend.collector.events.first?.attributes["actionName"]   // .string("StreamLoad")
/// ```
public final class OpenAVTNewRelicBackend: OpenAVTBackend {
    /// OpenAVT's event type and metric category: `OAVT`.
    public static let defaultEventType = "OAVT"

    /// Whether events are recorded.
    public let useEvents: Bool
    /// Whether metrics are recorded.
    public let useMetrics: Bool
    /// The custom events' type (OpenAVT's `buildEventType`).
    public let eventType: String
    /// The metrics' category (OpenAVT's `buildMetricCategory`).
    public let metricCategory: String
    /// What was recorded.
    public let collector: OpenAVTNewRelicCollector

    /// A backend recording events (`useEvents`) and metrics (`useMetrics`) into `collector`.
    public init(
        useEvents: Bool = true, useMetrics: Bool = true, eventType: String = defaultEventType, metricCategory: String = defaultEventType,
        collector: OpenAVTNewRelicCollector = OpenAVTNewRelicCollector()
    ) {
        self.useEvents = useEvents
        self.useMetrics = useMetrics
        self.eventType = eventType
        self.metricCategory = metricCategory
        self.collector = collector
    }

    /// Records `event` as a custom event: its attributes and `actionName`.
    public func sendEvent(event: OpenAVTEvent) {
        guard useEvents else { return }
        var attributes = event.getDictionary()
        attributes["actionName"] = .string(event.action.name)
        collector.recordCustomEvent(eventType, attributes: attributes)
    }

    /// Records `metric` with its name, the category and its value.
    public func sendMetric(metric: OpenAVTMetric) {
        guard useMetrics else { return }
        collector.recordMetric(withName: metric.name, category: metricCategory, value: metric.value)
    }
}

/// Why the New Relic agent refused a custom event.
public enum OpenAVTNewRelicError: Error, Equatable, Sendable {
    /// The event type is empty, longer than 255 bytes, or has a character other than ASCII
    /// letters, digits, `_`, `:` and space.
    case invalidEventType(String)
    /// An attribute name is empty or longer than 255 bytes.
    case invalidAttributeName(String)
    /// More attributes than New Relic keeps on an event.
    case tooManyAttributes(count: Int, maximum: Int)
    /// A string value longer than New Relic keeps.
    case valueTooLong(attribute: String, bytes: Int, maximum: Int)
}

/// Stands in for the New Relic agent: keeps the custom events and metrics an
/// ``OpenAVTNewRelicBackend`` records (bounded: past ``capacity`` the oldest go, counted), checks
/// each event as the agent does, and writes them as JSON. Thread-safe.
public final class OpenAVTNewRelicCollector: Sendable {
    /// One custom event: its type and attributes.
    public struct CustomEvent: Sendable, Hashable {
        /// The event type (`OAVT`).
        public var eventType: String
        /// Its attributes, `actionName` among them.
        public var attributes: [String: TelemetryValue]

        /// A custom event.
        public init(eventType: String, attributes: [String: TelemetryValue]) {
            self.eventType = eventType
            self.attributes = attributes
        }
    }

    /// One metric.
    public struct Metric: Sendable, Hashable {
        /// The metric's name.
        public var name: String
        /// Its category (`OAVT`).
        public var category: String
        /// Its value.
        public var value: TelemetryValue

        /// A metric.
        public init(name: String, category: String, value: TelemetryValue) {
            self.name = name
            self.category = category
            self.value = value
        }
    }

    /// Custom events and metrics kept by default.
    public static let defaultCapacity = 10_000
    /// New Relic's limits on a custom event: 254 attributes, names of 255 bytes, string values of
    /// 4,096 bytes.
    public static let maximumAttributes = 254
    /// The longest event type or attribute name, bytes.
    public static let maximumNameBytes = 255
    /// The longest string value, bytes.
    public static let maximumValueBytes = 4_096

    private struct State {
        var events: [CustomEvent] = []
        var metrics: [Metric] = []
        var droppedEvents = 0
        var droppedMetrics = 0
        var refused: [OpenAVTNewRelicError] = []
    }

    /// Items of each kind kept.
    public let capacity: Int
    private let state = LockedValue(State())

    /// A collector keeping at most `capacity` events and as many metrics.
    public init(capacity: Int = OpenAVTNewRelicCollector.defaultCapacity) {
        self.capacity = max(1, capacity)
    }

    /// The custom events recorded, oldest first.
    public var events: [CustomEvent] { state.withLock { $0.events } }
    /// The metrics recorded, oldest first.
    public var metrics: [Metric] { state.withLock { $0.metrics } }
    /// Custom events dropped past ``capacity``.
    public var droppedEvents: Int { state.withLock { $0.droppedEvents } }
    /// Metrics dropped past ``capacity``.
    public var droppedMetrics: Int { state.withLock { $0.droppedMetrics } }
    /// Why each refused custom event was refused (the agent's `false`), oldest first (at most
    /// ``capacity``).
    public var refusals: [OpenAVTNewRelicError] { state.withLock { $0.refused } }

    /// Records a custom event, as the agent's `recordCustomEvent(_:attributes:)`: false (and a
    /// refusal) when New Relic would refuse it.
    @discardableResult
    public func recordCustomEvent(_ eventType: String, attributes: [String: TelemetryValue]) -> Bool {
        do throws(OpenAVTNewRelicError) {
            try Self.validate(eventType: eventType, attributes: attributes)
        } catch {
            state.withLock { state in
                if state.refused.count == capacity { state.refused.removeFirst() }
                state.refused.append(error)
            }
            return false
        }
        state.withLock { state in
            Self.append(CustomEvent(eventType: eventType, attributes: attributes), to: &state.events, capacity: capacity, dropped: &state.droppedEvents)
        }
        return true
    }

    /// Records a metric, as the agent's `recordMetric(withName:category:value:)`.
    public func recordMetric(withName name: String, category: String, value: TelemetryValue) {
        state.withLock { state in
            Self.append(Metric(name: name, category: category, value: value), to: &state.metrics, capacity: capacity, dropped: &state.droppedMetrics)
        }
    }

    private static func append<Item>(_ item: Item, to items: inout [Item], capacity: Int, dropped: inout Int) {
        if items.count == capacity {
            items.removeFirst()
            dropped += 1
        }
        items.append(item)
    }

    /// Checks a custom event against New Relic's rules.
    public static func validate(eventType: String, attributes: [String: TelemetryValue]) throws(OpenAVTNewRelicError) {
        let typeBytes = eventType.utf8
        let allowed = { (byte: UInt8) in
            byte.isASCIIUppercase || byte.isASCIILowercase || byte.isASCIIDigit || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":")
                || byte == UInt8(ascii: " ")
        }
        guard !typeBytes.isEmpty, typeBytes.count <= maximumNameBytes, typeBytes.allSatisfy(allowed) else {
            throw .invalidEventType(String(eventType.prefix(64)))
        }
        guard attributes.count <= maximumAttributes else { throw .tooManyAttributes(count: attributes.count, maximum: maximumAttributes) }
        for (name, value) in attributes.sorted(by: { $0.key < $1.key }) {
            guard !name.utf8.isEmpty, name.utf8.count <= maximumNameBytes else { throw .invalidAttributeName(String(name.prefix(64))) }
            if case .string(let string) = value, string.utf8.count > maximumValueBytes {
                throw .valueTooLong(attribute: name, bytes: string.utf8.count, maximum: maximumValueBytes)
            }
        }
    }

    /// The custom events as a New Relic Event API insert payload: a JSON array with one object per
    /// event, `eventType` first, then the attributes by name. Non-finite numbers are `null`.
    ///
    /// ```
    /// [{"eventType":"OAVT","actionName":"Start","countStarts":1,"senderId":"i-0"}]
    /// ```
    public func eventsJSON() -> String {
        let objects = events.map { event in
            "{" + ([("eventType", TelemetryValue.string(event.eventType))] + event.attributes.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
                .map { "\(Self.json($0.0)):\(Self.json($0.1))" }.joined(separator: ",") + "}"
        }
        return "[" + objects.joined(separator: ",") + "]"
    }

    /// The metrics as a JSON array of `{"name":…,"category":…,"value":…}`, the agent call's
    /// arguments.
    public func metricsJSON() -> String {
        "[" + metrics.map { "{\"name\":\(Self.json($0.name)),\"category\":\(Self.json($0.category)),\"value\":\(Self.json($0.value))}" }
            .joined(separator: ",") + "]"
    }

    /// `value` as JSON.
    static func json(_ value: TelemetryValue) -> String {
        switch value {
        case .int(let integer): String(integer)
        case .double(let double): double.isFinite ? "\(double)" : "null"
        case .bool(let bool): bool ? "true" : "false"
        case .string(let string): json(string)
        }
    }

    /// `string` as a JSON string (quotes, backslashes and control characters escaped).
    static func json(_ string: String) -> String {
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
