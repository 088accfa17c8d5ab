import Foundation
import PlayoutSwarm
import PlayoutTesting
import RealTimeTesting
import Testing

/// Outcomes of `count` viewers over `shards` shards, with every kind of value: nil fields,
/// decoded or not, failed, hostile states, integers and ratios.
func storeOutcomes(count: Int, shards: Int) throws -> [ViewerOutcome] {
    var outcomes: [ViewerOutcome] = []
    for shardIndex in 0..<shards {
        for viewer in try SwarmShard(index: shardIndex, count: shards).viewers(of: count) {
            let failed = viewer % 7 == 3
            let decoded = viewer % 2 == 0
            outcomes.append(ViewerOutcome(
                viewer: viewer, shard: shardIndex, state: failed ? "failed: answer 503, \"busy\" = retry later" : "ended", decoded: decoded,
                startupTime: failed ? nil : 0.25 + Double(viewer) / 1_000, renderedRatio: failed ? nil : 1 - Double(viewer % 5) / 1_000,
                framesRendered: failed ? 0 : 900 - viewer, freezeCount: viewer % 3, freezeRatio: failed ? nil : Double(viewer % 3) * 0.004,
                endToEndLatency: viewer % 4 == 0 ? nil : 0.2 + Double(viewer) / 10_000, jitterBufferDelay: failed ? nil : 0.23 + Double(viewer % 9) / 1_000,
                bitrate: failed ? 0 : 2_512_345.5 + Double(viewer), packetsLost: viewer % 11, nackCount: viewer % 13, framesDecoded: decoded && !failed ? 900 - viewer : nil))
        }
    }
    return outcomes
}

/// The run's store against real servers: each shard's outcomes written with `SwarmStore.write`
/// into a real InfluxDB 1.x and a real VictoriaMetrics (started on 127.0.0.1 by the telemetry
/// harness) read back equal, duplicates from a retried shard reported and not counted.
@Suite("SwarmStore against real servers", .realTime, .serialized)
struct SwarmStoreServerTests {
    static let hostileRun = #"run 7, "a=b" it's"#

    /// Whether `a` and `b` are equal, doubles within `tolerance` (relative): VictoriaMetrics
    /// stores values as decimals of 12+ significant digits, so a double may come back an ulp away.
    static func same(_ a: [ViewerOutcome], _ b: [ViewerOutcome], tolerance: Double) -> Bool {
        func close(_ x: Double?, _ y: Double?) -> Bool {
            guard let x, let y else { return x == nil && y == nil }
            return abs(x - y) <= tolerance * max(abs(x), abs(y))
        }
        return a.count == b.count && zip(a, b).allSatisfy { x, y in
            x.viewer == y.viewer && x.shard == y.shard && x.state == y.state && x.decoded == y.decoded && x.framesRendered == y.framesRendered
                && x.freezeCount == y.freezeCount && x.packetsLost == y.packetsLost && x.nackCount == y.nackCount && x.framesDecoded == y.framesDecoded
                && close(x.startupTime, y.startupTime) && close(x.renderedRatio, y.renderedRatio) && close(x.freezeRatio, y.freezeRatio)
                && close(x.endToEndLatency, y.endToEndLatency) && close(x.jitterBufferDelay, y.jitterBufferDelay) && close(x.bitrate, y.bitrate)
        }
    }

    /// `flush` makes what was written searchable now (VictoriaMetrics' `/internal/force_flush`).
    func roundTrip(spec write: String, read: String, tolerance: Double = 0, flush: () -> Void = {}) throws {
        let outcomes = try storeOutcomes(count: 40, shards: 3)
        let now = Int64(Date().timeIntervalSince1970 * 1_000) * 1_000_000
        for shard in 0..<3 {
            try SwarmStore.write(try SwarmStore.lines(outcomes.filter { $0.shard == shard }, run: Self.hostileRun, at: now + Int64(shard)), to: write)
        }
        // Another run in the same database is not read.
        try SwarmStore.write(try SwarmStore.lines(try storeOutcomes(count: 5, shards: 1), run: "run 7", at: now), to: write)
        flush()
        let run = try TelemetryServer.poll("40 viewers of the run in \(read)") { () -> SwarmRun? in
            let run = try SwarmStore.readRun(from: read, run: Self.hostileRun)
            return run.viewers.count == 40 ? run : nil
        }
        let expected = outcomes.sorted { $0.viewer < $1.viewer }
        #expect(tolerance == 0 ? run.viewers == expected : Self.same(run.viewers, expected, tolerance: tolerance), "\(run.viewers.first!) vs \(expected.first!)")
        #expect(run.duplicates == 0 && run.unreadable == 0)
        #expect(run.viewersPerShard == [0: 14, 1: 13, 2: 13])
        #expect(run.failed == outcomes.count { $0.state.hasPrefix("failed") })

        // Shard 1 is retried and writes its viewers again, later (viewer 20 now plays on).
        var retried = outcomes.filter { $0.shard == 1 }
        retried[6].state = "ended"
        retried[6].framesRendered = 1
        try SwarmStore.write(try SwarmStore.lines(retried, run: Self.hostileRun, at: now + 5_000_000_000), to: write)
        flush()
        let again = try TelemetryServer.poll("the retried shard's duplicates in \(read)") { () -> SwarmRun? in
            let run = try SwarmStore.readRun(from: read, run: Self.hostileRun)
            return run.duplicates == 13 ? run : nil
        }
        #expect(again.viewers.count == 40 && again.duplicatedViewers == Array(14..<27))
        #expect(Self.same(again.viewers.filter { $0.viewer == retried[6].viewer }, [retried[6]], tolerance: tolerance))
        #expect(again.table().contains("duplicates 13"))
        #expect(again.jsonLine().contains(#""viewers":40,"shards":{"0":14,"1":13,"2":13},"duplicates":13"#))
    }

    @Test("InfluxDB 1.x: every shard's viewers read back as written, hostile run id, a retried shard's duplicates",
          .enabled(if: TelemetryServer.isInstalled("/usr/bin/influxd"), "influxd is not installed: run make setup"))
    func influx() throws {
        let server = try InfluxDBServerTests.startInflux()
        defer { server.stop() }
        let spec = "influx:http://127.0.0.1:\(server.port)/write?db=playout"
        try roundTrip(spec: spec, read: spec)
        // A database that does not exist, and a run with no viewer.
        #expect {
            _ = try SwarmStore.readRun(from: "influx:http://127.0.0.1:\(server.port)/write?db=nothing", run: "x")
        } throws: { error in
            (error as? SwarmStoreError)?.code == .refused && "\(error)".contains("database not found")
        }
        #expect(try SwarmStore.readRun(from: spec, run: "never written").viewers.isEmpty)
    }

    @Test("VictoriaMetrics: written through its Influx endpoint, read back through /api/v1/export, equal",
          .enabled(if: TelemetryServer.isInstalled("/usr/bin/victoria-metrics"), "victoria-metrics is not installed: run make setup"))
    func victoria() throws {
        let server = try VictoriaMetricsServerTests.startVictoriaMetrics(graphitePort: ScriptedTCPServer.unusedPort())
        defer { server.stop() }
        try roundTrip(spec: "influx:http://127.0.0.1:\(server.port)/write?db=playout", read: "victoria:http://127.0.0.1:\(server.port)?db=playout", tolerance: 1e-12) {
            _ = try? server.getText("/internal/force_flush")
        }
        #expect(try SwarmStore.readRun(from: "victoria:http://127.0.0.1:\(server.port)?db=elsewhere", run: Self.hostileRun).viewers.isEmpty)
        #expect(try SwarmStore.readRun(from: "victoria:http://127.0.0.1:\(server.port)", run: Self.hostileRun).viewers.count == 40)
    }
}
