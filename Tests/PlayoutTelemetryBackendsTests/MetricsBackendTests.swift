import Foundation
import MetricsTestKit
import PlayoutCore
@testable import PlayoutTelemetry
@testable import PlayoutTelemetryBackends
import PlayoutTesting
import PlayoutHTTP
import Prometheus
import Testing

private func record(_ kind: TelemetryRecord.Kind, _ name: String, session: String = "s1", fields: [TelemetryField] = [],
                    tags: [TelemetryField] = [TelemetryField("run", .string("r42"))]) -> TelemetryRecord {
    TelemetryRecord(sessionId: session, seq: 0, monotonic: .zero, wallTimeNanoseconds: 0, kind: kind, name: name, fields: fields, tags: tags)
}

@Suite("MetricsBackend")
struct MetricsBackendTests {
    @Test("events count per name and tags; heartbeat and metric values set gauges per session")
    func testMetrics() throws {
        let metrics = TestMetrics()
        let backend = MetricsBackend(factory: metrics, tags: [TelemetryField("host", .string("lab1"))])
        try backend.deliver([
            record(.event, "play"), record(.event, "playing"), record(.event, "play"),
            record(.heartbeat, "heartbeat", fields: [TelemetryField("framesDecoded", .int(300)), TelemetryField("bitrate", .double(2.5e6)),
                                                     TelemetryField("state", .string("playing")), TelemetryField("paused", .bool(true))]),
            record(.heartbeat, "heartbeat", fields: [TelemetryField("framesDecoded", .int(330))]),
            record(.metric, "cpu load", fields: [TelemetryField("value", .double(0.5))]),
        ])
        #expect(try metrics.expectCounter("playout_events_total", [("event", "play"), ("run", "r42"), ("host", "lab1")]).totalValue == 2)
        #expect(try metrics.expectCounter("playout_events_total", [("event", "playing"), ("run", "r42"), ("host", "lab1")]).totalValue == 1)
        let dimensions = [("session", "s1"), ("run", "r42"), ("host", "lab1")]
        #expect(try metrics.expectGauge("playout_heartbeat_frames_decoded", dimensions).lastValue == 330)
        #expect(try metrics.expectGauge("playout_heartbeat_bitrate", dimensions).lastValue == 2.5e6)
        #expect(try metrics.expectGauge("playout_heartbeat_paused", dimensions).lastValue == 1)
        #expect(try metrics.expectGauge("playout_metric_cpu_load", dimensions).lastValue == 0.5)
        #expect(metrics.recorders.count == 4)
    }

    @Test("a subscriber's heartbeat by the schema: a track's counter a counter under one name with a kind dimension, a gauge in its unit, the SSRC no metric")
    func schemaNames() throws {
        let metrics = TestMetrics()
        let schema = TelemetrySchema(trackFields: [
            .init("framesRendered", .counter, help: "Frames rendered."), .init("bitrate", .gauge, .bitsPerSecond, help: "Bit rate."),
            .init("ssrc", .identity, help: "SSRC."),
        ])
        let backend = MetricsBackend(factory: metrics, tags: [], schema: schema)
        let fields = [TelemetryField("video.framesRendered", .int(300)), TelemetryField("audio.framesRendered", .int(500)),
                      TelemetryField("video.bitrate", .double(2.5e6)), TelemetryField("video.ssrc", .int(7))]
        try backend.deliver([record(.heartbeat, "heartbeat", fields: fields, tags: [])])
        try backend.deliver([record(.heartbeat, "heartbeat", fields: [TelemetryField("video.framesRendered", .int(330))], tags: [])])
        #expect(try metrics.expectCounter("playout_frames_rendered_total", [("kind", "video"), ("session", "s1")]).totalValue == 330)
        #expect(try metrics.expectCounter("playout_frames_rendered_total", [("kind", "audio"), ("session", "s1")]).totalValue == 500)
        #expect(try metrics.expectGauge("playout_bitrate_bits_per_second", [("kind", "video"), ("session", "s1")]).lastValue == 2.5e6)
        #expect(!metrics.recorders.contains { $0.label.contains("ssrc") } && !metrics.counters.contains { $0.label.contains("ssrc") })
    }

    @Test("dimension names are made valid and distinct", arguments: [
        ("run", "run"), ("event", "event_"), ("a-b c", "a_b_c"), ("9lives", "tag_9lives"), ("__reserved", "tag___reserved"), ("", "tag_"), ("ünï", "_n_"),
    ])
    func labelNames(tag: String, expected: String) throws {
        let metrics = TestMetrics()
        try MetricsBackend(factory: metrics).deliver([record(.event, "play", tags: [TelemetryField(tag, .string("v"))])])
        #expect(metrics.counters.first?.dimensions.map(\.0) == ["event", expected])
    }

    @Test("series beyond the bound are counted, not created")
    func bound() throws {
        let metrics = TestMetrics()
        let backend = MetricsBackend(factory: metrics, maximumSeries: 2)
        try backend.deliver((0..<5).map { record(.event, "e\($0)") })
        #expect(metrics.counters.count == 2)
        #expect(backend.droppedSeriesCount == 3)
    }
}

@Suite("PrometheusEndpoint")
struct PrometheusEndpointTests {
    @Test("GET /metrics serves the exposition; other paths 404, other methods 405")
    func serves() throws {
        let endpoint = try PrometheusEndpoint(host: "127.0.0.1", port: 0)
        defer { endpoint.stop() }
        try MetricsBackend(factory: endpoint.metricsFactory).deliver([record(.event, "play"), record(.event, "play")])
        let client = HTTPClient(host: "127.0.0.1", port: endpoint.port, timeout: .seconds(5))
        let response = try client.send(method: "GET", target: "/metrics")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8")
        let text = String(decoding: response.body, as: UTF8.self)
        #expect(text.contains("# TYPE playout_events_total counter\n"))
        #expect(text.contains(#"playout_events_total{event="play",run="r42"} 2"#))
        #expect(try client.send(method: "GET", target: "/").status == 404)
        #expect(try client.send(method: "POST", target: "/metrics").status == 405)
        #expect(try client.send(method: "HEAD", target: "/metrics").body.isEmpty)
    }

    @Test("a spec gives host and port; bad specs are refused", arguments: ["127.0.0.1:0", "[::1]:0"])
    func specs(spec: String) throws {
        let endpoint = try PrometheusEndpoint(spec: spec)
        defer { endpoint.stop() }
        #expect(endpoint.port > 0)
        #expect(try HTTPClient(host: endpoint.host, port: endpoint.port, timeout: .seconds(5)).send(method: "GET", target: "/metrics").status == 200)
    }

    @Test("bad specs are refused with an example", arguments: ["", "host", "localhost:9464", "1.2.3:9464", "127.0.0.1:99999", "[::1]"])
    func badSpecs(spec: String) {
        #expect(throws: NetworkTelemetryError.self) { try PrometheusEndpoint(spec: spec) }
    }

    @Test("a client that stalls, sends garbage or a huge head does not stop the next scrape")
    func hostileClients() throws {
        let endpoint = try PrometheusEndpoint(host: "127.0.0.1", port: 0)
        defer { endpoint.stop() }
        let garbage = try TCPConnection.connect(host: "127.0.0.1", port: endpoint.port, deadline: MonotonicClockDeadline.in(.seconds(2)))
        try garbage.send(Array("\u{1}\u{2}garbage\r\n\r\n".utf8), deadline: MonotonicClockDeadline.in(.seconds(2)))
        let huge = HTTPClient(host: "127.0.0.1", port: endpoint.port, timeout: .seconds(5))
        #expect(try huge.send(method: "GET", target: "/metrics", headers: [HTTPHeader("X-Big", String(repeating: "a", count: 10_000))]).status == 431)
        // A client that connects and says nothing holds the thread at most 2 s.
        let silent = try TCPConnection.connect(host: "127.0.0.1", port: endpoint.port, deadline: MonotonicClockDeadline.in(.seconds(2)))
        let start = ContinuousClock.now
        let response = try HTTPClient(host: "127.0.0.1", port: endpoint.port, timeout: .seconds(5)).send(method: "GET", target: "/metrics")
        #expect(response.status == 200)
        #expect(ContinuousClock.now - start < .seconds(4))
        silent.close()
        garbage.close()
    }

    @Test("slowloris: clients that hold half a request head do not delay a scrape (served concurrently), whether 10 or more than the connection cap", arguments: [10, PrometheusEndpoint.maximumConnections + 8])
    func slowClients(count: Int) throws {
        let endpoint = try PrometheusEndpoint(host: "127.0.0.1", port: 0)
        defer { endpoint.stop() }
        var slow: [TCPConnection] = []
        for _ in 0..<count {
            let connection = try TCPConnection.connect(host: "127.0.0.1", port: endpoint.port, deadline: MonotonicClockDeadline.in(.seconds(2)))
            try connection.send(Array("GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ".utf8), deadline: MonotonicClockDeadline.in(.seconds(2)))
            slow.append(connection)
        }
        defer { for connection in slow { connection.close() } }
        let start = ContinuousClock.now
        let response = try HTTPClient(host: "127.0.0.1", port: endpoint.port, timeout: .seconds(5)).send(method: "GET", target: "/metrics")
        let latency = ContinuousClock.now - start
        #expect(response.status == 200)
        // Served one at a time, the scrape would wait out every slow client's 2 s.
        #expect(latency < PrometheusEndpoint.requestTimeout / 2, "scrape took \(latency) behind \(count) slow clients")
    }

    @Test("a spec without a host listens on 127.0.0.1 only")
    func loopbackByDefault() throws {
        #expect(PrometheusEndpoint.defaultHost == "127.0.0.1")
        #expect(try PrometheusEndpoint.address(parsing: "9464") == ("127.0.0.1", 9464))
        let endpoint = try PrometheusEndpoint(spec: "0")
        defer { endpoint.stop() }
        #expect(endpoint.host == "127.0.0.1" && endpoint.port > 0)
    }

    @Test("the exposition passes promtool check metrics", .enabled(if: Promtool.path != nil, "promtool (Debian package prometheus) is not installed: make setup"))
    func promtool() throws {
        let endpoint = try PrometheusEndpoint(host: "127.0.0.1", port: 0)
        defer { endpoint.stop() }
        try MetricsBackend(factory: endpoint.metricsFactory, tags: [TelemetryField("quote\"back\\slash", .string("line\nbreak \"q\" \\"))]).deliver([
            record(.event, "play"), record(.event, "weird \"name\"\n"),
            record(.heartbeat, "heartbeat", fields: [TelemetryField("framesDecoded", .int(3)), TelemetryField("jitter-seconds", .double(0.015))]),
            record(.metric, "cpu", fields: [TelemetryField("value", .double(0.25))]),
        ])
        let body = try HTTPClient(host: "127.0.0.1", port: endpoint.port, timeout: .seconds(5)).send(method: "GET", target: "/metrics").body
        let (status, output) = try Promtool.checkMetrics(body)
        // Exit 1 is a format error; 3 is lint only, and the only lint allowed is the missing HELP
        // (swift-metrics has no way to give one).
        #expect(status == 0 || status == 3, "\(output)\n\(String(decoding: body, as: UTF8.self))")
        let lint = output.split(separator: "\n").filter { !$0.hasSuffix(" no help text") }
        #expect(lint.isEmpty, "\(output)")
        #expect(output.split(separator: "\n").count == 4)
        #expect(String(decoding: body, as: UTF8.self).contains(#"playout_events_total{event="weird \"name\"\n",run="r42",quote_back_slash="line\nbreak \"q\" \\"} 1"#))
    }
}

/// Deadlines for the socket layer in tests.
enum MonotonicClockDeadline {
    static func `in`(_ duration: Duration) -> MonotonicInstant {
        MonotonicClock().now.advanced(by: duration)
    }
}

/// The real `promtool` from the prometheus package.
enum Promtool {
    static let path: String? = ["/usr/bin/promtool", "/usr/local/bin/promtool"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Runs `promtool check metrics` on `exposition`; returns its exit status and output.
    static func checkMetrics(_ exposition: [UInt8]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path!)
        process.arguments = ["check", "metrics"]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        input.fileHandleForWriting.write(Data(exposition))
        try input.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }
}
