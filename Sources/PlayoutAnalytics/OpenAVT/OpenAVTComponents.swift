import PlayoutCore
import PlayoutTelemetry

/// A hub or a metric calculator of an OpenAVT instrument (`OAVTComponentProtocol`): told when
/// the chain is ready (every ``OpenAVTInstrument/ready()``) and when it leaves service (replaced,
/// or the instrument shut down). A value type or a final class.
///
/// The instrument runs hubs and metric calculators under its lock, so that the chain's state
/// stays in order: they must be quick and must not `emit` (`callGetter` is fine: getters have a
/// lock of their own).
public protocol OpenAVTComponent: Sendable {
    /// `ready()` was called on `instrument`.
    mutating func instrumentReady(instrument: OpenAVTInstrument)
    /// The component leaves service: replaced, or the instrument shut down.
    mutating func endOfService()
}

extension OpenAVTComponent {
    /// Nothing to do.
    public mutating func instrumentReady(instrument: OpenAVTInstrument) {}
    /// Nothing to do.
    public mutating func endOfService() {}
}

/// A tracker (`OAVTTrackerProtocol`, guide "Custom Trackers"): knows a player, emits its actions
/// through the instrument, and keeps its ``OpenAVTState``. The guide's `DummyTracker` is one as
/// written: a class with `trackerId` (set by ``OpenAVTInstrument/addTracker(_:)``), `getState()`
/// and `initEvent(event:)`, which sees every event emitted for the tracker and may change it or
/// stop it (nil).
///
/// A tracker, like OpenAVT's, is not `Sendable`: it belongs to the code that drives its player.
/// The instrument calls `initEvent` under its lock (calls are never concurrent; do not call the
/// instrument from it) and `instrumentReady` / `endOfService` without it (so emitting from them,
/// as the guide's `TrackerInit` example does, is fine).
public protocol OpenAVTTracker: AnyObject {
    /// The tracker's id, set by the instrument when the tracker is added.
    var trackerId: Int? { get set }
    /// The event of an `emit` for this tracker: return it (changed or not) or nil to stop it.
    func initEvent(event: OpenAVTEvent) -> OpenAVTEvent?
    /// The tracker's playback state (the hub reads and updates it).
    func getState() -> OpenAVTState
    /// `ready()` was called on `instrument`.
    func instrumentReady(instrument: OpenAVTInstrument)
    /// The tracker was removed, or the instrument shut down.
    func endOfService()
}

extension OpenAVTTracker {
    /// Passes the event on.
    public func initEvent(event: OpenAVTEvent) -> OpenAVTEvent? { event }
    /// Nothing to do.
    public func instrumentReady(instrument: OpenAVTInstrument) {}
    /// Nothing to do.
    public func endOfService() {}
}

/// A tracker's playback state (`OAVTState`): flags the hub reads and sets. A reference, as in
/// OpenAVT — `tracker.getState().isPaused = true` sets the tracker's flag — and thread-safe.
public final class OpenAVTState: Sendable {
    private struct Flags {
        var didMediaRequest = false, didPlayerSet = false, didStreamLoad = false, didStart = false
        var isBuffering = false, isPaused = false, isSeeking = false, didFinish = false
    }
    private let flags = LockedValue(Flags())

    /// A fresh state (every flag false).
    public init() {}

    private subscript(_ flag: WritableKeyPath<Flags, Bool>) -> Bool {
        get { flags.withLock { $0[keyPath: flag] } }
        set { flags.withLock { $0[keyPath: flag] = newValue } }
    }

    /// `MediaRequest` seen in this playback.
    public var didMediaRequest: Bool {
        get { self[\.didMediaRequest] }
        set { self[\.didMediaRequest] = newValue }
    }
    /// `PlayerSet` seen (once per tracker).
    public var didPlayerSet: Bool {
        get { self[\.didPlayerSet] }
        set { self[\.didPlayerSet] = newValue }
    }
    /// `StreamLoad` seen in this playback.
    public var didStreamLoad: Bool {
        get { self[\.didStreamLoad] }
        set { self[\.didStreamLoad] = newValue }
    }
    /// `Start` seen in this playback.
    public var didStart: Bool {
        get { self[\.didStart] }
        set { self[\.didStart] = newValue }
    }
    /// Buffering.
    public var isBuffering: Bool {
        get { self[\.isBuffering] }
        set { self[\.isBuffering] = newValue }
    }
    /// Paused.
    public var isPaused: Bool {
        get { self[\.isPaused] }
        set { self[\.isPaused] = newValue }
    }
    /// Seeking.
    public var isSeeking: Bool {
        get { self[\.isSeeking] }
        set { self[\.isSeeking] = newValue }
    }
    /// The playback finished (`End`, `Stop`, `Next`): the next action begins another.
    public var didFinish: Bool {
        get { self[\.didFinish] }
        set { self[\.didFinish] = newValue }
    }

    /// Clears every flag.
    public func reset() { flags.withLock { $0 = Flags() } }
}

/// The tracker ``OpenAVTInstrument/addTracker(name:)`` makes for code that emits by tracker id
/// (a bridge, a test): it passes every event on and keeps its state.
public final class OpenAVTBasicTracker: OpenAVTTracker {
    /// Its name (the engine tracker's, in log lines).
    public let name: String
    /// Set by the instrument.
    public var trackerId: Int?
    private let state = OpenAVTState()

    /// A tracker called `name`.
    public init(name: String) { self.name = name }

    /// Its state.
    public func getState() -> OpenAVTState { state }
}

/// What a hub decided about an event.
public enum OpenAVTHubResult: Sendable {
    /// The event goes on, with the attributes the hub added.
    case accept(OpenAVTEvent)
    /// The event stops here: `rule` was broken, `reason` says how (counted, logged and a finding
    /// in conformance mode).
    case reject(OpenAVTRule, reason: String)
    /// The hub stopped the event by its own logic (a hub's `nil`, which the guide allows: "block
    /// an event that is not supposed to happen"): counted and logged, not a finding.
    case block(reason: String)
}

/// A hub (`OAVTHubProtocol`, guide "Custom Hubs"): takes each event a tracker let through,
/// updates the tracker's state, adds attributes, and returns the event or nil to stop it. The
/// guide's `DummyHub` and its pause logic are hubs as written (as a struct or final class).
///
/// ``decide(event:tracker:)`` is what the instrument calls: by default it is
/// `processEvent(event:tracker:)`, a nil becoming ``OpenAVTHubResult/block(reason:)``; the core hub
/// implements it to name the rule an event broke.
public protocol OpenAVTHub: OpenAVTComponent {
    /// The event after the hub (nil: stopped).
    mutating func processEvent(event: OpenAVTEvent, tracker: any OpenAVTTracker) -> OpenAVTEvent?
    /// The hub's decision about `event`.
    mutating func decide(event: OpenAVTEvent, tracker: any OpenAVTTracker) -> OpenAVTHubResult
}

extension OpenAVTHub {
    /// `processEvent(event:tracker:)`, a nil as a block.
    public mutating func decide(event: OpenAVTEvent, tracker: any OpenAVTTracker) -> OpenAVTHubResult {
        processEvent(event: event, tracker: tracker).map { .accept($0) } ?? .block(reason: "\(event.action) stopped by the hub")
    }
}

/// A metric calculator (`OAVTMetricalcProtocol`, guide "Custom Metricalcs"): the metrics an
/// event the hub let through yields.
public protocol OpenAVTMetricalc: OpenAVTComponent {
    /// The metrics of `event` (from `tracker`).
    mutating func processMetric(event: OpenAVTEvent, tracker: any OpenAVTTracker) -> [OpenAVTMetric]
}

/// A backend (`OAVTBackendProtocol`, guide "Custom Backends"): receives each event the hub let
/// through and each metric the calculator made. The instrument calls it after its lock, in the
/// order the chain decided, from the thread that emitted (or the engine's thread for periodic
/// pings): keep it quick — a database is reached through the engine's own backends, which have
/// their own threads and queues. ``OpenAVTNewRelicBackend`` is one.
public protocol OpenAVTBackend: AnyObject, Sendable {
    /// An event the hub let through.
    func sendEvent(event: OpenAVTEvent)
    /// A metric the calculator made.
    func sendMetric(metric: OpenAVTMetric)
    /// `ready()` was called on `instrument`.
    func instrumentReady(instrument: OpenAVTInstrument)
    /// The backend was replaced, or the instrument shut down.
    func endOfService()
}

extension OpenAVTBackend {
    /// Nothing to do.
    public func instrumentReady(instrument: OpenAVTInstrument) {}
    /// Nothing to do.
    public func endOfService() {}
}

/// OpenAVT's core hub (`OAVTHubCore`) with its known defects fixed:
/// - a second playback on the same tracker starts clean — `MediaRequest` and `StreamLoad` are
///   accepted again, with a fresh stream id (OpenAVT kept `didStreamLoad`, so the second load was
///   dropped and the stream id was the first playback's);
/// - its counters are per tracker, not shared by every tracker of the instrument;
/// - a refused action names the rule it broke, never dropped silently.
///
/// It adds OpenAVT's attributes: `streamId`, `playbackId`, `countErrors`, `countStarts`,
/// `accumPauseTime`, `accumBufferTime`, `accumSeekTime` (ms), `deltaPlayTime` (ms played since the
/// tracker's previous event), `inPlaybackBlock`, `inPauseBlock`, `inSeekBlock`, `inBufferBlock`.
public struct OpenAVTHubCore: OpenAVTHub {
    private struct Counts {
        var countErrors = 0, countStarts = 0, accumPauseTime: Int64 = 0, accumBufferTime: Int64 = 0, accumSeekTime: Int64 = 0
        var bufferBeganInPause = false, bufferBeganInSeek = false
        var playbacks = 0
        var streamId: String?
        var lastEventTime: MonotonicInstant?
    }
    private var counts: [Int: Counts] = [:]

    /// The core hub.
    public init() {}

    /// The event with the hub's attributes, or nil when it broke a rule.
    public mutating func processEvent(event: OpenAVTEvent, tracker: any OpenAVTTracker) -> OpenAVTEvent? {
        if case .accept(let event) = decide(event: event, tracker: tracker) { return event }
        return nil
    }

    /// Accepts `event` (with the hub's attributes) or rejects it naming the rule.
    public mutating func decide(event: OpenAVTEvent, tracker: any OpenAVTTracker) -> OpenAVTHubResult {
        var event = event
        let action = event.action
        let state = tracker.getState()
        var counts = self.counts[event.trackerId] ?? Counts()
        if state.didFinish {
            state.didMediaRequest = false
            state.didStreamLoad = false
            state.didStart = false
            state.isPaused = false
            state.isBuffering = false
            state.isSeeking = false
            state.didFinish = false
        }
        if state.didStart, !state.isPaused, !state.isSeeking, !state.isBuffering, let last = counts.lastEventTime {
            event.setAttribute(key: .deltaPlayTime, value: last.duration(to: event.time).milliseconds)
        }
        func reject(_ rule: OpenAVTRule, _ why: String) -> OpenAVTHubResult { .reject(rule, reason: "\(action) \(why)") }
        func since(_ begin: OpenAVTAction) -> Int64 { event.getAttribute(key: begin.timeAttribute)?.number.map { Int64($0) } ?? 0 }
        switch action {
        case .mediaRequest:
            guard !state.didMediaRequest else { return reject(.oncePerPlayback, "again in the same playback") }
            state.didMediaRequest = true
        case .playerSet:
            guard !state.didPlayerSet else { return reject(.oncePerPlayback, "again on the same tracker") }
            state.didPlayerSet = true
        case .streamLoad:
            guard !state.didStreamLoad else { return reject(.oncePerPlayback, "again in the same playback") }
            state.didStreamLoad = true
            counts.playbacks += 1
            let sender = event.getAttribute(key: .senderId).map { "\($0)" } ?? "\(event.trackerId)"
            counts.streamId = "\(sender)-\(counts.playbacks)"
        case .start:
            guard !state.didStart else { return reject(.oncePerPlayback, "again in the same playback") }
            state.didStart = true
            counts.countStarts += 1
        case .pauseBegin:
            guard state.didStart, !state.isPaused else { return reject(.pauseBlock, state.isPaused ? "while paused" : "before Start") }
            state.isPaused = true
        case .pauseFinish:
            guard state.didStart, state.isPaused else { return reject(.pauseBlock, "while not paused") }
            state.isPaused = false
            counts.accumPauseTime += since(.pauseBegin)
        case .bufferBegin:
            guard !state.isBuffering else { return reject(.bufferBlock, "while buffering") }
            state.isBuffering = true
            counts.bufferBeganInPause = state.isPaused
            counts.bufferBeganInSeek = state.isSeeking
        case .bufferFinish:
            guard state.isBuffering else { return reject(.bufferBlock, "while not buffering") }
            state.isBuffering = false
            counts.accumBufferTime += since(.bufferBegin)
        case .seekBegin:
            guard !state.isSeeking else { return reject(.seekBlock, "while seeking") }
            state.isSeeking = true
        case .seekFinish:
            guard state.isSeeking else { return reject(.seekBlock, "while not seeking") }
            state.isSeeking = false
            counts.accumSeekTime += since(.seekBegin)
        case .end, .stop, .next:
            guard state.didStart, !state.didFinish else { return reject(.finishAfterStart, "before Start") }
            state.didFinish = true
        case .error:
            counts.countErrors += 1
        default:
            break
        }
        counts.lastEventTime = event.time
        event.setAttribute(key: .countErrors, value: counts.countErrors)
        event.setAttribute(key: .countStarts, value: counts.countStarts)
        event.setAttribute(key: .accumPauseTime, value: counts.accumPauseTime)
        event.setAttribute(key: .accumBufferTime, value: counts.accumBufferTime)
        event.setAttribute(key: .accumSeekTime, value: counts.accumSeekTime)
        // A BufferFinish belongs to the block its BufferBegin was in, even if that block ended.
        event.setAttribute(key: .inPauseBlock, value: action == .bufferFinish ? counts.bufferBeganInPause : state.isPaused)
        event.setAttribute(key: .inSeekBlock, value: action == .bufferFinish ? counts.bufferBeganInSeek : state.isSeeking)
        event.setAttribute(key: .inBufferBlock, value: state.isBuffering)
        event.setAttribute(key: .inPlaybackBlock, value: state.didStart && !state.didFinish)
        if let streamId = counts.streamId {
            event.setAttribute(key: .streamId, value: streamId)
            event.setAttribute(key: .playbackId, value: streamId)
        }
        self.counts[event.trackerId] = counts
        return .accept(event)
    }
}

/// OpenAVT's core metric calculator (`OAVTMetricalcCore`), per tracker and with the start time
/// measured from the current playback's request: `StartTime` (gauge, ms from the playback's
/// `MediaRequest`, else its `StreamLoad`) and `NumPlays` at `Start`; `RebufferTime` (ms, from
/// `timeSinceBufferBegin`) and `NumRebuffers` at a `BufferFinish` inside a playback and outside a
/// pause or seek; `NumRequests`, `NumLoads`, `NumEnds`; `PlayTime` (ms) from every event's
/// `deltaPlayTime`. All but `StartTime` are counters.
public struct OpenAVTMetricalcCore: OpenAVTMetricalc {
    private var requestedAt: [Int: MonotonicInstant] = [:]

    /// The core metric calculator.
    public init() {}

    /// The metrics of `event`.
    public mutating func processMetric(event: OpenAVTEvent, tracker: any OpenAVTTracker) -> [OpenAVTMetric] {
        func counter(_ name: String, _ value: Int64) -> OpenAVTMetric { OpenAVTMetric(name: name, type: .counter, telemetryValue: .int(value)) }
        var metrics: [OpenAVTMetric] = []
        switch event.action {
        case .start:
            if let requested = requestedAt[event.trackerId] {
                metrics.append(OpenAVTMetric(name: "StartTime", type: .gauge, telemetryValue: .int(requested.duration(to: event.time).milliseconds)))
            }
            metrics.append(counter("NumPlays", 1))
        case .bufferFinish:
            if event.getAttribute(key: .inPlaybackBlock) == .bool(true), event.getAttribute(key: .inPauseBlock) == .bool(false),
                event.getAttribute(key: .inSeekBlock) == .bool(false), let began = event.getAttribute(key: OpenAVTAction.bufferBegin.timeAttribute)
            {
                metrics += [OpenAVTMetric(name: "RebufferTime", type: .counter, telemetryValue: began), counter("NumRebuffers", 1)]
            }
        case .mediaRequest:
            requestedAt[event.trackerId] = requestedAt[event.trackerId] ?? event.time
            metrics.append(counter("NumRequests", 1))
        case .streamLoad:
            requestedAt[event.trackerId] = requestedAt[event.trackerId] ?? event.time
            metrics.append(counter("NumLoads", 1))
        case .end, .stop, .next:
            requestedAt[event.trackerId] = nil
            metrics.append(counter("NumEnds", 1))
        default: break
        }
        if let delta = event.getAttribute(key: .deltaPlayTime) { metrics.append(OpenAVTMetric(name: "PlayTime", type: .counter, telemetryValue: delta)) }
        return metrics
    }
}

extension Duration {
    /// Whole milliseconds (OpenAVT's unit for times), rounded down.
    var milliseconds: Int64 { nanoseconds / 1_000_000 }
}
