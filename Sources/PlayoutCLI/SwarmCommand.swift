import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import Playout
import PlayoutCore
import PlayoutSender
import PlayoutSwarm
import PlayoutTelemetry
import PlayoutTelemetryBackends

/// `playout swarm`: runs an audience (``SwarmRunCommand``, the default), or reads a run back
/// across shards (`swarm report`, ``SwarmReportCommand``).
struct SwarmCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "swarm",
        abstract: "Run an audience of real viewers in one process (swarm [run]), or read a sharded run back (swarm report).",
        subcommands: [SwarmRunCommand.self, SwarmReportCommand.self],
        defaultSubcommand: SwarmRunCommand.self
    )
}

/// `playout swarm [run] [<source>] --viewers N`: an audience of real viewers in one process.
struct SwarmRunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run an audience of real viewers in one process — each its own jitter buffer, playout clock and QoS — and report percentiles across them.",
        discussion: """
            Each viewer is a whole subscriber (the core `subscribe` runs) on a fixed pool of threads. Sources: a \
            WHEP URL (each viewer its own session), an SDP of a unicast stream fanned out by `publish --fanout N` \
            (viewer i at the SDP's ports + i × stride, Docs/Fanout.md), an SDP of a multicast stream (each viewer \
            joins), or a URL libavformat opens (each viewer opens its own); without one, the built-in publisher \
            serves WHEP on loopback. Every interval an aggregate across viewers is written — a "swarm" JSON line \
            with --json (or when stdout is not a terminal), else a live view — and a summary at the end. With \
            --slo the exit status is \(PlayoutCommand.sloBreachedExitCode) when an objective is breached.
            """
    )

    @Argument(help: "A WHEP URL, an SDP file (unicast: fanned out; multicast: joined), or a libavformat URL; none: the built-in publisher over WHEP on loopback.")
    var source: String?

    @Option(help: "Viewers in the whole run (every shard), at least 1.")
    var viewers: Int

    @Option(help: "How fast viewers join, viewers per second, e.g. 20/s (default: all at once).")
    var ramp: String?

    @Option(help: "Which viewers decode: all, none (every timing statistic exact, decode statistics null), or sample:K (one viewer in K).")
    var decode = "none"

    @Option(parsing: .unconditional, help: DurationArgument.help("Churn: each viewer's session lasts a random time with this mean, then it leaves and rejoins, e.g. 30s."))
    var churn: DurationArgument?

    @Option(help: "Service-level objectives across viewers, checked at the end, e.g. 'startupTime.p95<2s,freezeRatio.p99<1%,failed<1'.")
    var slo: String?

    @Option(help: "This shard, INDEX/COUNT from 0, e.g. 2/3 (default: from JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID, else 0/1).")
    var shard: String?

    @Option(name: .customLong("shard-count"), help: "The shard count when the index comes from JOB_COMPLETION_INDEX (default: $PLAYOUT_SHARD_COUNT).")
    var shardCount: Int?

    @Option(name: .customLong("run"), help: "The run's id, a tag on every record (default: a random one, printed).")
    var runID: String?

    @Option(help: "Write a self-contained HTML report of the run to this path.")
    var report: String?

    @Option(help: "Worker threads (default: one per core).")
    var workers = SubscriptionEventLoop.defaultWorkerCount

    @OptionGroup var subscription: SubscriptionOptions<SwarmDefaults>

    @Option(name: .customLong("srtp-key"), help: SRTPKeyArgument.help("SRTP master key and salt, base64, instead of the SDP's a=crypto."))
    var srtpKey: SRTPKeyArgument?

    @OptionGroup(title: "WHEP (WebRTC)") var whep: WHEPArguments

    @OptionGroup(title: "The built-in publisher (without a source)") var video: VideoOptions

    func validate() throws {
        guard viewers >= 1 else { throw ValidationError("--viewers \(viewers): at least 1") }
        guard workers >= 1, workers <= 256 else { throw ValidationError("--workers \(workers): 1 to 256") }
        _ = try parsedRamp()
        do {
            _ = try SwarmDecode(parsing: decode)
            _ = try SwarmObjective.parseList(slo ?? "")
        } catch {
            throw ValidationError(error.message)
        }
        if subscription.noDecode { throw ValidationError("--no-decode: a swarm says which viewers decode with --decode none|all|sample:K") }
        if subscription.sink.spec != .null { throw ValidationError("--sink: a swarm renders into the null sink") }
        if subscription.analytics.adapter != nil { throw ValidationError("--analytics runs over one subscription: use subscribe") }
        if let churn, churn.duration <= .zero { throw ValidationError("--churn \(churn.text): more than 0s, e.g. 30s") }
    }

    /// Viewers per second, from `20/s` or `20` (nil: all at once).
    func parsedRamp() throws -> Double? {
        guard let ramp else { return nil }
        let number = ramp.hasSuffix("/s") ? String(ramp.dropLast(2)) : ramp
        guard let rate = Double(number), rate.isFinite, rate > 0, rate <= 1_000_000 else {
            throw ValidationError("--ramp \(ramp): viewers per second, more than 0, e.g. 20/s")
        }
        return rate
    }

    func run() throws {
        do {
            let shard = try SwarmShard.resolve(option: shard, count: shardCount, environment: currentEnvironment())
            let run = runID ?? Self.randomRunID()
            let lingering = LingeringEndpoints(linger: subscription.telemetryLinger.duration)
            let tags = [TelemetryField("run", .string(run)), TelemetryField("shard", .int(Int64(shard.index)))]
            let telemetry = try subscription.makeTelemetry(lingering: lingering, extraTags: tags, streamsToStandardOutput: false)
            var options = whep.apply(to: subscription.subscriberOptions(srtpKey: srtpKey?.keyingMaterial, telemetry: telemetry))
            options.duration = nil

            // Without a source: the built-in publisher serves WHEP on loopback for the run.
            var publisher: Publisher?
            let source: Swarm.Source
            if let given = self.source {
                source = try Self.swarmSource(given)
            } else {
                var sendFor: Duration?
                if let limit = subscription.duration.duration { sendFor = limit + .seconds(2) }
                let builtIn = try Publisher(options: .init(
                    destination: try Publisher.freeLoopbackDestination(), video: video.settings(), duration: sendFor,
                    whep: WHEPEndpoint.Configuration(listen: try SocketAddress(host: "127.0.0.1", port: 0))))
                try builtIn.start()
                publisher = builtIn
                source = .url(builtIn.whepEndpoint!.url)
            }
            defer { publisher?.stop() }

            var configuration = Swarm.Configuration(viewers: viewers, source: source)
            configuration.shardViewers = shard.viewers(of: viewers)
            configuration.shard = shard.index
            configuration.shardCount = shard.count
            configuration.ramp = try parsedRamp()
            configuration.decode = try SwarmDecode(parsing: decode)
            configuration.churn = churn?.duration
            configuration.duration = subscription.duration.duration
            configuration.interval = subscription.qosInterval.duration
            configuration.workers = workers
            configuration.subscriber = options
            let objectives = try SwarmObjective.parseList(slo ?? "")
            let swarm = try Swarm(configuration: configuration)
            let title = "playout swarm \(self.source ?? "(built-in publisher, WHEP)")"
            let view = SwarmView(title: title, json: subscription.writesJSON)
            if !subscription.writesJSON { writeError("run \(run), shard \(shard.index)/\(shard.count): viewers \(configuration.shardViewers)\n") }
            let interrupt = onInterrupt { swarm.stop() }
            let started = isoNow()
            let result = swarm.run { sample in view.show(sample) }
            interrupt.cancel()
            publisher?.stop()

            let verdicts = result.final.map { final in objectives.map { $0.verdict(final) } } ?? []
            if let telemetry {
                let report = telemetry.shutdown(timeout: SubscriptionSession.telemetryDrainTimeout)
                if report.statistics.undelivered > 0 { writeError("playout: \(report.statistics.description)\n") }
            }
            lingering.lingerAndStop()
            for warning in result.warnings { writeError("playout: warning: \(warning)\n") }
            try storeOutcomes(result.outcomes, run: run)
            if let final = result.final {
                view.summary(final, run: run, shard: shard, sessions: result.outcomes.count, memoryPerViewer: result.memoryPerViewer, verdicts: verdicts, warnings: result.warnings)
            }
            if let report {
                let document = SwarmHTMLReport.html(SwarmReport(
                    title: title, run: run, shard: shard.index, shardCount: shard.count, started: started, decode: decode, samples: result.samples,
                    startupTimes: result.startupTimes, verdicts: verdicts, viewers: result.outcomes, warnings: result.warnings))
                guard writeFile(report, document) else {
                    throw PlayoutError(.invalidOption, "--report \(report): cannot write: \(String(cString: strerror(errno)))")
                }
            }
            // A swarm none of whose viewers ever played failed, whatever its objectives.
            if let final = result.final, final.failed == final.viewers {
                let reason = result.outcomes.first { $0.state.hasPrefix("failed") }?.state ?? "failed"
                throw PlayoutError(.invalidSource, "every viewer failed (the first: \(reason))")
            }
            let breached = verdicts.filter { !$0.held }
            if !breached.isEmpty {
                let list = breached.map { "\($0.objective) (measured \($0.measured.map { QoSJSONWriter.number($0) } ?? "nothing"))" }.joined(separator: ", ")
                writeError("playout: SLO breached: \(list)\n")
                throw ExitCode(PlayoutCommand.sloBreachedExitCode)
            }
        } catch {
            throw PlayoutCommand.failure(error)
        }
    }

    /// Every viewer's outcome into each InfluxDB v1 `--telemetry` store (InfluxDB or
    /// VictoriaMetrics), where `swarm report` reads the run back across shards.
    ///
    /// - Throws: ``PlayoutError`` when a store refused them.
    func storeOutcomes(_ outcomes: [ViewerOutcome], run: String) throws {
        let specs = subscription.telemetry.filter { spec in
            switch spec.destination {
            case .influx(writeURL: _, api: .v1): true
            default: false
            }
        }
        guard !specs.isEmpty, !outcomes.isEmpty else { return }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        do {
            let lines = try SwarmStore.lines(outcomes, run: run, at: Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec))
            for spec in specs { try SwarmStore.write(lines, to: spec.text) }
        } catch {
            throw PlayoutError(.invalidState, "the viewers' outcomes were not stored: \(error)")
        }
    }

    /// The source of each viewer: `given` as a WHEP URL, an SDP file or a libavformat URL.
    static func swarmSource(_ given: String) throws -> Swarm.Source {
        guard !given.contains("://"), let text = try SDPFile.read(given, timeout: .seconds(5)) else { return .url(given) }
        let description: SessionDescription
        do {
            description = try SessionDescription(parsing: text)
        } catch {
            throw PlayoutError(.invalidSource, "\(given): \(error)")
        }
        if description.connection?.isMulticast == true || description.media.contains(where: { $0.connection?.isMulticast == true }) {
            return .url(given)
        }
        return .sessionDescriptions(given, tracks: description.media.count) { viewer in try description.fannedOut(viewer: viewer) }
    }

    /// 12 random hex digits.
    static func randomRunID() -> String {
        var generator = SystemRandomNumberGenerator()
        let value = generator.next() & 0xFFFF_FFFF_FFFF
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 12 - digits.count) + digits
    }
}

/// `swarm` plays until Ctrl-C unless `--duration` is given.
enum SwarmDefaults: SubscriptionDefaults {
    static var duration: RunLength { .untilStopped }
}
