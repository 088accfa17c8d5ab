import PlayoutCore

/// A value carried by a telemetry record: an attribute, a metric or a QoS field.
///
/// Integers stay integers all the way to the backends (InfluxDB's `i` suffix, JSON without a
/// fraction), so a counter never turns into a float on its way to a database.
public enum TelemetryValue: Sendable, Hashable, CustomStringConvertible {
    /// A whole number (counters, sizes, counts).
    case int(Int64)
    /// A real number (rates, ratios, seconds).
    case double(Double)
    /// Text (identifiers, names, reasons). Boxed, so a value is 9 bytes rather than 17 and a
    /// field 32 rather than 40: numbers are most of what records carry.
    indirect case string(String)
    /// A flag.
    case bool(Bool)

    /// The value as a `Double` when it is a number or a flag (true is 1), else nil.
    public var number: Double? {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        case .bool(let value): value ? 1 : 0
        case .string: nil
        }
    }

    public var description: String {
        switch self {
        case .int(let value): String(value)
        case .double(let value): String(value)
        case .string(let value): value
        case .bool(let value): String(value)
        }
    }
}

/// One named value of a record, in the order the record was built (backends keep that order, so
/// output is deterministic).
public struct TelemetryField: Sendable, Hashable {
    /// The field's name (`framesRendered`, `timeSincePlay`, a user attribute's key …).
    public var name: String
    /// Its value.
    public var value: TelemetryValue

    /// A field `name` = `value`.
    public init(_ name: String, _ value: TelemetryValue) {
        self.name = name
        self.value = value
    }
}

/// One record of the telemetry engine, as every backend receives it: an event of a session
/// (`play`, `rebufferstart`, a user's own action …), a `heartbeat` (a periodic QoS sample) or a
/// user metric.
///
/// Every record carries its session, a gap-free per-session sequence number, the monotonic time
/// (durations come from it only) and the wall time (for databases), the schema version and the
/// user's tags (run id, host, viewer …), so that many subscribers on many machines write into one
/// database and group by run.
public struct TelemetryRecord: Sendable, Hashable {
    /// The version of this record's shape; bumped when a field changes meaning.
    public static let currentSchemaVersion = 1

    /// What a record is.
    public enum Kind: String, Sendable, Hashable {
        /// A player or user event: its name is the event's (`play`, `playing`, `error` …).
        case event
        /// A periodic QoS sample (name `heartbeat`); its fields are the QoS counters.
        case heartbeat
        /// A user metric (name is the metric's, one field `value`).
        case metric
    }

    // Stored in this order, the narrow ones last, so a record is 88 bytes rather than 104.

    /// The session (one view of one video) the record belongs to.
    public var sessionId: String
    /// The event's, heartbeat's or metric's name (lowercase Mux/HTML5 vocabulary for events).
    public var name: String { didSet { vocabulary = TelemetryVocabulary(name) } }
    /// Gap-free sequence number within the session, from 0.
    public var seq: UInt64
    /// Monotonic time of the record, since the engine started.
    public var monotonic: Duration {
        get { .nanoseconds(monotonicNanoseconds) }
        set { monotonicNanoseconds = newValue.nanoseconds }
    }
    /// ``monotonic`` in nanoseconds (±292 years fit; beyond, it saturates).
    private var monotonicNanoseconds: Int64
    /// Wall-clock time of the record, nanoseconds since the Unix epoch (for databases; never used
    /// to compute a duration).
    public var wallTimeNanoseconds: Int64
    /// The schema version the record was written with.
    public var schemaVersion: Int
    /// The record's fields: event context, attributes (`timeSince<Action>` among them), QoS
    /// values, a metric's `value`.
    public var fields: [TelemetryField]
    /// The user's tags (`run`, `host`, `viewer` …), the same on every record of an engine.
    public var tags: [TelemetryField]
    /// Event, heartbeat or metric.
    public var kind: Kind
    /// ``name`` classified once, so the engine decides on it without comparing strings.
    private(set) var vocabulary: TelemetryVocabulary

    /// A record with every part given.
    public init(
        sessionId: String, seq: UInt64, monotonic: Duration, wallTimeNanoseconds: Int64,
        schemaVersion: Int = TelemetryRecord.currentSchemaVersion, kind: Kind, name: String,
        fields: [TelemetryField] = [], tags: [TelemetryField] = []
    ) {
        self.init(
            sessionId: sessionId, seq: seq, monotonic: monotonic, wallTimeNanoseconds: wallTimeNanoseconds, kind: kind, name: name,
            vocabulary: TelemetryVocabulary(name), fields: fields)
        self.schemaVersion = schemaVersion
        self.tags = tags
    }

    /// A record whose name's ``TelemetryVocabulary`` the caller knows (the session hub's).
    init(
        sessionId: String, seq: UInt64, monotonic: Duration, wallTimeNanoseconds: Int64, kind: Kind, name: String,
        vocabulary: TelemetryVocabulary, fields: [TelemetryField]
    ) {
        self.sessionId = sessionId
        self.seq = seq
        monotonicNanoseconds = monotonic.nanoseconds
        self.wallTimeNanoseconds = wallTimeNanoseconds
        schemaVersion = Self.currentSchemaVersion
        self.kind = kind
        self.name = name
        self.vocabulary = vocabulary
        self.fields = fields
        tags = []
    }

    /// The first field called `name`, if any.
    public subscript(field name: String) -> TelemetryValue? {
        fields.first { $0.name == name }?.value
    }
}

/// The record names the engine decides on (the player vocabulary), so that the hub, the engine
/// and the metric calculator switch on a byte instead of comparing strings for every record.
enum TelemetryVocabulary: UInt8, Sendable, Hashable, CaseIterable {
    case other, viewinit, playerready, play, playing, pause, seeking, seeked, rebufferstart, rebufferend, renditionchange
    case playoutdelaychange, freezestart, freezeend, error, ended, videochange, viewend, heartbeat, attribute

    /// The name's classification (``other`` for a user's action or metric).
    init(_ name: String) {
        switch name {
        case "viewinit": self = .viewinit
        case "playerready": self = .playerready
        case "play": self = .play
        case "playing": self = .playing
        case "pause": self = .pause
        case "seeking": self = .seeking
        case "seeked": self = .seeked
        case "rebufferstart": self = .rebufferstart
        case "rebufferend": self = .rebufferend
        case "renditionchange": self = .renditionchange
        case "playoutdelaychange": self = .playoutdelaychange
        case "freezestart": self = .freezestart
        case "freezeend": self = .freezeend
        case "error": self = .error
        case "ended": self = .ended
        case "videochange": self = .videochange
        case "viewend": self = .viewend
        case "heartbeat": self = .heartbeat
        case "attribute": self = .attribute
        default: self = .other
        }
    }
}

/// Why a delivery failed, and whether trying again may help.
public struct TelemetryDeliveryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What happened, in a user's words ("HTTP 500 from 127.0.0.1:8086", "connection refused").
    public var reason: String
    /// True when the same batch may succeed later (connection refused, timeout, HTTP 5xx);
    /// false when it never will (HTTP 400: the batch is dropped and counted, not retried).
    public var retryable: Bool

    /// An error with its reason.
    public init(_ reason: String, retryable: Bool) {
        self.reason = reason
        self.retryable = retryable
    }

    public var description: String { reason }
}

/// Where telemetry records go: an in-memory store, a JSON Lines file, a database, a metrics
/// system.
///
/// The engine calls a backend from that backend's own delivery thread only, never from the thread
/// that emitted, and never two calls at once: each backend has its own bounded queue, batching,
/// retry with jittered backoff and drop-oldest with a counted drop, so a dead or slow backend costs
/// only its own queue. A backend bounds the time of each call itself (network backends use an I/O
/// timeout) and throws ``TelemetryDeliveryError`` to have the batch retried or dropped.
public protocol TelemetryBackend: AnyObject, Sendable {
    /// A short name for statistics and messages (`"influx 127.0.0.1:8086"`, `"memory"`).
    var name: String { get }
    /// Delivers `batch` (records in emission order; one session's records never reordered).
    func deliver(_ batch: [TelemetryRecord]) throws(TelemetryDeliveryError)
    /// Delivers `batch` as the engine built it. The default gives ``deliver(_:)-([TelemetryRecord])``
    /// the batch's ``TelemetryBatch/records``; a backend that keeps the batch (the in-memory one)
    /// or walks it implements this one: a kept batch stays in the engine's compact form, each
    /// ``TelemetryRecord`` built only when it is read.
    func deliver(_ batch: TelemetryBatch) throws(TelemetryDeliveryError)
    /// Called once, after the last delivery: flush and release what the backend holds.
    func close()
}

extension TelemetryBackend {
    /// Nothing to release.
    public func close() {}

    /// The batch as one array, to ``deliver(_:)-([TelemetryRecord])``.
    public func deliver(_ batch: TelemetryBatch) throws(TelemetryDeliveryError) {
        try deliver(batch.records)
    }
}
