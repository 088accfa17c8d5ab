import Logging
public import PlayoutCore
public import PlayoutTelemetry

/// Nielsen's DCR app SDK shape over the telemetry engine: one instance per player, its calls
/// (`play`, `loadMetadata`, `playheadPosition`, `stop`, `end`, `appDisableApi`, `userOptOut`)
/// become telemetry events of its own tracker (see ``NielsenStateMachine`` for the mapping).
///
/// Calls never block: each decides under a short lock and copies its events into the engine's
/// ring (``TelemetryTracker/emit(_:at:)``), in call order. Several instances can run at once,
/// each with its own tracker and sessions. The tracker is made on the first event sent, so an
/// instance whose user opted out before anything was sent sends nothing at all.
///
/// With a ``ConformanceLog`` it records every call and every broken ``NielsenRule``; the debug
/// level (`nol_devDebug` in the app info: `ERROR`, `WARN`, `INFO`, `DEBUG`) decides what it
/// logs, as `[nielsen] …` lines through `logger`.
///
/// ```swift
/// let nielsen = NielsenAppSDK(appInfo: ["appid": "PE4D5C2A1-0B1C-4D2E-8F3A-5B6C7D8E9F00"], instrument: instrument)
/// nielsen.play(["channelName": "news"])
/// nielsen.loadMetadata(["type": "content", "assetid": "EP1", "program": "News", "title": "News S1E1",
///                       "length": "0", "airdate": "2026-01-01T12:00:00Z", "isfullepisode": "y", "adloadtype": "2"])
/// nielsen.playheadPosition(nielsen.utcSeconds())   // once a second while playing (live: Unix time)
/// nielsen.stop(); nielsen.end()
/// ```
public final class NielsenAppSDK: Sendable {
    /// Conformance log, logger and quiet mode.
    public let options: AnalyticsAdapterOptions<NielsenRule>
    /// The conformance record (nil: conformance mode off).
    public var conformance: ConformanceLog<NielsenRule>? { options.conformance }
    /// The clock of the instance's calls (the instrument's).
    public let clock: any PlayoutClock

    private let instrument: TelemetryInstrument
    private let name: String
    private let logger: Logger
    private let origin: MonotonicInstant
    private let wallOrigin: Int64
    private let shared: LockedValue<Shared>

    private struct Shared {
        var machine = NielsenStateMachine()
        var tracker: TelemetryTracker?
        var qosProvider: (@Sendable () -> [TelemetryField])?
    }

    /// An instance initialized with `appInfo` (`appid`, optional `nol_devDebug`), reporting to
    /// `instrument` as a tracker called `name`.
    ///
    /// - Parameters:
    ///   - options: the conformance log, the logger, quiet mode (calls checked, nothing sent).
    ///   - clock: the clock calls are timed on (use the instrument's).
    ///   - wallClockNanoseconds: the wall time at creation, ns since 1970 (default: the system's):
    ///     live playheads are checked against it.
    public init(
        appInfo: [String: NielsenValue], instrument: TelemetryInstrument, name: String = "nielsen",
        options: AnalyticsAdapterOptions<NielsenRule> = .init(), clock: any PlayoutClock = MonotonicClock(),
        wallClockNanoseconds: Int64? = nil
    ) {
        self.instrument = instrument
        self.name = name
        self.options = options
        self.clock = clock
        logger = options.logger ?? Logger(label: "playout.analytics.nielsen")
        origin = clock.now
        wallOrigin = wallClockNanoseconds ?? MonotonicClock().wallClockNanoseconds
        shared = LockedValue(Shared())
        perform("initialize", [appInfo["appid"]?.description ?? "no appid"]) { $0.initialize(appInfo: appInfo) }
    }

    // MARK: - The SDK's calls

    /// Opens a viewing session with the channel's info (`channelName`).
    public func play(_ channelInfo: [String: NielsenValue]) {
        perform("play", Self.render(channelInfo)) { $0.play(channelInfo) }
    }

    /// The asset about to play; returns its errors (empty: accepted). Invalid metadata is not
    /// applied.
    @discardableResult
    public func loadMetadata(_ metadata: [String: NielsenValue]) -> [NielsenMetadataError] {
        perform("loadMetadata", Self.render(metadata)) { $0.loadMetadata(metadata) }.metadataErrors
    }

    /// The playhead, once a second while content plays: live, the Unix time in seconds
    /// (``utcSeconds(at:)``); on demand, the position in seconds.
    public func playheadPosition(_ position: Int64) {
        let now = clock.now
        let utc = utcSeconds(at: now)
        perform("playheadPosition", [String(position)], now: now) { $0.playheadPosition(position, now: now, utcSeconds: utc) }
    }

    /// Playback paused or interrupted.
    public func stop() {
        perform("stop", []) { $0.stop() }
    }

    /// The content ended.
    public func end() {
        perform("end", []) { $0.end() }
    }

    /// Disables the instance (every call ignored) or enables it again.
    public func appDisableApi(_ disabled: Bool) {
        perform("appDisableApi", [String(disabled)]) { $0.appDisableApi(disabled) }
    }

    /// The user opts out of measurement (nothing more is sent) or back in.
    public func userOptOut(_ optOut: Bool) {
        perform("userOptOut", [String(optOut)]) { $0.userOptOut(optOut) }
    }

    // MARK: - Reading

    /// The lifecycle state.
    public var state: NielsenStateMachine.State { shared.withLock { $0.machine.state } }
    /// Whether the user opted out.
    public var optOutStatus: Bool { shared.withLock { $0.machine.optedOut } }
    /// The debug level from the app info.
    public var debugLevel: NielsenDebugLevel { shared.withLock { $0.machine.debugLevel } }

    /// The Unix time in seconds at `instant` (default: now) on the instance's clock.
    public func utcSeconds(at instant: MonotonicInstant? = nil) -> Int64 {
        (wallOrigin &+ origin.duration(to: instant ?? clock.now).nanoseconds) / 1_000_000_000
    }

    // MARK: - QoS (not part of the SDK: what the player underneath measured)

    /// Sets the provider of the QoS fields of each periodic `heartbeat` of the instance's view
    /// (a subscriber's: ``SubscriberEventFeed/heartbeatFields``).
    public func setQoSProvider(_ provider: (@Sendable () -> [TelemetryField])?) {
        shared.withLock { shared in
            shared.qosProvider = provider
            shared.tracker?.setHeartbeatProvider(provider)
        }
    }

    /// Sends one `heartbeat` with `fields` now (a final QoS sample), unless opted out or
    /// disabled.
    public func reportQoS(_ fields: [TelemetryField]) {
        shared.withLock { shared in
            guard !options.quiet, !shared.machine.optedOut, shared.machine.state != .disabled, let tracker = shared.tracker else { return }
            tracker.emit(.heartbeat(fields))
        }
    }

    // MARK: - Carrying out a step

    @discardableResult
    private func perform(
        _ call: String, _ arguments: [String], now: MonotonicInstant? = nil,
        _ decide: (inout NielsenStateMachine) -> NielsenStateMachine.Step
    ) -> NielsenStateMachine.Step {
        let now = now ?? clock.now
        // Decide, record and emit under the lock, so that calls from several threads (a player's
        // and a playhead ticker's) reach the engine in the order they were decided; emitting only
        // copies into the ring.
        let (step, level) = shared.withLock { shared -> (NielsenStateMachine.Step, NielsenDebugLevel) in
            let step = decide(&shared.machine)
            conformance?.record(RecordedCall(name: call, arguments: arguments, time: now))
            for finding in step.findings {
                conformance?.report(ConformanceFinding(rule: finding.rule, call: call, detail: finding.detail, time: now))
            }
            for event in step.events where !options.quiet {
                if case .viewEnd = event {
                    shared.tracker?.endOfService()
                    shared.tracker = nil
                    continue
                }
                if shared.tracker == nil {
                    let tracker = instrument.makeTracker(name: name)
                    tracker.setHeartbeatProvider(shared.qosProvider)
                    tracker.ready()
                    shared.tracker = tracker
                }
                shared.tracker?.emit(event, at: now)
            }
            return (step, shared.machine.debugLevel)
        }
        log(call, arguments, step, level: level)
        return step
    }

    private func log(_ call: String, _ arguments: [String], _ step: NielsenStateMachine.Step, level: NielsenDebugLevel) {
        guard level > .none else { return }
        for finding in step.findings {
            let ignored = finding.rule == .disabledInstance
            if ignored ? level >= .warn : level >= .error {
                logger.log(level: ignored ? .warning : .error, "[nielsen \(name)] \(finding.rule.rawValue): \(finding.detail)")
            }
        }
        if level >= .info { logger.info("[nielsen \(name)] \(call)(\(arguments.joined(separator: ", ")))") }
        if level >= .debug {
            for event in step.events { logger.debug("[nielsen \(name)] sent \(event.name)") }
        }
    }

    private static func render(_ values: [String: NielsenValue]) -> [String] {
        values.keys.sorted().prefix(NielsenMetadata.keyCountLimit).map { key in
            "\(NielsenMetadata.shorten(key))=\(NielsenMetadata.shorten(values[key]!.description))"
        }
    }
}
