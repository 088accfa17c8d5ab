import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import Playout
import PlayoutHTTP
import PlayoutTelemetryBackends

/// Where `--telemetry` sends records, as typed: `jsonl:PATH`, `influx:http://HOST:PORT/write?db=NAME`
/// (InfluxDB v1), `influx:http://HOST:PORT/api/v2/write?org=O&bucket=B` (v2, token from
/// `INFLUX_TOKEN`), `graphite:HOST:PORT` (plaintext TCP), `prometheus:[HOST:]PORT` (serves
/// `/metrics` while running).
struct TelemetrySpec: ArgumentValue, Equatable {
    static let valueName = "spec"
    static let forms = "jsonl:PATH, influx:http://HOST:PORT/write?db=NAME, influx:http://HOST:PORT/api/v2/write?org=O&bucket=B, graphite:HOST:PORT or prometheus:[HOST:]PORT"

    /// The destination, checked by the library's own parsers (nothing is opened while parsing).
    enum Destination: Equatable, Sendable {
        case jsonl(path: String)
        case influx(writeURL: String, api: InfluxBackend.API)
        case graphite(host: String, port: UInt16)
        case prometheus(host: String, port: UInt16)
    }

    var destination: Destination
    /// As typed.
    var text: String

    init(parsing text: String) throws(ValidationError) {
        self.text = text
        guard let colon = text.firstIndex(of: ":") else {
            throw ValidationError("'\(text)' is not a telemetry spec; use \(Self.forms)")
        }
        let kind = text[..<colon]
        let rest = String(text[text.index(after: colon)...])
        func checked<Value>(_ parse: () throws(NetworkTelemetryError) -> Value) throws(ValidationError) -> Value {
            do {
                return try parse()
            } catch {
                throw ValidationError("\(kind): \(error.message)")
            }
        }
        switch kind {
        case "jsonl":
            guard !rest.isEmpty else { throw ValidationError("jsonl needs a path, e.g. jsonl:telemetry.jsonl") }
            destination = .jsonl(path: rest)
        case "influx":
            destination = .influx(writeURL: rest, api: try checked { () throws(NetworkTelemetryError) in try InfluxBackend.api(writeURL: rest) })
        case "graphite":
            let (host, port) = try checked { () throws(NetworkTelemetryError) in try GraphiteBackend.address(parsing: rest) }
            destination = .graphite(host: host, port: port)
        case "prometheus":
            let (host, port) = try checked { () throws(NetworkTelemetryError) in try PrometheusEndpoint.address(parsing: rest) }
            destination = .prometheus(host: host, port: port)
        default:
            throw ValidationError("'\(kind)' is not a telemetry backend; use \(Self.forms)")
        }
    }

    var defaultValueDescription: String { text }
}

/// `--tag KEY=VALUE`: a tag on every record and point.
struct TagArgument: ArgumentValue, Equatable {
    static let valueName = "key=value"
    var key: String
    var value: String

    init(parsing text: String) throws(ValidationError) {
        guard let equals = text.firstIndex(of: "=") else {
            throw ValidationError("a tag is KEY=VALUE, e.g. --tag run=nightly-42")
        }
        key = String(text[..<equals])
        value = String(text[text.index(after: equals)...])
        guard !key.isEmpty else { throw ValidationError("a tag needs a key before '=', e.g. --tag run=nightly-42") }
        guard !value.isEmpty else { throw ValidationError("tag \(key) needs a value after '=', e.g. --tag \(key)=nightly-42") }
        guard !key.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }),
              !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else { throw ValidationError("a tag cannot contain control characters (newlines, tabs)") }
        guard key != "sessionId", key != "seq" else { throw ValidationError("\(key) is every record's own; choose another tag key") }
    }

    var defaultValueDescription: String { "\(key)=\(value)" }

    /// The tag as a record field.
    var field: TelemetryField { TelemetryField(key, .string(value)) }
}


