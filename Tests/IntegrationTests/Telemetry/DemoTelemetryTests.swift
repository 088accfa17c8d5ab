import Foundation
import Playout
import PlayoutSender
import PlayoutTelemetry
import PlayoutTelemetryBackends
import PlayoutTesting
import RealTimeTesting
import Testing

/// `playout demo --telemetry …` end to end: one run writes the same records to a JSON Lines file
/// and to real servers, and what the servers hold is exactly what the file holds — counts, values,
/// tags (hostile ones too), timestamps.
@Suite("playout demo → real telemetry servers", .realTime, .serialized, .enabled(if: TelemetryServer.isInstalled("/usr/bin/influxd"), "influxd is not installed: run make setup"))
struct DemoTelemetryTests {
    /// A tag value with every character line protocol escapes, and a quote and a backslash.
    static let hostileViewer = #"viewer one,two=three "four" back\slash"#

    @Test("a demo run's events and heartbeats query back from InfluxDB exactly as its JSON Lines file holds them")
    func influxMatchesTheFile() throws {
        let server = try InfluxDBServerTests.startInflux()
        defer { server.stop() }
        let run = "demo-\(UInt32.random(in: 0...UInt32.max))"
        let file = FFmpeg.temporaryFile("demo.jsonl")
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try runPlayout([
            "demo", "--duration", "4s", "--size", "320x240", "--port", "\(try freePortBlock())",
            "--telemetry", "jsonl:\(file.path)", "--telemetry", "influx:http://127.0.0.1:\(server.port)/write?db=playout",
            "--tag", "run=\(run)", "--tag", "viewer=\(Self.hostileViewer)", "--json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try #require(result.stdout.split(separator: "\n").last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] })
        #expect(summary["telemetryUndelivered"] as? Double == 0, "\(summary)")

        let replay = try TelemetryReplay(contentsOfFile: file.path)
        try replay.requireClean()
        let events = replay.records.filter { $0.kind == .event }
        let heartbeats = replay.records.filter { $0.kind == .heartbeat }
        #expect(events.count >= 4 && heartbeats.count >= 1, "\(replay.records.map(\.name))")

        let eventRows = try InfluxDBServerTests.rows(server, "playout_event", run: run)
        let heartbeatRows = try InfluxDBServerTests.rows(server, "playout_heartbeat", run: run)
        let trackRows = try InfluxDBServerTests.rows(server, "playout_track", run: run)
        #expect(eventRows.count == events.count)
        #expect(heartbeatRows.count == heartbeats.count)
        // Every event: same name (the `event` tag), seq, session and nanosecond time; the hostile tag intact.
        for record in events {
            let row = eventRows.first { ($0["seq"] as? Int) == Int(record.seq) && ($0["session"] as? String) == record.sessionId }
            #expect(row?["event"] as? String == record.name, "seq \(record.seq)")
            #expect(row?["time"] as? Int64 == record.wallTimeNanoseconds, "seq \(record.seq)")
            #expect(row?["viewer"] as? String == Self.hostileViewer)
        }
        // Every heartbeat: one point per track, tagged with its kind; each track's integer
        // counters are integers with the file's values, under the schema's names.
        let schema = TelemetrySchema.subscriber
        for record in heartbeats {
            for field in record.fields {
                guard case .int(let value) = field.value else { continue }
                let (description, kind, derived, _) = schema.describe(field.name)
                if description.type == .identity {  // the SSRC: a tag of the track's point
                    #expect(trackRows.first { ($0["seq"] as? Int) == Int(record.seq) && ($0["kind"] as? String) == kind }?["ssrc"] as? String == String(value))
                    continue
                }
                guard let kind else {
                    if !derived { #expect(heartbeatRows.first { ($0["seq"] as? Int) == Int(record.seq) }?[description.exportedName] as? Int == Int(value), "\(field.name)") }
                    continue
                }
                let row = trackRows.first { ($0["seq"] as? Int) == Int(record.seq) && ($0["kind"] as? String) == kind }
                #expect(row?[description.exportedName] as? Int == Int(value), "\(field.name)")
            }
        }
    }

    @Test("issue 28, strict delivery: a database that does not exist — the summary names InfluxDB's own reason; --telemetry-strict makes it exit 3")
    func strictDelivery() throws {
        let server = try InfluxDBServerTests.startInflux()
        defer { server.stop() }
        let missing = "influx:http://127.0.0.1:\(server.port)/write?db=nope"
        let common = ["demo", "--duration", "2s", "--size", "320x240", "--telemetry", missing]
        let lenient = try runPlayout(common + ["--port", "\(try freePortBlock())"])
        #expect(lenient.status == 0, "\(lenient.stderr)")
        #expect(lenient.stderr.contains("dropped (rejected"), "\(lenient.stderr)")
        #expect(lenient.stderr.contains("last error: HTTP 404 from influx 127.0.0.1:\(server.port): database not found: \"nope\""), "\(lenient.stderr)")

        let strict = try runPlayout(common + ["--port", "\(try freePortBlock())", "--telemetry-strict"])
        #expect(strict.status == 3, "\(strict.stderr)")
        let line = try #require(strict.stderr.split(separator: "\n").first { $0.hasPrefix("playout: telemetry: ") }, "\(strict.stderr)")
        #expect(line.contains("records undelivered (influx 127.0.0.1:\(server.port): 0 delivered"), "\(line)")
        #expect(line.contains("HTTP 404") && line.contains("database not found"), "\(line)")

        // The same database present: strict and clean, exit 0.
        let clean = try runPlayout(["demo", "--duration", "2s", "--size", "320x240", "--port", "\(try freePortBlock())",
                                    "--telemetry", "influx:http://127.0.0.1:\(server.port)/write?db=playout", "--telemetry-strict"])
        #expect(clean.status == 0, "\(clean.stderr)")
        #expect(!clean.stderr.contains("undelivered"), "\(clean.stderr)")
    }

    /// Four consecutive free loopback ports from an even one, for the demo's publisher.
    func freePortBlock() throws -> UInt16 {
        try SocketAddress.freeLoopbackPorts(count: 4).lowerBound
    }
}
