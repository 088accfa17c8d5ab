import Foundation
import PlayoutSwarm
import PlayoutTesting
import RealTimeTesting
import Testing

/// A real Slurm job array of swarm shards, each writing its viewers into one VictoriaMetrics, and
/// the run read back with every viewer of every shard exactly once.
@Suite("Slurm job array of swarm shards", .realTime, .serialized,
       .enabled(if: SlurmCluster.isAvailable, "slurm-wlm and munge are not installed or not root: run make setup as root"),
       .enabled(if: TelemetryServer.isInstalled("/usr/bin/victoria-metrics"), "victoria-metrics is not installed: run make setup"))
struct SlurmClusterTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()


    @Test("a 3-task job array of deploy/slurm/swarm-array.sbatch: every viewer of every shard recorded once")
    func jobArray() throws {
        let database = try VictoriaMetricsServerTests.startVictoriaMetrics(graphitePort: ScriptedTCPServer.unusedPort())
        defer { database.stop() }
        let cluster = try SlurmCluster(cpus: 3)
        defer { cluster.stop() }

        let viewers = 31
        let run = "slurm-\(UUID().uuidString.prefix(8))"
        let playout = Self.root.appendingPathComponent(".build/debug/playout").path
        let script = Self.root.appendingPathComponent("deploy/slurm/swarm-array.sbatch").path

        let started = ContinuousClock.now
        let result = try cluster.sbatch(
            ["--array=0-2", "--wait", "--chdir=\(cluster.directory.path)", "--output=\(cluster.directory.path)/task-%a.out", script],
            environment: ["RUN": run, "PLAYOUT_TELEMETRY": "influx:http://127.0.0.1:\(database.port)/write?db=playout", "PLAYOUT": playout,
                          "PLAYOUT_VIEWERS": "\(viewers)", "PLAYOUT_DURATION": "3s",
                          // Each shard's own built-in publisher over WHEP, small: three shards share two cores.
                          "PLAYOUT_SWARM_ARGS": "--size 320x240 --bitrate 300k --json"])
        let outputs = (0..<3).map { task in
            (try? String(contentsOf: cluster.directory.appendingPathComponent("task-\(task).out"), encoding: .utf8)) ?? "(no output)"
        }
        #expect(result.status == 0, "sbatch: \(result.stdout) \(result.stderr)\n\(outputs.joined(separator: "\n"))\n\(cluster.logTail())")
        print("Slurm job array done in \(ContinuousClock.now - started): \(outputs.joined(separator: " | "))")

        let spec = "victoria:http://127.0.0.1:\(database.port)?db=playout"
        _ = try? database.getText("/internal/force_flush")   // searchable now, not in a few seconds
        let report = try TelemetryServer.poll("\(viewers) viewers reported") { () -> String? in
            let report = try runPlayout(["swarm", "report", "--from", spec, "--run", run, "--json"])
            return report.status == 0 && report.stdout.contains("\"viewers\":\(viewers),") ? report.stdout : nil
        }
        // Every viewer of every shard once, in the shard SwarmShard gives it; none failed.
        #expect(report.contains(#""shards":{"0":11,"1":10,"2":10},"duplicates":0,"failed":0"#), "\(report)")
        let table = try runPlayout(["swarm", "report", "--from", spec, "--run", run])
        #expect(table.status == 0 && table.stdout.contains("\(viewers) viewers in 3 shards (0: 11, 1: 10, 2: 10)"), "\(table.stdout)")
        #expect(ContinuousClock.now - started < .seconds(30))
    }
}
