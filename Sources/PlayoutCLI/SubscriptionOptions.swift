import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import Playout

/// The defaults a command gives the ``SubscriptionOptions`` it shares; only what differs between
/// commands is here, everything else comes from the library's own defaults.
protocol SubscriptionDefaults {
    /// How long to play when `--duration` is not given.
    static var duration: RunLength { get }
}

/// `subscribe` plays until Ctrl-C (or the end of a file).
enum SubscribeDefaults: SubscriptionDefaults {
    static var duration: RunLength { .untilStopped }
}

/// `demo` plays 20 s.
enum DemoDefaults: SubscriptionDefaults {
    static var duration: RunLength { .limited(.seconds(20)) }
}

/// The options of every command that subscribes and renders — `subscribe`, `demo`, and the
/// playout-delay benchmark — as one `@OptionGroup`: the playout delay and its overrides, the
/// sink, how long to play, how often to sample QoS, JSON output, telemetry, and an analytics
/// SDK's adapter (``AnalyticsOptions``).
///
/// ```swift
/// @OptionGroup var subscription: SubscriptionOptions<DemoDefaults>
/// let subscriber = try Subscriber(source: source, options: subscription.subscriberOptions())
/// ```
struct SubscriptionOptions<Defaults: SubscriptionDefaults>: ParsableArguments {
    // `.unconditional`: `--duration -1s` is a (refused) negative value, not a missing one.
    @Option(name: .customLong("playout-delay"), parsing: .unconditional, help: DurationArgument.help("How long content is held before it renders, e.g. 230ms or 1.5s."))
    var playoutDelay = DurationArgument(PlayoutDelay.defaultDelay)

    @Option(
        name: .customLong("override"), parsing: .unconditionalSingleValue,
        help: OverrideArgument.help("Override the playout delay: DELAY@AT[/FOR], e.g. 2s@5s/10s (2 s from 5 s after the start, for 10 s). Repeatable.")
    )
    var overrides: [OverrideArgument] = []

    @Option(help: SinkArgument.help("Where rendered frames go: null, file:PATH.y4m (video), file:PATH.wav (audio), or file:PATH.mkv / .mp4 (the received streams remuxed, no re-encode)."))
    var sink = SinkArgument(.null)

    @Option(parsing: .unconditional, help: RunLength.help("How long to play, e.g. 30s (a file source also ends at its end)."))
    var duration = Defaults.duration

    @Option(name: .customLong("qos-interval"), parsing: .unconditional, help: DurationArgument.help("How often to sample and report QoS, e.g. 1s."))
    var qosInterval = DurationArgument(Subscriber.Options().qosInterval)

    @Flag(help: "Write JSON Lines on stdout (also when stdout is not a terminal).")
    var json = false

    @Flag(
        name: .customLong("no-feedback"),
        help: "Stay silent: no RTCP receiver reports, NACKs, PLI/FIR or bandwidth limits (by default they are sent, each kind only where the sender's SDP announces it)."
    )
    var noFeedback = false

    @Flag(
        name: .customLong("no-decode"),
        help: "Do not decode: each frame renders at its render time as if it had decoded — every timing statistic stays exact, the decode statistics are unknown (null) — for many viewers on one machine. The sink must be null or a remux (.mkv/.mp4)."
    )
    var noDecode = false

    @Option(
        name: .customLong("limit-bandwidth"), parsing: .unconditionalSingleValue,
        help: BandwidthLimitArgument.help("Limit the video bandwidth the sender may use (REMB and TMMBR, where it announces them): RATE@AT[/FOR], e.g. 1M@5s/10s (1 Mbit/s from 5 s after the start, for 10 s). Repeatable; the last set wins.")
    )
    var limitBandwidth: [BandwidthLimitArgument] = []

    @Option(name: .customLong("multicast-interface"), help: "Join a multicast SDP's group on this interface, e.g. lo (default: the one the routing table picks).")
    var multicastInterface: String?

    @Option(help: TelemetrySpec.help("Send telemetry (player events, heartbeats, session KPIs) to \(TelemetrySpec.forms). Repeatable."))
    var telemetry: [TelemetrySpec] = []

    @Option(help: TagArgument.help("A tag on every telemetry record and point, e.g. run=nightly-42. Repeatable."))
    var tag: [TagArgument] = []

    /// `--analytics` and `--analytics-report`: an SDK adapter over the subscription, its conformance report.
    @OptionGroup var analytics: AnalyticsOptions

    @Flag(
        name: .customLong("telemetry-strict"),
        help: "Fail the run (exit \(PlayoutCommand.telemetryUndeliveredExitCode)) when a --telemetry backend did not receive every record, naming each backend's last error: for CI."
    )
    var telemetryStrict = false

    @Option(
        name: .customLong("telemetry-linger"), parsing: .unconditional,
        help: DurationArgument.help("How long a prometheus: endpoint stays up after the run, so that its last samples and the view's KPIs are scraped, e.g. 15s (0s: it closes with the run).")
    )
    var telemetryLinger = DurationArgument(LingeringEndpoints.defaultLinger)

    func validate() throws {
        guard qosInterval.duration > .zero else { throw ValidationError("--qos-interval \(qosInterval.text): must be more than 0s, e.g. 1s") }
        if let limit = duration.duration, limit <= .zero {
            throw ValidationError("--duration \(duration.limit?.text ?? ""): must be more than 0s, e.g. 30s")
        }
        let configuration = PlayoutDelay.Configuration()
        do {
            _ = try configuration.validate(playoutDelay.duration)
        } catch {
            throw ValidationError("--playout-delay \(playoutDelay.text): \(Self.words(for: error))")
        }
        var keys: Set<String> = []
        for tag in tag where !keys.insert(tag.key).inserted {
            throw ValidationError("--tag \(tag.key)=…: the key \(tag.key) is given twice; give each key once")
        }
        if noFeedback, let limit = limitBandwidth.first {
            throw ValidationError("--limit-bandwidth \(limit.defaultValueDescription) is told to the sender as feedback: drop --no-feedback or the limit")
        }
        guard telemetryLinger.duration >= .zero, telemetryLinger.duration <= .seconds(3_600) else {
            throw ValidationError("--telemetry-linger \(telemetryLinger.text): must be from 0s to 1h, e.g. 15s")
        }
        if telemetryStrict, telemetry.isEmpty {
            throw ValidationError("--telemetry-strict needs --telemetry: it checks what the backends received, e.g. --telemetry jsonl:run.jsonl --telemetry-strict")
        }
        if !tag.isEmpty, telemetry.isEmpty {
            throw ValidationError("--tag needs --telemetry: tags go on telemetry records, e.g. --telemetry jsonl:run.jsonl --tag run=1")
        }
        for override in overrides {
            do {
                _ = try configuration.validate(override.override.delay)
            } catch {
                throw ValidationError("--override \(override.defaultValueDescription): \(Self.words(for: error))")
            }
        }
    }

    /// A refused delay in the command line's words (the library's speak of its configuration).
    static func words(for error: PlayoutDelayError) -> String {
        switch error {
        case .aboveMaximum(_, let maximum): "a delay must be at most \(maximum.typedDescription) (memory grows with delay × bitrate)"
        case .negative, .notFinite, .invalidTransition: "\(error)"
        }
    }

    /// The subscriber's options, with `srtpKey` replacing the SDP's keys when given, reporting
    /// to `telemetry` when given.
    func subscriberOptions(srtpKey: SRTPKeyingMaterial? = nil, telemetry: TelemetryInstrument? = nil) -> Subscriber.Options {
        var options = Subscriber.Options(
            playoutDelay: .init(delay: playoutDelay.duration), duration: duration.duration, qosInterval: qosInterval.duration,
            srtpKey: srtpKey, overrides: overrides.map(\.override), telemetry: telemetry, feedback: !noFeedback,
            bandwidthLimits: limitBandwidth.map(\.limit)
        )
        options.decoding = !noDecode
        options.multicastInterface = multicastInterface
        return options
    }

    /// Whether the run writes JSON Lines on stdout (`--json`, or stdout is not a terminal).
    var writesJSON: Bool { json || !standardOutputIsTerminal }

    /// The telemetry engine: the `--telemetry` backends and, when the run writes JSON, the
    /// `--json` stream on stdout as one more backend (nil when there is neither). A Prometheus
    /// endpoint goes to `lingering` at the end of the run instead of closing with it.
    ///
    /// - Throws: ``PlayoutError`` when a backend cannot be opened (a file that cannot be written,
    ///   a Prometheus port in use).
    ///
    /// `extraTags` follow the `--tag`s (a swarm's `run` and `shard`); a swarm's stdout carries its
    /// own aggregates, not its viewers' records (`streamsToStandardOutput` false).
    func makeTelemetry(
        lingering: LingeringEndpoints? = nil, extraTags: [TelemetryField] = [], streamsToStandardOutput: Bool = true
    ) throws -> TelemetryInstrument? {
        let streams = writesJSON && streamsToStandardOutput
        guard !telemetry.isEmpty || streams else { return nil }
        var tags = tag.map(\.field) + extraTags
        if !telemetry.isEmpty, !tag.contains(where: { $0.key == "host" }), let host = TelemetryField.host {
            tags.append(host)
        }
        var backends: [any TelemetryBackend] = []
        for spec in telemetry {
            switch spec.destination {
            case .jsonl(let path):
                do {
                    backends.append(try JSONLinesTelemetryBackend(path: path))
                } catch {
                    throw PlayoutError(.invalidOption, "--telemetry \(spec.text): \(error.message)")
                }
            case .influx, .graphite, .prometheus:
                backends.append(try makeNetworkTelemetryBackend(spec, lingering: lingering))
            }
        }
        do {
            let instrument = try TelemetryInstrument(backends: backends, configuration: .init(tags: tags))
            if streams {
                // A live stream: each batch written as soon as the engine built it.
                try instrument.addBackend(
                    JSONLinesTelemetryBackend(fileDescriptor: STDOUT_FILENO, name: SubscriptionSession.standardOutputBackend, format: .commandLine),
                    delivery: .init(linger: .zero))
            }
            return instrument
        } catch {
            throw PlayoutError(.invalidState, error.message)
        }
    }
}
