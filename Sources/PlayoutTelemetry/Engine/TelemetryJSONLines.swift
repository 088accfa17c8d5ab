import PlayoutCore

/// Telemetry records as JSON Lines, one object per line, and back: the format of
/// ``JSONLinesTelemetryBackend`` and of ``TelemetryReplay``.
///
/// ```json
/// {"type":"telemetry","schema":1,"session":"9f…-0-1","seq":3,"monotonicNs":3000000000,"wallTimeNs":1700000003000000000,"kind":"event","name":"playing","fields":{"timeSincePlay":2.0},"tags":{"run":"r1"}}
/// ```
///
/// Integers stay integers and reals keep a fraction or exponent (`2.0`, `1e-05`), both written in
/// their shortest exact form, so a record read back is equal to the one written — and KPIs
/// recomputed from a file are identical to those computed live. A non-finite real (NaN, ±∞) has
/// no JSON form: it is written as `null` and read back as a missing field.
public enum TelemetryJSONLines {
    /// The value of `"type"` on every record line.
    public static let recordType = "telemetry"

    /// The line (without newline) for `record`.
    public static func line(for record: TelemetryRecord) -> String {
        var line = "{\"type\":\"\(recordType)\",\"schema\":\(record.schemaVersion),\"session\":"
        appendString(record.sessionId, to: &line)
        line += ",\"seq\":\(record.seq),\"monotonicNs\":\(record.monotonic.nanoseconds)"
        line += ",\"wallTimeNs\":\(record.wallTimeNanoseconds),\"kind\":\"\(record.kind.rawValue)\",\"name\":"
        appendString(record.name, to: &line)
        line += ",\"fields\":"
        appendObject(record.fields, to: &line)
        line += ",\"tags\":"
        appendObject(record.tags, to: &line)
        line += "}"
        return line
    }

    /// The record on `line`; throws what is wrong with it (not JSON, not a telemetry record, a
    /// field missing or of the wrong type).
    public static func record(from line: Substring) throws(TelemetryReplayError) -> TelemetryRecord {
        let value: JSONParser.Value
        do throws(JSONParser.Failure) {
            value = try JSONParser.parse(line)
        } catch {
            throw TelemetryReplayError(line: 0, reason: "not JSON: \(error.reason) at byte \(error.column)")
        }
        guard case .object(let members) = value else { throw TelemetryReplayError(line: 0, reason: "not a JSON object") }
        func member(_ name: String) -> JSONParser.Value? { members.first { $0.0 == name }?.1 }
        func missing(_ name: String, _ type: String) -> TelemetryReplayError {
            TelemetryReplayError(line: 0, reason: member(name) == nil ? "no \"\(name)\"" : "\"\(name)\" is not \(type)")
        }
        guard case .string(let type) = member("type") else { throw missing("type", "a string") }
        guard type == recordType else { throw TelemetryReplayError(line: 0, reason: "not a telemetry record (type \"\(type)\")") }
        guard case .integer(let schema) = member("schema") else { throw missing("schema", "an integer") }
        guard schema >= 1, schema <= Int64(TelemetryRecord.currentSchemaVersion) else {
            throw TelemetryReplayError(line: 0, reason: "schema \(schema) is not one this version reads (1…\(TelemetryRecord.currentSchemaVersion))")
        }
        guard case .string(let session) = member("session") else { throw missing("session", "a string") }
        guard case .integer(let seq) = member("seq"), seq >= 0 else { throw missing("seq", "a non-negative integer") }
        guard case .integer(let monotonic) = member("monotonicNs") else { throw missing("monotonicNs", "an integer") }
        guard case .integer(let wall) = member("wallTimeNs") else { throw missing("wallTimeNs", "an integer") }
        guard case .string(let kindName) = member("kind") else { throw missing("kind", "a string") }
        guard let kind = TelemetryRecord.Kind(rawValue: kindName) else {
            throw TelemetryReplayError(line: 0, reason: "\"kind\" \"\(kindName)\" is not event, heartbeat or metric")
        }
        guard case .string(let name) = member("name") else { throw missing("name", "a string") }
        let fields = try decodeFields(member("fields"), called: "fields")
        let tags = try decodeFields(member("tags"), called: "tags")
        return TelemetryRecord(
            sessionId: session, seq: UInt64(seq), monotonic: .nanoseconds(monotonic), wallTimeNanoseconds: wall,
            schemaVersion: Int(schema), kind: kind, name: name, fields: fields, tags: tags)
    }

    private static func decodeFields(_ value: JSONParser.Value?, called name: String) throws(TelemetryReplayError) -> [TelemetryField] {
        guard let value else { return [] }
        guard case .object(let members) = value else { throw TelemetryReplayError(line: 0, reason: "\"\(name)\" is not an object") }
        var fields: [TelemetryField] = []
        for (key, member) in members {
            switch member {
            case .integer(let number): fields.append(TelemetryField(key, .int(number)))
            case .double(let number): fields.append(TelemetryField(key, .double(number)))
            case .string(let text): fields.append(TelemetryField(key, .string(text)))
            case .bool(let flag): fields.append(TelemetryField(key, .bool(flag)))
            case .null: continue
            case .object, .array: throw TelemetryReplayError(line: 0, reason: "\"\(name)\".\"\(key)\" is not a number, string or flag")
            }
        }
        return fields
    }

    private static func appendObject(_ fields: [TelemetryField], to line: inout String) {
        line += "{"
        for (index, field) in fields.enumerated() {
            if index > 0 { line += "," }
            appendString(field.name, to: &line)
            line += ":"
            switch field.value {
            case .int(let value): line += String(value)
            case .double(let value):
                guard value.isFinite else {
                    line += "null"
                    continue
                }
                let text = value.description
                line += text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) ? text : text + ".0"
            case .string(let value): appendString(value, to: &line)
            case .bool(let value): line += value ? "true" : "false"
            }
        }
        line += "}"
    }

    /// Appends `value` as a JSON string (quotes, backslashes and control characters escaped).
    package static func appendString(_ value: String, to line: inout String) {
        line += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": line += "\\\""
            case "\\": line += "\\\\"
            case "\n": line += "\\n"
            case "\r": line += "\\r"
            case "\t": line += "\\t"
            case "\u{00}"..."\u{1F}", "\u{7F}", "\u{2028}", "\u{2029}":
                let hex = String(scalar.value, radix: 16)
                line += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: line.unicodeScalars.append(scalar)
            }
        }
        line += "\""
    }
}

/// A line of a JSON Lines file that could not be replayed, or a file that could not be read.
public struct TelemetryReplayError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The line (from 1; 0 when not about one line).
    public var line: Int
    /// What is wrong.
    public var reason: String

    /// An error about `line`.
    public init(line: Int, reason: String) {
        self.line = line
        self.reason = reason
    }

    public var description: String { line > 0 ? "line \(line): \(reason)" : reason }
}
