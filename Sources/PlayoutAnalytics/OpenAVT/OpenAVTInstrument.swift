import Logging
import PlayoutCore
public import PlayoutTelemetry

/// OpenAVT's instrument (`OAVTInstrument`, the OpenAVT-iOS guide `seeds/001`) over the telemetry
/// engine: trackers emit actions, the chain — the tracker's `initEvent`, the hub, the metric
/// calculator — turns each into an ``OpenAVTEvent`` and ``OpenAVTMetric``s with OpenAVT's names
/// and units, and the OpenAVT backend receives them; the engine underneath records the same story
/// in Playout's vocabulary (its sessions, KPIs and backends).
///
/// | OpenAVT | here |
/// |---|---|
/// | instrument | this, on the ``TelemetryInstrument`` it is given (``engine``), shared with every other adapter: no second engine |
/// | tracker (`addTracker(tracker)` → id) | any ``OpenAVTTracker`` (``addTracker(_:)``), or an ``OpenAVTBasicTracker`` (``addTracker(name:)``); each has its own engine sessions |
/// | hub, metricalc | an ``OpenAVTHub`` (default ``OpenAVTHubCore``), an ``OpenAVTMetricalc`` (default ``OpenAVTMetricalcCore``; nil: no metrics) |
/// | backend | an ``OpenAVTBackend`` (``OpenAVTNewRelicBackend``, your own), called with each event and metric; or an engine backend (``TelemetryBackend``) |
/// | event attributes | `senderId`, `timeSince<Action>` (integer ms since that action's last event passed the chain), the getters', the hub's |
/// | `registerGetter(attribute:getter:tracker:filter:)` | the same: the filter sees the OpenAVT event (`event.getAction() == .ping`) |
/// | Ping every 30 s while playing | the engine's heartbeat: each one is a `Ping` through the chain, and a `heartbeat` record with the ping provider's fields |
///
/// Engine records: `StreamLoad` → `play` (a later playback: `videochange` first), `Start` →
/// `playing`, `PauseBegin`/`PauseFinish` → `pause`/`playing`, `BufferBegin`/`BufferFinish` →
/// `rebufferstart`/`rebufferend`, `SeekBegin`/`SeekFinish` → `seeking`/`seeked`, a quality
/// change with `bitrate`, `resolutionWidth` and `resolutionHeight` → `renditionchange`,
/// `End`/`Stop`/`Next` → `ended`, `Error` → `error`, `Ping` → `heartbeat`, `PlayerReady` →
/// `playerready`; any other action → an action record of its name with the event's attributes
/// (but its `timeSince…`: the engine adds its own, in seconds); metrics → metric records.
///
/// `emit` never waits for a backend: it decides under a short lock (the tracker's `initEvent`,
/// the hub and the metric calculator run there, in order) and copies the engine's events into its
/// ring. Getters and the ping provider are called outside the lock, the OpenAVT backend after it.
/// A refused action is counted (``rejectedActions``), logged and — with a ``ConformanceLog`` —
/// reported as a finding naming the ``OpenAVTRule`` and the guide's section.
///
/// ```swift
/// let newRelic = OpenAVTNewRelicBackend()
/// let engine = try TelemetryInstrument(configuration: OpenAVTInstrument.engineConfiguration())
/// let instrument = OpenAVTInstrument(engine: engine, hub: OpenAVTHubCore(), metricalc: OpenAVTMetricalcCore(), backend: newRelic)
/// let trackerId = instrument.addTracker(tracker)
/// instrument.ready()
/// instrument.emit(action: .streamLoad, trackerId: trackerId)
/// instrument.emit(action: .start, trackerId: trackerId)
/// instrument.emit(action: .end, trackerId: trackerId)
/// instrument.shutdown(timeout: .seconds(2))
/// print(newRelic.collector.eventsJSON())   // [{"eventType":"OAVT","actionName":"StreamLoad",…}, …]
/// ```
public final class OpenAVTInstrument: Sendable {
    /// OpenAVT's ping interval: 30 s (the engine's heartbeat interval unless configured).
    public static let defaultPingInterval: Duration = .seconds(30)
    /// Events and metrics waiting for a slow OpenAVT backend before the oldest are dropped
    /// (counted in ``droppedBackendItems``).
    public static let backendQueueCapacity = 4_096
    /// Time-since attributes a tracker's events carry at most: past this many distinct actions,
    /// the one seen longest ago is forgotten (hostile input cannot grow every event).
    public static let maximumTimeSinceAttributes = 64
    /// Distinct names checked against the naming conventions; past this many, names are no
    /// longer checked (hostile input cannot grow the set).
    static let maximumNamesChecked = 1_024

    /// The engine underneath.
    public let engine: TelemetryInstrument
    /// The instrument's id (the prefix of its `senderId`s and stream ids).
    public let instrumentId: String
    /// Conformance log, logger and quiet mode.
    public let options: AnalyticsAdapterOptions<OpenAVTRule>
    /// The conformance record (nil: conformance mode off).
    public var conformance: ConformanceLog<OpenAVTRule>? { options.conformance }

    private let clock: any PlayoutClock
    private let logger: Logger
    private let shared: LockedValue<Shared>
    private let getters = LockedValue([Int: [Getter]]())
    private let delivery = LockedValue(Delivery())

    /// An attribute getter: its value, and which events it applies to.
    private struct Getter {
        var attribute: OpenAVTAttribute
        var value: () -> TelemetryValue?
        var filter: (OpenAVTEvent, OpenAVTAttribute) -> Bool
    }

    private struct Entry {
        var tracker: any OpenAVTTracker
        var engine: TelemetryTracker
        /// `ready()` was called since it was added.
        var ready = false
        /// Its engine view has begun.
        var begun = false
        /// When each time attribute's action last passed the chain.
        var timeSince: [(attribute: OpenAVTAttribute, time: MonotonicInstant)] = []
        var pingProvider: (@Sendable () -> [TelemetryField])?
        var streamId: String?
    }

    private struct Shared {
        var hub: any OpenAVTHub
        var metricalc: (any OpenAVTMetricalc)?
        var backend: (any OpenAVTBackend)?
        var engineBackend: (any TelemetryBackend)?
        var trackers: [Int: Entry] = [:]
        var nextTrackerId = 0
        var everReady = false
        /// The change made since the last `ready()` (nil: none).
        var change: String?
        var rejected = 0
        var checkedNames: Set<String> = []
    }

    private enum Item {
        case event(OpenAVTEvent)
        case metric(OpenAVTMetric)
    }

    private struct Delivery {
        var pending: [(backend: any OpenAVTBackend, item: Item)] = []
        var delivering = false
        var dropped = 0
    }

    /// An engine configuration with OpenAVT's ping interval (30 s) as the heartbeat interval.
    public static func engineConfiguration(pingInterval: Duration = defaultPingInterval) -> TelemetryInstrument.Configuration {
        .init(hub: .init(heartbeatInterval: pingInterval))
    }

    /// An instrument with `hub`, `metricalc` (nil: no metrics) and the OpenAVT `backend` (nil:
    /// none; the engine's own backends still receive its records) on `engine` — the one engine
    /// every adapter shares (its heartbeat interval is the ping interval:
    /// ``engineConfiguration(pingInterval:)``). The guide's `OAVTInstrument(hub:metricalc:backend:)`.
    public init(
        engine: TelemetryInstrument, hub: some OpenAVTHub = OpenAVTHubCore(), metricalc: (any OpenAVTMetricalc)? = OpenAVTMetricalcCore(),
        backend: (any OpenAVTBackend)? = nil, instrumentId: String? = nil, options: AnalyticsAdapterOptions<OpenAVTRule> = .init()
    ) {
        self.engine = engine
        clock = engine.clock
        var random = SystemRandomNumberGenerator()
        self.instrumentId = instrumentId ?? String(random.next() as UInt64, radix: 16)
        self.options = options
        logger = options.logger ?? Logger(label: "playout.analytics.openavt")
        shared = LockedValue(Shared(hub: hub, metricalc: metricalc, backend: backend))
    }

    /// An instrument whose backend is an engine backend: `backend` is added to `engine`, and
    /// receives the engine's records of every tracker of the engine (there is no OpenAVT backend).
    ///
    /// - Throws: ``TelemetryEngineError`` when `engine` is shutting down or the backend's thread
    ///   cannot start.
    public convenience init(
        engine: TelemetryInstrument, hub: some OpenAVTHub = OpenAVTHubCore(), metricalc: (any OpenAVTMetricalc)? = OpenAVTMetricalcCore(),
        backend: any TelemetryBackend, instrumentId: String? = nil, options: AnalyticsAdapterOptions<OpenAVTRule> = .init()
    ) throws(TelemetryEngineError) {
        try engine.addBackend(backend)
        self.init(engine: engine, hub: hub, metricalc: metricalc, backend: nil as (any OpenAVTBackend)?, instrumentId: instrumentId, options: options)
        shared.withLock { $0.engineBackend = backend }
    }

    // MARK: - Components

    /// Adds `tracker`, sets its `trackerId` and returns it. Call ``ready()`` after adding.
    @discardableResult
    public func addTracker(_ tracker: some OpenAVTTracker) -> Int {
        add(tracker, name: String(describing: type(of: tracker)))
    }

    /// Adds an ``OpenAVTBasicTracker`` called `name` (for code that emits by tracker id) and
    /// returns its id. Call ``ready()`` after adding.
    @discardableResult
    public func addTracker(name: String = "tracker") -> Int {
        add(OpenAVTBasicTracker(name: name), name: name)
    }

    private func add(_ tracker: any OpenAVTTracker, name: String) -> Int {
        let engineTracker = engine.makeTracker(name: name)
        let id = shared.withLock { shared in
            let id = shared.nextTrackerId
            shared.nextTrackerId += 1
            tracker.trackerId = id
            shared.trackers[id] = Entry(tracker: tracker, engine: engineTracker)
            if shared.everReady { shared.change = "addTracker" }
            return id
        }
        // Each of the engine's heartbeats is a Ping through the chain; its record carries the
        // ping provider's fields.
        engineTracker.setHeartbeatProvider { [weak self] in self?.process(.ping, trackerId: id, enginePing: true) ?? [] }
        return id
    }

    /// Tracker `trackerId` (nil: no such tracker).
    public func getTracker(_ trackerId: Int) -> (any OpenAVTTracker)? { shared.withLock { $0.trackers[trackerId]?.tracker } }

    /// Removes tracker `trackerId`: it gets `endOfService`, its getters go, its view ends
    /// (`viewend`). False when there is no such tracker (a ``OpenAVTRule/knownTracker`` finding).
    @discardableResult
    public func removeTracker(_ trackerId: Int) -> Bool {
        guard let removed = shared.withLock({ $0.trackers.removeValue(forKey: trackerId) }) else {
            report([finding(.knownTracker, call: "removeTracker", "no tracker \(trackerId)")])
            return false
        }
        _ = getters.withLock { $0.removeValue(forKey: trackerId) }
        removed.tracker.endOfService()
        if !options.quiet { removed.engine.endOfService() }
        return true
    }

    /// Sets the hub; the replaced one gets `endOfService`. Call ``ready()`` after.
    public func setHub(_ hub: some OpenAVTHub) {
        shared.withLock { shared in
            shared.hub.endOfService()
            shared.hub = hub
            if shared.everReady { shared.change = "setHub" }
        }
    }

    /// Sets the metric calculator (nil: none); the replaced one gets `endOfService`. Call
    /// ``ready()`` after.
    public func setMetricalc(_ metricalc: (any OpenAVTMetricalc)?) {
        shared.withLock { shared in
            shared.metricalc?.endOfService()
            shared.metricalc = metricalc
            if shared.everReady { shared.change = "setMetricalc" }
        }
    }

    /// Sets the OpenAVT backend: what was decided before the call goes to the replaced one, which
    /// then gets `endOfService`; everything after goes to `backend`. Call ``ready()`` after.
    public func setBackend(_ backend: any OpenAVTBackend) {
        let old = shared.withLock { shared in
            defer {
                shared.backend = backend
                if shared.everReady { shared.change = "setBackend" }
            }
            return shared.backend
        }
        drain()
        old?.endOfService()
    }

    /// Replaces the engine backend: what was emitted before the call goes to the replaced one
    /// (waiting up to `timeout` for the engine to build and deliver it), which is then closed;
    /// everything after goes to the new one. Returns the replaced backend's final statistics (nil
    /// when there was none: `backend` is added). A configuration call: it waits for the delivery,
    /// unlike `emit`.
    ///
    /// - Throws: ``TelemetryEngineError`` after shutdown.
    @discardableResult
    public func setBackend(_ backend: any TelemetryBackend, timeout: Duration = .seconds(5)) throws(TelemetryEngineError) -> TelemetryBackendStatistics? {
        engine.flush(timeout: timeout)
        let old = shared.withLock { shared in
            defer {
                shared.engineBackend = backend
                if shared.everReady { shared.change = "setBackend" }
            }
            return shared.engineBackend
        }
        guard let old else {
            try engine.addBackend(backend)
            return nil
        }
        return try engine.replaceBackend(named: old.name, with: backend, timeout: timeout)
    }

    /// Tells the chain everything is ready: the backend, the metric calculator, the hub and every
    /// tracker get `instrumentReady` (each time it is called, as in OpenAVT), and a tracker's view
    /// begins (`viewinit`) the first time. Call it after setting up, and again after any change.
    public func ready() {
        let backend = shared.withLock { $0.backend }
        backend?.instrumentReady(instrument: self)
        let trackers = shared.withLock { shared -> [any OpenAVTTracker] in
            shared.everReady = true
            shared.change = nil
            shared.metricalc?.instrumentReady(instrument: self)
            shared.hub.instrumentReady(instrument: self)
            return shared.trackers.keys.sorted().map { id in
                shared.trackers[id]!.ready = true
                if !shared.trackers[id]!.begun, !options.quiet {
                    shared.trackers[id]!.begun = true
                    shared.trackers[id]!.engine.ready()
                }
                return shared.trackers[id]!.tracker
            }
        }
        // Outside the lock: a tracker may emit from it (the guide's TrackerInit).
        for tracker in trackers { tracker.instrumentReady(instrument: self) }
    }

    // MARK: - Emitting

    /// Emits `action` from tracker `trackerId`: through the tracker's `initEvent`, the hub and the
    /// metric calculator to the backend and the engine. Never blocks on a backend.
    public func emit(action: OpenAVTAction, trackerId: Int) {
        process(action, trackerId: trackerId)
    }

    /// Emits `action` from `tracker` (added with ``addTracker(_:)``).
    public func emit(action: OpenAVTAction, tracker: any OpenAVTTracker) {
        let id = tracker.trackerId
        let known = id.map { id in shared.withLock { $0.trackers[id]?.tracker === tracker } } ?? false
        guard let id, known else {
            return report([finding(.knownTracker, call: "emit(\(action))", "the tracker was not added (or was removed)")])
        }
        process(action, trackerId: id)
    }

    /// Emits an `Error` action with its context (`errorDescription` is its message; a fatal one
    /// puts the engine session in the error state until the next `StreamLoad`).
    public func emit(error: TelemetryError, trackerId: Int) {
        process(.error, trackerId: trackerId, error: error)
    }

    /// Registers `getter` for `attribute` on `tracker`'s events that `filter` lets through (by
    /// default all): each event emitted for the tracker gets the value (none when nil). Called on
    /// the emitting thread (the engine's for periodic pings), outside the instrument's lock.
    ///
    /// ```swift
    /// instrument.registerGetter(attribute: .position, getter: self.getPosition, tracker: self, filter: { event, _ in
    ///     return event.getAction() == .ping
    /// })
    /// ```
    public func registerGetter<Value: OpenAVTAttributeValue>(
        attribute: OpenAVTAttribute, getter: @escaping () -> Value?, tracker: any OpenAVTTracker,
        filter: @escaping (OpenAVTEvent, OpenAVTAttribute) -> Bool = { _, _ in true }
    ) {
        guard let id = tracker.trackerId else {
            return report([finding(.knownTracker, call: "registerGetter(\(attribute))", "the tracker was not added")])
        }
        registerGetter(attribute: attribute, getter: getter, trackerId: id, filter: filter)
    }

    /// ``registerGetter(attribute:getter:tracker:filter:)`` by tracker id.
    public func registerGetter<Value: OpenAVTAttributeValue>(
        attribute: OpenAVTAttribute, getter: @escaping () -> Value?, trackerId: Int,
        filter: @escaping (OpenAVTEvent, OpenAVTAttribute) -> Bool = { _, _ in true }
    ) {
        let call = "registerGetter(\(attribute))"
        let findings = shared.withLock { shared -> [OpenAVTFinding] in
            guard shared.trackers[trackerId] != nil else { return [finding(.knownTracker, call: call, "no tracker \(trackerId)")] }
            return [checkName(.attributeNameCase, attribute.name, call: call, in: &shared)].compactMap { $0 }
        }
        report(findings)
        guard findings.allSatisfy({ $0.rule != .knownTracker }) else { return }
        getters.withLock { getters in
            getters[trackerId, default: []].removeAll { $0.attribute == attribute }
            getters[trackerId, default: []].append(Getter(attribute: attribute, value: { getter()?.telemetryValue }, filter: filter))
        }
    }

    /// Removes `tracker`'s getter of `attribute`.
    public func unregisterGetter(attribute: OpenAVTAttribute, tracker: any OpenAVTTracker) {
        if let id = tracker.trackerId { unregisterGetter(attribute: attribute, trackerId: id) }
    }

    /// Removes tracker `trackerId`'s getter of `attribute`.
    public func unregisterGetter(attribute: OpenAVTAttribute, trackerId: Int) {
        getters.withLock { $0[trackerId]?.removeAll { $0.attribute == attribute } }
    }

    /// The value of `tracker`'s getter of `attribute` (nil: no getter, or it returned nil) — a hub
    /// may call it.
    public func callGetter(attribute: OpenAVTAttribute, tracker: any OpenAVTTracker) -> TelemetryValue? {
        guard let id = tracker.trackerId else { return nil }
        return callGetter(attribute: attribute, trackerId: id)
    }

    /// ``callGetter(attribute:tracker:)`` by tracker id.
    public func callGetter(attribute: OpenAVTAttribute, trackerId: Int) -> TelemetryValue? {
        let getter = getters.withLock { $0[trackerId]?.first { $0.attribute == attribute } }
        return getter?.value()
    }

    /// Sets the provider of tracker `trackerId`'s ping fields — the engine `heartbeat` record of
    /// each ping (periodic, or a `Ping` action): a player's QoS.
    public func setPingProvider(trackerId: Int, _ provider: (@Sendable () -> [TelemetryField])?) {
        shared.withLock { $0.trackers[trackerId]?.pingProvider = provider }
    }

    // MARK: - Reading and shutdown

    /// Actions refused so far: stopped by a tracker's `initEvent`, or rejected or blocked by the
    /// hub.
    public var rejectedActions: Int { shared.withLock { $0.rejected } }

    /// Events and metrics dropped because the OpenAVT backend fell behind by more than
    /// ``backendQueueCapacity``.
    public var droppedBackendItems: Int { delivery.withLock { $0.dropped } }

    /// Ends the service: every tracker gets `endOfService`, then every view ends and the engine
    /// drains its backends (up to `timeout`), then the hub, the metric calculator and the backend
    /// get `endOfService`. Returns what the engine could not deliver.
    @discardableResult
    public func shutdown(timeout: Duration) -> TelemetryShutdownReport {
        for tracker in shared.withLock({ shared in shared.trackers.keys.sorted().map { shared.trackers[$0]!.tracker } }) {
            tracker.endOfService()
        }
        let report = engine.shutdown(timeout: timeout)
        let backend = shared.withLock { shared in
            shared.hub.endOfService()
            shared.metricalc?.endOfService()
            return shared.backend
        }
        drain()
        backend?.endOfService()
        return report
    }

    // MARK: - The chain

    private enum Outcome {
        case gone
        case refused(OpenAVTRule?, String, [OpenAVTFinding])
        case accepted([OpenAVTFinding])
    }

    /// Runs `action` of tracker `trackerId` through the chain; returns the ping provider's fields
    /// (for the engine's heartbeat record when `enginePing`).
    @discardableResult
    private func process(_ action: OpenAVTAction, trackerId: Int, error: TelemetryError? = nil, enginePing: Bool = false) -> [TelemetryField] {
        let time = clock.now
        let call = "emit(\(action.name.prefix(64)))"
        // 1. The event: senderId and the time-since attributes, under the lock.
        let made = shared.withLock { shared -> (event: OpenAVTEvent, ping: (@Sendable () -> [TelemetryField])?, findings: [OpenAVTFinding])? in
            if !enginePing { conformance?.record(RecordedCall(name: "emit", arguments: [action.name, String(trackerId)], time: time)) }
            guard let entry = shared.trackers[trackerId] else { return nil }
            var findings: [OpenAVTFinding] = []
            if !enginePing {
                if !shared.everReady {
                    findings.append(finding(.readyBeforeEmit, call: call, "\(action) before ready()", at: time))
                } else if !entry.ready || shared.change != nil {
                    findings.append(finding(.readyAfterChange, call: call, "\(action) after \(shared.change ?? "addTracker") without ready()", at: time))
                }
                if let misnamed = checkName(.actionNameCase, action.name, call: call, at: time, in: &shared) { findings.append(misnamed) }
            }
            var event = OpenAVTEvent(action: action, trackerId: trackerId, time: time, error: error)
            event.setAttribute(key: .senderId, value: "\(instrumentId)-\(trackerId)")
            // Distinct names (one per time attribute): appended, no lookup.
            event.attributes += entry.timeSince.map { TelemetryField($0.attribute.name, .int($0.time.duration(to: time).milliseconds)) }
            if let error { event.setAttribute(key: .errorDescription, value: error.message) }
            return (event, entry.pingProvider, findings)
        }
        guard let made else {
            report([finding(.knownTracker, call: call, "no tracker \(trackerId)", at: time)])
            return []
        }
        var (event, findings) = (made.event, made.findings)
        // 2. The getters and the ping provider: user code, outside the lock.
        for getter in getters.withLock({ $0[trackerId] ?? [] }) where getter.filter(event, getter.attribute) {
            if let value = getter.value() { event.setAttribute(key: getter.attribute, value: value) }
        }
        let ping = action == .ping ? made.ping?() ?? [] : []
        // 3. The chain, in the order its decisions are made.
        let outcome = shared.withLock { shared -> Outcome in
            guard var entry = shared.trackers[trackerId] else { return .gone }
            guard let initialized = entry.tracker.initEvent(event: event) else {
                shared.rejected += 1
                return .refused(nil, "\(action) stopped by the tracker's initEvent", findings)
            }
            let accepted: OpenAVTEvent
            switch shared.hub.decide(event: initialized, tracker: entry.tracker) {
            case .reject(let rule, let reason):
                shared.rejected += 1
                return .refused(rule, reason, findings + [finding(rule, call: call, reason, at: time)])
            case .block(let reason):
                shared.rejected += 1
                return .refused(nil, reason, findings)
            case .accept(let event):
                accepted = event
            }
            let metrics = shared.metricalc?.processMetric(event: accepted, tracker: entry.tracker) ?? []
            let timeKeys = Set(entry.timeSince.map(\.attribute.name))
            for attribute in accepted.attributes where !timeKeys.contains(attribute.name) && attribute.name != accepted.action.timeAttribute.name {
                if let misnamed = checkName(.attributeNameCase, attribute.name, call: call, at: time, in: &shared) { findings.append(misnamed) }
            }
            for metric in metrics {
                if let misnamed = checkName(.metricNameCase, metric.name, call: call, at: time, in: &shared) { findings.append(misnamed) }
            }
            let timeAttribute = accepted.action.timeAttribute
            if let index = entry.timeSince.firstIndex(where: { $0.attribute == timeAttribute }) {
                entry.timeSince[index].time = accepted.time
            } else {
                if entry.timeSince.count == Self.maximumTimeSinceAttributes, let stalest = entry.timeSince.indices.min(by: { entry.timeSince[$0].time < entry.timeSince[$1].time }) {
                    entry.timeSince.remove(at: stalest)
                }
                entry.timeSince.append((timeAttribute, accepted.time))
            }
            let previousStream = entry.streamId
            if accepted.action == .streamLoad, case .string(let streamId)? = accepted.getAttribute(key: .streamId) { entry.streamId = streamId }
            entry.begun = entry.begun || !options.quiet  // the engine begins the view with its first event
            shared.trackers[trackerId] = entry
            guard !options.quiet else { return .accepted(findings) }
            // Emitting only copies into the engine's ring; under the lock, so that the events of
            // calls from several threads keep the order they were decided in.
            for telemetry in Self.engineEvents(for: accepted, previousStream: previousStream, timeKeys: timeKeys, ping: ping)
            where !(enginePing && telemetry.name == "heartbeat") {
                entry.engine.emit(telemetry, at: accepted.time)
            }
            for metric in metrics { entry.engine.emit(.metric(metric.name, metric.value), at: accepted.time) }
            if let backend = shared.backend {
                enqueue(metrics.map { (backend: backend, item: Item.metric($0)) } + [(backend: backend, item: Item.event(accepted))])
            }
            return .accepted(findings)
        }
        switch outcome {
        case .gone:
            report(findings + [finding(.knownTracker, call: call, "tracker \(trackerId) was removed", at: time)])
        case .refused(let rule, let reason, let findings):
            logger.notice("openavt: tracker \(trackerId) refused \(reason)\(rule.map { " (\($0.rawValue))" } ?? "")")
            report(findings)
        case .accepted(let findings):
            report(findings)
            drain()
        }
        return ping
    }

    /// The engine events of an accepted event (the type's table).
    static func engineEvents(for event: OpenAVTEvent, previousStream: String?, timeKeys: Set<String>, ping: [TelemetryField]) -> [TelemetryEvent] {
        switch event.action {
        case .playerReady: return [.playerReady]
        case .streamLoad:
            guard case .string(let streamId)? = event.getAttribute(key: .streamId) else { return [.play] }
            let change: [TelemetryEvent] = previousStream != nil && previousStream != streamId ? [.videoChange(videoId: streamId)] : []
            return change + [.attribute("streamId", .string(streamId)), .play]
        case .start: return [.playing]
        case .bufferBegin: return [.rebufferStart(.network)]
        case .bufferFinish: return [.rebufferEnd]
        case .pauseBegin: return [.pause]
        case .pauseFinish: return [.playing]
        case .seekBegin: return [.seeking]
        case .seekFinish: return [.seeked]
        case .qualityChangeUp, .qualityChangeDown:
            if let bitrate = event.getAttribute(key: .bitrate)?.number, let width = event.getAttribute(key: .resolutionWidth)?.number,
                let height = event.getAttribute(key: .resolutionHeight)?.number, bitrate.isFinite, width.isFinite, height.isFinite
            {
                func integer(_ value: Double) -> Int64 { Int64(max(-9.2e18, min(9.2e18, value))) }
                return [.renditionChange(bitrate: integer(bitrate), width: Int32(clamping: integer(width)), height: Int32(clamping: integer(height)))]
            }
        case .end, .stop, .next: return [.ended]
        case .error: return [.error(event.error ?? TelemetryError(severity: .warning, code: 0, message: "Error"))]
        case .ping: return [.heartbeat(ping)]
        default: break
        }
        return [.action(event.action.name, event.attributes.filter { !timeKeys.contains($0.name) })]
    }

    // MARK: - The OpenAVT backend

    /// Queues items for the backend (called under the chain's lock, so in decision order).
    private func enqueue(_ items: [(backend: any OpenAVTBackend, item: Item)]) {
        delivery.withLock { delivery in
            delivery.pending += items
            let excess = delivery.pending.count - Self.backendQueueCapacity
            if excess > 0 {
                delivery.pending.removeFirst(excess)
                delivery.dropped += excess
            }
        }
    }

    /// Hands what is queued to the backends, in order, outside every lock; one thread at a time
    /// does it (a thread that finds another at it leaves its items to that one).
    private func drain() {
        while true {
            let batch = delivery.withLock { delivery -> [(backend: any OpenAVTBackend, item: Item)]? in
                guard !delivery.delivering, !delivery.pending.isEmpty else { return nil }
                delivery.delivering = true
                defer { delivery.pending.removeAll(keepingCapacity: true) }
                return delivery.pending
            }
            guard let batch else { return }
            for (backend, item) in batch {
                switch item {
                case .event(let event): backend.sendEvent(event: event)
                case .metric(let metric): backend.sendMetric(metric: metric)
                }
            }
            delivery.withLock { $0.delivering = false }
        }
    }

    // MARK: - Findings

    private func finding(_ rule: OpenAVTRule, call: String, _ detail: String, at time: MonotonicInstant? = nil) -> OpenAVTFinding {
        ConformanceFinding(rule: rule, call: call, detail: "\(detail) (guide: \(rule.guideSection))", time: time ?? clock.now)
    }

    /// A finding when `name` breaks naming rule `rule` and was not reported before (conformance
    /// mode only; at most ``maximumNamesChecked`` names remembered).
    private func checkName(
        _ rule: OpenAVTRule, _ name: String, call: String, at time: MonotonicInstant? = nil, in shared: inout Shared
    ) -> OpenAVTFinding? {
        guard conformance != nil, shared.checkedNames.count < Self.maximumNamesChecked, rule.acceptsName(name) == false,
            shared.checkedNames.insert("\(rule.rawValue) \(name)").inserted
        else { return nil }
        let shown = name.count > 64 ? "\(name.prefix(64))…" : name
        let convention = rule == .attributeNameCase ? "lower" : "upper"
        return finding(rule, call: call, "\"\(shown)\" is not in \(convention) camel case", at: time)
    }

    private func report(_ findings: [OpenAVTFinding]) {
        for finding in findings {
            logger.notice("openavt: \(finding)")
            conformance?.report(finding)
        }
    }
}
