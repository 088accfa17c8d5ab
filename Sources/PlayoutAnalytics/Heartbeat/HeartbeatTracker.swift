import Logging
import PlayoutCore
public import PlayoutTelemetry

/// Adobe video heartbeat 1.4's shape over the telemetry engine: the `VideoPlayerPlugin` tracking
/// calls (`trackVideoLoad` … `trackApplicationError`) with a ``HeartbeatPlayerDelegate`` that
/// supplies the video, ad, chapter and QoS info, as one ``TelemetryTracker`` of an instrument.
///
/// Each call checks the SDK's rules (``HeartbeatRule``) in ``HeartbeatStateMachine`` and emits
/// its events into the engine's ring: it never blocks and never waits for a backend. After
/// ``trackVideoPlayerError(_:)`` the tracker ignores tracking calls until the next
/// ``trackVideoLoad()``; ``trackVideoUnload()`` calls the delegate's `onVideoUnloaded()` once
/// the unload has been handed to every backend. Heartbeats (the engine's, every
/// ``TelemetrySessionConfiguration/heartbeatInterval``) carry the delegate's QoS.
///
/// ```swift
/// let heartbeat = HeartbeatTracker(instrument: instrument, delegate: player, configuration: .init(debugLogging: true))
/// heartbeat.trackVideoLoad()       // viewinit, video attributes, playerready
/// heartbeat.trackSessionStart()    // play
/// heartbeat.trackPlay()            // playing
/// heartbeat.trackComplete()        // ended
/// heartbeat.trackVideoUnload()     // viewend; then player.onVideoUnloaded()
/// ```
public final class HeartbeatTracker: Sendable {
    /// Adobe's `VideoHeartbeatConfig` (conformance, logger and quiet mode are the adapter's
    /// ``AnalyticsAdapterOptions``).
    public struct Configuration: Sendable {
        /// Where heartbeats go in Adobe's service (here: an attribute of every record, like the
        /// other non-empty strings of the configuration; the engine's backends deliver).
        public var trackingServer: String
        /// The publisher (organization) id.
        public var publisher: String
        /// The channel the video plays in.
        public var channel: String
        /// The online video platform.
        public var ovp: String
        /// The application's SDK version.
        public var sdk: String
        /// Writes the SDK's trace lines (`[DEBUG] [time][VideoPlayerPlugin] #trackPlay > …`) to the
        /// logger.
        public var debugLogging: Bool

        /// A configuration with the given values (default: no logging).
        public init(
            trackingServer: String = "", publisher: String = "", channel: String = "", ovp: String = "", sdk: String = "",
            debugLogging: Bool = false
        ) {
            self.trackingServer = trackingServer
            self.publisher = publisher
            self.channel = channel
            self.ovp = ovp
            self.sdk = sdk
            self.debugLogging = debugLogging
        }
    }

    /// The SDK's plug-ins that can be disabled.
    public enum Plugin: String, Sendable, Hashable, CaseIterable {
        /// `VideoPlayerPlugin`: the tracking calls. Disabled, they are ignored (and traced).
        case videoPlayer = "VideoPlayerPlugin"
        /// `AdobeHeartbeatPlugin`: the periodic heartbeats (with the delegate's QoS). Disabled,
        /// none are sent; the tracking calls' events still are.
        case heartbeat = "AdobeHeartbeatPlugin"
    }

    /// The SDK version whose shape this follows, and the adapter's.
    public static let version = "1.4.0-playout.1"

    /// The configuration in use.
    public let configuration: Configuration
    /// Conformance log, logger and quiet mode.
    public let options: AnalyticsAdapterOptions<HeartbeatRule>
    /// Every call and broken rule (nil unless the options have a conformance log).
    public var conformance: ConformanceLog<HeartbeatRule>? { options.conformance }
    /// The engine's tracker this adapter emits to.
    public let tracker: TelemetryTracker

    private let instrument: TelemetryInstrument
    private let delegate: any HeartbeatPlayerDelegate
    private let trace: AdapterTrace
    private let state = LockedValue(State())

    private struct State {
        var machine = HeartbeatStateMachine()
        var disabled: Set<Plugin> = []
    }

    /// An adapter reporting to `instrument` as the tracker `name`, asking `delegate` for info.
    ///
    /// - Parameters:
    ///   - options: the conformance log, the logger ``Configuration/debugLogging`` writes its
    ///     trace lines to, quiet mode (calls checked, nothing sent).
    ///   - wallClockNanoseconds: the wall time now, ns since 1970, for the trace lines' times
    ///     (default: the system's).
    public init(
        instrument: TelemetryInstrument, delegate: some HeartbeatPlayerDelegate, configuration: Configuration = .init(),
        name: String = "heartbeat", options: AnalyticsAdapterOptions<HeartbeatRule> = .init(), wallClockNanoseconds: Int64? = nil
    ) {
        self.instrument = instrument
        self.delegate = delegate
        self.configuration = configuration
        self.options = options
        tracker = instrument.makeTracker(name: name)
        let logger = options.logger ?? Logger(label: "playout.analytics.heartbeat")
        trace = AdapterTrace(logger: logger, enabled: configuration.debugLogging, clock: instrument.clock, wallClockNanoseconds: wallClockNanoseconds)
        installHeartbeatProvider()
        if !options.quiet {
            let attributes = [
                ("trackingServer", configuration.trackingServer), ("publisher", configuration.publisher),
                ("channel", configuration.channel), ("ovp", configuration.ovp), ("sdk", configuration.sdk),
            ]
            for (name, value) in attributes where !value.isEmpty {
                tracker.emit(.attribute(name, .string(String(value.utf8.prefix(heartbeatMaximumMetadataBytes)) ?? "")))
            }
        }
        trace.log(.info, "VideoHeartbeat", "init", "version \(Self.version)")
    }

    // MARK: - Plug-ins

    /// Enables `plugin` (every plug-in is enabled at first).
    public func enable(_ plugin: Plugin) {
        state.withLock { _ = $0.disabled.remove(plugin) }
        if plugin == .heartbeat { installHeartbeatProvider() }
        trace.log(.info, plugin.rawValue, "enable", "enabled")
    }

    /// Disables `plugin`.
    public func disable(_ plugin: Plugin) {
        state.withLock { _ = $0.disabled.insert(plugin) }
        if plugin == .heartbeat { tracker.setHeartbeatProvider(nil) }
        trace.log(.info, plugin.rawValue, "disable", "disabled")
    }

    /// Whether `plugin` is enabled.
    public func isEnabled(_ plugin: Plugin) -> Bool { state.withLock { !$0.disabled.contains(plugin) } }

    // MARK: - Tracking calls

    /// The video is loaded: reads ``HeartbeatPlayerDelegate/videoInfo``.
    public func trackVideoLoad() { track(.trackVideoLoad) }
    /// The video is unloaded; the delegate's `onVideoUnloaded()` follows once the unload reached
    /// every backend, then `completion` (on a telemetry thread).
    public func trackVideoUnload(completion: (@Sendable () -> Void)? = nil) { track(.trackVideoUnload, completion: completion) }
    /// The viewer asked to play (starts the startup time).
    public func trackSessionStart() { track(.trackSessionStart) }
    /// Playback started or resumed.
    public func trackPlay() { track(.trackPlay) }
    /// Playback paused.
    public func trackPause() { track(.trackPause) }
    /// The content played to its end.
    public func trackComplete() { track(.trackComplete) }
    /// A seek began.
    public func trackSeekStart() { track(.trackSeekStart) }
    /// The seek ended.
    public func trackSeekComplete() { track(.trackSeekComplete) }
    /// Playback waits for data.
    public func trackBufferStart() { track(.trackBufferStart) }
    /// The wait ended.
    public func trackBufferComplete() { track(.trackBufferComplete) }
    /// An ad started: reads the ad break and ad info.
    public func trackAdStart() { track(.trackAdStart) }
    /// The ad ended.
    public func trackAdComplete() { track(.trackAdComplete) }
    /// A chapter started: reads the chapter info.
    public func trackChapterStart() { track(.trackChapterStart) }
    /// The chapter ended.
    public func trackChapterComplete() { track(.trackChapterComplete) }
    /// The bitrate changed: reads the QoS info.
    public func trackBitrateChange() { track(.trackBitrateChange) }
    /// The player failed: the tracker ignores tracking calls until the next ``trackVideoLoad()``.
    public func trackVideoPlayerError(_ errorId: String) { track(.trackVideoPlayerError, errorId: errorId) }
    /// The application (not the player) reports an error; tracking goes on.
    public func trackApplicationError(_ errorId: String) { track(.trackApplicationError, errorId: errorId) }

    // MARK: - Carrying a call out

    private func track(_ call: HeartbeatCall, errorId: String? = nil, completion: (@Sendable () -> Void)? = nil) {
        let now = instrument.clock.now
        let info = self.info(for: call, errorId: errorId)
        conformance?.record(RecordedCall(name: call.rawValue, arguments: errorId.map { [String($0.prefix(64))] } ?? [], time: now))
        let outcome = state.withLock { state -> HeartbeatStateMachine.Decision? in
            guard !state.disabled.contains(.videoPlayer) else { return nil }
            let decision = state.machine.handle(call, info: info, now: now)
            // Emitted under the lock: concurrent calls keep their order in the ring (emit is O(1)).
            if !options.quiet {
                for event in decision.events { tracker.emit(event, at: now) }
            }
            return decision
        }
        guard let outcome else {
            trace.log(.debug, Plugin.videoPlayer.rawValue, call.rawValue, "ignored: the plug-in is disabled")
            completion?()
            return
        }
        if let (rule, detail) = outcome.broken {
            trace.log(.warn, Plugin.videoPlayer.rawValue, call.rawValue, "\(rule.rawValue): \(detail)")
            conformance?.report(ConformanceFinding(rule: rule, call: call.rawValue, detail: detail, time: now))
            delegate.onError(HeartbeatErrorInfo(rule: rule, call: call.rawValue, message: detail))
        } else {
            let names = outcome.events.filter { if case .attribute = $0 { false } else { true } }.map(\.name)
            let sent = options.quiet ? "quiet mode: nothing sent" : names.isEmpty ? "nothing to send" : names.joined(separator: ", ")
            trace.log(.debug, Plugin.videoPlayer.rawValue, call.rawValue, outcome.note ?? sent)
        }
        if outcome.unloaded {
            instrument.whenHandedOff { [delegate] in
                delegate.onVideoUnloaded()
                completion?()
            }
        } else {
            completion?()
        }
    }

    /// What `call` reads from the delegate (before taking the lock: the delegate is user code).
    private func info(for call: HeartbeatCall, errorId: String?) -> HeartbeatStateMachine.Info {
        switch call {
        case .trackVideoLoad: HeartbeatStateMachine.Info(video: delegate.videoInfo)
        case .trackAdStart: HeartbeatStateMachine.Info(adBreak: delegate.adBreakInfo, ad: delegate.adInfo)
        case .trackChapterStart: HeartbeatStateMachine.Info(chapter: delegate.chapterInfo)
        case .trackBitrateChange, .trackComplete, .trackVideoUnload: HeartbeatStateMachine.Info(qos: delegate.qosInfo)
        case .trackVideoPlayerError, .trackApplicationError: HeartbeatStateMachine.Info(errorId: errorId)
        default: HeartbeatStateMachine.Info()
        }
    }

    /// Heartbeats carry the delegate's QoS (read on the engine's thread), unless quiet.
    private func installHeartbeatProvider() {
        guard !options.quiet else { return }
        tracker.setHeartbeatProvider { [delegate, state] in
            let startup = state.withLock { $0.machine.measuredStartupTime }
            return HeartbeatStateMachine.qosFields(delegate.qosInfo, startup: startup)
        }
    }
}
