public import PlayoutCore
import PlayoutTelemetry

/// A component of an OpenAVT instrument chain: told when the chain is ready and when it leaves
/// service (replaced with `setHub`/`setMetricalc`, or at shutdown).
public protocol OpenAVTComponent: Sendable {
    /// The chain is ready (``OpenAVTInstrument/ready()``), or the component joined a ready one.
    mutating func instrumentReady()
    /// The component leaves service: replaced, or the instrument shut down.
    mutating func endOfService()
}

extension OpenAVTComponent {
    /// Nothing to do.
    public mutating func instrumentReady() {}
    /// Nothing to do.
    public mutating func endOfService() {}
}

/// What a hub decided about an event.
public enum OpenAVTHubResult: Sendable {
    /// The event goes on, with the attributes the hub added.
    case accept(OpenAVTEvent)
    /// The event stops here: `rule` was broken, `reason` says how (counted and reported, never
    /// silent).
    case reject(OpenAVTRule, reason: String)
}

/// OpenAVT's hub: accepts or rejects each action by the tracker's playback state and adds its
/// attributes. It runs on the emitting thread, under the instrument's lock (keep it quick);
/// accepted events go on to the engine's session hub, which numbers, times and delivers them.
public protocol OpenAVTHub: OpenAVTComponent {
    /// Accepts or rejects `event`, updating `state` (the tracker's).
    mutating func processEvent(_ event: OpenAVTEvent, state: inout OpenAVTPlaybackState) -> OpenAVTHubResult
}

/// OpenAVT's metric calculator: the metrics an accepted event yields, from the tracker's state
/// (its `timeSince` instants are those before this event).
public protocol OpenAVTMetricalc: OpenAVTComponent {
    /// The metrics of `event`.
    mutating func processMetric(_ event: OpenAVTEvent, state: OpenAVTPlaybackState) -> [OpenAVTMetric]
}

/// One tracker's playback state, as the hub keeps it (OpenAVT's tracker state plus the hub's
/// per-tracker counts).
public struct OpenAVTPlaybackState: Sendable {
    /// The tracker's id.
    public let trackerId: Int
    /// Prefix of the stream ids (the instrument's id and the tracker's).
    public let streamIdPrefix: String
    /// `MediaRequest` seen in this playback.
    public var didMediaRequest = false
    /// `PlayerSet` seen (once per tracker).
    public var didPlayerSet = false
    /// `StreamLoad` seen in this playback.
    public var didStreamLoad = false
    /// `Start` seen in this playback.
    public var didStart = false
    /// Paused.
    public var isPaused = false
    /// Buffering.
    public var isBuffering = false
    /// Seeking.
    public var isSeeking = false
    /// The playback finished (`End`, `Stop`, `Next`): the next action begins another.
    public var didFinish = false
    /// Playbacks begun on this tracker.
    public var playbackCount = 0
    /// The current playback's stream id (fresh for every playback).
    public var streamId: String?
    /// When the current playback was requested (its first `MediaRequest` or `StreamLoad`): the
    /// start time is measured from it.
    public var requestedAt: MonotonicInstant?
    /// `Start`s so far.
    public var countStarts = 0
    /// Errors so far.
    public var countErrors = 0
    /// Whether the current buffering began inside a pause or a seek.
    public var bufferBeganInPause = false
    /// Whether the current buffering began inside a seek.
    public var bufferBeganInSeek = false
    /// The last accepted event's time.
    public var lastEventTime: MonotonicInstant?
    /// The last time each action was accepted, by name (`timeSince<Action>`).
    public var lastTimes: [String: MonotonicInstant] = [:]

    /// A fresh tracker's state.
    public init(trackerId: Int, streamIdPrefix: String) {
        self.trackerId = trackerId
        self.streamIdPrefix = streamIdPrefix
    }

    /// The time since `action` was last accepted, at `now`.
    public func timeSince(_ action: OpenAVTAction, at now: MonotonicInstant) -> Duration? {
        lastTimes[action.name].map { $0.duration(to: now) }
    }

    /// Whether the tracker is inside a playback (started, not finished).
    public var inPlaybackBlock: Bool { didStart && !didFinish }
}

/// OpenAVT's core hub with its known defects fixed:
/// - a second playback on the same tracker starts clean — `MediaRequest` and `StreamLoad` are
///   accepted again, with a fresh stream id, and the start time is measured from that playback's
///   request (OpenAVT kept `didStreamLoad`, so the second load was dropped and the stream id and
///   start time were the first playback's);
/// - a rejected action is reported with the rule it broke, never dropped silently.
public struct OpenAVTHubCore: OpenAVTHub {
    /// The core hub.
    public init() {}

    public mutating func processEvent(_ event: OpenAVTEvent, state: inout OpenAVTPlaybackState) -> OpenAVTHubResult {
        var event = event
        let action = event.action
        if state.didFinish {
            state.didMediaRequest = false
            state.didStreamLoad = false
            state.didStart = false
            state.isPaused = false
            state.isBuffering = false
            state.isSeeking = false
            state.didFinish = false
            state.requestedAt = nil
        }
        if state.didStart, !state.isPaused, !state.isSeeking, !state.isBuffering, let last = state.lastEventTime {
            event.attributes.append(TelemetryField("deltaPlayTime", .int(last.duration(to: event.time).nanoseconds / 1_000_000)))
        }
        func reject(_ rule: OpenAVTRule, _ why: String) -> OpenAVTHubResult { .reject(rule, reason: "\(action) \(why)") }
        switch action {
        case .mediaRequest:
            guard !state.didMediaRequest else { return reject(.oncePerPlayback, "again in the same playback") }
            state.didMediaRequest = true
            state.requestedAt = state.requestedAt ?? event.time
        case .playerSet:
            guard !state.didPlayerSet else { return reject(.oncePerPlayback, "again on the same tracker") }
            state.didPlayerSet = true
        case .streamLoad:
            guard !state.didStreamLoad else { return reject(.oncePerPlayback, "again in the same playback") }
            state.didStreamLoad = true
            state.playbackCount += 1
            state.streamId = "\(state.streamIdPrefix)-\(state.playbackCount)"
            state.requestedAt = state.requestedAt ?? event.time
        case .start:
            guard !state.didStart else { return reject(.oncePerPlayback, "again in the same playback") }
            state.didStart = true
            state.countStarts += 1
        case .pauseBegin:
            guard state.didStart, !state.isPaused else { return reject(.pauseBlock, state.isPaused ? "while paused" : "before Start") }
            state.isPaused = true
        case .pauseFinish:
            guard state.didStart, state.isPaused else { return reject(.pauseBlock, "while not paused") }
            state.isPaused = false
        case .bufferBegin:
            guard !state.isBuffering else { return reject(.bufferBlock, "while buffering") }
            state.isBuffering = true
            state.bufferBeganInPause = state.isPaused
            state.bufferBeganInSeek = state.isSeeking
        case .bufferFinish:
            guard state.isBuffering else { return reject(.bufferBlock, "while not buffering") }
            state.isBuffering = false
        case .seekBegin:
            guard !state.isSeeking else { return reject(.seekBlock, "while seeking") }
            state.isSeeking = true
        case .seekFinish:
            guard state.isSeeking else { return reject(.seekBlock, "while not seeking") }
            state.isSeeking = false
        case .end, .stop, .next:
            guard state.didStart, !state.didFinish else { return reject(.finishAfterStart, "before Start") }
            state.didFinish = true
        case .error:
            state.countErrors += 1
        default:
            break
        }
        state.lastEventTime = event.time
        if let streamId = state.streamId { event.attributes.append(TelemetryField("streamId", .string(streamId))) }
        event.attributes += [
            TelemetryField("countStarts", .int(Int64(state.countStarts))), TelemetryField("countErrors", .int(Int64(state.countErrors))),
            TelemetryField("inPlaybackBlock", .bool(state.inPlaybackBlock)),
            TelemetryField("inPauseBlock", .bool(action == .bufferFinish ? state.bufferBeganInPause : state.isPaused)),
            TelemetryField("inSeekBlock", .bool(action == .bufferFinish ? state.bufferBeganInSeek : state.isSeeking)),
            TelemetryField("inBufferBlock", .bool(state.isBuffering)),
        ]
        return .accept(event)
    }
}

/// OpenAVT's core metric calculator, with the start time measured from the current playback's
/// request: `StartTime` (ms from `MediaRequest`, else `StreamLoad`) and `NumPlays` at `Start`;
/// `RebufferTime` and `NumRebuffers` at a `BufferFinish` inside a playback and outside a pause
/// or seek; `NumRequests`, `NumLoads`, `NumEnds`; `PlayTime` (ms) from every event's
/// `deltaPlayTime`.
public struct OpenAVTMetricalcCore: OpenAVTMetricalc {
    /// The core metric calculator.
    public init() {}

    public mutating func processMetric(_ event: OpenAVTEvent, state: OpenAVTPlaybackState) -> [OpenAVTMetric] {
        func milliseconds(_ duration: Duration) -> TelemetryValue { .int(duration.nanoseconds / 1_000_000) }
        var metrics: [OpenAVTMetric] = []
        switch event.action {
        case .start:
            if let requested = state.requestedAt { metrics.append(OpenAVTMetric("StartTime", milliseconds(requested.duration(to: event.time)))) }
            metrics.append(OpenAVTMetric("NumPlays", .int(1)))
        case .bufferFinish:
            if event[attribute: "inPlaybackBlock"] == .bool(true), event[attribute: "inPauseBlock"] == .bool(false),
                event[attribute: "inSeekBlock"] == .bool(false), let began = state.timeSince(.bufferBegin, at: event.time)
            {
                metrics += [OpenAVTMetric("RebufferTime", milliseconds(began)), OpenAVTMetric("NumRebuffers", .int(1))]
            }
        case .mediaRequest: metrics.append(OpenAVTMetric("NumRequests", .int(1)))
        case .streamLoad: metrics.append(OpenAVTMetric("NumLoads", .int(1)))
        case .end, .stop, .next: metrics.append(OpenAVTMetric("NumEnds", .int(1)))
        default: break
        }
        if let delta = event[attribute: "deltaPlayTime"] { metrics.append(OpenAVTMetric("PlayTime", delta)) }
        return metrics
    }
}
