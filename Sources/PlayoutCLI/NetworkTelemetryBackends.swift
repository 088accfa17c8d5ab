import Playout

/// The backend for a network `--telemetry` spec (InfluxDB, Graphite, Prometheus). The network
/// backends are built elsewhere and wired in here; until then every such spec is refused with
/// a clear error before anything starts.
///
/// - Throws: ``PlayoutError`` saying the backend is not available in this build.
func makeNetworkTelemetryBackend(_ spec: TelemetrySpec, tags: [TelemetryField]) throws -> any TelemetryBackend {
    throw PlayoutError(.invalidOption, "--telemetry \(spec.text): this build of playout has no network telemetry backends yet; use jsonl:PATH")
}
