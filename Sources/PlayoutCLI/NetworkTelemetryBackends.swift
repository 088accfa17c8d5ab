import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import Playout
import PlayoutHTTP
import PlayoutTelemetryBackends

/// The backend for a network `--telemetry` spec: InfluxDB (v1 or v2 write API, the v2 token from
/// `INFLUX_TOKEN`), Graphite plaintext, or a Prometheus `/metrics` endpoint served while the run
/// lasts (stopped when the engine closes its backends).
///
/// A Prometheus endpoint is handed to `lingering` (when given) at the end of the run instead of
/// being stopped, so that it can be scraped once more.
///
/// - Throws: ``PlayoutError`` (code `invalidOption`) naming the spec, e.g. when the Prometheus
///   port is in use.
func makeNetworkTelemetryBackend(_ spec: TelemetrySpec, lingering: LingeringEndpoints? = nil) throws -> any TelemetryBackend {
    do throws(NetworkTelemetryError) {
        switch spec.destination {
        case .influx(let url, _):
            let token = getenv("INFLUX_TOKEN").map { String(cString: $0) }
            return try InfluxBackend(writeURL: url, token: token?.isEmpty == false ? token : nil, schema: .subscriber)
        case .graphite(let host, let port):
            return GraphiteBackend(host: host, port: port, schema: .subscriber)
        case .prometheus(let host, let port):
            let endpoint = try PrometheusEndpoint(host: host, port: port)
            // Said as soon as it listens (with the port the system chose for prometheus:0).
            let shown = endpoint.host.contains(":") ? "[\(endpoint.host)]" : endpoint.host
            writeError("playout: serving Prometheus metrics on http://\(shown):\(endpoint.port)/metrics\n")
            return ServedMetrics(endpoint: endpoint, lingering: lingering)
        case .jsonl:
            throw NetworkTelemetryError(.invalidAddress, "not a network backend")
        }
    } catch {
        throw PlayoutError(.invalidOption, "--telemetry \(spec.text): \(error.message)")
    }
}

/// Metrics served on a Prometheus endpoint for as long as the engine runs: records become
/// Prometheus metrics by its conventions (``PrometheusTelemetryBackend`` on the subscriber's
/// schema) that the endpoint's `/metrics` shows; closing the backend stops serving, or hands the
/// endpoint to `lingering` to stop after the summary and one more scrape.
private final class ServedMetrics: TelemetryBackend {
    let name: String
    private let endpoint: PrometheusEndpoint
    private let metrics: PrometheusTelemetryBackend
    private let lingering: LingeringEndpoints?

    init(endpoint: PrometheusEndpoint, lingering: LingeringEndpoints?) {
        self.endpoint = endpoint
        self.lingering = lingering
        metrics = PrometheusTelemetryBackend(registry: endpoint.registry, schema: .subscriber)
        name = "prometheus :\(endpoint.port)"
    }

    func deliver(_ batch: [TelemetryRecord]) throws(TelemetryDeliveryError) {
        try metrics.deliver(batch)
    }

    func close() {
        metrics.close()
        if let lingering, lingering.linger > .zero {
            lingering.keep(endpoint)
        } else {
            endpoint.stop()
        }
    }
}

/// Prometheus endpoints kept up after the run (`--telemetry-linger`): the run's last samples and
/// the view's KPIs are only on `/metrics` once it ended, and Prometheus reads them at its next
/// scrape. ``lingerAndStop()`` says so on stderr, waits — unless a stop signal came
/// (``interrupt()``: Ctrl-C, SIGTERM, SIGHUP, during the run or the wait) — and stops them.
final class LingeringEndpoints: Sendable {
    /// The default time an endpoint stays up after the run: 15 s, one scrape at Prometheus'
    /// usual `scrape_interval`.
    static let defaultLinger: Duration = .seconds(15)

    /// How long they stay up.
    let linger: Duration
    private let endpoints = LockedValue<[PrometheusEndpoint]>([])
    private let stopped = DispatchSemaphore(value: 0)

    init(linger: Duration) {
        self.linger = linger
    }

    /// Keeps `endpoint` serving until ``lingerAndStop()``.
    func keep(_ endpoint: PrometheusEndpoint) {
        endpoints.withLock { $0.append(endpoint) }
    }

    /// A stop signal: the wait ends now, or does not begin.
    func interrupt() {
        stopped.signal()
    }

    /// When an endpoint is kept: says where and for how long on stderr, waits ``linger`` (or
    /// until ``interrupt()``), and stops every kept endpoint.
    func lingerAndStop() {
        let kept = endpoints.withLock { endpoints in
            defer { endpoints.removeAll() }
            return endpoints
        }
        guard !kept.isEmpty else { return }
        let addresses = kept.map { "http://\($0.host.contains(":") ? "[\($0.host)]" : $0.host):\($0.port)/metrics" }.joined(separator: ", ")
        writeError("playout: the run ended; serving its last metrics on \(addresses) for \(linger.typedDescription) more (--telemetry-linger; Ctrl-C ends it)\n")
        _ = stopped.wait(timeout: .now() + .nanoseconds(Int(clamping: linger.nanoseconds)))
        for endpoint in kept { endpoint.stop() }
    }
}
