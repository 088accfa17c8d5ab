import Foundation
import Playout
import PlayoutSender
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
        let play = try #require(events.first { $0.labels["event"] == "play" })
        #expect(play.value == "2")
        #expect(play.labels["viewer"] == TelemetryFixtures.hostileViewer)
        #expect(play.labels["note"] == hostile)
        #expect(play.labels["job"] == "playout" && play.labels["instance"] == "127.0.0.1:\(endpoint.port)")
        #expect(events.first { $0.labels["event"] == "playing" }?.value == "1")

        let frames = try query(#"playout_heartbeat_frames_decoded{run="\#(fixtures.run)"}"#, count: 1)
        #expect(frames.first?.value == "300" && frames.first?.labels["session"] == fixtures.session)
        #expect(try query(#"playout_heartbeat_bitrate{run="\#(fixtures.run)"}"#, count: 1).first?.value == "2500000")
        #expect(try query(#"playout_heartbeat_paused{run="\#(fixtures.run)"}"#, count: 1).first?.value == "0")
        #expect(try query(#"playout_metric_cpu{run="\#(fixtures.run)"}"#, count: 1).first?.value == "0.25")

        // More events are seen at the next scrape.
        try backend.deliver([fixtures.batches[0][0]])
        _ = try TelemetryServer.poll("the third play in Prometheus") {
            try query(#"playout_events_total{run="\#(fixtures.run)",event="play"}"#, count: 1).first?.value == "3" ? true : nil
        }
        // Prometheus saw the target up.
        #expect(try query(#"up{job="playout"}"#, count: 1).first?.value == "1")
    }

    @Test("issue 28: a demo's /metrics passes promtool, and stays up after the run so its last samples and the view's KPIs are scraped; Ctrl-C ends the wait",
          .enabled(if: TelemetryServer.isInstalled("/usr/bin/promtool"), "promtool is not installed: run make setup"))
    func demoEndpointLingers() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let port = ScriptedTCPServer.unusedPort()
        let file = FFmpeg.temporaryFile("demo.jsonl")
        let stderr = FFmpeg.temporaryFile("stderr.txt")
        let scraped = FFmpeg.temporaryFile("metrics.txt")
        defer { for url in [file, stderr, scraped] { try? FileManager.default.removeItem(at: url) } }
        _ = FileManager.default.createFile(atPath: stderr.path, contents: nil)
        let process = Process()
        process.executableURL = root.appendingPathComponent(".build/debug/playout")
        process.arguments = [
            "demo", "--duration", "3s", "--size", "320x240", "--port", "\(try SocketAddress.freeLoopbackPorts(count: 4).lowerBound)",
            "--telemetry", "prometheus:127.0.0.1:\(port)", "--telemetry", "jsonl:\(file.path)", "--telemetry-linger", "60s", "--tag", "run=linger",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: stderr)
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        // The view's KPIs exist only once the run ended (viewend): a scrape that has them is after
        // the run's last sample.
        let body = try TelemetryServer.poll("the view's KPIs on /metrics after the run", timeout: .seconds(60)) { () -> String? in
            guard let response = try? HTTPClientForTests(port: port).get("/metrics"), response.status == 200 else { return nil }
            let text = String(decoding: response.body, as: UTF8.self)
            return text.contains("playout_view_playing_time_seconds{") ? text : nil
        }
        #expect(process.isRunning, "the endpoint closed with the run")
        try body.write(to: scraped, atomically: true, encoding: .utf8)
        let check = try runProgram("/bin/sh", ["-c", "/usr/bin/promtool check metrics < '\(scraped.path)'"])
        #expect(check.status == 0, "promtool: \(check.stderr) \(String(decoding: check.stdout, as: UTF8.self))")

        process.interrupt()  // Ctrl-C ends the linger
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let messages = try String(contentsOf: stderr, encoding: .utf8)
        #expect(messages.contains("playout: the run ended; serving its last metrics on http://127.0.0.1:\(port)/metrics for 1m more (--telemetry-linger"), "\(messages)")

        // What was scraped is the run's last heartbeat.
        let replay = try TelemetryReplay(contentsOfFile: file.path)
        let last = try #require(replay.records.last { $0.kind == .heartbeat })
        for kind in ["video", "audio"] {
            let rendered = try #require(last[field: "\(kind).framesRendered"]?.number)
            #expect(body.contains(#"playout_frames_rendered_total{kind="\#(kind)",session="\#(last.sessionId)",run="linger""#), "\(kind)")
            let line = body.split(separator: "\n").first { $0.hasPrefix(#"playout_frames_rendered_total{kind="\#(kind)""#) }
            #expect(line.flatMap { $0.split(separator: " ").last.flatMap { Double($0) } } == rendered, "\(kind): \(line ?? "none")")
        }
        #expect(body.contains("# TYPE playout_frames_rendered_total counter"))
        #expect(!body.contains("playout_heartbeat_video_"))
    }
}
