import Foundation
import PlayoutTelemetry
import PlayoutTelemetryBackends
import PlayoutTesting
import RealTimeTesting
import Testing

/// InfluxBackend against a real InfluxDB 1.x (`influxd` from Debian's `influxdb` package).
@Suite("InfluxDB server", .realTime, .serialized, .enabled(if: TelemetryServer.isInstalled("/usr/bin/influxd"), "influxd is not installed: run make setup"))
struct InfluxDBServerTests {
    /// Starts influxd on free loopback ports in a temporary directory, with database `playout`.
    static func startInflux() throws -> TelemetryServer {
        let http = ScriptedTCPServer.unusedPort()
        let rpc = ScriptedTCPServer.unusedPort()
        let server = try TelemetryServer(name: "influxd", executable: "/usr/bin/influxd", port: http, readinessPath: "/ping",
                                         files: [:]) { directory in
            let config = """
                reporting-disabled = true
                bind-address = "127.0.0.1:\(rpc)"
                [meta]
                  dir = "\(directory.path)/meta"
                [data]
                  dir = "\(directory.path)/data"
                  wal-dir = "\(directory.path)/wal"
                  query-log-enabled = false
                [http]
                  bind-address = "127.0.0.1:\(http)"
                  log-enabled = false
                [monitor]
                  store-enabled = false
                [continuous_queries]
                  enabled = false
                """
            try? config.write(to: directory.appendingPathComponent("influxdb.conf"), atomically: true, encoding: .utf8)
            return ["-config", directory.appendingPathComponent("influxdb.conf").path]
        }
        #expect(try server.post("/query?q=" + TelemetryServer.encoded("CREATE DATABASE playout")) == 200)
        return server
    }

    /// The rows of `SELECT * FROM measurement WHERE run = …` as column → value dictionaries.
    static func rows(_ server: TelemetryServer, _ measurement: String, run: String) throws -> [[String: Any]] {
        let query = "SELECT * FROM \(measurement) WHERE \"run\" = '\(run)'"
        let json = try server.getJSON("/query?db=playout&epoch=ns&q=" + TelemetryServer.encoded(query)) as? [String: Any]
        let results = json?["results"] as? [[String: Any]]
        guard let series = results?.first?["series"] as? [[String: Any]], let first = series.first else { return [] }
        let columns = first["columns"] as? [String] ?? []
        return (first["values"] as? [[Any]] ?? []).map { Dictionary(uniqueKeysWithValues: zip(columns, $0)) }
    }

    @Test("points written through the v1 API query back exactly: counts, values, types, tags, escaping, timestamps")
    func roundTrip() throws {
        let server = try Self.startInflux()
        defer { server.stop() }
        let fixtures = TelemetryFixtures()
        let backend = try InfluxBackend(writeURL: "http://127.0.0.1:\(server.port)/write?db=playout", token: nil,
                                        tags: [TelemetryField("host", .string("lab 1"))], timeout: .seconds(5))
        defer { backend.close() }
        for batch in fixtures.batches { try backend.deliver(batch) }

        let events = try Self.rows(server, "playout_event", run: fixtures.run)
        #expect(events.count == 3)
        let play = try #require(events.first { ($0["seq"] as? Int) == 0 })
        #expect(play["time"] as? Int64 == fixtures.wall[0])
        #expect(play["event"] as? String == "play" && play["name"] == nil)  // `event`: `name` is an InfluxQL keyword
        #expect(play["session"] as? String == fixtures.session)
        #expect(play["viewer"] as? String == TelemetryFixtures.hostileViewer)
        #expect(play["host"] as? String == "lab 1")
        #expect(play["reason"] as? String == TelemetryFixtures.hostileReason)
        #expect(play["bitrate"] as? Int == 2_500_000)
        #expect(play["ratio"] as? Double == 0.5)
        #expect(play["live"] as? Bool == true)
        let playing = try #require(events.first { ($0["seq"] as? Int) == 1 })
        #expect(playing["event"] as? String == "playing" && playing["time_since_play"] as? Double == 1.25 && playing["time"] as? Int64 == fixtures.wall[1])
        let secondPlay = try #require(events.first { ($0["seq"] as? Int) == 3 })
        #expect(secondPlay["bitrate"] as? Int == -7 && secondPlay["time"] as? Int64 == fixtures.wall[3])

        let heartbeats = try Self.rows(server, "playout_heartbeat", run: fixtures.run)
        #expect(heartbeats.count == 1)
        #expect(heartbeats.first?["frames_decoded"] as? Int == 300)
        #expect(heartbeats.first?["bitrate"] as? Double == 2.5e6)
        #expect(heartbeats.first?["paused"] as? Bool == false)
        #expect(heartbeats.first?["name"] == nil && heartbeats.first?["event"] == nil)

        let metrics = try Self.rows(server, "playout_metric", run: fixtures.run)
        #expect(metrics.count == 1)
        #expect(metrics.first?["metric"] as? String == "cpu" && metrics.first?["value"] as? Double == 0.25 && metrics.first?["seq"] as? Int == 4)

        // The integer field stays an integer in InfluxDB's schema (the `i` suffix).
        let types = try server.getJSON("/query?db=playout&q=" + TelemetryServer.encoded("SHOW FIELD KEYS FROM playout_event")) as? [String: Any]
        let values = ((types?["results"] as? [[String: Any]])?.first?["series"] as? [[String: Any]])?.first?["values"] as? [[String]] ?? []
        #expect(values.contains(["bitrate", "integer"]) && values.contains(["seq", "integer"]) && values.contains(["live", "boolean"]))
    }

    @Test("the real server's refusals are classified: unknown database and the v2 path are 404, not retried; a stopped server is refused, retried")
    func refusals() throws {
        let server = try Self.startInflux()
        let fixtures = TelemetryFixtures()
        let missing = try InfluxBackend(writeURL: "http://127.0.0.1:\(server.port)/write?db=missing", token: nil)
        #expect { try missing.deliver(fixtures.batches[0]) } throws: { error in
            let error = error as! TelemetryDeliveryError
            return !error.retryable && error.reason.contains("HTTP 404") && error.reason.contains("database not found")
        }
        let v2 = try InfluxBackend(writeURL: "http://127.0.0.1:\(server.port)/api/v2/write?org=o&bucket=b", token: "t")
        #expect { try v2.deliver(fixtures.batches[0]) } throws: { !($0 as! TelemetryDeliveryError).retryable }

        let backend = try InfluxBackend(writeURL: "http://127.0.0.1:\(server.port)/write?db=playout", token: nil, timeout: .seconds(2))
        try backend.deliver(fixtures.batches[0])
        server.stop()
        let start = ContinuousClock.now
        #expect { try backend.deliver(fixtures.batches[1]) } throws: { error in
            let error = error as! TelemetryDeliveryError
            return error.retryable && (error.reason.contains("refused") || error.reason.contains("closed"))
        }
        #expect(ContinuousClock.now - start < .seconds(2))
    }
}
