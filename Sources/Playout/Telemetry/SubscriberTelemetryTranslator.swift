public import PlayoutCore

/// Turns a subscription's observable updates — its state, QoS samples and playout delay — into
/// telemetry events, sans-IO: the subscriber's tracker feeds it on the observer thread
/// (never a media thread) and emits what it returns.
///
/// - `connecting` (the first time) is `playerready` and `play`; the first `playing` is `playing`;
///   `buffering`, `stalled` or `connecting` after that is a network `rebufferstart`, and `playing`
///   again its `rebufferend`; `ended` is `ended`; `failed` is a fatal `error`.
/// - A change of the delay in effect is `playoutdelaychange` (`requested` when an override).
///   Its pause is not a stall (the state stays `playing`), so it is never a rebuffer.
/// - A QoS sample with new freezes gives `freezestart`/`freezeend` with the measured duration
///   (the scheduler knows a freeze once it ended); a new picture size gives `renditionchange`.
public struct SubscriberTelemetryTranslator: Sendable {
    private var requested = false
    private var started = false
    private var stalled = false
    private var finished = false
    private var freezeCount = 0
    private var freezeDuration: Duration = .zero
    private var size = (width: 0, height: 0)
    private var delay: EffectivePlayoutDelay?

    /// A translator for a subscription that has not started.
    public init() {}

    /// The events for a state change.
    public mutating func state(_ state: SubscriberState) -> [TelemetryEvent] {
        guard !finished else { return [] }
        var events: [TelemetryEvent] = []
        if !requested, state != .idle {
            requested = true
            events += [.playerReady, .play]
        }
        switch state {
        case .idle: break
        case .connecting, .buffering, .stalled:
            if started, !stalled {
                stalled = true
                events.append(.rebufferStart(.network))
            }
        case .playing:
            if !started {
                started = true
                events.append(.playing)
            } else if stalled {
                stalled = false
                events.append(.rebufferEnd)
            }
        case .ended:
            finished = true
            events.append(.ended)
        case .failed(let reason):
            finished = true
            events.append(.error(TelemetryError(severity: .fatal, code: 1, message: reason)))
        }
        return events
    }

    /// The events for a change of the playout delay in effect.
    public mutating func playoutDelay(_ effective: EffectivePlayoutDelay) -> [TelemetryEvent] {
        guard effective != delay else { return [] }
        delay = effective
        return [.playoutDelayChange(delay: effective.delay, requested: effective.source == .override)]
    }

    /// The events a QoS sample reveals: freezes that ended since the last sample, a new picture
    /// size.
    public mutating func qos(_ sample: SubscriberQoS) -> [TelemetryEvent] {
        guard let track = sample.video ?? sample.tracks.values.first else { return [] }
        var events: [TelemetryEvent] = []
        let newFreezes = track.freezeCount - freezeCount
        if newFreezes > 0 {
            let each = (track.totalFreezesDuration - freezeDuration) / newFreezes
            for _ in 0..<newFreezes {
                if started, !stalled, !finished { events.append(.freezeStart) }
                events.append(.freezeEnd(duration: each))
            }
        }
        freezeCount = track.freezeCount
        freezeDuration = track.totalFreezesDuration
        if track.frameWidth > 0, track.frameHeight > 0, (track.frameWidth, track.frameHeight) != size {
            size = (track.frameWidth, track.frameHeight)
            let bitrate = sample.renditionBitrate
            events.append(.renditionChange(bitrate: Int64(bitrate.isFinite ? bitrate : 0),
                                           width: Int32(clamping: size.width), height: Int32(clamping: size.height)))
        }
        return events
    }

    /// A heartbeat's fields for `sample`: the whole sample, so that every backend — and the
    /// command line's `--json` stream (``QoSJSONWriter/line(for:)``) — gets every number the
    /// subscriber measured. `elapsed` (seconds since the subscription started), the state, the
    /// delay in effect and its source; the totals by their QoS names; the video's rate, size and
    /// freezes, and the end-to-end latency's median so far (seconds) where known; then each
    /// track's fields as `video.<name>` and `audio.<name>`. Counters are integers.
    public static func heartbeatFields(_ sample: SubscriberQoS) -> [TelemetryField] {
        var fields: [TelemetryField] = [
            TelemetryField("elapsed", .double(sample.elapsed.seconds)),
            TelemetryField("state", .string(sample.state.name)),
            TelemetryField("playoutDelay", .double(sample.playoutDelay.delay.seconds)),
            TelemetryField("playoutDelaySource", .string(sample.playoutDelay.source.rawValue)),
        ]
        fields += sample.total.writtenFields.map { TelemetryField($0.name, $0.value) }
        if let video = sample.video {
            fields += TrackQoS.headlineFields.compactMap { field in field.value(video).map { TelemetryField(field.name, $0) } }
        }
        let latency = sample.tracks.values.reduce(into: DurationHistogram()) { $0.merge($1.endToEndLatency) }
        if let median = latency.percentile(0.5) { fields.append(TelemetryField("endToEndLatency", .double(median.seconds))) }
        for kind in [MediaKind.video, .audio] {
            guard let track = sample.tracks[kind] else { continue }
            fields += track.writtenFields.map { TelemetryField(kind.rawValue + "." + $0.name, $0.value) }
        }
        return fields
    }
}

/// The command line's `"event"` lines as a subscriber's telemetry actions (``QoSJSONWriter/eventFields``),
/// sans-IO: `stateChanged` for every state after `idle` (with the reason of a failure),
/// `overrideApplied`/`overrideReleased` when the delay in effect changes after the first,
/// `sourceSwitch` when a track's played source changed since the previous sample, `startup` for
/// each start-up step reached (``StartupTimeline``, `step` its name). Every action carries
/// `elapsed`, seconds since the subscription started (a step's own instant for `startup`).
struct SubscriberContractEvents: Sendable {
    private var delay: EffectivePlayoutDelay?
    private var playedSources: [MediaKind: UInt32] = [:]
    private var startupSteps: Set<StartupTimeline.Milestone> = []

    /// Nothing seen yet.
    init() {}

    /// `stateChanged` for `state` (nil for `idle`).
    func state(_ state: SubscriberState, elapsed: Duration) -> TelemetryEvent? {
        guard state != .idle else { return nil }
        var fields = [Self.elapsed(elapsed), TelemetryField("state", .string(state.name))]
        if case .failed(let reason) = state { fields.append(TelemetryField("reason", .string(reason))) }
        return .action("stateChanged", fields)
    }

    /// `overrideApplied` or `overrideReleased` when the delay in effect changed (nil for the
    /// first value, unless it is an override already, and for no change).
    mutating func playoutDelay(_ effective: EffectivePlayoutDelay, elapsed: Duration) -> TelemetryEvent? {
        defer { delay = effective }
        guard effective != delay, delay != nil || effective.source == .override else { return nil }
        let name = effective.source == .override ? "overrideApplied" : "overrideReleased"
        return .action(name, [Self.elapsed(elapsed), TelemetryField("playoutDelay", .double(effective.delay.seconds))])
    }

    /// `sourceSwitch` for every track whose played source changed since the last sample (video
    /// first), stamped with the sample's time.
    mutating func qos(_ sample: SubscriberQoS) -> [TelemetryEvent] {
        var events: [TelemetryEvent] = []
        for (kind, track) in sample.tracks.sorted(by: { $0.key.rawValue > $1.key.rawValue }) {
            guard let ssrc = track.playedSSRC else { continue }
            defer { playedSources[kind] = ssrc }
            guard let previous = playedSources[kind], previous != ssrc else { continue }
            events.append(.action("sourceSwitch", [
                Self.elapsed(sample.elapsed), TelemetryField("track", .string(kind.rawValue)), TelemetryField("fromSSRC", .int(Int64(previous))),
                TelemetryField("toSSRC", .int(Int64(ssrc))), TelemetryField("sourceSwitches", .int(Int64(track.sourceSwitches))),
            ]))
        }
        return events
    }

    /// `startup` for each step of `timeline` not reported yet, in order.
    mutating func startup(_ timeline: StartupTimeline) -> [TelemetryEvent] {
        timeline.reached.compactMap { step in
            guard startupSteps.insert(step.milestone).inserted else { return nil }
            return .action("startup", [Self.elapsed(step.elapsed), TelemetryField("step", .string(step.milestone.rawValue))])
        }
    }

    private static func elapsed(_ elapsed: Duration) -> TelemetryField {
        TelemetryField("elapsed", .double(elapsed.seconds))
    }
}
