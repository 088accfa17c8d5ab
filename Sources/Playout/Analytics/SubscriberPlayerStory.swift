public import PlayoutCore
import PlayoutTelemetry

/// A subscription told as a player's story, sans-IO, for the SDK adapters' bridges: it feeds the
/// subscriber's state, playout delay and QoS samples through ``SubscriberTelemetryTranslator``
/// (the engine's own reading of a subscription) and adds what a player SDK needs on top.
///
/// - the translator's `playerready`, `play`, first `playing`, `rebufferstart`/`rebufferend` and
///   `renditionchange` become ``Step/load``, ``Step/start``, ``Step/firstFrame``,
///   ``Step/bufferStart``/``Step/bufferEnd`` and ``Step/renditionChange(bitrate:width:height:)``;
/// - the `stalled` state (nothing rendered for the stall timeout: the network dropped
///   everything) is also a ``Step/stallWarning(_:)``, once per stall;
/// - a requested delay increase holds the picture: ``Step/pause``, and ``Step/resume`` when the
///   first frame after it is presented (``delayPauseEnded()``, from
///   ``Subscriber/delayPauseEnded``), or a decrease that ends it early; a story not told that
///   instant resumes with the first QoS sample that counts the pause as ended;
/// - the end waits for the final QoS sample (the subscriber posts it after the `ended` state),
///   so ``Step/ended(_:)`` and ``Step/failed(reason:_:)`` carry the run's final numbers.
public struct SubscriberPlayerStory: Sendable {
    /// One step of the story.
    public enum Step: Sendable, Equatable {
        /// The subscription started: the video is loaded.
        case load
        /// Playback was requested.
        case start
        /// The first frame was shown.
        case firstFrame
        /// Playback stalled waiting for data.
        case bufferStart
        /// Playback resumed after the stall.
        case bufferEnd
        /// Nothing rendered for the stall timeout (a non-fatal error), with the reason.
        case stallWarning(String)
        /// A requested playout-delay increase holds the picture.
        case pause
        /// The delay pause ended.
        case resume
        /// The picture size (or first rendition) changed: the sample's rendition bitrate (the
        /// video's, bits/s: ``SubscriberQoS/renditionBitrate``) and the new size.
        case renditionChange(bitrate: Double, width: Int, height: Int)
        /// A periodic QoS sample after the load.
        case sample(SubscriberQoS)
        /// The subscription ended; its final sample.
        case ended(SubscriberQoS)
        /// The subscription failed; the reason and its final sample.
        case failed(reason: String, SubscriberQoS)
    }

    private var translator = SubscriberTelemetryTranslator()
    private var loaded = false
    private var started = false
    private var finished = false
    private var stallReported = false
    private var delay: Duration?
    private var pausedForDelay = false
    private var delayPauses = 0
    /// Whether a delay pause ends only when told the first frame after it was presented.
    private let resumesOnRender: Bool

    /// A story not begun. With `resumesOnRender`, a delay pause ends only with
    /// ``delayPauseEnded()`` (its teller watches ``Subscriber/delayPauseEnded``), never with a QoS
    /// sample that counts it: the scheduler counts a pause when it releases the frame, a decode
    /// lead before that frame is shown.
    public init(resumesOnRender: Bool = false) {
        self.resumesOnRender = resumesOnRender
    }

    /// The steps a state change makes.
    public mutating func state(_ state: SubscriberState) -> [Step] { update(state: state).steps }

    /// The translator's events and the story's steps of a state change.
    mutating func update(state: SubscriberState) -> (events: [TelemetryEvent], steps: [Step]) {
        let events = translator.state(state)
        guard !finished else { return (events, []) }
        var steps: [Step] = []
        for event in events {
            switch event {
            case .playerReady:
                loaded = true
                steps.append(.load)
            case .play: steps.append(.start)
            case .playing:
                started = true
                steps.append(.firstFrame)
            case .rebufferStart: steps.append(.bufferStart)
            case .rebufferEnd: steps.append(.bufferEnd)
            default: break  // ended, error: told with the final sample
            }
        }
        switch state {
        case .stalled where started && !stallReported:
            stallReported = true
            steps.append(.stallWarning("stalled: nothing rendered for the stall timeout"))
        case .playing: stallReported = false
        default: break
        }
        return (events, steps)
    }

    /// The steps a change of the delay in effect makes.
    public mutating func playoutDelay(_ effective: EffectivePlayoutDelay) -> [Step] { update(playoutDelay: effective).steps }

    /// The translator's events and the story's steps of a change of the delay in effect.
    mutating func update(playoutDelay effective: EffectivePlayoutDelay) -> (events: [TelemetryEvent], steps: [Step]) {
        let events = translator.playoutDelay(effective)
        guard !finished, !events.isEmpty else { return (events, []) }
        defer { delay = effective.delay }
        guard started, let previous = delay else { return (events, []) }
        if effective.delay > previous, effective.source == .override, !pausedForDelay {
            pausedForDelay = true
            return (events, [.pause])
        }
        if effective.delay < previous, pausedForDelay {
            pausedForDelay = false
            return (events, [.resume])
        }
        return (events, [])
    }

    /// The steps rendering resuming after a delay pause makes (``Subscriber/delayPauseEnded``):
    /// ``Step/resume`` when the story is paused for a delay increase.
    public mutating func delayPauseEnded() -> [Step] {
        guard !finished, pausedForDelay else { return [] }
        pausedForDelay = false
        return [.resume]
    }

    /// The steps a QoS sample makes.
    public mutating func qos(_ sample: SubscriberQoS) -> [Step] { update(qos: sample).steps }

    /// The translator's events and the story's steps of a QoS sample.
    mutating func update(qos sample: SubscriberQoS) -> (events: [TelemetryEvent], steps: [Step]) {
        let events = translator.qos(sample)
        guard !finished, loaded else { return (events, []) }
        var steps: [Step] = []
        for case .renditionChange(_, let width, let height) in events {
            steps.append(.renditionChange(bitrate: sample.renditionBitrate, width: Int(width), height: Int(height)))
        }
        let pauses = sample.total.delayPauseCount
        if pausedForDelay, !resumesOnRender, pauses > delayPauses {
            pausedForDelay = false
            steps.append(.resume)
        }
        delayPauses = pauses
        switch sample.state {
        case .ended:
            finished = true
            steps.append(.ended(sample))
        case .failed(let reason):
            finished = true
            steps.append(.failed(reason: reason, sample))
        default:
            steps.append(.sample(sample))
        }
        return (events, steps)
    }
}
