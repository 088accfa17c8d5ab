import Foundation
import PlayoutTelemetry
import PlayoutTelemetryBackends
import PlayoutTesting
import RealTimeTesting
import Testing

/// MetricsBackend + PrometheusEndpoint scraped by a real Prometheus (Debian's `prometheus`
/// package) every second, read back through `/api/v1/query`.
@Suite("Prometheus server", .realTime, .serialized, .enabled(if: TelemetryServer.isInstalled("/usr/bin/prometheus"), "prometheus is not installed: run make setup"))
struct PrometheusServerTests {
    @Test("Prometheus scrapes /metrics: event counters and heartbeat gauges with hostile label values query back exactly")
    func scrape() throws {
        let endpoint = try PrometheusEndpoint(host: "127.0.0.1", port: 0)
        defer { endpoint.stop() }
        let fixtures = TelemetryFixtures()
        let hostile = "line\nbreak \"q\" \\ end"
        let backend = MetricsBackend(factory: endpoint.metricsFactory, tags: [TelemetryField("note", .string(hostile))])
        for batch in fixtures.batches { try backend.deliver(batch) }

        let port = ScriptedTCPServer.unusedPort()
        let config = """
            global:
              scrape_interval: 1s
              scrape_timeout: 1s
            scrape_configs:
              - job_name: playout
                static_configs:
                  - targets: ["127.0.0.1:\(endpoint.port)"]
            """
        let server = try TelemetryServer(name: "prometheus", executable: "/usr/bin/prometheus", port: port, readinessPath: "/-/ready",
                                         files: ["prometheus.yml": config]) { directory in
            ["--config.file=\(directory.appendingPathComponent("prometheus.yml").path)", "--storage.tsdb.path=\(directory.appendingPathComponent("data").path)",
             "--web.listen-address=127.0.0.1:\(port)", "--log.level=error"]
        }
        defer { server.stop() }

        func query(_ promql: String, count: Int) throws -> [(labels: [String: String], value: String)] {
            try TelemetryServer.poll("\(count) results for \(promql) from Prometheus") {
                let json = try server.getJSON("/api/v1/query?query=" + TelemetryServer.encoded(promql)) as? [String: Any]
                let result = (json?["data"] as? [String: Any])?["result"] as? [[String: Any]] ?? []
                let rows = result.map { item in
                    (labels: item["metric"] as? [String: String] ?? [:], value: (item["value"] as? [Any])?.last as? String ?? "")
                }
                return rows.count == count ? rows : nil
            }
        }

        let events = try query(#"playout_events_total{run="\#(fixtures.run)"}"#, count: 2)
        let play = try #require(events.first { $0.labels["name"] == "play" })
        #expect(play.value == "2")
        #expect(play.labels["viewer"] == TelemetryFixtures.hostileViewer)
        #expect(play.labels["note"] == hostile)
        #expect(play.labels["job"] == "playout" && play.labels["instance"] == "127.0.0.1:\(endpoint.port)")
        #expect(events.first { $0.labels["name"] == "playing" }?.value == "1")

        let frames = try query(#"playout_heartbeat_frames_decoded{run="\#(fixtures.run)"}"#, count: 1)
        #expect(frames.first?.value == "300" && frames.first?.labels["session"] == fixtures.session)
        #expect(try query(#"playout_heartbeat_bitrate{run="\#(fixtures.run)"}"#, count: 1).first?.value == "2500000")
        #expect(try query(#"playout_heartbeat_paused{run="\#(fixtures.run)"}"#, count: 1).first?.value == "0")
        #expect(try query(#"playout_metric_cpu{run="\#(fixtures.run)"}"#, count: 1).first?.value == "0.25")

        // More events are seen at the next scrape.
        try backend.deliver([fixtures.batches[0][0]])
        _ = try TelemetryServer.poll("the third play in Prometheus") {
            try query(#"playout_events_total{run="\#(fixtures.run)",name="play"}"#, count: 1).first?.value == "3" ? true : nil
        }
        // Prometheus saw the target up.
        #expect(try query(#"up{job="playout"}"#, count: 1).first?.value == "1")
    }
}
