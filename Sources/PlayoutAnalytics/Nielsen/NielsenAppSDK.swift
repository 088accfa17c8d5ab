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
/// instance that never reports anything has no view. A user who opted out is still measured,
/// as the guide's SDK 5.1 and later does: the records carry `optout` = true.
///
/// With a ``ConformanceLog`` it records every call and every broken ``NielsenRule``; the debug
/// level (`nol_devDebug` in the app info: `ERROR`, `WARN`, `INFO`, `DEBUG`) decides what it
/// logs, as `[nielsen] …` lines through `logger`.
///
/// ```swift
/// let nielsen = NielsenAppSDK(appInfo: ["appid": "PE4D5C2A1-0B1C-4D2E-8F3A-5B6C7D8E9F00"], instrument: instrument)
/// nielsen.play()
/// nielsen.loadMetadata(["type": "content", "assetid": "EP1", "program": "News", "title": "News S1E1",
///                       "length": "0", "airdate": "2022-03-21T10:05:00", "isfullepisode": "Yes", "adloadtype": "2"])
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

    /// The engine it reports into (a subscriber bridge hands the subscriber's session there to it).
    package let instrument: TelemetryInstrument
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

    /// The URL a user's opt-out selection navigates to (pass it to ``userOptOut(_:)-(String)``).
    public static let optOutSelection = "nielsenappsdk://1"
    /// The URL a user's opt-in selection navigates to.
    public static let optInSelection = "nielsenappsdk://0"
    /// The URL the opt-out page closes with (not an opt-out selection).
    public static let closeOptOutPage = "nielsen://close"
    /// The page ``optOutURL`` names by default: Playout has no opt-out page of its own, so it is
    /// a reserved, never-resolving address (`.invalid`); a test plays the page's outcome by
    /// passing ``optOutSelection`` or ``optInSelection`` to `userOptOut`.
    public static let defaultOptOutURL = "https://playout.invalid/nielsen/optout"

    /// Opens a viewing session, as the guide calls it: `play()`, at the start of each new
    /// stream.
    public func play() {
        perform("play", []) { $0.play() }
    }

    /// Opens a viewing session with the channel's info (`channelName` required).
    public func play(_ channelInfo: [String: NielsenValue]) {
        perform("play", Self.render(channelInfo)) { $0.play(channelInfo) }
    }

    /// The asset about to play (content or an ad), or static content; returns its errors
    /// (empty: accepted). Invalid metadata is not applied.
    @discardableResult
    public func loadMetadata(_ metadata: [String: NielsenValue]) -> [NielsenMetadataError] {
        let now = clock.now
        return perform("loadMetadata", Self.render(metadata), now: now) { $0.loadMetadata(metadata, now: now) }.metadataErrors
    }

    /// The AirPlay/mirroring status (`ottStatus` `"0"` or `"1"`, and `ottType`, `ottDevice`,
    /// `ottDeviceModel`, `ottDeviceID`); returns its errors (empty: accepted).
    @discardableResult
    public func updateOTT(_ info: [String: NielsenValue]) -> [NielsenMetadataError] {
        perform("updateOTT", Self.render(info)) { $0.updateOTT(info) }.metadataErrors
    }

    /// The playhead, once a second while content plays: live, the Unix time in seconds
    /// (``utcSeconds(at:)``); on demand, the position in seconds.
    public func playheadPosition(_ position: Int64) {
        let now = clock.now
        let utc = utcSeconds(at: now)
        perform("playheadPosition", [String(position)], now: now) { $0.playheadPosition(position, now: now, utcSeconds: utc) }
    }

    /// Playback paused or interrupted, or an ad ended.
    public func stop() {
        perform("stop", []) { $0.stop() }
    }

    /// The content ended.
    public func end() {
        let now = clock.now
        perform("end", [], now: now) { $0.end(now: now) }
    }

    /// Disables the instance (every call ignored) or enables it again.
    public func appDisableApi(_ disabled: Bool) {
        perform("appDisableApi", [String(disabled)]) { $0.appDisableApi(disabled) }
    }

    /// The user opts out of measurement or back in, as the URL the opt-out page navigated to:
    /// ``optOutSelection`` (`nielsenappsdk://1`) or ``optInSelection`` (`nielsenappsdk://0`).
    /// Returns false, with a ``NielsenRule/optOutURL`` finding, for any other URL. Measurement
    /// goes on either way; records made while opted out carry `optout` = true.
    @discardableResult
    public func userOptOut(_ url: String) -> Bool {
        perform("userOptOut", [NielsenMetadata.shorten(url)]) { $0.userOptOut(url: url) }.findings.isEmpty
    }

    /// The user opts out (true) or back in: `userOptOut(optOut ? "nielsenappsdk://1" :
    /// "nielsenappsdk://0")`.
    public func userOptOut(_ optOut: Bool) {
        userOptOut(optOut ? Self.optOutSelection : Self.optInSelection)
    }

    // MARK: - Reading

    /// The lifecycle state.
    public var state: NielsenStateMachine.State { shared.withLock { $0.machine.state } }
    /// Whether the user opted out.
    public var optOutStatus: Bool { shared.withLock { $0.machine.optedOut } }
    /// The page that lets the user opt out or in (the guide's `optOutURL`: Playout's
    /// ``defaultOptOutURL``).
    public var optOutURL: String { Self.defaultOptOutURL }
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

    /// Sends one `heartbeat` with `fields` now (a final QoS sample), unless disabled.
    public func reportQoS(_ fields: [TelemetryField]) {
        shared.withLock { shared in
            guard !options.quiet, shared.machine.state != .disabled, let tracker = shared.tracker else { return }
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
                conformance?.report(ConformanceFinding(
                    rule: finding.rule, call: call, detail: "\(finding.detail) (guide: \(finding.rule.guideSection))", time: now))
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
