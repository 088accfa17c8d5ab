import ArgumentParser
import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import Playout
import PlayoutBench

/// `playout bench`: benchmarks (one for now).
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Benchmarks of playout behaviour.",
        subcommands: [PlayoutDelayBenchCommand.self]
    )
}

/// `playout bench playout-delay [<source>]`: plays a schedule of playout-delay changes one or
/// more times and reports, per transition, the rule's pause, skip and settle time against what
/// happened. Everything it computes comes from ``PlayoutDelayBenchmark``.
struct PlayoutDelayBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playout-delay",
        abstract: "What playout-delay changes really do: pauses, skips, settle time and latency per transition, against the rule.",
        discussion: """
            Without a source, the built-in publisher sends on loopback (as in playout demo: its codec, size, \
            fps, bitrate and impairment options apply). Each run is a fresh subscription; runs use --seed, \
            --seed + 1, … unless --same-seed. Prints one row per transition (medians over the runs, with \
            min–max); --json writes JSON Lines ("transition" objects and one "benchmark" object); --csv one \
            row per frame and run; --plot an SVG picture. Ctrl-C ends the run under way and reports what was played.
            """
    )

    /// The longest run accepted.
    static let maximumDuration = Duration.seconds(3_600)
    /// The most runs accepted.
    static let maximumRuns = 100

    @Argument(help: "What to subscribe to, as playout subscribe takes it (default: the built-in publisher on loopback).")
    var source: String?

    @Option(name: .customLong("playout-delay"), parsing: .unconditional, help: DurationArgument.help("The configured playout delay, e.g. 230ms."))
    var playoutDelay = DurationArgument(PlayoutDelay.defaultDelay)

    @Option(parsing: .unconditional, help: ScheduleArgument.help("Overrides to set and release, comma-separated DELAY@AT[/FOR] as --override takes them, e.g. 2s@5s/5s,500ms@12s."))
    var schedule = ScheduleArgument([])

    @Option(help: TransitionArgument.help("How rendering moves to each new delay: immediate (pause on increase, skip on decrease) or gradual:RATE, e.g. gradual:10%."))
    var transition = TransitionArgument(.immediate)

    @Option(parsing: .unconditional, help: DurationArgument.help("How long each run plays, e.g. 20s."))
    var duration = DurationArgument(.seconds(20))

    @Option(name: .customLong("repeat"), parsing: .unconditional, help: "How many runs, 1 to 100, each a fresh subscription.")
    var runs = 1

    @Flag(name: .customLong("same-seed"), help: "Give every run the same --seed (default: run N uses --seed + N − 1).")
    var sameSeed = false

    @Option(help: OutputPathArgument.help("Write one CSV row per frame and run to this file."))
    var csv: OutputPathArgument?

    @Option(help: SVGPathArgument.help("Draw delay and latency over time, pauses, skips and transitions into this SVG file."))
    var plot: SVGPathArgument?

    @Flag(help: "Write JSON Lines on stdout instead of the table.")
    var json = false

    @Option(name: .customLong("srtp-key"), help: SRTPKeyArgument.help("SRTP master key and salt, base64, for a <source> (as playout subscribe takes it)."))
    var srtpKey: SRTPKeyArgument?

    @OptionGroup var video: VideoOptions
    @OptionGroup var network: ImpairmentOptions

    func validate() throws {
        guard (1...Self.maximumRuns).contains(runs) else { throw ValidationError("--repeat \(runs): write a number of runs from 1 to \(Self.maximumRuns), e.g. 3") }
        guard duration.duration > .zero, duration.duration <= Self.maximumDuration else {
            throw ValidationError("--duration \(duration.text): must be more than 0s and at most 1h, e.g. 20s")
        }
        let configuration = PlayoutDelay.Configuration()
        do {
            _ = try configuration.validate(playoutDelay.duration)
        } catch {
            throw ValidationError("--playout-delay \(playoutDelay.text): \(SubscriptionOptions<DemoDefaults>.words(for: error))")
        }
        for override in schedule.overrides {
            do {
                _ = try configuration.validate(override.delay)
            } catch {
                throw ValidationError("--schedule \(override): \(SubscriptionOptions<DemoDefaults>.words(for: error))")
            }
            guard override.at < duration.duration else {
                throw ValidationError("--schedule \(override): it starts at or after the end of the run (--duration \(duration.text)); set it earlier or play longer")
            }
        }
    }

    /// The scenario the options describe.
    var scenario: PlayoutDelayBenchmark.Scenario {
        PlayoutDelayBenchmark.Scenario(
            source: source, playoutDelay: playoutDelay.duration,
            schedule: schedule.overrides.map { ScheduledOverride(delay: $0.delay, at: $0.at, hold: $0.hold, transition: transition.transition) },
            duration: duration.duration, runs: runs, video: video.settings(), impairment: network.configuration(), variesSeed: !sameSeed,
            srtpKey: srtpKey?.keyingMaterial
        )
    }

    func run() throws {
        do {
            // The output files are created first, with bytes in them (the CSV's header, the
            // plot's XML declaration): a path that cannot be written — a missing directory, a
            // full disk, /dev/full — fails now, not after the runs.
            for (option, path, probe) in [("--csv", csv?.path, PlayoutDelayBenchmark.csv([])), ("--plot", plot?.path, "<?xml version=\"1.0\"?>\n")] {
                guard let path else { continue }
                guard writeFile(path, probe) else {
                    throw PlayoutError(.invalidOption, "\(option) \(path): cannot be written (\(String(cString: strerror(errno))))")
                }
            }
            // Ctrl-C ends the run under way and reports what was played.
            let stop = PlayoutDelayBenchmark.Stop()
            let interrupt = onInterrupt { stop.stop() }
            defer { interrupt.cancel() }
            let results = try scenario.run(stop: stop) { run in
                writeError("playout bench playout-delay: run \(run) of \(runs) done\n")
            }
            if stop.isStopped {
                let cut = results.last?.stoppedEarly == true ? ", the last cut short" : ""
                writeError("playout bench playout-delay: interrupted after \(results.count) of \(runs) runs\(cut)\n")
            }
            if json {
                for line in PlayoutDelayBenchmark.jsonLines(results) { writeOut(line + "\n") }
            } else {
                writeOut(PlayoutDelayBenchmark.table(results))
            }
            if let csv, !writeFile(csv.path, PlayoutDelayBenchmark.csv(results)) {
                throw PlayoutError(.invalidOption, "--csv \(csv.path): cannot be written (\(String(cString: strerror(errno))))")
            }
            if let plot, !writeFile(plot.path, PlayoutDelayBenchmark.plot(results)) {
                throw PlayoutError(.invalidOption, "--plot \(plot.path): cannot be written (\(String(cString: strerror(errno))))")
            }
        } catch {
            throw PlayoutCommand.failure(error)
        }
    }
}
