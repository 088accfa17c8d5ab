import Foundation
import Playout
import PlayoutSender
import PlayoutTelemetry
import PlayoutTelemetryBackends
import PlayoutTesting
import Testing

/// Issue 28, item 1: the queries a dashboard author writes, unquoted, against what two real
/// `playout demo` runs (players `a` and `b`) wrote into a real InfluxDB 1.6 and VictoriaMetrics —
/// the groups and values they return are the runs' own (their JSON Lines files).
@Suite("dashboard queries on the telemetry schema", .serialized,
       .enabled(if: TelemetryServer.isInstalled("/usr/bin/influxd") && TelemetryServer.isInstalled("/usr/bin/victoria-metrics"), "influxd or victoria-metrics is not installed: run make setup"))
struct DashboardQueryTests {
    /// One InfluxQL statement's series: tags and rows (column → value).
    static func influxQL(_ server: TelemetryServer, _ query: String) throws -> [(tags: [String: String], rows: [[String: Any]])] {
        let json = try server.getJSON("/query?db=playout&epoch=ns&q=" + TelemetryServer.encoded(query)) as? [String: Any]
        let result = (json?["results"] as? [[String: Any]])?.first ?? [:]
        if let error = result["error"] as? String { throw TelemetryServer.Failure(description: "\(query): \(error)") }
        return (result["series"] as? [[String: Any]] ?? []).map { series in
            let columns = series["columns"] as? [String] ?? []
            let rows = (series["values"] as? [[Any]] ?? []).map { Dictionary(uniqueKeysWithValues: zip(columns, $0)) }
            return (series["tags"] as? [String: String] ?? [:], rows)
        }
    }

    @Test("GROUP BY player, kind; the rate of frames rendered per track; p95 latency per player — unquoted, on InfluxDB and VictoriaMetrics")
    func queries() throws {
        let influx = try InfluxDBServerTests.startInflux()
        defer { influx.stop() }
        let victoria = try VictoriaMetricsServerTests.startVictoriaMetrics(graphitePort: ScriptedTCPServer.unusedPort())
        defer { victoria.stop() }
        let run = "dash-\(UInt32.random(in: 0...UInt32.max))"
        var files: [String: TelemetryReplay] = [:]
        let start = Int64(Date().timeIntervalSince1970 * 1e9)
        for player in ["a", "b"] {
            let file = FFmpeg.temporaryFile("\(player).jsonl")
            defer { try? FileManager.default.removeItem(at: file) }
            let result = try runPlayout([
                "demo", "--duration", "4s", "--size", "320x240", "--port", "\(try SocketAddress.freeLoopbackPorts(count: 4).lowerBound)",
                "--telemetry", "jsonl:\(file.path)", "--telemetry", "influx:http://127.0.0.1:\(influx.port)/write?db=playout",
                "--telemetry", "influx:http://127.0.0.1:\(victoria.port)/write?db=playout",
                "--tag", "run=\(run)", "--tag", "player=\(player)", "--telemetry-strict",
            ])
            #expect(result.status == 0, "\(result.stderr)")
            files[player] = try TelemetryReplay(contentsOfFile: file.path)
        }
        let end = Int64(Date().timeIntervalSince1970 * 1e9)
        /// The last heartbeat's `kind.name` in `player`'s file.
        func last(_ player: String, _ kind: String, _ name: String) -> Double? {
            files[player]?.records.last { $0.kind == .heartbeat }?[field: "\(kind).\(name)"]?.number
        }

        // Frames rendered so far, per player and track: four groups, the files' last values.
        let groups = try Self.influxQL(influx, "SELECT last(frames_rendered) FROM playout_track WHERE run = '\(run)' GROUP BY player, kind")
        #expect(Set(groups.map { "\($0.tags["player"] ?? "?")/\($0.tags["kind"] ?? "?")" }) == ["a/video", "a/audio", "b/video", "b/audio"])
        for group in groups {
            let (player, kind) = (group.tags["player"]!, group.tags["kind"]!)
            let value = (group.rows.first?["last"] as? NSNumber)?.doubleValue
            #expect(value != nil && value == last(player, kind, "framesRendered"), "\(player) \(kind)")
        }

        // The rate of frames rendered per video track, per second: ≈ the test pattern's 30 fps
        // (a QoS sample a second; one sample's window may hold a frame more or less).
        let rates = try Self.influxQL(influx, """
            SELECT non_negative_derivative(max(frames_rendered), 1s) FROM playout_track WHERE run = '\(run)' AND kind = 'video' \
            AND time >= \(start) AND time <= \(end) GROUP BY time(1s), player fill(none)
            """)
        #expect(rates.count == 2)
        for series in rates {
            let values = series.rows.compactMap { ($0["non_negative_derivative"] as? NSNumber)?.doubleValue }.sorted()
            #expect(values.count >= 2, "\(series.tags)")
            let median = values.isEmpty ? 0 : values[values.count / 2]
            #expect(abs(median - 30) <= 3, "\(series.tags): \(values)")
        }

        // p95 end-to-end latency per player: one of that player's samples, at least its median.
        let latency = try Self.influxQL(influx, "SELECT percentile(end_to_end_latency_seconds, 95) FROM playout_heartbeat WHERE run = '\(run)' GROUP BY player")
        #expect(latency.count == 2)
        for series in latency {
            let player = series.tags["player"] ?? "?"
            let p95 = (series.rows.first?["percentile"] as? NSNumber)?.doubleValue ?? -1
            let samples = files[player]?.records.filter { $0.kind == .heartbeat }.compactMap { $0[field: "endToEndLatency"]?.number }.sorted() ?? []
            #expect(samples.contains(p95) && p95 >= samples[samples.count / 2], "\(player): \(p95) of \(samples)")
            #expect(p95 > 0.1 && p95 < 1, "\(player): \(p95)")
        }

        // No key needs quoting: neither `name` nor a dotted field exists.
        let keys = try Self.influxQL(influx, "SHOW TAG KEYS FROM playout_event").flatMap(\.rows).compactMap { $0["tagKey"] as? String }
        #expect(keys.contains("event") && keys.contains("player") && !keys.contains("name"))
        let fields = try Self.influxQL(influx, "SHOW FIELD KEYS").flatMap(\.rows).compactMap { $0["fieldKey"] as? String }
        #expect(!fields.isEmpty && fields.allSatisfy { !$0.contains(".") && $0 == $0.lowercased() }, "\(fields.filter { $0.contains(".") || $0 != $0.lowercased() })")

        // VictoriaMetrics, the same points as Prometheus series: grouped by player and kind.
        let promQL = "max by (player, kind) (last_over_time(playout_track_frames_rendered{run=\"\(run)\"}[1h]))"
        /// The query's groups as "player/kind" → value.
        func groupsFromVictoria() throws -> [String: Double] {
            let json = try victoria.getJSON("/api/v1/query?query=" + TelemetryServer.encoded(promQL)) as? [String: Any]
            let result = (json?["data"] as? [String: Any])?["result"] as? [[String: Any]] ?? []
            var groups: [String: Double] = [:]
            for item in result {
                let labels = item["metric"] as? [String: String] ?? [:]
                groups["\(labels["player"] ?? "?")/\(labels["kind"] ?? "?")"] = ((item["value"] as? [Any])?.last as? String).flatMap(Double.init)
            }
            return groups
        }
        var expected: [String: Double] = [:]
        for player in ["a", "b"] {
            for kind in ["video", "audio"] { expected["\(player)/\(kind)"] = last(player, kind, "framesRendered") }
        }
        // Polled until the last points are in (VictoriaMetrics makes new samples searchable within seconds).
        let seen = try? TelemetryServer.poll("the runs' last values from VictoriaMetrics") { try groupsFromVictoria() == expected ? true : nil }
        let groupsSeen = try groupsFromVictoria()
        #expect(seen == true, "\(groupsSeen) != \(expected)")
    }
}
