import Logging
import PlayoutCore
public import PlayoutTelemetry

/// Mux Data's custom-integration shape over the telemetry engine, as its core SDK
/// (`MUXSDKCore`) has it: global data (environment key, viewer and device) for every player,
/// playback and data events dispatched by player name, errors with severity and a
/// business-exception flag, the video-change sequence, and `destroyPlayer`.
///
/// Each player is one ``TelemetryTracker`` of the instrument (made at its first event); its
/// events are checked against ``MuxRule`` in a ``MuxPlayerStateMachine`` and emitted into the
/// engine's ring — never blocking. Mux's beacons (batched every 10 s, monotonic timestamps) are
/// a backend on the same instrument: ``MuxBeaconBackend``. A view is split after inactivity by
/// the engine's session hub: ``instrumentConfiguration(viewInactivityTimeout:)``.
///
/// ```swift
/// let mux = MuxCore(instrument: instrument)
/// mux.dispatchGlobalDataEvent(MuxGlobalData(environmentKey: "env-123", viewerUserId: "u1"))
/// mux.dispatch(.viewInit, player: "main")
/// mux.dispatch(.data(MuxDataEvent(video: MuxVideoData(id: "v1", title: "News"))), player: "main")
/// mux.dispatch(.play, player: "main")
/// mux.dispatch(.data(MuxDataEvent(sourceWidth: 1280, sourceHeight: 720, sourceBitrate: 3e6)), player: "main")
/// mux.dispatch(.renditionChange, player: "main")
/// mux.videoChange(player: "main", video: MuxVideoData(id: "v2"))   // viewend, data, viewinit
/// mux.destroyPlayer("main")
/// ```
public final class MuxCore: Sendable {
    /// Mux's own settings (conformance, logger and quiet mode are the adapter's
    /// ``AnalyticsAdapterOptions``).
    public struct Configuration: Sendable {
        /// Writes trace lines (`[DEBUG] [time][MuxCore] #dispatch > main: play`) to the logger.
        public var debugLogging: Bool

        /// Settings with the given values (default: no trace lines).
        public init(debugLogging: Bool = false) {
            self.debugLogging = debugLogging
        }
    }

    /// The default inactivity after which a view is split: 1 hour.
    public static let defaultViewInactivityTimeout: Duration = .seconds(3_600)

    /// Engine settings whose sessions (views) are split after `viewInactivityTimeout` without an
    /// event (and heartbeats every `heartbeatInterval`).
    public static func instrumentConfiguration(
        viewInactivityTimeout: Duration = defaultViewInactivityTimeout, heartbeatInterval: Duration = TelemetrySessionConfiguration.defaultHeartbeatInterval
    ) -> TelemetryInstrument.Configuration {
        TelemetryInstrument.Configuration(hub: .init(heartbeatInterval: heartbeatInterval, inactivityTimeout: viewInactivityTimeout))
    }

    /// The configuration in use.
    public let configuration: Configuration
    /// Conformance log, logger and quiet mode.
    public let options: AnalyticsAdapterOptions<MuxRule>
    /// Every call and broken rule (nil unless the options have a conformance log).
    public var conformance: ConformanceLog<MuxRule>? { options.conformance }

    private let instrument: TelemetryInstrument
    private let trace: AdapterTrace
    private let state = LockedValue(State())

    private struct State {
        var global: MuxGlobalData?
        var players: [String: (tracker: TelemetryTracker, machine: MuxPlayerStateMachine)] = [:]
    }

    /// A core reporting to `instrument`.
    ///
    /// - Parameters:
    ///   - options: the conformance log, the logger ``Configuration/debugLogging`` writes to,
    ///     quiet mode (calls checked, nothing sent).
    ///   - wallClockNanoseconds: the wall time now (ns since 1970) for trace lines (default: the system's).
    public init(
        instrument: TelemetryInstrument, configuration: Configuration = .init(), options: AnalyticsAdapterOptions<MuxRule> = .init(),
        wallClockNanoseconds: Int64? = nil
    ) {
        self.instrument = instrument
        self.configuration = configuration
        self.options = options
        trace = AdapterTrace(logger: options.logger ?? Logger(label: "playout.analytics.mux"), enabled: configuration.debugLogging, clock: instrument.clock, wallClockNanoseconds: wallClockNanoseconds)
    }

    /// The players being tracked.
    public var playerNames: [String] { state.withLock { $0.players.keys.sorted() } }

    /// Sets the global data every player's records carry (replacing the previous).
    public func dispatchGlobalDataEvent(_ data: MuxGlobalData) {
        let now = instrument.clock.now
        conformance?.record(RecordedCall(name: "dispatchGlobalDataEvent", arguments: [Self.clip(data.environmentKey)], time: now))
        let all = [data.environmentKey, data.viewerUserId, data.deviceName, data.deviceCategory, data.osFamily, data.osVersion]
        if let long = all.first(where: { $0.utf8.count > MuxLimits.maximumMetadataBytes }) {
            return report(.invalidMetadata, "dispatchGlobalDataEvent", "a global value is \(long.utf8.count) bytes; at most \(MuxLimits.maximumMetadataBytes)", now)
        }
        state.withLock { state in
            let previous = state.global?.fields.map(\.name) ?? []
            state.global = data
            for player in state.players.values where !options.quiet {
                for name in previous { player.tracker.emit(.attribute(name, nil), at: now) }
                for field in data.fields { player.tracker.emit(.attribute(field.name, field.value), at: now) }
            }
        }
        trace.log(.debug, "MuxCore", "dispatchGlobalDataEvent", "environment key set: \(!data.environmentKey.isEmpty)")
    }

    /// Dispatches `event` for the player called `player` (a new name is a new player).
    public func dispatch(_ event: MuxEvent, player: String) {
        let now = instrument.clock.now
        conformance?.record(RecordedCall(name: event.name, arguments: [Self.clip(player)], time: now))
        if player.isEmpty || player.utf8.count > MuxLimits.maximumMetadataBytes {
            return report(.invalidMetadata, event.name, "the player name must be 1 to \(MuxLimits.maximumMetadataBytes) bytes", now)
        }
        let outcome = state.withLock { state -> MuxPlayerStateMachine.Decision? in
            if state.players[player] == nil {
                guard state.players.count < MuxLimits.maximumPlayers else { return nil }
                let tracker = instrument.makeTracker(name: player)
                if !options.quiet {
                    for field in state.global?.fields ?? [] { tracker.emit(.attribute(field.name, field.value), at: now) }
                    tracker.emit(.attribute("player_name", .string(player)), at: now)
                }
                state.players[player] = (tracker, MuxPlayerStateMachine())
            }
            let hasKey = !(state.global?.environmentKey.isEmpty ?? true)
            let decision = state.players[player]!.machine.handle(event, hasEnvironmentKey: hasKey)
            // Emitted under the lock: one player's events keep their order (emit is O(1)).
            for telemetry in decision.events where !options.quiet { state.players[player]!.tracker.emit(telemetry, at: now) }
            return decision
        }
        guard let outcome else {
            return report(.invalidMetadata, event.name, "more than \(MuxLimits.maximumPlayers) players: destroy one first", now)
        }
        if let (rule, detail) = outcome.broken { return report(rule, event.name, detail, now) }
        trace.log(.debug, "MuxCore", "dispatch", "\(Self.clip(player)): \(event.name)")
    }

    /// The video-change sequence for `player`: `viewend`, a data event with `video`, `viewinit`.
    public func videoChange(player: String, video: MuxVideoData) {
        dispatch(.viewEnd, player: player)
        dispatch(.data(MuxDataEvent(video: video)), player: player)
        dispatch(.viewInit, player: player)
    }

    /// Ends `player`'s view and forgets it; its tracker leaves the engine. (Its leaving is a
    /// `viewend`: after a dispatched `viewend` the engine counts that one as a rejected transition.)
    public func destroyPlayer(_ player: String) {
        let now = instrument.clock.now
        conformance?.record(RecordedCall(name: "destroyPlayer", arguments: [Self.clip(player)], time: now))
        let removed = state.withLock { state -> Bool in
            guard let entry = state.players.removeValue(forKey: player) else { return false }
            entry.tracker.endOfService()  // viewend if the view is open; the engine forgets the tracker
            return true
        }
        trace.log(.debug, "MuxCore", "destroyPlayer", removed ? "\(Self.clip(player)) destroyed" : "no player \(Self.clip(player))")
    }

    private func report(_ rule: MuxRule, _ call: String, _ detail: String, _ now: MonotonicInstant) {
        trace.log(.warn, "MuxCore", call, "\(rule.rawValue): \(detail)")
        conformance?.report(ConformanceFinding(rule: rule, call: call, detail: detail, time: now))
    }

    private static func clip(_ text: String) -> String { String(text.prefix(64)) }
}
