/// What the fields of heartbeats and `viewend` records mean, for the backends that store them as
/// series (Prometheus, InfluxDB, Graphite): each field's concept, metric type and unit, so that
/// every encoding names one concept once, in one style (snake_case, the unit at the end), keeps
/// identities as labels or tags, and takes the track kind out of the name.
///
/// A heartbeat field `video.framesRendered` is the track field `framesRendered` of the track whose
/// kind is `video` (``split(_:)``); its exported name is `frames_rendered`, a ``MetricType/counter``
/// (Prometheus: `playout_frames_rendered_total{kind="video"}`). Fields the schema does not know
/// (your own metrics and attributes) are gauges under their snake_case name. Top-level fields
/// listed in ``derivedFields`` (sums over the tracks, copies of one track's) are left out where
/// the kind is a label: a query sums over `kind` instead.
///
/// ```swift
/// let schema = TelemetrySchema(trackFields: [.init("framesRendered", .counter, help: "Frames rendered.")])
/// schema.split("video.framesRendered")                    // ("video", "framesRendered")
/// schema.trackField("framesRendered")?.exportedName        // "frames_rendered"
/// ```
public struct TelemetrySchema: Sendable {
    /// How a value behaves over time.
    public enum MetricType: String, Sendable {
        /// Cumulative since the session started (only grows; Prometheus `_total`).
        case counter
        /// A value now (a rate over the last window, a size, a delay in effect).
        case gauge
        /// What something is, not how much (an SSRC): a label or tag, never a value.
        case identity
    }

    /// The unit a field's value is in, written at the end of its exported name.
    public enum Unit: String, Sendable {
        /// Seconds (`_seconds`).
        case seconds
        /// Bytes (`_bytes`).
        case bytes
        /// Bits per second (`_bits_per_second`).
        case bitsPerSecond = "bits_per_second"
        /// Percent, 0–100 (`_percent`).
        case percent
        /// Events per minute (`_per_minute`).
        case perMinute = "per_minute"
        /// A count or a plain number: no suffix.
        case none
    }

    /// One field: its name in records, its exported name, its type, its unit and what it means.
    public struct Field: Sendable, Equatable {
        /// The name in records (`framesRendered`; the track prefix left off).
        public var name: String
        /// The name in every series backend: snake_case, the unit at the end (`total_decode_time_seconds`).
        public var exportedName: String
        /// How it behaves over time.
        public var type: MetricType
        /// Its unit.
        public var unit: Unit
        /// One sentence for Prometheus' `# HELP` and the schema's documentation.
        public var help: String

        /// A field `name` of `type` in `unit`; its exported name is `exported` (default: `name`
        /// in snake_case) with the unit's suffix unless the name already holds it
        /// (`bytesReceived` → `bytes_received`).
        public init(_ name: String, _ type: MetricType, _ unit: Unit = .none, exported: String? = nil, help: String) {
            self.name = name
            self.type = type
            self.unit = unit
            self.help = help
            var exported = exported ?? TelemetrySchema.snakeCase(name)
            let suffix = unit == .none ? "" : "_" + unit.rawValue
            if unit == .bytes, exported.hasSuffix("_bytes") || exported.hasPrefix("bytes_") || exported.contains("_bytes_") {
                // bytes_received, retransmitted_bytes_received: the unit is already in the name.
            } else if !suffix.isEmpty, !exported.hasSuffix(suffix) {
                exported += suffix
            }
            exportedName = exported
        }
    }

    /// The kinds of track a heartbeat's fields are prefixed with (`video.`, `audio.`).
    public static let trackKinds = ["video", "audio"]

    /// Each track's fields, by record name.
    public let trackFields: [String: Field]
    /// The session's own heartbeat fields, by record name.
    public let sessionFields: [String: Field]
    /// Top-level heartbeat fields that repeat what the tracks hold (sums over them, one track's
    /// copy): left out where the kind is a label or tag.
    public let derivedFields: Set<String>
    /// The `viewend` record's KPIs, by record name (``TelemetryKPIs/namedValues``).
    public let viewFields: [String: Field]
    /// Text fields that say who or what a record is about, by record name, with the tag (label)
    /// they are stored as: ``defaultIdentityFields`` unless given.
    public let identityFields: [String: String]

    /// The identity fields the analytics shapes write: `player_name` → `player`,
    /// `viewer_user_id` → `viewer`, `env_key` → `env`, `player` and `viewer` as they are.
    public static let defaultIdentityFields = [
        "player_name": "player", "viewer_user_id": "viewer", "env_key": "env", "player": "player", "viewer": "viewer",
    ]

    /// A schema with these fields (the KPIs are always ``kpiFields``).
    public init(trackFields: [Field] = [], sessionFields: [Field] = [], derivedFields: Set<String> = [],
                identityFields: [String: String] = TelemetrySchema.defaultIdentityFields) {
        self.identityFields = identityFields
        self.trackFields = Dictionary(trackFields.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.sessionFields = Dictionary(sessionFields.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.derivedFields = derivedFields
        viewFields = Dictionary(Self.kpiFields.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The track field called `name`.
    public func trackField(_ name: String) -> Field? { trackFields[name] }

    /// A heartbeat field's track kind and name: `video.framesRendered` → (`video`, `framesRendered`);
    /// a field without a known kind's prefix → (nil, the name).
    public func split(_ fieldName: String) -> (kind: String?, name: String) {
        guard let dot = fieldName.firstIndex(of: ".") else { return (nil, fieldName) }
        let kind = String(fieldName[..<dot])
        guard Self.trackKinds.contains(kind) else { return (nil, fieldName) }
        return (kind, String(fieldName[fieldName.index(after: dot)...]))
    }

    /// What a heartbeat field is: its description (for one the schema does not know, a gauge
    /// under its snake_case name, `known` false), its track kind, and whether it is left out
    /// where the kind is a label (a derived top-level field).
    public func describe(_ fieldName: String) -> (field: Field, kind: String?, derived: Bool, known: Bool) {
        let (kind, name) = split(fieldName)
        if let kind {
            if let field = trackFields[name] { return (field, kind, false, true) }
            return (Field(name, .gauge, exported: Self.exportedKey(name), help: "The track field \(name) (not in the schema)."), kind, false, false)
        }
        if let field = sessionFields[name] { return (field, nil, false, true) }
        return (Field(name, .gauge, exported: Self.exportedKey(name), help: "The heartbeat field \(name) (not in the schema)."), nil, derivedFields.contains(name), false)
    }

    /// The KPIs of a `viewend` (a view's totals, read once the view ended).
    public static let kpiFields: [Field] = {
        var fields: [Field] = [
            Field("video_startup_time", .gauge, .seconds, help: "From the first play to the first playing (Mux video_startup_time)."),
            Field("player_startup_time", .gauge, .seconds, help: "From viewinit to playerready (Mux player_startup_time)."),
            Field("exits_before_video_start", .gauge, help: "1 when the view ended after play without a frame shown and without a fatal error."),
            Field("video_startup_failure", .gauge, help: "1 when a fatal error came before the first frame."),
            Field("playback_failure", .gauge, help: "1 when a fatal error came at any time."),
            Field("playing_time", .gauge, .seconds, help: "Time in the playing state."),
            Field("rebuffer_count", .gauge, exported: "rebuffers", help: "Network stalls after the first frame."),
            Field("rebuffer_duration", .gauge, .seconds, help: "Total time of the network stalls."),
            Field("rebuffer_percentage", .gauge, .percent, exported: "rebuffer", help: "Rebuffer duration / watch time × 100."),
            Field("rebuffer_frequency", .gauge, .perMinute, help: "Rebuffers per minute of watch time."),
            Field("weighted_average_bitrate", .gauge, .bitsPerSecond, help: "The renditions' bitrates weighted by playing time (measured per heartbeat window where heartbeats carry renditionBitrate)."),
            Field("dropped_frame_percentage", .gauge, .percent, exported: "dropped_frames", help: "Frames dropped / (dropped + rendered) × 100."),
            Field("freeze_percentage", .gauge, .percent, exported: "freeze", help: "Freeze time / playing time × 100."),
        ]
        for (prefix, what) in [("playout_delay", "The playout delay in effect, weighted by playing time"), ("end_to_end_latency", "End-to-end latency")] {
            for (suffix, statistic) in [("p50", "median"), ("p95", "95th percentile"), ("p99", "99th percentile"), ("max", "maximum")] {
                var field = Field("\(prefix)_\(suffix)", .gauge, .seconds, help: "\(what): \(statistic).")
                field.exportedName = "\(prefix)_seconds_\(suffix)"
                fields.append(field)
            }
        }
        return fields
    }()

    /// The key a field the schema does not know is written under: an identifier
    /// (`[A-Za-z0-9_]`) in snake_case, anything else as it is (escaped by each encoding).
    public static func exportedKey(_ name: String) -> String {
        name.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") }) && !name.isEmpty
            ? snakeCase(name) : name
    }

    /// `text` in snake_case: `framesDecoded` → `frames_decoded`, `nackCount` → `nack_count`,
    /// `datagramsNotRTP` → `datagrams_not_rtp`; `[a-z0-9_]` kept, anything else `_`.
    public static func snakeCase(_ text: String) -> String {
        guard !text.isEmpty else { return "_" }
        let scalars = Array(text.unicodeScalars)
        var name = ""
        for (index, scalar) in scalars.enumerated() {
            switch scalar {
            case "A"..."Z":
                let previous = index > 0 ? scalars[index - 1] : nil
                let next = index + 1 < scalars.count ? scalars[index + 1] : nil
                let afterLower = previous.map { ("a"..."z").contains($0) || ("0"..."9").contains($0) } ?? false
                let endsAcronym = previous.map { ("A"..."Z").contains($0) } == true && next.map { ("a"..."z").contains($0) } == true
                if afterLower || endsAcronym { name += "_" }
                name.unicodeScalars.append(Unicode.Scalar(scalar.value + 32)!)
            case "a"..."z", "0"..."9", "_":
                name.unicodeScalars.append(scalar)
            default:
                name += "_"
            }
        }
        return name
    }
}
