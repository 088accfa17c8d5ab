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
    /// Whether the array runs the real `playout swarm` (and the report runs `playout swarm
    /// report`). Until `playout swarm` exists it runs ``standIn``, a script that writes one line
    /// per viewer of its shard, and the report is read through the library it calls.
    static let realSwarm = false

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// What the stand-in writes for viewer `viewer` of shard `shard`.
    static func standInOutcome(_ viewer: Int, shard: Int) -> ViewerOutcome {
        ViewerOutcome(viewer: viewer, shard: shard, state: "ended", decoded: false, startupTime: 0.5, renderedRatio: 1, framesRendered: 300 + viewer,
                      freezeCount: 0, freezeRatio: 0, endToEndLatency: nil, jitterBufferDelay: 0.25, bitrate: 2_500_000, packetsLost: 0, nackCount: 0,
                      framesDecoded: nil)
    }

    /// `playout swarm --run R --telemetry influx:URL --viewers N --duration D` as a shell script:
    /// takes the shard from Slurm's variables (the same blocks as `SwarmShard.viewers(of:)`) and
    /// writes one `playout_swarm_viewer` line per viewer with curl, in `SwarmStore.lines`' format.
    static let standIn = #"""
        #!/bin/bash
        set -euo pipefail
        [ "$1" = swarm ] || { echo "stand-in: expected 'swarm', got $1" >&2; exit 2; }
        shift
        while [ $# -gt 0 ]; do
          case "$1" in
            --run) run="$2"; shift 2 ;;
            --telemetry) telemetry="$2"; shift 2 ;;
            --viewers) viewers="$2"; shift 2 ;;
            --duration) shift 2 ;;
            *) echo "stand-in: unexpected $1" >&2; exit 2 ;;
          esac
        done
        count=$SLURM_ARRAY_TASK_COUNT
        index=$(( SLURM_ARRAY_TASK_ID - ${SLURM_ARRAY_TASK_MIN:-0} ))
        base=$(( viewers / count )); extra=$(( viewers % count ))
        start=$(( index * base + (index < extra ? index : extra) ))
        size=$(( base + (index < extra ? 1 : 0) ))
        now=$(date +%s%N)
        body=""
        for (( viewer = start; viewer < start + size; viewer++ )); do
          body+="playout_swarm_viewer,outcome=ended,run=$run,shard=$index,viewer=$viewer state=\"ended\",decoded=false,startupTime=0.5,renderedRatio=1.0,framesRendered=$(( 300 + viewer ))i,freezeCount=0i,freezeRatio=0.0,jitterBufferDelay=0.25,bitrate=2500000.0,packetsLost=0i,nackCount=0i $now"$'\n'
        done
        url="${telemetry#influx:}"
        curl --silent --show-error --fail --max-time 10 --data-binary "$body" "$url&precision=ns"
        echo "stand-in: shard $index/$count wrote viewers $start..<$(( start + size ))"
        """#

    @Test("a 3-task job array of deploy/slurm/swarm-array.sbatch: every viewer of every shard recorded once")
    func jobArray() throws {
        let database = try VictoriaMetricsServerTests.startVictoriaMetrics(graphitePort: ScriptedTCPServer.unusedPort())
        defer { database.stop() }
        let cluster = try SlurmCluster(cpus: 3)
        defer { cluster.stop() }

        let viewers = 31
        let run = "slurm-\(UUID().uuidString.prefix(8))"
        let standIn = cluster.directory.appendingPathComponent("playout-stand-in")
        try Self.standIn.write(to: standIn, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: standIn.path)
        let playout = Self.realSwarm ? Self.root.appendingPathComponent(".build/debug/playout").path : standIn.path
        let script = Self.root.appendingPathComponent("deploy/slurm/swarm-array.sbatch").path

        let started = ContinuousClock.now
        let result = try cluster.sbatch(
            ["--array=0-2", "--wait", "--chdir=\(cluster.directory.path)", "--output=\(cluster.directory.path)/task-%a.out", script],
            environment: ["RUN": run, "PLAYOUT_TELEMETRY": "influx:http://127.0.0.1:\(database.port)/write?db=playout", "PLAYOUT": playout,
                          "PLAYOUT_VIEWERS": "\(viewers)", "PLAYOUT_DURATION": "2s"])
        let outputs = (0..<3).map { task in
            (try? String(contentsOf: cluster.directory.appendingPathComponent("task-\(task).out"), encoding: .utf8)) ?? "(no output)"
        }
        #expect(result.status == 0, "sbatch: \(result.stdout) \(result.stderr)\n\(outputs.joined(separator: "\n"))\n\(cluster.logTail())")
        print("Slurm job array done in \(ContinuousClock.now - started): \(outputs.joined(separator: " | "))")

        let spec = "victoria:http://127.0.0.1:\(database.port)?db=playout"
        _ = try? database.getText("/internal/force_flush")   // searchable now, not in a few seconds
        if Self.realSwarm {
            let report = try TelemetryServer.poll("\(viewers) viewers reported") { () -> String? in
                let report = try runPlayout(["swarm", "report", "--from", spec, "--run", run, "--json"])
                return report.status == 0 && report.stdout.contains("\"viewers\":\(viewers),") ? report.stdout : nil
            }
            #expect(report.contains(#""shards":{"0":11,"1":10,"2":10},"duplicates":0"#))
        } else {
            let stored = try TelemetryServer.poll("\(viewers) viewers of run \(run) in VictoriaMetrics") { () -> SwarmRun? in
                let stored = try SwarmStore.readRun(from: spec, run: run)
                return stored.viewers.count == viewers ? stored : nil
            }
            print(stored.table())
            #expect(stored.duplicates == 0 && stored.unreadable == 0)
            #expect(stored.viewersPerShard == [0: 11, 1: 10, 2: 10])
            // Each viewer once, in the shard SwarmShard gives it, with what the shard wrote.
            var expected: [ViewerOutcome] = []
            for shard in 0..<3 {
                for viewer in try SwarmShard(index: shard, count: 3).viewers(of: viewers) {
                    expected.append(Self.standInOutcome(viewer, shard: shard))
                }
            }
            #expect(stored.viewers == expected)
            #expect(stored.table().contains("\(viewers) viewers in 3 shards (0: 11, 1: 10, 2: 10)"))
            #expect(stored.jsonLine().contains(#""viewers":31,"shards":{"0":11,"1":10,"2":10},"duplicates":0,"failed":0"#))
        }
        #expect(ContinuousClock.now - started < .seconds(30))
    }
}
