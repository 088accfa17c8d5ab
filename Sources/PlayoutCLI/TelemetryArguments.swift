import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import Playout

/// Where `--telemetry` sends records, as typed: `jsonl:PATH`, `influx:http://HOST:PORT/write?db=NAME`
/// (InfluxDB v1), `influx:http://HOST:PORT/api/v2/write?org=O&bucket=B` (v2, token from
/// `INFLUX_TOKEN`), `graphite:HOST:PORT` (plaintext TCP), `prometheus:[HOST:]PORT` (serves
/// `/metrics` while running).
struct TelemetrySpec: ArgumentValue, Equatable {
    static let valueName = "spec"
    static let forms = "jsonl:PATH, influx:http://HOST:PORT/write?db=NAME, influx:http://HOST:PORT/api/v2/write?org=O&bucket=B, graphite:HOST:PORT or prometheus:[HOST:]PORT"

    /// An InfluxDB write endpoint.
    struct Influx: Equatable, Sendable {
        /// Which write API.
        enum API: Equatable, Sendable {
            /// `/write?db=…` (optionally `rp=…`).
            case v1(database: String, retentionPolicy: String?)
            /// `/api/v2/write?org=…&bucket=…` (token from `INFLUX_TOKEN`).
            case v2(organization: String, bucket: String)
        }

        /// `http` or `https`.
        var scheme: String
        var host: String
        var port: Int
        var api: API
        /// Every query parameter as typed (decoded), in order (`precision` among them).
        var query: [Pair]
        /// The URL as typed.
        var url: String
    }

    /// A query parameter.
    struct Pair: Equatable, Sendable {
        var name: String
        var value: String
    }

    /// The destination.
    enum Destination: Equatable, Sendable {
        case jsonl(path: String)
        case influx(Influx)
        case graphite(host: String, port: Int)
        case prometheus(host: String?, port: Int)
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
        switch kind {
        case "jsonl":
            guard !rest.isEmpty else { throw ValidationError("jsonl needs a path, e.g. jsonl:telemetry.jsonl") }
            destination = .jsonl(path: rest)
        case "influx": destination = .influx(try Self.influx(rest))
        case "graphite":
            let (host, port) = try Self.hostAndPort(rest, kind: "graphite", example: "graphite:127.0.0.1:2003", hostRequired: true)
            destination = .graphite(host: host!, port: port)
        case "prometheus":
            let (host, port) = try Self.hostAndPort(rest, kind: "prometheus", example: "prometheus:9464 or prometheus:127.0.0.1:9464", hostRequired: false)
            destination = .prometheus(host: host, port: port)
        default:
            throw ValidationError("'\(kind)' is not a telemetry backend; use \(Self.forms)")
        }
    }

    var defaultValueDescription: String { text }

    /// `HOST:PORT`, `[IPv6]:PORT`, or (when the host is optional) `PORT`.
    static func hostAndPort(_ text: String, kind: String, example: String, hostRequired: Bool) throws(ValidationError) -> (String?, Int) {
        let host: String?
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw ValidationError("\(kind) needs [IPv6]:PORT with the brackets closed, e.g. \(example)")
            }
            host = String(text[text.index(after: text.startIndex)..<close])
            portText = text[text.index(close, offsetBy: 2)...]
        } else if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = text[text.index(after: colon)...]
            guard !host!.contains(":") else { throw ValidationError("\(kind): write an IPv6 address in brackets, e.g. \(kind):[::1]:\(portText)") }
        } else {
            host = nil
            portText = text[...]
        }
        guard !hostRequired || host != nil, host?.isEmpty != true else {
            throw ValidationError("\(kind) needs \(hostRequired ? "HOST:PORT" : "[HOST:]PORT"), e.g. \(example)")
        }
        guard let port = Int(portText), (1...65_535).contains(port) else {
            throw ValidationError("\(kind): '\(portText)' is not a port (1 to 65535), e.g. \(example)")
        }
        return (host, port)
    }

    static func influx(_ url: String) throws(ValidationError) -> Influx {
        let example = "influx:http://127.0.0.1:8086/write?db=playout or influx:http://127.0.0.1:8086/api/v2/write?org=O&bucket=B"
        let scheme: String
        if url.hasPrefix("http://") { scheme = "http" } else if url.hasPrefix("https://") { scheme = "https" } else {
            throw ValidationError("influx needs an http:// or https:// URL, e.g. \(example)")
        }
        let afterScheme = url.dropFirst(scheme.count + 3)
        let authorityEnd = afterScheme.firstIndex { $0 == "/" || $0 == "?" } ?? afterScheme.endIndex
        let authority = String(afterScheme[..<authorityEnd])
        var pathAndQuery = afterScheme[authorityEnd...]
        var query: [Pair] = []
        if let mark = pathAndQuery.firstIndex(of: "?") {
            for item in pathAndQuery[pathAndQuery.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: true) {
                let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard let name = percentDecoded(parts[0]), let value = percentDecoded(parts.count > 1 ? parts[1] : "") else {
                    throw ValidationError("influx: '\(item)' has a bad %-escape (write %XX with two hex digits)")
                }
                query.append(Pair(name: name, value: value))
            }
            pathAndQuery = pathAndQuery[..<mark]
        }
        let path = pathAndQuery.isEmpty ? "/" : String(pathAndQuery)
        let (host, port): (String?, Int)
        if authority.contains(":") && !(authority.hasPrefix("[") && authority.hasSuffix("]")) {
            (host, port) = try hostAndPort(authority, kind: "influx", example: example, hostRequired: true)
        } else {
            let bare = authority.hasPrefix("[") ? String(authority.dropFirst().dropLast()) : authority
            (host, port) = (bare, scheme == "https" ? 443 : 8086)
        }
        guard let host, !host.isEmpty, !host.contains("@") else { throw ValidationError("influx needs a host (no user@), e.g. \(example)") }
        func value(_ name: String) -> String? { query.last { $0.name == name }.flatMap { $0.value.isEmpty ? nil : $0.value } }
        let api: Influx.API
        switch path {
        case "/write":
            guard let database = value("db") else { throw ValidationError("influx: the v1 API needs ?db=NAME, e.g. \(url)?db=playout") }
            api = .v1(database: database, retentionPolicy: value("rp"))
        case "/api/v2/write":
            guard let organization = value("org"), let bucket = value("bucket") else {
                throw ValidationError("influx: the v2 API needs ?org=O&bucket=B (the token comes from INFLUX_TOKEN)")
            }
            api = .v2(organization: organization, bucket: bucket)
        default:
            throw ValidationError("influx: the path must be /write (v1) or /api/v2/write (v2), not \(path), e.g. \(example)")
        }
        return Influx(scheme: scheme, host: host, port: port, api: api, query: query, url: url)
    }

    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
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

/// This machine's name (the `host` tag), if the system tells it.
func hostName() -> String? {
    var buffer = [CChar](repeating: 0, count: 256)
    guard gethostname(&buffer, buffer.count - 1) == 0 else { return nil }
    let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return name.isEmpty ? nil : name
}
