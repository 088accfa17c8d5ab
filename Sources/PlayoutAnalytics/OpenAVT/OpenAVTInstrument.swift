import Logging
import PlayoutCore
public import PlayoutTelemetry

/// OpenAVT's instrument shape over the telemetry engine: trackers emit actions
/// (``emit(action:trackerId:)``), the hub accepts or rejects them, the metric calculator turns
/// accepted ones into metrics, and the backend receives them — with the engine as the one
/// pipeline underneath.
///
/// | OpenAVT | here |
/// |---|---|
/// | instrument | the ``TelemetryInstrument`` it is given (``engine``), shared with every other adapter and tracker: no second engine |
/// | tracker (`addTracker` → id) | an engine ``TelemetryTracker``: its own sessions |
/// | hub | an ``OpenAVTHub`` (default ``OpenAVTHubCore``) run on the emitting thread before the engine's session hub |
/// | metricalc | an ``OpenAVTMetricalc`` (default ``OpenAVTMetricalcCore``); metrics become the session's metric records |
/// | backend | an engine backend (any ``TelemetryBackend``) with its own thread and bounded queue |
/// | `registerGetter(attribute:getter:filter:)` | ``TelemetryTracker/addAttribute(_:filter:_:)``, called on the engine's thread |
/// | Ping (every 30 s from `Start`) | the engine's `heartbeat`, with the ping provider's fields |
///
/// `emit` never blocks: it decides under a short lock and copies the events into the engine's
/// ring. The hub and the metric calculator run under that lock (their state is the chain's), so
/// they must be quick and must not call the instrument; getters and the ping provider are called
/// outside it. A rejected action is counted (``rejectedActions``), logged and — with a
/// ``ConformanceLog`` — reported as a finding naming the ``OpenAVTRule``; nothing is sampled away.
///
/// ```swift
/// let memory = InMemoryTelemetryBackend()
/// let engine = try TelemetryInstrument(configuration: OpenAVTInstrument.engineConfiguration())
/// let instrument = try OpenAVTInstrument(engine: engine, hub: OpenAVTHubCore(), metricalc: OpenAVTMetricalcCore(), backend: memory)
/// let tracker = instrument.addTracker()
/// instrument.ready()
/// instrument.emit(action: .streamLoad, trackerId: tracker)
/// instrument.emit(action: .start, trackerId: tracker)
/// instrument.emit(action: .end, trackerId: tracker)
/// instrument.shutdown(timeout: .seconds(2))
/// try memory.expectEvents(["viewinit", "play", "playing", "ended", "viewend"])
/// ```
public final class OpenAVTInstrument: Sendable {
    /// OpenAVT's ping interval: 30 s (the engine's heartbeat interval unless configured).
    public static let defaultPingInterval: Duration = .seconds(30)

    /// The engine underneath.
    public let engine: TelemetryInstrument
    /// The instrument's id (the prefix of its stream ids).
    public let instrumentId: String
    /// Conformance log, logger and quiet mode.
    public let options: AnalyticsAdapterOptions<OpenAVTRule>
    /// The conformance record (nil: conformance mode off).
    public var conformance: ConformanceLog<OpenAVTRule>? { options.conformance }

    private let clock: any PlayoutClock
    private let logger: Logger
    private let shared: LockedValue<Shared>

    private struct Tracker {
        var engine: TelemetryTracker
        var state: OpenAVTPlaybackState
        var getters: [String: @Sendable () -> TelemetryValue?] = [:]
        var pingProvider: (@Sendable () -> [TelemetryField])?
    }

    private struct Shared {
        var hub: any OpenAVTHub
        var metricalc: any OpenAVTMetricalc
        var backend: any TelemetryBackend
        var trackers: [Int: Tracker] = [:]
        var nextTrackerId = 0
        var ready = false
        var rejected = 0
    }

    /// An engine configuration with OpenAVT's ping interval (30 s) as the heartbeat interval.
    public static func engineConfiguration(pingInterval: Duration = defaultPingInterval) -> TelemetryInstrument.Configuration {
        .init(hub: .init(heartbeatInterval: pingInterval))
    }

    /// An instrument with `hub`, `metricalc` and `backend` on `engine` — the one engine every
    /// adapter shares (its heartbeat interval is the ping interval: ``engineConfiguration(pingInterval:)``);
    /// `backend` is added to it.
    ///
    /// - Throws: ``TelemetryEngineError`` when `engine` is shutting down or the backend's thread
    ///   cannot start.
    public init(
        engine: TelemetryInstrument, hub: some OpenAVTHub = OpenAVTHubCore(), metricalc: some OpenAVTMetricalc = OpenAVTMetricalcCore(),
        backend: any TelemetryBackend, instrumentId: String? = nil, options: AnalyticsAdapterOptions<OpenAVTRule> = .init()
    ) throws(TelemetryEngineError) {
        try engine.addBackend(backend)
        self.engine = engine
        let clock = engine.clock
        var random = SystemRandomNumberGenerator()
        self.instrumentId = instrumentId ?? String(random.next() as UInt64, radix: 16)
        self.options = options
        self.clock = clock
        logger = options.logger ?? Logger(label: "playout.analytics.openavt")
        shared = LockedValue(Shared(hub: hub, metricalc: metricalc, backend: backend))
    }

    // MARK: - Components

    /// Adds a tracker (a player); returns its id.
    @discardableResult
    public func addTracker(name: String = "tracker") -> Int {
        shared.withLock { shared in
            let id = shared.nextTrackerId
            shared.nextTrackerId += 1
            let tracker = engine.makeTracker(name: name)
            shared.trackers[id] = Tracker(engine: tracker, state: OpenAVTPlaybackState(trackerId: id, streamIdPrefix: "\(instrumentId)-\(id)"))
            if shared.ready, !options.quiet { tracker.ready() }
            return id
        }
    }

    /// Removes tracker `trackerId`: its view ends (`viewend`). False when there is no such
    /// tracker (a ``OpenAVTRule/knownTracker`` finding).
    @discardableResult
    public func removeTracker(_ trackerId: Int) -> Bool {
        let removed = shared.withLock { $0.trackers.removeValue(forKey: trackerId) }
        guard let removed else {
            report(.knownTracker, call: "removeTracker", "no tracker \(trackerId)")
            return false
        }
        if !options.quiet { removed.engine.endOfService() }
        return true
    }

    /// Replaces the hub; the replaced one gets `endOfService`. Trackers keep their state.
    public func setHub(_ hub: some OpenAVTHub) {
        shared.withLock { shared in
            shared.hub.endOfService()
            shared.hub = hub
            if shared.ready { shared.hub.instrumentReady() }
        }
    }

    /// Replaces the metric calculator; the replaced one gets `endOfService`.
    public func setMetricalc(_ metricalc: some OpenAVTMetricalc) {
        shared.withLock { shared in
            shared.metricalc.endOfService()
            shared.metricalc = metricalc
            if shared.ready { shared.metricalc.instrumentReady() }
        }
    }

    /// Replaces the backend: what was emitted before the call goes to the replaced one (waiting
    /// up to `timeout` for the engine to build and deliver it), which is then closed (its
    /// `endOfService`); everything after goes to the new one. Returns the replaced backend's
    /// final statistics. A configuration call: it waits for the delivery, unlike `emit`.
    ///
    /// - Throws: ``TelemetryEngineError`` after shutdown.
    @discardableResult
    public func setBackend(_ backend: any TelemetryBackend, timeout: Duration = .seconds(5)) throws(TelemetryEngineError) -> TelemetryBackendStatistics? {
        engine.flush(timeout: timeout)
        let old = shared.withLock { shared in
            defer { shared.backend = backend }
            return shared.backend
        }
        return try engine.replaceBackend(named: old.name, with: backend, timeout: timeout)
    }

    /// Tells the chain everything is ready: the hub and metric calculator get `instrumentReady`,
    /// every tracker's view begins (`viewinit`).
    public func ready() {
        shared.withLock { shared in
            guard !shared.ready else { return }
            shared.ready = true
            shared.hub.instrumentReady()
            shared.metricalc.instrumentReady()
            for id in shared.trackers.keys.sorted() where !options.quiet { shared.trackers[id]!.engine.ready() }
        }
    }

    // MARK: - Emitting

    /// Emits `action` from tracker `trackerId`: through the hub and the metric calculator to
    /// the engine. Never blocks.
    public func emit(action: OpenAVTAction, trackerId: Int) {
        process(OpenAVTEvent(action: action, trackerId: trackerId, time: clock.now))
    }

    /// Emits an `Error` action with its context (`fatal` puts the session in the error state
    /// until the next `StreamLoad`).
    public func emit(error: TelemetryError, trackerId: Int) {
        process(OpenAVTEvent(action: .error, trackerId: trackerId, time: clock.now, error: error))
    }

    /// Registers `getter` for attribute `attribute` of tracker `trackerId`: its value is added to
    /// each of the tracker's records that `filter` lets through (by record name: `play` for
    /// `StreamLoad`, `playing` for `Start` — see the README's table), called on the engine's
    /// thread. `bitrate`, `width` and `height` also make a quality change's rendition.
    public func registerGetter(
        attribute: String, trackerId: Int, filter: TelemetryEventFilter = .all, getter: @escaping @Sendable () -> TelemetryValue?
    ) {
        let tracker = shared.withLock { shared -> TelemetryTracker? in
            shared.trackers[trackerId]?.getters[attribute] = getter
            return shared.trackers[trackerId]?.engine
        }
        guard let tracker else { return report(.knownTracker, call: "registerGetter", "no tracker \(trackerId)") }
        tracker.removeAttribute(attribute)
        tracker.addAttribute(attribute, filter: filter, getter)
    }

    /// Removes the getter of `attribute` from tracker `trackerId`.
    public func unregisterGetter(attribute: String, trackerId: Int) {
        let tracker = shared.withLock { shared -> TelemetryTracker? in
            shared.trackers[trackerId]?.getters[attribute] = nil
            return shared.trackers[trackerId]?.engine
        }
        tracker?.removeAttribute(attribute)
    }

    /// Sets the provider of tracker `trackerId`'s ping fields (each `heartbeat`, periodic or a
    /// `Ping` action): a player's QoS.
    public func setPingProvider(trackerId: Int, _ provider: (@Sendable () -> [TelemetryField])?) {
        let tracker = shared.withLock { shared -> TelemetryTracker? in
            shared.trackers[trackerId]?.pingProvider = provider
            return shared.trackers[trackerId]?.engine
        }
        tracker?.setHeartbeatProvider(provider)
    }

    // MARK: - Reading and shutdown

    /// Actions the hub rejected so far.
    public var rejectedActions: Int { shared.withLock { $0.rejected } }

    /// Tracker `trackerId`'s playback state (nil: no such tracker).
    public func playbackState(trackerId: Int) -> OpenAVTPlaybackState? { shared.withLock { $0.trackers[trackerId]?.state } }

    /// Ends every view, drains the backend (up to `timeout`), and reports what could not be
    /// delivered; the hub and metric calculator get `endOfService`.
    @discardableResult
    public func shutdown(timeout: Duration) -> TelemetryShutdownReport {
        let report = engine.shutdown(timeout: timeout)
        shared.withLock { shared in
            shared.hub.endOfService()
            shared.metricalc.endOfService()
        }
        return report
    }

    // MARK: - The chain

    private func process(_ event: OpenAVTEvent) {
        let call = "emit(\(event.action))"
        // What the player supplies (getters, the ping provider) is read before locking: user code
        // never runs under the instrument's lock.
        let supplied = shared.withLock { shared in
            shared.trackers[event.trackerId].map { ($0.getters, $0.pingProvider) }
        }
        guard let (getters, pingProvider) = supplied else {
            return report(.knownTracker, call: call, "no tracker \(event.trackerId)", at: event.time)
        }
        let changesQuality = event.action == .qualityChangeUp || event.action == .qualityChangeDown
        let rendition = changesQuality ? [getters["bitrate"]?(), getters["width"]?(), getters["height"]?()] : []
        let ping = event.action == .ping ? pingProvider?() ?? [] : []
        let rejection = shared.withLock { shared -> (OpenAVTRule, String)? in
            conformance?.record(RecordedCall(name: "emit", arguments: [event.action.name, String(event.trackerId)], time: event.time))
            if !shared.ready {
                conformance?.report(ConformanceFinding(rule: .readyBeforeEmit, call: call, detail: "\(event.action) before ready()", time: event.time))
            }
            guard var tracker = shared.trackers[event.trackerId] else { return (.knownTracker, "tracker \(event.trackerId) was removed") }
            let previous = tracker.state
            switch shared.hub.processEvent(event, state: &tracker.state) {
            case .reject(let rule, let reason):
                shared.rejected += 1
                shared.trackers[event.trackerId]!.state = tracker.state
                return (rule, reason)
            case .accept(let accepted):
                let metrics = shared.metricalc.processMetric(accepted, state: tracker.state)
                tracker.state.lastTimes[accepted.action.name] = accepted.time
                shared.trackers[event.trackerId] = tracker
                // Emitting only copies into the engine's ring; under the lock, so that events of
                // calls from several threads keep the order they were decided in.
                for telemetry in Self.events(for: accepted, previous: previous, state: tracker.state, rendition: rendition, ping: ping) {
                    if !options.quiet { tracker.engine.emit(telemetry, at: accepted.time) }
                }
                for metric in metrics where !options.quiet { tracker.engine.emit(.metric(metric.name, metric.value), at: accepted.time) }
                return nil
            }
        }
        if let (rule, reason) = rejection {
            if rule == .knownTracker {
                report(rule, call: call, reason, at: event.time)
            } else {
                logger.notice("openavt: tracker \(event.trackerId) rejected \(reason) (\(rule.rawValue))")
                conformance?.report(ConformanceFinding(rule: rule, call: call, detail: reason, time: event.time))
            }
        }
    }

    private func report(_ rule: OpenAVTRule, call: String, _ detail: String, at time: MonotonicInstant? = nil) {
        logger.notice("openavt: \(call): \(detail) (\(rule.rawValue))")
        conformance?.report(ConformanceFinding(rule: rule, call: call, detail: detail, time: time ?? clock.now))
    }

    /// The engine events of an accepted action (the README's table).
    static func events(
        for event: OpenAVTEvent, previous: OpenAVTPlaybackState, state: OpenAVTPlaybackState, rendition: [TelemetryValue?], ping: [TelemetryField]
    ) -> [TelemetryEvent] {
        switch event.action {
        case .playerReady: return [.playerReady]
        case .streamLoad:
            var events: [TelemetryEvent] = []
            if state.playbackCount > 1, let streamId = state.streamId { events.append(.videoChange(videoId: streamId)) }
            if let streamId = state.streamId { events.append(.attribute("streamId", .string(streamId))) }
            return events + [.play]
        case .start: return [.playing]
        case .bufferBegin: return [.rebufferStart(.network)]
        case .bufferFinish: return [.rebufferEnd]
        case .pauseBegin: return [.pause]
        case .pauseFinish: return [.playing]
        case .seekBegin: return [.seeking]
        case .seekFinish: return [.seeked]
        case .qualityChangeUp, .qualityChangeDown:
            guard rendition.count == 3, let bitrate = rendition[0]?.number, let width = rendition[1]?.number, let height = rendition[2]?.number else {
                return [.action(event.action.name, event.attributes)]
            }
            return [.renditionChange(bitrate: Int64(bitrate), width: Int32(clamping: Int64(width)), height: Int32(clamping: Int64(height)))]
        case .end, .stop, .next: return [.ended]
        case .error: return [.error(event.error ?? TelemetryError(severity: .warning, code: 0, message: "Error"))]
        case .ping: return [.heartbeat(ping)]
        default: return [.action(event.action.name, event.attributes)]
        }
    }
}
