public import PlayoutTelemetry
/// Writes telemetry records as InfluxDB line protocol, by the telemetry schema
/// (Docs/TelemetrySchema.md), escaped as the InfluxDB line protocol reference says.
///
/// | record | measurement | tags | fields |
/// |---|---|---|---|
/// | event | `playout_event` | `event` (its name), `session`, identities, the record's tags, the backend's tags | `seq` (integer), the record's other fields |
/// | heartbeat | `playout_heartbeat` | `session`, identities, tags as above | `seq`, the session's fields (`playout_delay_seconds`, `end_to_end_latency_seconds`, `state`, …) |
/// | heartbeat, each track | `playout_track` | `kind` (`video`, `audio`), `session`, `ssrc`, identities, tags as above | `seq`, the track's fields (`frames_rendered`, `bitrate_bits_per_second`, …) |
/// | metric | `playout_metric` | `metric` (its name), `session`, identities, tags as above | `seq`, `value` |
///
/// Field keys are the schema's exported names (snake_case, the unit at the end; a field the schema
/// does not know in snake_case), so no key needs quoting in InfluxQL and none is a keyword (`name`
/// is not used). A heartbeat's `video.`/`audio.` fields go to one `playout_track` point per kind,
/// tagged with it; its top-level totals and the video's copies are left out (`SUM(…) GROUP BY
/// kind` gives them). A field the schema names an identity (`player_name`, `viewer_user_id`,
/// `env_key`, a track's `ssrc`) is written as a tag (`player`, `viewer`, `env`, `ssrc`). The
/// `viewend` event's KPIs carry their units (`playing_time_seconds`, `rebuffer_percent`).
///
/// The timestamp is the record's wall time in nanoseconds (write with `precision=ns`). Tags are
/// sorted by key (InfluxDB's advice); fields keep the record's order. Integers carry the `i`
/// suffix, booleans are `true`/`false`, strings are quoted. Within a point, a key that repeats an
/// earlier tag or field key, or is `time` (which InfluxDB refuses), gets a `_` appended
/// (`session_`, `time_`). A tag with an empty value is left out (line protocol cannot carry one) and
/// so is a field whose value is NaN or infinite.
///
/// Escaping: commas and spaces in measurements; commas, equals signs and spaces in tag keys, tag
/// values and field keys; double quotes and backslashes in string field values — each with a
/// backslash. A backslash elsewhere is written as is, or doubled where it comes before a
/// character escaped there or another backslash (InfluxDB 2 and VictoriaMetrics read two
/// backslashes as one; InfluxDB 1.x keeps both). A backslash that ends a key or tag value is
/// written as `_`: InfluxDB 1.x reads any backslash before a separator as escaping it and would
/// refuse the whole batch. Line protocol cannot carry a line break: newline, carriage return and
/// tab are written as the two characters `\n`, `\r` and `\t`.
///
/// ```swift
/// let encoder = InfluxLineProtocol(tags: [TelemetryField("host", .string("lab 1"))])
/// let record = TelemetryRecord(sessionId: "s1", seq: 3, monotonic: .seconds(1), wallTimeNanoseconds: 1_700_000_000_000_000_000,
///                              kind: .event, name: "play", fields: [TelemetryField("bitrate", .int(2_500_000))])
/// print(encoder.line(for: record))
/// // playout_event,event=play,host=lab\ 1,session=s1 seq=3i,bitrate=2500000i 1700000000000000000
/// ```
public struct InfluxLineProtocol: Sendable {
    /// The measurement of events.
    public static let eventMeasurement = "playout_event"
    /// The measurement of heartbeats (QoS samples): the session's fields.
    public static let heartbeatMeasurement = "playout_heartbeat"
    /// The measurement of each track's heartbeat fields, tagged with `kind`.
    public static let trackMeasurement = "playout_track"
    /// The measurement of user metrics.
    public static let metricMeasurement = "playout_metric"

    /// Tags added to every point after the record's own.
    public var tags: [TelemetryField]
    /// Tags added to a point only when neither the record nor ``tags`` has one of that name
    /// (``InfluxBackend`` passes the machine's `host`, ``TelemetryField/host``).
    public var defaultTags: [TelemetryField] = []
    /// What the fields mean (their exported names, which are identities).
    public var schema: TelemetrySchema

    /// An encoder that adds `tags` to every point and names fields by `schema`.
    public init(tags: [TelemetryField] = [], schema: TelemetrySchema = TelemetrySchema()) {
        self.tags = tags
        self.schema = schema
    }

    /// The measurement a record of `kind` is written to (a heartbeat's tracks: ``trackMeasurement``).
    public static func measurement(for kind: TelemetryRecord.Kind) -> String {
        switch kind {
        case .event: eventMeasurement
        case .heartbeat: heartbeatMeasurement
        case .metric: metricMeasurement
        }
    }

    /// The lines of `batch`, each ending with a newline, as one body for a write request.
    public func encode(_ batch: [TelemetryRecord]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(batch.count * 160)
        for record in batch {
            append(record, to: &output)
            output.append(UInt8(ascii: "\n"))
        }
        return output
    }

    /// The line(s) of `record`, without a final newline (a heartbeat with tracks has one line
    /// for the session and one per track).
    public func line(for record: TelemetryRecord) -> String {
        var output: [UInt8] = []
        append(record, to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// Appends the line(s) of `record` (without a final newline) to `output`.
    public func append(_ record: TelemetryRecord, to output: inout [UInt8]) {
        // Identities among the fields become tags, on every point of the record.
        var identities: [(String, String)] = []
        var values: [TelemetryField] = []
        for field in record.fields {
            if let tag = schema.identityFields[field.name], case .string(let text) = field.value {
                identities.append((tag, text))
            } else {
                values.append(field)
            }
        }
        let common = identities + TelemetryField.merging(record.tags + tags, defaults: defaultTags, unlessIn: []).map { ($0.name, $0.value.description) }
        switch record.kind {
        case .event:
            let fields = values.map { field in (schema.viewFields[field.name]?.exportedName ?? TelemetrySchema.exportedKey(field.name), field.value) }
            appendPoint(Self.eventMeasurement, [("event", record.name), ("session", record.sessionId)] + common, fields, record, to: &output)
        case .metric:
            let fields = values.map { (TelemetrySchema.exportedKey($0.name), $0.value) }
            appendPoint(Self.metricMeasurement, [("metric", record.name), ("session", record.sessionId)] + common, fields, record, to: &output)
        case .heartbeat:
            var session: [(String, TelemetryValue)] = []
            var tracks: [(kind: String, tags: [(String, String)], fields: [(String, TelemetryValue)])] = []
            for field in values {
                let (description, kind, derived, _) = schema.describe(field.name)
                guard !derived else { continue }
                guard let kind else {
                    session.append((description.exportedName, field.value))
                    continue
                }
                var index = tracks.firstIndex { $0.kind == kind }
                if index == nil {
                    tracks.append((kind, [], []))
                    index = tracks.count - 1
                }
                if description.type == .identity {
                    tracks[index!].tags.append((TelemetrySchema.snakeCase(description.name), field.value.description))
                } else {
                    tracks[index!].fields.append((description.exportedName, field.value))
                }
            }
            appendPoint(Self.heartbeatMeasurement, [("session", record.sessionId)] + common, session, record, to: &output)
            for track in tracks {
                output.append(UInt8(ascii: "\n"))
                appendPoint(Self.trackMeasurement, [("kind", track.kind), ("session", record.sessionId)] + track.tags + common, track.fields, record, to: &output)
            }
        }
    }

    /// Appends one point: `measurement`, its tags (sorted, empty values left out), `seq` and the
    /// fields (non-finite numbers left out), and the record's time; a repeated key or `time` gets
    /// a `_` appended.
    private func appendPoint(
        _ measurement: String, _ tags: [(String, String)], _ fields: [(String, TelemetryValue)], _ record: TelemetryRecord, to output: inout [UInt8]
    ) {
        var used: Set<String> = []
        func unique(_ key: String) -> String {
            var key = key
            while key == "time" || used.contains(key) { key += "_" }
            used.insert(key)
            return key
        }
        var tagSet: [(key: String, value: String)] = []
        for (key, value) in tags where !key.isEmpty && !value.isEmpty { tagSet.append((unique(key), value)) }
        tagSet.sort { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }

        Self.appendEscaped(measurement, escaping: Self.measurementSpecials, to: &output)
        for tag in tagSet {
            output.append(UInt8(ascii: ","))
            Self.appendEscaped(tag.key, escaping: Self.keySpecials, to: &output)
            output.append(UInt8(ascii: "="))
            Self.appendEscaped(tag.value, escaping: Self.keySpecials, to: &output)
        }
        output.append(UInt8(ascii: " "))
        output.append(contentsOf: "\(unique("seq"))=\(record.seq)i".utf8)
        for (name, value) in fields where !name.isEmpty {
            if case .double(let number) = value, !number.isFinite { continue }
            output.append(UInt8(ascii: ","))
            Self.appendEscaped(unique(name), escaping: Self.keySpecials, to: &output)
            output.append(UInt8(ascii: "="))
            Self.appendValue(value, to: &output)
        }
        output.append(UInt8(ascii: " "))
        output.append(contentsOf: String(record.wallTimeNanoseconds).utf8)
    }

    /// Characters escaped in a measurement.
    static let measurementSpecials: Set<UInt8> = [UInt8(ascii: ","), UInt8(ascii: " ")]
    /// Characters escaped in tag keys, tag values and field keys.
    static let keySpecials: Set<UInt8> = [UInt8(ascii: ","), UInt8(ascii: "="), UInt8(ascii: " ")]

    /// Appends `text` with `specials` backslash-escaped, line breaks and tabs as `\n` `\r` `\t`,
    /// and a backslash doubled where it would otherwise escape what follows it.
    static func appendEscaped(_ text: String, escaping specials: Set<UInt8>, to output: inout [UInt8]) {
        let bytes = Array(text.utf8)
        for (index, byte) in bytes.enumerated() {
            switch byte {
            case UInt8(ascii: "\\"):
                guard index + 1 < bytes.count else {
                    // InfluxDB 1.x reads any backslash before a separator as escaping it, so an
                    // element cannot end with one: it is written as `_`.
                    output.append(UInt8(ascii: "_"))
                    break
                }
                output.append(byte)
                let next = bytes[index + 1]
                if next == UInt8(ascii: "\\") || specials.contains(next) || [10, 13, 9].contains(next) {
                    output.append(byte)
                }
            case 10: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 13: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 9: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            default:
                if specials.contains(byte) { output.append(UInt8(ascii: "\\")) }
                output.append(byte)
            }
        }
    }

    /// Appends a field value: `12i`, `0.5`, `true`, `"text"`.
    static func appendValue(_ value: TelemetryValue, to output: inout [UInt8]) {
        switch value {
        case .int(let number):
            output.append(contentsOf: String(number).utf8)
            output.append(UInt8(ascii: "i"))
        case .double(let number):
            output.append(contentsOf: String(number).utf8)
        case .bool(let flag):
            output.append(contentsOf: (flag ? "true" : "false").utf8)
        case .string(let text):
            output.append(UInt8(ascii: "\""))
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                    output.append(UInt8(ascii: "\\"))
                    output.append(byte)
                case 10: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
                case 13: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
                default: output.append(byte)
                }
            }
            output.append(UInt8(ascii: "\""))
        }
    }
}
