#if canImport(Glibc)
import Glibc
#endif
import PlayoutCore

/// Writes QoS samples as the JSON Lines of DESIGN.md's command-line contract: one object per line
/// with a `"type"` (`"qos"`, `"summary"`), `"t"`, `"state"`, `"playoutDelay"`,
/// `"playoutDelaySource"`, and `"video"`, `"audio"` and `"total"` objects holding the QoS fields by
/// their names (cumulative counters, durations in seconds, `bitrate` in bits/s and
/// `framesPerSecond` over the last window).
package struct QoSJSONWriter: Sendable {
    package init() {}

    /// The line for `sample` (`type` is `"qos"` or `"summary"`). Every number comes from the
    /// sample itself (rates included: ``TrackQoS/framesPerSecond`` and ``TrackQoS/bitrate``);
    /// `extra` fields (numbers) are appended, e.g. `"samplesDropped"` in a summary, then
    /// `objects` (each a JSON value already written, e.g. the summary's `"analytics"`).
    package func line(for sample: SubscriberQoS, type: String = "qos", extra: [(String, Double)] = [], objects: [(String, String)] = []) -> String {
        var fields: [(String, String)] = [
            ("type", Self.string(type)),
            ("t", Self.number(sample.elapsed.seconds)),
            ("state", Self.string(sample.state.name)),
            ("playoutDelay", Self.number(sample.playoutDelay.delay.seconds)),
            ("playoutDelaySource", Self.string(sample.playoutDelay.source.rawValue)),
        ]
        for kind in [MediaKind.video, .audio] {
            guard let track = sample.tracks[kind] else { continue }
            fields.append((kind.rawValue, Self.object(track.jsonFields)))
        }
        fields.append(("total", Self.object(sample.total.jsonFields)))
        if type == "summary" {
            for (name, histogram) in [("endToEndLatency", \TrackQoS.endToEndLatency), ("renderError", \TrackQoS.renderError)] {
                let merged = sample.tracks.values.reduce(into: DurationHistogram()) { $0.merge($1[keyPath: histogram]) }
                guard let summary = merged.summary else { continue }
                fields.append((name, Self.object([
                    ("p50", summary.p50.seconds), ("p95", summary.p95.seconds), ("p99", summary.p99.seconds), ("max", summary.max.seconds),
                ])))
            }
        }
        fields += extra.map { ($0.0, Self.number($0.1)) } + objects
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// An `"event"` line: `name` at `elapsed`, with string `fields` and number `numbers`.
    package func event(_ name: String, at elapsed: Duration, _ fields: [(String, String)] = [], numbers: [(String, Double)] = []) -> String {
        event(name, seconds: elapsed.seconds, fields, numbers: numbers)
    }

    private func event(_ name: String, seconds: Double, _ fields: [(String, String)], numbers: [(String, Double)]) -> String {
        let all = [("type", Self.string("event")), ("t", Self.number(seconds)), ("name", Self.string(name))]
            + fields.map { ($0.0, Self.string($0.1)) } + numbers.map { ($0.0, Self.number($0.1)) }
        return "{" + all.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    // MARK: - Lines from telemetry records (the `--json` stream as a telemetry backend)

    /// The command line's `"event"` lines a subscriber's tracker emits as actions, with their
    /// fields in line order (after `"t"` and `"name"`).
    package static let eventFields: [String: [String]] = [
        "stateChanged": ["state", "reason"],
        "overrideApplied": ["playoutDelay"],
        "overrideReleased": ["playoutDelay"],
        "sourceSwitch": ["track", "fromSSRC", "toSSRC", "sourceSwitches"],
        "startup": ["step"],
    ]

    /// The line a subscriber's telemetry record stands for, or nil: a heartbeat (a QoS sample,
    /// ``SubscriberTelemetryTranslator/heartbeatFields(_:)``) is a `"qos"` line — except the
    /// first sample, at t = 0, and the last, in the ended state, which the summary line follows —
    /// and an action named in ``eventFields`` an `"event"` line. Other records (the player
    /// vocabulary, a user's actions) are not part of the stream.
    package func line(for record: TelemetryRecord) -> String? {
        switch record.kind {
        case .heartbeat: qosLine(for: record)
        case .event: Self.eventFields[record.name].map { eventLine(for: record, keys: $0) }
        case .metric: nil
        }
    }

    private func qosLine(for record: TelemetryRecord) -> String? {
        guard let elapsed = record[field: "elapsed"]?.number, elapsed > 0, case .string(let state)? = record[field: "state"],
              state != SubscriberState.ended.name
        else { return nil }
        var fields: [(String, String)] = [("type", Self.string("qos")), ("t", Self.number(elapsed)), ("state", Self.string(state))]
        if let delay = record[field: "playoutDelay"]?.number { fields.append(("playoutDelay", Self.number(delay))) }
        if case .string(let source)? = record[field: "playoutDelaySource"] { fields.append(("playoutDelaySource", Self.string(source))) }
        for kind in [MediaKind.video, .audio] {
            let prefix = kind.rawValue + "."
            var values = record.fields.compactMap { field -> (String, Double)? in
                guard field.name.hasPrefix(prefix), let number = field.value.number else { return nil }
                return (String(field.name.dropFirst(prefix.count)), number)
            }
            // A track not decoded has no decode statistics in its record: unknown, `null` here.
            if !values.isEmpty, record[field: prefix + "framesDecoded"] == nil {
                let known = Dictionary(values, uniquingKeysWith: { first, _ in first })
                values = TrackQoS.fields.compactMap { field in
                    QoSField.decodeStatistics.contains(field.name) ? (field.name, .nan) : known[field.name].map { (field.name, $0) }
                }
            }
            if !values.isEmpty { fields.append((kind.rawValue, Self.object(values))) }
        }
        let total = TrackQoS.totalFields.compactMap { field in
            record[field: field.name]?.number.map { (field.name, $0) } ?? (QoSField.decodeStatistics.contains(field.name) ? (field.name, .nan) : nil)
        }
        fields.append(("total", Self.object(total)))
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    private func eventLine(for record: TelemetryRecord, keys: [String]) -> String {
        var strings: [(String, String)] = []
        var numbers: [(String, Double)] = []
        for key in keys {
            switch record[field: key] {
            case .string(let value)?: strings.append((key, value))
            case let value?: if let number = value.number { numbers.append((key, number)) }
            case nil: break
            }
        }
        return event(record.name, seconds: record[field: "elapsed"]?.number ?? 0, strings, numbers: numbers)
    }

    static func object(_ values: [(String, Double)]) -> String {
        "{" + values.map { "\"\($0.0)\":\(number($0.1))" }.joined(separator: ",") + "}"
    }

    /// A JSON object of `fields` (``TrackQoS/jsonFields``, ``TotalQoS/jsonFields``; nil, unknown,
    /// is written `null`).
    static func object(_ fields: [(name: String, value: TelemetryValue?)]) -> String {
        object(fields.map { ($0.name, $0.value?.number ?? .nan) })
    }

    /// A JSON number: integers without a fraction, others with up to 6 decimals.
    package static func number(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == value.rounded() || abs(value) >= 1e12 {
            // Beyond 10^12 the microseconds would not fit an Int64; whole units are exact enough.
            return abs(value) < 9e18 ? String(Int64(value.rounded())) : "\(value)"
        }
        var result = fixed(value, 6)
        while result.hasSuffix("0") { result.removeLast() }
        if result.hasSuffix(".") { result.removeLast() }
        return result
    }

    /// `value` as a JSON string: quotes, backslashes, control characters, U+2028 and U+2029
    /// escaped (one escaper for every JSON Playout writes: ``TelemetryJSONLines``).
    package static func string(_ value: String) -> String {
        var escaped = ""
        TelemetryJSONLines.appendString(value, to: &escaped)
        return escaped
    }
}

/// `value` with `digits` decimals (`fixed(2.345, 1)` is `"2.3"`), like `printf("%.*f")` except
/// that halves round away from zero and there is no negative zero. For JSON numbers here and
/// the command line's tables.
package func fixed(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return value.isNaN ? "nan" : value < 0 ? "-inf" : "inf" }
    let digits = min(max(0, digits), 18)
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    guard scaled < 9e18 else { return "\(value)" }
    let text = String(Int64(scaled))
    let sign = value < 0 && scaled > 0 ? "-" : ""
    guard digits > 0 else { return sign + text }
    let padded = String(repeating: "0", count: max(0, digits + 1 - text.count)) + text
    return sign + padded.dropLast(digits) + "." + padded.suffix(digits)
}

extension JSONLinesTelemetryBackend.Format {
    /// The command line's `--json` stream: a subscriber's QoS samples and contract events, in
    /// the documented shape (``QoSJSONWriter/line(for:)``); other records are left out.
    public static var commandLine: Self { .lines { QoSJSONWriter().line(for: $0) } }
}
