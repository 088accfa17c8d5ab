import Foundation
import PlayoutTelemetry
import PlayoutTelemetryBackends
import PlayoutTesting
import RealTimeTesting
import Testing

/// InfluxBackend (v1 and v2 write APIs) and GraphiteBackend against a real VictoriaMetrics
/// (Debian's `victoria-metrics` package), read back through `/api/v1/export`.
@Suite("VictoriaMetrics server", .realTime, .serialized, .enabled(if: TelemetryServer.isInstalled("/usr/bin/victoria-metrics"), "victoria-metrics is not installed: run make setup"))
struct VictoriaMetricsServerTests {
    /// One exported series: its labels and its samples.
    struct Series {
        var labels: [String: String]
        var values: [Double]
        var timestamps: [Int64]
        var name: String { labels["__name__"] ?? "" }
    }

    static func startVictoriaMetrics(graphitePort: UInt16) throws -> TelemetryServer {
        let http = ScriptedTCPServer.unusedPort()
        return try TelemetryServer(name: "victoria-metrics", executable: "/usr/bin/victoria-metrics", port: http, readinessPath: "/health") { directory in
            ["-storageDataPath", directory.appendingPathComponent("data").path, "-httpListenAddr", "127.0.0.1:\(http)",
             "-graphiteListenAddr", "127.0.0.1:\(graphitePort)", "-search.latencyOffset", "0s", "-loggerLevel", "ERROR"]
        }
    }

    /// Every series matching `selector`, polled until `count` series hold `samples` samples in all.
    static func export(_ server: TelemetryServer, _ selector: String, series count: Int, samples: Int) throws -> [Series] {
        var seen = "nothing"
        defer { if seen != "" { print("VictoriaMetrics export of \(selector): \(seen)") } }
        let result = try TelemetryServer.poll("\(count) series with \(samples) samples for \(selector) in VictoriaMetrics") {
            let text = try server.getText("/api/v1/export?match[]=" + TelemetryServer.encoded(selector))
            let series = try text.split(separator: "\n").map { line -> Series in
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
                return Series(labels: object["metric"] as? [String: String] ?? [:],
                              values: (object["values"] as? [NSNumber] ?? []).map(\.doubleValue),
                              timestamps: (object["timestamps"] as? [NSNumber] ?? []).map(\.int64Value))
            }
            seen = series.map { "\($0.name)\($0.labels.filter { ["event", "metric"].contains($0.key) }) \($0.values)" }.joined(separator: "; ")
            return series.count == count && series.reduce(0, { $0 + $1.values.count }) == samples ? series : nil
        }
        seen = ""
        return result
    }

    static func one(_ series: [Series], _ name: String, _ labels: [String: String] = [:]) throws -> Series {
        let matching = series.filter { item in item.name == name && labels.allSatisfy { key, value in item.labels[key] == value } }
        return try #require(matching.count == 1 ? matching[0] : nil, "\(name) \(labels) in \(series.map(\.labels))")
    }

    @Test("Influx v1 and v2 writes read back exactly: series, values, timestamps, hostile tags")
    func influx() throws {
        let server = try Self.startVictoriaMetrics(graphitePort: ScriptedTCPServer.unusedPort())
        defer { server.stop() }
        let slashes = #"p\,q\ r\\s=t"#
        for api in ["v1", "v2"] {
            let fixtures = TelemetryFixtures()
            let url = api == "v1" ? "http://127.0.0.1:\(server.port)/write?db=playout" : "http://127.0.0.1:\(server.port)/api/v2/write?org=lab&bucket=playout"
            let backend = try InfluxBackend(writeURL: url, token: api == "v2" ? "unused-by-victoria-metrics" : nil,
                                            tags: [TelemetryField("host", .string("lab 1")), TelemetryField("slashes", .string(slashes))])
            defer { backend.close() }
            for batch in fixtures.batches { try backend.deliver(batch) }

            // Fields become series MEASUREMENT_FIELD (VictoriaMetrics keeps numbers; a string field
            // is a series of zeros): play (seq, reason, bitrate, ratio, live: 7 samples over two
            // plays), playing (seq, timeSincePlay), heartbeat (seq + 3 fields), metric (seq, value).
            let series = try Self.export(server, #"{__name__=~"playout_.*",run="\#(fixtures.run)"}"#, series: 13, samples: 15)
            for item in series {
                #expect(item.labels["viewer"] == TelemetryFixtures.hostileViewer)
                #expect(item.labels["slashes"] == slashes)
                #expect(item.labels["host"] == "lab 1")
                #expect(item.labels["session"] == fixtures.session)
                #expect(item.labels["db"] == (api == "v1" ? "playout" : nil))
            }
            let seq = try Self.one(series, "playout_event_seq", ["event": "play"])
            #expect(seq.values == [0, 3] && seq.timestamps == [fixtures.milliseconds(0), fixtures.milliseconds(3)])
            #expect(try Self.one(series, "playout_event_bitrate", ["event": "play"]).values == [2_500_000, -7])
            #expect(try Self.one(series, "playout_event_ratio").values == [0.5])
            #expect(try Self.one(series, "playout_event_live").values == [1])
            #expect(try Self.one(series, "playout_event_time_since_play", ["event": "playing"]).values == [1.25])
            #expect(try Self.one(series, "playout_event_seq", ["event": "playing"]).timestamps == [fixtures.milliseconds(1)])
            let frames = try Self.one(series, "playout_heartbeat_frames_decoded")
            #expect(frames.values == [300] && frames.timestamps == [fixtures.milliseconds(2)] && frames.labels["event"] == nil)
            #expect(try Self.one(series, "playout_heartbeat_bitrate").values == [2.5e6])
            #expect(try Self.one(series, "playout_heartbeat_paused").values == [0])
            #expect(try Self.one(series, "playout_metric_value", ["metric": "cpu"]).values == [0.25])
        }
    }

    @Test("Graphite plaintext reads back exactly: cumulative event counts, gauges, sanitized paths, second timestamps")
    func graphite() throws {
        let graphitePort = ScriptedTCPServer.unusedPort()
        let server = try Self.startVictoriaMetrics(graphitePort: graphitePort)
        defer { server.stop() }
        let fixtures = TelemetryFixtures()
        let backend = GraphiteBackend(host: "127.0.0.1", port: graphitePort, tags: [TelemetryField("host", .string("lab 1"))])
        defer { backend.close() }
        for batch in fixtures.batches { try backend.deliver(batch) }

        let base = "playout.\(fixtures.run).a_b_c_d_e_f.lab_1"
        let series = try Self.export(server, #"{__name__=~"playout\\.\#(fixtures.run)\\..*"}"#, series: 6, samples: 7)
        let play = try Self.one(series, base + ".events.play")
        #expect(play.values == [1, 2] && play.timestamps == [fixtures.seconds(0) * 1000, fixtures.seconds(3) * 1000])
        #expect(try Self.one(series, base + ".events.playing").values == [1])
        #expect(try Self.one(series, base + ".heartbeat.frames_decoded").values == [300])
        #expect(try Self.one(series, base + ".heartbeat.bitrate").values == [2.5e6])
        #expect(try Self.one(series, base + ".heartbeat.paused").values == [0])
        let cpu = try Self.one(series, base + ".metrics.cpu")
        #expect(cpu.values == [0.25] && cpu.timestamps == [fixtures.seconds(4) * 1000])
    }

    @Test("Graphite: a server that goes away is a retryable error, and the backend reconnects when it is back")
    func graphiteReconnect() throws {
        let graphitePort = ScriptedTCPServer.unusedPort()
        var server = try Self.startVictoriaMetrics(graphitePort: graphitePort)
        let fixtures = TelemetryFixtures()
        let backend = GraphiteBackend(host: "127.0.0.1", port: graphitePort, timeout: .seconds(2))
        defer { backend.close() }
        try backend.deliver(fixtures.batches[0])
        server.stop()
        // The first send after the close may still land in the kernel; within a few the peer's
        // close is seen and the error is retryable.
        let failure = try TelemetryServer.poll("a refused delivery", timeout: .seconds(10)) { () -> TelemetryDeliveryError? in
            do {
                try backend.deliver(fixtures.batches[1])
                return nil
            } catch let error as TelemetryDeliveryError {
                return error
            }
        }
        #expect(failure.retryable)
        server = try Self.startVictoriaMetrics(graphitePort: graphitePort)
        defer { server.stop() }
        try backend.deliver(fixtures.batches[1])
    }
}
