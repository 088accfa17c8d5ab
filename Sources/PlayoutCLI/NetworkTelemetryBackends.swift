#if canImport(Glibc)
import Glibc
#endif
import Playout
import PlayoutTelemetryBackends

/// The backend for a network `--telemetry` spec: InfluxDB (v1 or v2 write API, the v2 token from
/// `INFLUX_TOKEN`), Graphite plaintext, or a Prometheus `/metrics` endpoint served while the run
/// lasts (stopped when the engine closes its backends).
///
/// - Throws: ``PlayoutError`` (code `invalidOption`) naming the spec, e.g. when the Prometheus
///   port is in use.
func makeNetworkTelemetryBackend(_ spec: TelemetrySpec) throws -> any TelemetryBackend {
    do throws(NetworkTelemetryError) {
        switch spec.destination {
        case .influx(let url, _):
            let token = getenv("INFLUX_TOKEN").map { String(cString: $0) }
            return try InfluxBackend(writeURL: url, token: token?.isEmpty == false ? token : nil)
        case .graphite(let host, let port):
            return GraphiteBackend(host: host, port: port)
        case .prometheus(let host, let port):
            let endpoint = try PrometheusEndpoint(host: host, port: port)
            // Said as soon as it listens (with the port the system chose for prometheus:0).
            let shown = endpoint.host.contains(":") ? "[\(endpoint.host)]" : endpoint.host
            writeError("playout: serving Prometheus metrics on http://\(shown):\(endpoint.port)/metrics\n")
            return ServedMetrics(endpoint: endpoint)
        case .jsonl:
            throw NetworkTelemetryError(.invalidAddress, "not a network backend")
        }
    } catch {
        throw PlayoutError(.invalidOption, "--telemetry \(spec.text): \(error.message)")
    }
}

/// Metrics served on a Prometheus endpoint for as long as the engine runs: records become
/// swift-metrics counters and gauges (``MetricsBackend``) that the endpoint's `/metrics` shows;
/// closing the backend stops serving.
private final class ServedMetrics: TelemetryBackend {
    let name: String
    private let endpoint: PrometheusEndpoint
    private let metrics: MetricsBackend

    init(endpoint: PrometheusEndpoint) {
        self.endpoint = endpoint
        metrics = MetricsBackend(factory: endpoint.metricsFactory)
        name = "prometheus :\(endpoint.port)"
    }

    func deliver(_ batch: [TelemetryRecord]) throws(TelemetryDeliveryError) {
        try metrics.deliver(batch)
    }

    func close() {
        metrics.close()
        endpoint.stop()
    }
}
