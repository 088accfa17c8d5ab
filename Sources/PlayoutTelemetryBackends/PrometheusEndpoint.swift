public import PlayoutHTTP
public import Prometheus

/// A minimal HTTP server for Prometheus to scrape: `GET /metrics` answers the registry's metrics
/// in the text exposition format (`text/plain; version=0.0.4`); any other path is 404, any other
/// method 405. One thread (``PlayoutHTTP``'s `HTTPServer`, as the WHEP endpoint's) serves up to
/// ``maximumConnections`` connections at once, multiplexed with `poll`: each is bounded in size (8 KiB of request head) and time (2 s to send its request
/// and take the answer), and closed after its answer. Slow clients (slowloris) cannot block a
/// scrape: a scrape is answered as soon as its own request is in, and when the cap is reached the
/// connection that has waited longest without a whole request is closed to make room.
///
/// Pair it with a ``MetricsBackend`` fed through ``metricsFactory`` (a `PrometheusMetricsFactory`
/// on ``registry``; the global `MetricsSystem` is never touched):
///
/// ```swift
/// let endpoint = try PrometheusEndpoint(spec: "127.0.0.1:9464")   // --telemetry prometheus:127.0.0.1:9464
/// let metrics = MetricsBackend(factory: endpoint.metricsFactory)
/// try metrics.deliver(records)
/// // … scrape http://127.0.0.1:9464/metrics …
/// endpoint.stop()
/// ```
public final class PrometheusEndpoint: Sendable {
    /// The host the endpoint listens on when a spec names none: loopback only (`127.0.0.1`), so
    /// that metrics are not offered to the network by default; name a host
    /// (`prometheus:0.0.0.0:9464`) for a Prometheus on another machine.
    public static let defaultHost = "127.0.0.1"
    /// The largest request head read: 8 KiB.
    public static let maximumRequestBytes = 8 * 1024
    /// How long a connection may take to send its request and take its answer: 2 s.
    public static let requestTimeout: Duration = .seconds(2)
    /// Connections served at once: 32. Past it, the oldest connection still sending its request
    /// is closed for the new one.
    public static let maximumConnections = 32

    /// The registry whose metrics are served.
    public let registry: PrometheusCollectorRegistry
    /// The address listened on.
    public let host: String
    /// The port listened on (the one the system chose when 0 was asked).
    public let port: UInt16

    private let server: HTTPServer

    /// A factory creating swift-metrics metrics in ``registry``.
    public var metricsFactory: PrometheusMetricsFactory {
        PrometheusMetricsFactory(registry: registry)
    }

    /// Starts serving `registry` on `host`:`port` (port 0: any free port, see ``port``).
    ///
    /// - Throws: ``NetworkTelemetryError``: `invalidAddress` for a host that is not an IPv4 or
    ///   IPv6 address, `system` when the port cannot be bound (in use, privileged).
    public init(host: String = PrometheusEndpoint.defaultHost, port: UInt16, registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) throws(NetworkTelemetryError) {
        self.registry = registry
        self.host = host
        let configuration = HTTPServer.Configuration(
            maximumConnections: Self.maximumConnections, requestTimeout: Self.requestTimeout,
            limits: .init(headBytes: Self.maximumRequestBytes, bodyBytes: 0), threadName: "playout-metrics"
        )
        do throws(NetworkError) {
            server = try HTTPServer(host: host, port: port, configuration: configuration) { [registry] request, _ in Self.response(to: request, registry: registry) }
        } catch {
            if error.code == .invalidAddress {
                throw NetworkTelemetryError(.invalidAddress, "'\(host)' is not an IP address to listen on, e.g. prometheus:127.0.0.1:9464 or prometheus:[::1]:9464")
            }
            throw NetworkTelemetryError(error.code, "cannot serve /metrics: \(error.message)")
        }
        self.port = server.port
    }

    /// Starts serving on `[HOST:]PORT` as `--telemetry prometheus:[HOST:]PORT` gives it
    /// (`9464`, `127.0.0.1:9464`, `[::1]:9464`); the host defaults to ``defaultHost``, port 0 picks a
    /// free port (read ``port``).
    ///
    /// - Throws: ``NetworkTelemetryError`` with code `invalidAddress` and an example for a bad spec.
    public convenience init(spec: String, registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) throws(NetworkTelemetryError) {
        let (host, port) = try Self.address(parsing: spec)
        try self.init(host: host, port: port, registry: registry)
    }

    /// The host and port `[HOST:]PORT` names (the host defaults to ``defaultHost``), checked as
    /// ``init(spec:registry:)`` checks them, without listening.
    ///
    /// - Throws: ``NetworkTelemetryError`` with code `invalidAddress` and an example.
    public static func address(parsing spec: String) throws(NetworkTelemetryError) -> (host: String, port: UInt16) {
        if !spec.isEmpty, spec.count <= 5, spec.allSatisfy({ $0.isASCII && $0.isNumber }), let port = UInt16(spec) {
            return (defaultHost, port)
        }
        return try GraphiteBackend.parse(address: spec, example: "prometheus:127.0.0.1:9464 or prometheus:9464", allowingPortZero: true)
    }

    /// Stops serving: the accept loop ends within 100 ms, the socket is closed. Idempotent.
    public func stop() {
        server.stop()
    }

    /// The answer to a request (or to one the reader refused).
    private static func response(to request: Result<HTTPRequest, HTTPRequestReader.RequestError>, registry: PrometheusCollectorRegistry) -> [UInt8] {
        switch request {
        case .success(let head) where head.path == "/metrics" && (head.method == "GET" || head.method == "HEAD"):
            let body = registry.emitToBuffer()
            return HTTPServer.response(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: body, includeBody: head.method == "GET")
        case .success(let head) where head.path == "/metrics":
            return HTTPServer.response(status: 405, extraHeaders: "Allow: GET, HEAD\r\n", body: Array("use GET /metrics\n".utf8))
        case .success:
            return HTTPServer.response(status: 404, body: Array("not found: Prometheus metrics are at /metrics\n".utf8))
        case .failure(let error):
            return HTTPServer.response(status: error.status, body: Array((error.description + "\n").utf8))
        }
    }
}
