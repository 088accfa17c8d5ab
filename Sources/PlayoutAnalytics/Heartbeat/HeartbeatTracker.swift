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
/// The guide's instantiation and configuration: the plug-in list at creation, the configuration
/// (`trackingServer`, `jobId`, `publisher` mandatory) through ``configure(_:)``, ``destroy()`` at
/// the end — after `onVideoUnloaded`, as the guide's graceful termination does.
///
/// ```swift
/// let heartbeat = HeartbeatTracker(instrument: instrument, delegate: player, plugins: [HeartbeatAnalyticsPlugin()])
/// heartbeat.configure(.init(trackingServer: "heartbeats.example.com", jobId: "sc_va", publisher: "publisher-id"))
/// heartbeat.trackVideoLoad()       // viewinit, video attributes, playerready
/// heartbeat.trackSessionStart()    // play
/// heartbeat.trackPlay()            // playing
/// heartbeat.trackComplete()        // ended
/// heartbeat.trackVideoUnload()     // viewend; then player.onVideoUnloaded()
/// ```
public final class HeartbeatTracker: Sendable {
    /// Adobe's `ConfigData`: the mandatory `trackingServer`, `jobId` and `publisher`, and the
    /// optional `channel`, `ovp`, `sdk`, `debugLogging` and `quietMode` (the adapter's
    /// ``AnalyticsAdapterOptions`` add the conformance log and the logger).
    public struct Configuration: Sendable {
        /// The guide's default of `ovp` and `sdk`: `unknown`.
        public static let unknown = "unknown"

        /// The URL of the tracking end-point (here: an attribute of every record, like the
        /// other non-empty strings of the configuration; the engine's backends deliver).
        /// Mandatory in ``HeartbeatTracker/configure(_:)``.
        public var trackingServer: String
        /// The processing job identifier (`jobId`). Mandatory in ``HeartbeatTracker/configure(_:)``.
        public var jobId: String
        /// The name of the content publisher. Mandatory in ``HeartbeatTracker/configure(_:)``.
        public var publisher: String
        /// The distribution channel (default: empty).
        public var channel: String
        /// The online video platform (default: `unknown`).
        public var ovp: String
        /// The video-player app's version string (default: `unknown`).
        public var sdk: String
        /// Writes the SDK's trace lines (`[DEBUG] [time][VideoPlayerPlugin] #trackPlay > …`) to the
        /// logger (default: false).
        public var debugLogging: Bool
        /// Quiet mode: the calls are checked and traced, nothing is sent (default: false; the
        /// options' ``AnalyticsAdapterOptions/quiet`` does the same).
        public var quietMode: Bool

        /// The guide's `ConfigData(trackingServer, jobId, publisher)` with the optional values
        /// at the guide's defaults. Every parameter has a default so that the initializer's
        /// configuration may leave them empty (the engine delivers; see
        /// ``HeartbeatTracker/configure(_:)`` for the check).
        public init(
            trackingServer: String = "", jobId: String = "", publisher: String = "", channel: String = "", ovp: String = Configuration.unknown,
            sdk: String = Configuration.unknown, debugLogging: Bool = false, quietMode: Bool = false
        ) {
            self.trackingServer = trackingServer
            self.jobId = jobId
            self.publisher = publisher
            self.channel = channel
            self.ovp = ovp
            self.sdk = sdk
            self.debugLogging = debugLogging
            self.quietMode = quietMode
        }

        /// What is wrong with the mandatory parameters, or nil.
        var problem: String? {
            let empty = [("trackingServer", trackingServer), ("jobId", jobId), ("publisher", publisher)].filter { $0.1.isEmpty }.map(\.0)
            if !empty.isEmpty { return "ConfigData's \(empty.joined(separator: ", ")) \(empty.count == 1 ? "is" : "are") empty: trackingServer, jobId and publisher are mandatory" }
            for (name, value) in [("trackingServer", trackingServer), ("jobId", jobId), ("publisher", publisher)]
            where value.utf8.count > heartbeatMaximumMetadataBytes {
                return "ConfigData's \(name) is \(value.utf8.count) bytes; at most \(heartbeatMaximumMetadataBytes)"
            }
            return nil
        }

        var attributes: [(String, String)] {
            [("trackingServer", trackingServer), ("jobId", jobId), ("publisher", publisher), ("channel", channel), ("ovp", ovp), ("sdk", sdk)]
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

    /// The configuration in use (the initializer's, then the last ``configure(_:)``'s).
    public var configuration: Configuration { state.withLock { $0.configuration } }
    /// The plug-ins given at creation (the guide's list; fixed for the instance's life).
    public let plugins: [any HeartbeatPlugin]
    /// Conformance log, logger and quiet mode.
    public let options: AnalyticsAdapterOptions<HeartbeatRule>
    /// Every call and broken rule (nil unless the options have a conformance log).
    public var conformance: ConformanceLog<HeartbeatRule>? { options.conformance }
    /// The engine's tracker this adapter emits to.
    public let tracker: TelemetryTracker

    /// The engine it reports into (a subscriber bridge hands the subscriber's session there to it).
    package let instrument: TelemetryInstrument
    private let delegate: any HeartbeatPlayerDelegate
    private let trace: AdapterTrace
    private let state: LockedValue<State>

    private struct State {
        var machine = HeartbeatStateMachine()
        var disabled: Set<Plugin> = []
        var configuration: Configuration
        var quiet: Bool
    }

    /// An adapter reporting to `instrument` as the tracker `name`, asking `delegate` for info.
    ///
    /// - Parameters:
    ///   - options: the conformance log, the logger ``Configuration/debugLogging`` writes its
    ///     trace lines to, quiet mode (calls checked, nothing sent).
    ///   - plugins: the guide's plug-in list (empty: "Implementing Without Plug-ins"), each
    ///     enabled; they see every call the instance takes while enabled.
    ///   - wallClockNanoseconds: the wall time now, ns since 1970, for the trace lines' times
    ///     (default: the system's).
    public init(
        instrument: TelemetryInstrument, delegate: some HeartbeatPlayerDelegate, plugins: [any HeartbeatPlugin] = [],
        configuration: Configuration = .init(), name: String = "heartbeat", options: AnalyticsAdapterOptions<HeartbeatRule> = .init(),
        wallClockNanoseconds: Int64? = nil
    ) {
        self.instrument = instrument
        self.delegate = delegate
        self.plugins = plugins
        self.options = options
        tracker = instrument.makeTracker(name: name)
        let logger = options.logger ?? Logger(label: "playout.analytics.heartbeat")
        trace = AdapterTrace(logger: logger, enabled: true, clock: instrument.clock, wallClockNanoseconds: wallClockNanoseconds)
        state = LockedValue(State(configuration: configuration, quiet: options.quiet || configuration.quietMode))
        installHeartbeatProvider()
        emitAttributes(of: configuration, previous: nil)
        log(.info, "VideoHeartbeat", "init", "version \(Self.version)")
    }

    // MARK: - Configuration and lifecycle

    /// The guide's `configure(config)`: applies `configuration` (its attributes, debug logging,
    /// quiet mode). Returns false, with a ``HeartbeatRule/invalidConfiguration`` finding, when a
    /// mandatory parameter is empty; `trackVideoLoad()` then enters the error state until a
    /// valid configuration is given.
    @discardableResult
    public func configure(_ configuration: Configuration) -> Bool {
        let now = instrument.clock.now
        let (broken, previous) = state.withLock { state -> ((rule: HeartbeatRule, detail: String)?, Configuration) in
            let previous = state.configuration
            let broken = state.machine.configure(problem: configuration.problem)
            if broken?.rule != .callAfterDestroy {
                state.configuration = configuration
                state.quiet = options.quiet || configuration.quietMode
            }
            return (broken, previous)
        }
        conformance?.record(RecordedCall(name: "configure", arguments: [configuration.trackingServer, configuration.jobId, configuration.publisher].map { String($0.prefix(64)) }, time: now))
        if let broken {
            report(broken.rule, call: "configure", broken.detail, at: now)
            if broken.rule == .callAfterDestroy { return false }
        } else {
            log(.info, "VideoHeartbeat", "configure", "configured")
        }
        if state.withLock({ $0.quiet }) {
            tracker.setHeartbeatProvider(nil)  // quiet mode sends no heartbeat either
        } else if isEnabled(.heartbeat) {
            installHeartbeatProvider()
        }
        emitAttributes(of: configuration, previous: previous)
        return broken == nil
    }

    /// The guide's `destroy()`: tears the instance down. A loaded video's view ends; every later
    /// call is refused (``HeartbeatRule/callAfterDestroy``). Call it from `onVideoUnloaded` (the
    /// guide's graceful termination) so that the unload is delivered first.
    public func destroy() {
        let now = instrument.clock.now
        conformance?.record(RecordedCall(name: "destroy", time: now))
        let (loaded, quiet) = state.withLock { state in (state.machine.destroy(), state.quiet) }
        tracker.setHeartbeatProvider(nil)
        if loaded, !quiet { tracker.emit(.viewEnd, at: now) }
        log(.info, "VideoHeartbeat", "destroy", loaded ? "destroyed: the loaded video's view ended" : "destroyed")
    }

    // MARK: - Plug-ins

    /// Enables `plugin` (every plug-in is enabled at first).
    public func enable(_ plugin: Plugin) {
        state.withLock { _ = $0.disabled.remove(plugin) }
        if plugin == .heartbeat { installHeartbeatProvider() }
        log(.info, plugin.rawValue, "enable", "enabled")
    }

    /// Disables `plugin`.
    public func disable(_ plugin: Plugin) {
        state.withLock { _ = $0.disabled.insert(plugin) }
        if plugin == .heartbeat { tracker.setHeartbeatProvider(nil) }
        log(.info, plugin.rawValue, "disable", "disabled")
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
    /// The guide's `trackQoSUpdateInfo`: reads the QoS info now, so that the next records carry
    /// the latest values (every call reads it too).
    public func trackQoSUpdateInfo() { track(.trackQoSUpdateInfo) }
    /// The player failed: the tracker ignores tracking calls until the next ``trackVideoLoad()``.
    public func trackVideoPlayerError(_ errorId: String) { track(.trackVideoPlayerError, errorId: errorId) }
    /// The application (not the player) reports an error; tracking goes on.
    public func trackApplicationError(_ errorId: String) { track(.trackApplicationError, errorId: errorId) }

    // MARK: - Carrying a call out

    private func track(_ call: HeartbeatCall, errorId: String? = nil, completion: (@Sendable () -> Void)? = nil) {
        let now = instrument.clock.now
        let info = self.info(for: call, errorId: errorId)
        conformance?.record(RecordedCall(name: call.rawValue, arguments: errorId.map { [String($0.prefix(64))] } ?? [], time: now))
        let outcome = state.withLock { state -> (HeartbeatStateMachine.Decision, quiet: Bool)? in
            guard !state.disabled.contains(.videoPlayer) else { return nil }
            let decision = state.machine.handle(call, info: info, now: now)
            // Emitted under the lock: concurrent calls keep their order in the ring (emit is O(1)).
            if !state.quiet {
                for event in decision.events { tracker.emit(event, at: now) }
            }
            return (decision, state.quiet)
        }
        guard let (outcome, quiet) = outcome else {
            log(.debug, Plugin.videoPlayer.rawValue, call.rawValue, "ignored: the plug-in is disabled")
            completion?()
            return
        }
        if let (rule, detail) = outcome.broken {
            report(rule, call: call.rawValue, detail, at: now)
        } else {
            let names = outcome.events.filter { if case .attribute = $0 { false } else { true } }.map(\.name)
            let sent = quiet ? "quiet mode: nothing sent" : names.isEmpty ? "nothing to send" : names.joined(separator: ", ")
            log(.debug, Plugin.videoPlayer.rawValue, call.rawValue, outcome.note ?? sent)
            for plugin in plugins where plugin.isEnabled { plugin.process(call, events: outcome.events, at: now) }
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

    /// What `call` reads from the delegate (before taking the lock: the delegate is user code):
    /// the QoS always (the guide appends it to every call), and what the call needs.
    private func info(for call: HeartbeatCall, errorId: String?) -> HeartbeatStateMachine.Info {
        var info = HeartbeatStateMachine.Info(qos: delegate.qosInfo)
        switch call {
        case .trackVideoLoad: info.video = delegate.videoInfo
        case .trackAdStart:
            info.adBreak = delegate.adBreakInfo
            info.ad = delegate.adInfo
            info.video = delegate.videoInfo  // the main content's playhead: the break's default start
        case .trackChapterStart: info.chapter = delegate.chapterInfo
        case .trackVideoPlayerError, .trackApplicationError: info.errorId = errorId
        default: break
        }
        return info
    }

    /// A broken rule: traced, recorded (naming the guide's section) and told to the delegate.
    private func report(_ rule: HeartbeatRule, call: String, _ detail: String, at now: MonotonicInstant) {
        log(.warn, Plugin.videoPlayer.rawValue, call, "\(rule.rawValue): \(detail)")
        conformance?.report(ConformanceFinding(rule: rule, call: call, detail: "\(detail) (guide: \(rule.guideSection))", time: now))
        delegate.onError(HeartbeatErrorInfo(rule: rule, call: call, message: detail))
    }

    /// A trace line, when the configuration asks for debug logging.
    private func log(_ level: AdapterTrace.Level, _ component: String, _ method: String, _ message: @autoclosure () -> String) {
        guard state.withLock({ $0.configuration.debugLogging }) else { return }
        trace.log(level, component, method, message())
    }

    /// The configuration's non-empty strings that changed, as attributes (unless quiet).
    private func emitAttributes(of configuration: Configuration, previous: Configuration?) {
        guard !state.withLock({ $0.quiet }) else { return }
        let before = Dictionary(uniqueKeysWithValues: previous?.attributes ?? [])
        for (name, value) in configuration.attributes where before[name] != value && !(previous == nil && value.isEmpty) {
            tracker.emit(.attribute(name, value.isEmpty ? nil : .string(String(value.utf8.prefix(heartbeatMaximumMetadataBytes)) ?? "")))
        }
    }

    /// Heartbeats carry the delegate's QoS (read on the engine's thread), unless quiet.
    private func installHeartbeatProvider() {
        guard !state.withLock({ $0.quiet }) else { return }
        tracker.setHeartbeatProvider { [delegate, state] in
            let startup = state.withLock { $0.machine.measuredStartupTime }
            return HeartbeatStateMachine.qosFields(delegate.qosInfo, startup: startup)
        }
    }
}
