import Logging
import PlayoutCore
public import PlayoutTelemetry

/// Mux Data's custom-integration shape over the telemetry engine, as its core SDK
/// (`MUXSDKCore`) has it in the custom Objective-C integration guide (core SDK v5): global
/// environment and viewer data for every player, playback, data and ad events dispatched by
/// player name with the player's data, errors with severity and a business-exception flag, the
/// video-change sequence, and `destroyPlayer`.
///
/// Each player is one ``TelemetryTracker`` of the instrument (made at its first event, with a
/// uuid-style `player_instance_id`); its events are checked against ``MuxRule`` in a
/// ``MuxPlayerStateMachine`` and emitted into the engine's ring — never blocking. Mux's beacons
/// (batched every 10 s, monotonic timestamps) are a backend on the same instrument:
/// ``MuxBeaconBackend``. A view is split after inactivity by the engine's session hub:
/// ``instrumentConfiguration(viewInactivityTimeout:heartbeatInterval:)``.
///
/// The guide's sample event sequence:
///
/// ```swift
/// let mux = MuxCore(instrument: instrument)
/// mux.dispatchGlobalDataEvent(MuxGlobalData(muxViewerId: deviceId, applicationName: "com.example.app"))
/// let playerData = MuxPlayerData(pluginName: "Sample Custom Player")
/// mux.dispatch(.viewInit, player: "main", playerData: playerData)
/// mux.dispatch(.data(MuxDataEvent(customerPlayerData: MuxCustomerPlayerData(environmentKey: "env-123"),
///                                 customerVideoData: MuxVideoData(id: "v1", title: "News"))), player: "main")
/// mux.dispatch(.playerReady, player: "main", playerData: playerData)
/// mux.dispatch(.play, player: "main", playerData: playerData)
/// mux.dispatch(.playing, player: "main", playerData: playerData)
/// mux.videoChange(player: "main", video: MuxVideoData(id: "v2"))   // viewend, viewinit, data (videoChange)
/// mux.destroyPlayer("main")
/// ```
public final class MuxCore: Sendable {
    /// Mux's own settings (conformance, logger and quiet mode are the adapter's
    /// ``AnalyticsAdapterOptions``).
    public struct Configuration: Sendable {
        /// Writes trace lines (`[DEBUG] [time][MuxCore] #dispatch > main: play`) to the logger.
        public var debugLogging: Bool
        /// Makes each new player's `player_instance_id` (default: a random uuid-style string, as
        /// core SDK v2.1 sends; a test may give a fixed one).
        public var makePlayerInstanceId: @Sendable () -> String

        /// Settings with the given values (default: no trace lines, random instance ids).
        public init(debugLogging: Bool = false, makePlayerInstanceId: @escaping @Sendable () -> String = MuxCore.randomPlayerInstanceId) {
            self.debugLogging = debugLogging
            self.makePlayerInstanceId = makePlayerInstanceId
        }
    }

    /// A random uuid-style (version 4) string: `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`, lowercase.
    @Sendable public static func randomPlayerInstanceId() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        let hex = bytes.map { String(String(0x100 | Int($0), radix: 16).dropFirst()) }
        return [hex[0..<4], hex[4..<6], hex[6..<8], hex[8..<10], hex[10..<16]].map { $0.joined() }.joined(separator: "-")
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

    /// The engine it reports into (a subscriber bridge hands the subscriber's session there to it).
    package let instrument: TelemetryInstrument
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

    /// Sets the global data every player's records carry (replacing the previous) — the guide's
    /// `[MUXSDKCore dispatchGlobalDataEvent:]` with the environment and viewer data. A field a
    /// player's own customer player data set (its environment key, its viewer) stays that
    /// player's: global data never removes or overwrites it.
    public func dispatchGlobalDataEvent(_ data: MuxGlobalData) {
        let now = instrument.clock.now
        conformance?.record(RecordedCall(name: "dispatchGlobalDataEvent", arguments: [Self.clip(data.environmentKey)], time: now))
        if let oversized = MuxLimits.oversized(data.fields) { return report(.invalidMetadata, "dispatchGlobalDataEvent", oversized, now) }
        state.withLock { state in
            let previous = state.global?.fields ?? []
            state.global = data
            for player in state.players.values where !options.quiet {
                for event in player.machine.globalDataReplaced(previous, with: data.fields) { player.tracker.emit(event, at: now) }
            }
        }
        trace.log(.debug, "MuxCore", "dispatchGlobalDataEvent", "environment key set: \(!data.environmentKey.isEmpty)")
    }

    /// Dispatches `event` for the player called `player` (a new name is a new player) — the
    /// guide's `[MUXSDKCore dispatchEvent:forPlayer:]` — with the player's current state
    /// (`MUXSDKPlayerData`, set on the event before dispatching it; nil: unchanged).
    public func dispatch(_ event: MuxEvent, player: String, playerData: MuxPlayerData? = nil) {
        dispatch(event.name, player: player) { machine, hasKey in machine.handle(event, hasEnvironmentKey: hasKey, playerData: playerData) }
    }

    /// Dispatches the ad event `event` for `player` — the guide's `dispatchAdEvent` — with the
    /// ad's data and the player's state.
    public func dispatchAdEvent(_ event: MuxAdEvent, player: String, adData: MuxAdData? = nil, playerData: MuxPlayerData? = nil) {
        dispatch(event.rawValue, player: player) { machine, hasKey in
            machine.handleAd(event, adData: adData, hasEnvironmentKey: hasKey, playerData: playerData)
        }
    }

    private func dispatch(
        _ name: String, player: String, _ handle: (inout MuxPlayerStateMachine, Bool) -> MuxPlayerStateMachine.Decision
    ) {
        let now = instrument.clock.now
        conformance?.record(RecordedCall(name: name, arguments: [Self.clip(player)], time: now))
        if player.isEmpty || player.utf8.count > MuxLimits.maximumMetadataBytes {
            return report(.invalidMetadata, name, "the player name must be 1 to \(MuxLimits.maximumMetadataBytes) bytes", now)
        }
        let outcome = state.withLock { state -> MuxPlayerStateMachine.Decision? in
            if state.players[player] == nil {
                guard state.players.count < MuxLimits.maximumPlayers else { return nil }
                let tracker = instrument.makeTracker(name: player)
                if !options.quiet {
                    for field in state.global?.fields ?? [] { tracker.emit(.attribute(field.name, field.value), at: now) }
                    tracker.emit(.attribute("player_name", .string(player)), at: now)
                    tracker.emit(.attribute("player_instance_id", .string(configuration.makePlayerInstanceId())), at: now)
                }
                state.players[player] = (tracker, MuxPlayerStateMachine())
            }
            let hasKey = !(state.global?.environmentKey.isEmpty ?? true)
            let decision = handle(&state.players[player]!.machine, hasKey)
            // Emitted under the lock: one player's events keep their order (emit is O(1)).
            for telemetry in decision.events where !options.quiet { state.players[player]!.tracker.emit(telemetry, at: now) }
            return decision
        }
        guard let outcome else {
            return report(.invalidMetadata, name, "more than \(MuxLimits.maximumPlayers) players: destroy one first", now)
        }
        if let (rule, detail) = outcome.broken { return report(rule, name, detail, now) }
        trace.log(.debug, "MuxCore", "dispatch", "\(Self.clip(player)): \(name)")
    }

    /// The guide's "Changing the Video" for `player`: `viewend`, `viewinit`, then a data event
    /// with the new video's data and `videoChange` set; with `thenPlay` (the same stream
    /// monitored as a separate video) also `play` and `playing`.
    public func videoChange(player: String, video: MuxVideoData, playerData: MuxPlayerData? = nil, thenPlay: Bool = false) {
        dispatch(.viewEnd, player: player, playerData: playerData)
        dispatch(.viewInit, player: player, playerData: playerData)
        dispatch(.data(MuxDataEvent(video: video, videoChange: true)), player: player)
        if thenPlay {
            dispatch(.play, player: player, playerData: playerData)
            dispatch(.playing, player: player, playerData: playerData)
        }
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
        let detail = "\(detail) (guide: \(rule.guideSection))"
        trace.log(.warn, "MuxCore", call, "\(rule.rawValue): \(detail)")
        conformance?.report(ConformanceFinding(rule: rule, call: call, detail: detail, time: now))
    }

    private static func clip(_ text: String) -> String { String(text.prefix(64)) }
}
