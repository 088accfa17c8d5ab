import PlayoutCore
import PlayoutJitter
import PlayoutRTP

/// The playout half of a track's receive path (the playout loop): depacketizes what the
/// ``TrackReceiver`` released, decides "wait for a key frame after loss", and schedules frames
/// (timeline and ``PlayoutScheduler``).
struct TrackPlayout {
    /// What one poll asks the caller to do.
    public typealias Action = PlayoutScheduler<EncodedFrame>.Action

    /// The track's identity and codec.
    public let track: TrackID
    public let codec: Codec
    private var depacketizer: any Depacketizer
    private let factory: DepacketizerFactory
    /// The frames one packet completed, handed from the depacketizer to ``accept(_:)``; kept so
    /// its capacity is reused.
    private var completedFrames: [EncodedFrame] = []
    /// The scheduler's last answer when it was to wait (or idle), and the lead it was asked with:
    /// until a frame is queued or the delay changes, its answer cannot change before that instant,
    /// so polls in between (one per packet while a frame assembles) do not ask again.
    private var schedulerAnswer = SchedulerAnswer.none
    private var schedulerAnswerLead: Duration?
    public private(set) var timeline = PlayoutTimeline()
    private var scheduler: PlayoutScheduler<EncodedFrame>
    /// Video frames dropped after a loss while waiting for a key frame (their references are
    /// gone; decoding them would show corrupt pictures).
    public private(set) var framesDroppedWaitingForKeyframe = 0
    /// Times decoding found it needs a key frame: a frame that did not decode, or one dropped
    /// waiting for a key frame. Each makes a key-frame request worth deciding at once.
    public private(set) var keyframeNeeds = 0
    /// Those of them dropped before the first key frame: a receiver that joined mid-stream (between
    /// two key frames) could never render them.
    public private(set) var framesDroppedBeforeFirstKeyframe = 0
    /// Whether a key frame was accepted yet.
    private var sawKeyframe = false
    /// Video waits for a key frame at the start and after a loss (nothing before it decodes).
    private var waitingForKeyframe: Bool
    /// Whether video decoding waits for a key frame (at the start, after a loss that was not
    /// repaired): what makes a receiver send PLI or FIR.
    public var isWaitingForKeyframe: Bool { waitingForKeyframe }
    /// Complete frames received (assembled from packets, or from libavformat).
    public private(set) var framesReceived = 0
    /// Bytes of the frames libavformat delivered (RTP bytes are the jitter buffer's).
    public private(set) var assembledBytesReceived = 0
    /// Times the stream restarted (new SSRC, or a sequence or timestamp jump).
    public private(set) var restarts = 0
    /// Whether frames carry their size but not their bytes (``elidePayloads()``).
    public private(set) var elidesPayloads = false

    init(track: TrackID, factory: DepacketizerFactory, delay: Duration) {
        self.track = track
        self.factory = factory
        codec = factory.codec
        waitingForKeyframe = codec.kind == .video
        depacketizer = factory.makeDepacketizer()
        scheduler = PlayoutScheduler(delay: delay)
        completedFrames.reserveCapacity(4)
    }

    /// A frame of this track did not decode: the decoder may lack the parameter sets or the
    /// references the next frames need (a key frame lost or cut short, its SPS/PPS missing), and
    /// decoding on would fail or show corrupt pictures until the next key frame, up to a whole
    /// GOP away. Video therefore waits for a key frame, as after a loss, and its receiver asks the
    /// sender for one (PLI/FIR where announced). Audio decodes on.
    /// The frames already queued up to the next key frame are dropped with them (counted in
    /// ``framesDroppedWaitingForKeyframe``).
    public mutating func decodeFailed() {
        guard codec.kind == .video else { return }
        keyframeNeeds += 1
        schedulerAnswer = .none
        var depacketizer = self.depacketizer
        let (discarded, keyframeQueued) = scheduler.discardUntilKeyframe { depacketizer.recycle($0.bytes) }
        self.depacketizer = depacketizer
        framesDroppedWaitingForKeyframe += discarded
        waitingForKeyframe = !keyframeQueued
    }

    /// The playout delay the scheduler applies.
    public var delay: Duration { scheduler.delay }

    /// From now on, frames assembled from packets carry their size but not their bytes (see
    /// `Depacketizer.elidePayloads()`): for a viewer whose frames nothing decodes or writes,
    /// which then does not copy each payload into its frame. Every timing and count stays the
    /// same.
    public mutating func elidePayloads() {
        elidesPayloads = true
        depacketizer.elidePayloads()
    }

    /// Takes a frame that came assembled (libavformat), with its arrival instants set.
    public mutating func receive(frame: EncodedFrame) {
        assembledBytesReceived += frame.bytes.count
        accept(frame)
    }

    /// The stream starts again (a reopened source): a new timeline, and video waits for a key
    /// frame.
    public mutating func restart() {
        schedulerAnswer = .none
        var depacketizer = self.depacketizer
        scheduler.discardQueued { depacketizer.recycle($0.bytes) }
        depacketizer = factory.makeDepacketizer()
        if elidesPayloads { depacketizer.elidePayloads() }
        self.depacketizer = depacketizer
        timeline.reset()
        waitingForKeyframe = codec.kind == .video
        restarts += 1
    }

    /// The delay in effect changed (an override was set or released): at once.
    public mutating func setDelay(_ delay: Duration) {
        schedulerAnswer = .none
        scheduler.setDelay(delay)
    }

    /// The delay changed at `now`, moving rendering there by `transition` (see
    /// ``PlayoutScheduler/setDelay(_:transition:now:)``).
    public mutating func setDelay(_ delay: Duration, transition: PlayoutDelayTransition, now: MonotonicInstant) {
        schedulerAnswer = .none
        scheduler.setDelay(delay, transition: transition, now: now)
    }

    /// The delay in effect at `now` (moving while a gradual transition is under way).
    public func delayInEffect(at now: MonotonicInstant) -> Duration {
        scheduler.delayInEffect(at: now)
    }

    /// When a frame of `mediaTime` is due under the delay in effect (the scheduler's rule).
    public func dueTime(for mediaTime: Duration) -> MonotonicInstant {
        scheduler.renderTime(for: mediaTime, timeline: timeline)
    }

    /// Depacketizes `released` (emptied, its capacity kept), then says what to do at `now`: a
    /// frame to render or skip, or the instant to poll again (the earlier of the next render and
    /// `bufferDeadline`, the jitter buffer's next loss deadline).
    public mutating func poll(
        now: MonotonicInstant, lead: Duration?, released: inout [TrackReceiver.Release], bufferDeadline: MonotonicInstant?
    ) -> TrackPipeline.Action {
        var start = released.startIndex
        while start < released.endIndex {
            // The packets up to the next restart go to the depacketizer in one call, which opens
            // the existential once (mutating it per packet cost a box-uniqueness check each).
            let end = released[start...].firstIndex { if case .restart = $0 { true } else { false } } ?? released.endIndex
            if start < end {
                var frames: [EncodedFrame] = []
                swap(&frames, &completedFrames)
                Self.push(released[start..<end], to: &depacketizer, into: &frames)
                for frame in frames { accept(frame) }
                frames.removeAll(keepingCapacity: true)
                swap(&frames, &completedFrames)
            }
            if end < released.endIndex { restart() }
            start = end + 1
        }
        released.removeAll(keepingCapacity: true)
        let action = schedulerPoll(now: now, lead: lead)
        switch action {
        case .wait(let instant):
            return .wait(until: bufferDeadline.map { min($0, instant) } ?? instant)
        case .idle:
            return bufferDeadline.map { .wait(until: $0) } ?? .idle
        case .render, .skip:
            return action
        }
    }

    /// Pushes `packets` (as parsed on intake: rebuilt from their stored headers, not parsed
    /// again) to `depacketizer`, appending the frames they complete to `frames`.
    private static func push<D: Depacketizer>(_ packets: ArraySlice<TrackReceiver.Release>, to depacketizer: inout D, into frames: inout [EncodedFrame]) {
        for case .packet(let packet, let arrival) in packets {
            depacketizer.push(packet, arrival: arrival) { frames.append($0) }
        }
    }

    /// What ``schedulerPoll(now:lead:)`` remembers of the scheduler's last answer.
    private enum SchedulerAnswer {
        case none
        case wait(until: MonotonicInstant)
        case idle
    }

    /// The scheduler's answer at `now`, or its last one when nothing it depends on changed: the
    /// queued frames, the timeline and the delay change only through ``accept(_:)``,
    /// ``setDelay(_:)`` and ``restart()``, which forget it. Exact for a lead and a late tolerance
    /// that are not negative (a frame released at `due − lead` cannot be late before then).
    private mutating func schedulerPoll(now: MonotonicInstant, lead: Duration?) -> Action {
        switch schedulerAnswer {
        case .wait(let until) where now < until && schedulerAnswerLead == lead: return .wait(until: until)
        case .idle where schedulerAnswerLead == lead: return .idle
        default: break
        }
        let action = scheduler.poll(now: now, timeline: timeline, lead: lead)
        let configuration = scheduler.configuration
        let cacheable = (lead ?? configuration.decodeLead) >= .zero && configuration.lateTolerance >= .zero
        switch action {
        case .wait(let until) where cacheable:
            schedulerAnswer = .wait(until: until)
        case .idle where cacheable:
            schedulerAnswer = .idle
        default:
            schedulerAnswer = .none
        }
        schedulerAnswerLead = lead
        return action
    }

    /// Where "wait for a key frame after loss" is decided (the depacketizer only flags the first
    /// frame after a loss): video frames after a loss are dropped until a key frame.
    private mutating func accept(_ frame: EncodedFrame) {
        schedulerAnswer = .none
        framesReceived += 1
        if codec.kind == .video {
            if frame.followsLoss, !frame.isKeyframe { waitingForKeyframe = true }
            if waitingForKeyframe {
                guard frame.isKeyframe else {
                    framesDroppedWaitingForKeyframe += 1
                    keyframeNeeds += 1
                    if !sawKeyframe { framesDroppedBeforeFirstKeyframe += 1 }
                    depacketizer.recycle(frame.bytes)
                    return
                }
                waitingForKeyframe = false
            }
            sawKeyframe = true
        }
        let media = frame.mediaTime.duration
        timeline.observe(mediaTime: media, arrival: frame.firstArrival)
        scheduler.enqueue(frame, mediaTime: media, isKeyframe: frame.isKeyframe, byteCount: frame.byteCount, arrival: frame.lastArrival)
    }

    /// Gives back the bytes of a rendered or skipped frame for reuse.
    public mutating func recycle(_ bytes: [UInt8]) {
        depacketizer.recycle(bytes)
    }

    /// A frame released for rendering was skipped after all; see
    /// ``PlayoutScheduler/releasedFrameSkipped()``.
    public mutating func releasedFrameSkipped() {
        scheduler.releasedFrameSkipped()
    }

    /// How late a frame may still be rendered instead of skipped (the scheduler's).
    public var lateTolerance: Duration { scheduler.configuration.lateTolerance }

    /// The scheduler's counters.
    public var schedulerStatistics: PlayoutSchedulerStatistics {
        scheduler.statistics
    }

    /// How long rendering is being held on purpose: the delay increases since the last render.
    public var pendingDelayPause: Duration {
        scheduler.pendingDelayPause
    }

    /// The depacketizer's counters (frames discarded for loss, malformed payloads).
    public var depacketizerStatistics: DepacketizerStatistics {
        depacketizer.statistics
    }
}
