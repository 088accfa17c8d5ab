public import PlayoutTelemetry
/// Writes telemetry records as InfluxDB line protocol, one point per record, escaped as the
/// InfluxDB line protocol reference says.
///
/// The schema (one measurement per kind of record):
///
/// | record | measurement | tags | fields |
/// |---|---|---|---|
/// | event | `playout_event` | `name`, `session`, the record's tags, the backend's tags | `seq` (integer), the record's fields |
/// | heartbeat | `playout_heartbeat` | `session`, tags as above | `seq`, the QoS fields |
/// | metric | `playout_metric` | `name`, `session`, tags as above | `seq`, `value` |
///
/// The timestamp is the record's wall time in nanoseconds (write with `precision=ns`). Tags are
/// sorted by key (InfluxDB's advice); fields keep the record's order. Integers carry the `i`
/// suffix, booleans are `true`/`false`, strings are quoted. Within a point, a key that repeats an
/// earlier tag or field key, or is `time` (which InfluxDB refuses), gets a `_` appended
/// (`name_`, `time_`). A tag with an empty value is left out (line protocol cannot carry one) and
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
/// // playout_event,host=lab\ 1,name=play,session=s1 seq=3i,bitrate=2500000i 1700000000000000000
/// ```
public struct InfluxLineProtocol: Sendable {
    /// The measurement of events.
    public static let eventMeasurement = "playout_event"
    /// The measurement of heartbeats (QoS samples).
    public static let heartbeatMeasurement = "playout_heartbeat"
    /// The measurement of user metrics.
    public static let metricMeasurement = "playout_metric"

    /// Tags added to every point after the record's own.
    public var tags: [TelemetryField]

    /// An encoder that adds `tags` to every point.
    public init(tags: [TelemetryField] = []) {
        self.tags = tags
    }

    /// The measurement a record of `kind` is written to.
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

    /// The line of `record`, without a newline.
    public func line(for record: TelemetryRecord) -> String {
        var output: [UInt8] = []
        append(record, to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// Appends the line of `record` (without a newline) to `output`.
    public func append(_ record: TelemetryRecord, to output: inout [UInt8]) {
        var used: Set<String> = []
        func unique(_ key: String) -> String {
            var key = key
            while key == "time" || used.contains(key) { key += "_" }
            used.insert(key)
            return key
        }
        var tagSet: [(key: String, value: String)] = []
        if record.kind != .heartbeat { tagSet.append((unique("name"), record.name)) }
        tagSet.append((unique("session"), record.sessionId))
        for tag in record.tags + tags where !tag.name.isEmpty {
            let value = tag.value.description
            guard !value.isEmpty else { continue }
            tagSet.append((unique(tag.name), value))
        }
        tagSet.sort { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }

        Self.appendEscaped(Self.measurement(for: record.kind), escaping: Self.measurementSpecials, to: &output)
        for tag in tagSet where !tag.value.isEmpty {
            output.append(UInt8(ascii: ","))
            Self.appendEscaped(tag.key, escaping: Self.keySpecials, to: &output)
            output.append(UInt8(ascii: "="))
            Self.appendEscaped(tag.value, escaping: Self.keySpecials, to: &output)
        }
        output.append(UInt8(ascii: " "))
        output.append(contentsOf: "\(unique("seq"))=\(record.seq)i".utf8)
        for field in record.fields where !field.name.isEmpty {
            if case .double(let number) = field.value, !number.isFinite { continue }
            output.append(UInt8(ascii: ","))
            Self.appendEscaped(unique(field.name), escaping: Self.keySpecials, to: &output)
            output.append(UInt8(ascii: "="))
            Self.appendValue(field.value, to: &output)
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
