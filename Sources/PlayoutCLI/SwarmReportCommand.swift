import ArgumentParser
import PlayoutSwarm

/// `playout swarm report --from SPEC --run ID [--json]`: reads a swarm run back from the
/// time-series database its shards wrote to and prints the aggregate across every shard. All
/// of it is ``SwarmStore/readRun(from:run:)`` and ``SwarmRun``; the command only prints.
struct SwarmReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Read a swarm run back from its store and print the aggregate across all its shards.",
        discussion: """
            SPEC is influx:http://HOST:PORT/write?db=NAME (InfluxDB 1.x, the spec the shards' --telemetry \
            wrote to) or victoria:http://HOST:PORT[?db=NAME] (VictoriaMetrics). Prints the viewers in total \
            and per shard, connected/connecting/failed, duplicates (viewers a retried shard wrote again, \
            counted once), then min/p50/p95/p99/max across viewers of each measure (ms, %, kbit/s). \
            --json prints one "summary" JSON line instead (seconds, ratios, bits/s). A run with no \
            viewer recorded exits 1.
            """
    )

    @Option(name: .customLong("from"), help: ArgumentHelp("The run's store: influx:http://HOST:PORT/write?db=NAME or victoria:http://HOST:PORT.", valueName: "spec"))
    var from: String

    @Option(name: .customLong("run"), help: ArgumentHelp("The run id the shards were given (--run).", valueName: "id"))
    var runID: String

    @Flag(name: .customLong("json"), help: "One \"summary\" JSON line instead of the table.")
    var json = false

    func validate() throws {
        do {
            _ = try SwarmStoreSpec(parsing: from)
            try SwarmStore.validate(run: runID)
        } catch {
            throw ValidationError(error.message)
        }
    }

    func run() throws {
        do {
            let stored = try SwarmStore.readRun(from: from, run: runID)
            guard !stored.viewers.isEmpty else {
                let unreadable = stored.unreadable > 0 ? " (\(stored.unreadable) records could not be read)" : ""
                throw SwarmStoreError(.noViewers, "no viewers recorded for run \(runID) in \(from)\(unreadable)")
            }
            writeOut(json ? stored.jsonLine() + "\n" : stored.table())
        } catch {
            throw PlayoutCommand.failure(error)
        }
    }
}
