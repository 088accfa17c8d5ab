public import PlayoutTelemetry
public import PlayoutHTTP
import Synchronization

/// Writes telemetry records to InfluxDB (or anything that speaks its write API, such as
/// VictoriaMetrics) as line protocol over HTTP/1.1: the v1 API (`/write?db=NAME`) or the v2 API
/// (`/api/v2/write?org=O&bucket=B`, with a token), nanosecond precision. ``InfluxLineProtocol``
/// describes the schema and the escaping.
///
/// Each ``deliver(_:)`` is one POST of the whole batch on a kept-alive connection, its I/O bounded
/// by ``timeout`` from connecting to the last byte of the answer (encoding is not counted); the engine's queue retries what fails. Connection
/// refused, time-outs, HTTP 429 and 5xx are retryable; any other 4xx is not (the batch would
/// fail again).
///
/// ```swift
/// let influx = try InfluxBackend(writeURL: "http://127.0.0.1:8086/write?db=playout", token: nil,
///                                tags: [TelemetryField("run", .string("nightly-42"))])
/// try influx.deliver(records)
/// // v2, token from the environment as the CLI reads it:
/// let v2 = try InfluxBackend(writeURL: "http://127.0.0.1:8086/api/v2/write?org=lab&bucket=playout", token: token)
/// ```
public final class InfluxBackend: TelemetryBackend {
    /// The default bound of one write: 5 s.
    public static let defaultTimeout: Duration = .seconds(5)

    /// Which write API a URL names.
    public enum API: Sendable, Hashable {
        /// InfluxDB 1.x `/write?db=NAME` (`rp`, `u`, `p` may follow).
        case v1(database: String)
        /// InfluxDB 2.x `/api/v2/write?org=O&bucket=B` (or `orgID=`).
        case v2(organization: String, bucket: String)
    }

    /// `influx HOST:PORT`, for statistics and messages.
    public let name: String
    /// The API the write URL names.
    public let api: API
    /// The bound of one write.
    public let timeout: Duration
    private let target: String
    private let headers: [HTTPHeader]
    let encoder: InfluxLineProtocol
    private let client: Mutex<HTTPClient>

    /// A backend that writes to `writeURL`.
    ///
    /// - Parameters:
    ///   - writeURL: `http://HOST:PORT/write?db=NAME` (v1) or
    ///     `http://HOST:PORT/api/v2/write?org=O&bucket=B` (v2), as `--telemetry influx:URL` takes
    ///     it. `precision=ns` is added when missing; another precision is refused (timestamps are
    ///     nanoseconds).
    ///   - token: Sent as `Authorization: Token TOKEN` when given (v2; InfluxDB 1.8+ accepts it on
    ///     `/write` too). The CLI reads it from `INFLUX_TOKEN`.
    ///   - tags: Tags added to every point, after the record's own.
    ///   - defaultTags: Tags added to a point whose record and `tags` have none of that name
    ///     (default: this machine's `host`, so a dashboard can group by machine).
    ///   - timeout: The bound of one write (connect, send, answer).
    ///   - schema: What the fields mean: their keys, which are identities (tags), which repeat
    ///     the tracks' (``InfluxLineProtocol``); a subscriber's is `TelemetrySchema.subscriber`.
    /// - Throws: ``NetworkTelemetryError`` with code `invalidAddress` and a message naming a valid
    ///   URL when `writeURL` is not one of these two forms or `token` has a line break.
    public init(writeURL: String, token: String?, tags: [TelemetryField] = [], defaultTags: [TelemetryField] = TelemetryField.hostDefaults,
                timeout: Duration = InfluxBackend.defaultTimeout, schema: TelemetrySchema = TelemetrySchema()) throws(NetworkTelemetryError) {
        let (endpoint, api) = try Self.parse(writeURL: writeURL)
        self.api = api
        var query = endpoint.query
        if endpoint.queryValue("precision") == nil { query += query.isEmpty ? "precision=ns" : "&precision=ns" }
        target = "\(endpoint.path)?\(query)"
        var headers = [HTTPHeader("Content-Type", "text/plain; charset=utf-8")]
        if let token {
            guard !token.utf8.contains(where: { $0 == 10 || $0 == 13 || $0 == 0 }) else {
                throw NetworkTelemetryError(.invalidAddress, "the InfluxDB token has a line break: check INFLUX_TOKEN")
            }
            headers.append(HTTPHeader("Authorization", "Token \(token)"))
        }
        self.headers = headers
        self.timeout = timeout
        var encoder = InfluxLineProtocol(tags: tags, schema: schema)
        encoder.defaultTags = defaultTags
        self.encoder = encoder
        let client = HTTPClient(host: endpoint.host, port: endpoint.port, timeout: timeout)
        self.name = "influx \(client.authority)"
        self.client = Mutex(client)
    }

    /// The API `writeURL` names, checked as ``init(writeURL:token:tags:defaultTags:timeout:schema:)`` checks it,
    /// without opening anything (for validating a command line before a run starts).
    ///
    /// - Throws: ``NetworkTelemetryError`` with code `invalidAddress`, as the initializer does.
    public static func api(writeURL: String) throws(NetworkTelemetryError) -> API {
        try parse(writeURL: writeURL).api
    }

    private static func parse(writeURL: String) throws(NetworkTelemetryError) -> (endpoint: HTTPEndpoint, api: API) {
        let endpoint = try HTTPEndpoint(parsing: writeURL)
        let api: API
        func invalid(_ why: String) -> NetworkTelemetryError {
            NetworkTelemetryError(.invalidAddress, "'\(writeURL)' \(why): write http://HOST:PORT/write?db=NAME (InfluxDB 1.x) or http://HOST:PORT/api/v2/write?org=O&bucket=B (2.x)")
        }
        var path = endpoint.path
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        switch path {
        case "/write":
            guard let database = endpoint.queryValue("db"), !database.isEmpty else { throw invalid("names no database (db=NAME)") }
            api = .v1(database: database)
        case "/api/v2/write":
            guard let bucket = endpoint.queryValue("bucket"), !bucket.isEmpty else { throw invalid("names no bucket (bucket=B)") }
            guard let organization = endpoint.queryValue("org") ?? endpoint.queryValue("orgID"), !organization.isEmpty else {
                throw invalid("names no organization (org=O)")
            }
            api = .v2(organization: organization, bucket: bucket)
        default:
            throw invalid("is not a write URL")
        }
        if let precision = endpoint.queryValue("precision"), precision != "ns" {
            throw invalid("asks for precision=\(precision); Playout writes nanosecond timestamps (precision=ns)")
        }
        return (endpoint, api)
    }

    /// Writes `batch` in one request.
    ///
    /// - Throws: ``TelemetryDeliveryError``: retryable for connection failures, time-outs, HTTP
    ///   429 and 5xx; not retryable for other HTTP 4xx (InfluxDB's error message included).
    public func deliver(_ batch: [TelemetryRecord]) throws(TelemetryDeliveryError) {
        guard !batch.isEmpty else { return }
        let body = encoder.encode(batch)
        let response: HTTPResponse
        do throws(NetworkTelemetryError) {
            response = try client.withLock { (client) throws(NetworkTelemetryError) in
                try client.send(method: "POST", target: target, headers: headers, body: body)
            }
        } catch {
            throw error.deliveryError
        }
        if let failure = Self.classify(response, peer: name) { throw failure }
    }

    /// The delivery error an HTTP answer means, or nil for a 2xx.
    static func classify(_ response: HTTPResponse, peer: String) -> TelemetryDeliveryError? {
        guard !(200...299).contains(response.status) else { return nil }
        var detail = response.header("X-Influxdb-Error") ?? response.bodyText()
        if !detail.isEmpty { detail = ": " + detail }
        let reason = "HTTP \(response.status) from \(peer)\(detail)"
        let retryable = response.status == 429 || response.status >= 500
        return TelemetryDeliveryError(reason, retryable: retryable)
    }

    /// Closes the kept-alive connection.
    public func close() {
        client.withLock { $0.close() }
    }
}
