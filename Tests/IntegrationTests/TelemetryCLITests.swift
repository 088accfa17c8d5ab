import Foundation
import PlayoutSender
import PlayoutTelemetry
import PlayoutTelemetryBackends
import Playout
import PlayoutTesting
import RealTimeTesting
import Testing

/// `--telemetry` and `--tag` through the built binary, as a user runs them.
@Suite("playout --telemetry binary", .realTime, .serialized)
struct TelemetryCLITests {
    @Test("`playout demo --telemetry jsonl:PATH --tag run=…`: a replayable file whose KPIs match its viewend, counts in the summary")
    func demoToJSONLines() throws {
        let path = NSTemporaryDirectory() + "playout-telemetry-\(UUID().uuidString).jsonl"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let port = try Publisher.freeLoopbackDestination().port
        let result = try runPlayout([
            "demo", "--duration", "2s", "--json", "--port", "\(port)", "--size", "320x180", "--bitrate", "300k",
            "--telemetry", "jsonl:\(path)", "--tag", "run=cli \"test\"",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try #require(result.stdout.split(separator: "\n").last.flatMap { jsonObject(String($0)) })
        #expect(summary["type"] as? String == "summary")
        let records = try #require(summary["telemetryRecords"] as? Int)
        #expect(records >= 6)
        #expect(summary["telemetryUndelivered"] as? Int == 0)
        #expect(summary["telemetryRejectedTransitions"] as? Int == 0)

        let replay = try TelemetryReplay(contentsOfFile: path)
        #expect(replay.skippedCount == 0)
        #expect(replay.records.count == records)
        #expect(replay.records.allSatisfy { $0.tags.first == TelemetryField("run", .string("cli \"test\"")) && $0.tags.map(\.name) == ["run", "host"] })
        let memory = InMemoryTelemetryBackend()
        try memory.deliver(replay.records)
        try memory.expectEvents(["viewinit", "playoutdelaychange", "playerready", "play", "playing", "ended", "viewend"], match: .inOrder)
        // The KPIs recomputed from the file are those the run wrote on its viewend.
        let viewEnd = try #require(replay.records.last { $0.name == "viewend" })
        let kpis = try #require(replay.kpis[viewEnd.sessionId])
        for (name, value) in kpis.namedValues {
            #expect(viewEnd[field: name] == value, "\(name)")
        }
        #expect(kpis.videoStartupTime != nil)
        #expect(kpis.playingTime != nil)
    }

    @Test("a Prometheus port someone holds, or a file it cannot write: one line on stderr, non-zero exit, nothing started")
    func refused() throws {
        let held = try PrometheusEndpoint(host: "127.0.0.1", port: 0)
        defer { held.stop() }
        for (spec, words) in [
            ("prometheus:127.0.0.1:\(held.port)", "--telemetry prometheus:127.0.0.1:\(held.port): "),
            ("jsonl:/nonexistent/dir/x.jsonl", "cannot write /nonexistent/dir/x.jsonl"),
        ] {
            let result = try runPlayout(["subscribe", "missing.sdp", "--telemetry", spec])
            #expect(result.status != 0)
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1, "\(result.stderr)")
            #expect(result.stderr.contains(words), "\(result.stderr)")
        }
    }
}
