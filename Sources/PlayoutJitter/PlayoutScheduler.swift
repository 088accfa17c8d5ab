public import PlayoutCore

/// Decides when each frame of one track is decoded and presented: a frame is due at
/// `timeline.localTime(mediaTime) + playoutDelay`, with the delay in effect at the moment it is
/// polled. That one rule gives the override semantics of DESIGN.md:
///
/// - **Increase** (1 s → 5 s): every waiting frame becomes due 4 s later, so rendering pauses for
///   the difference — the renderer holds the last frame — and then resumes at the normal rate.
///   Counted as a delay pause (``Statistics/delayPauseCount``, ``Statistics/totalDelayPausesDuration``),
///   not as a freeze.
/// - **Decrease** (5 s → 1 s): frames whose new render time has passed are skipped — not
///   rendered — and counted (``Statistics/framesSkipped``, ``Statistics/totalSkippedDuration``).
///   The decoder stays consistent: skipped frames are decoded without rendering, or, when that
///   would take longer than waiting for the next key frame, dropped up to that key frame. Each
///   skipped frame's action says which.
/// - Transitions compose: a decrease during a pause ends the pause early and skips what is late.
///   Over any sequence of changes, total delay pause − total skip = final delay − initial delay
///   (to within a frame interval).
/// - A **gradual** change (``setDelay(_:transition:now:)`` with
///   ``PlayoutDelayTransition/gradual(rate:)``) moves the delay in effect towards the new value at
///   `rate` seconds per second of render time instead: frames render at most `rate` slower or
///   faster than the media until it is reached — no delay pause, no skip — and it settles after
///   |Δdelay| / rate. A frame is then due at the first instant `t` with
///   `t ≥ localTime(mediaTime) + delayInEffect(at: t)`, which has a closed form.
///
/// Sans-IO: every call takes `now`; the caller sleeps until the instant ``Action/wait(until:)``
/// names (on a real or a manual clock) and polls again.
///
/// ```swift
/// var scheduler = PlayoutScheduler<EncodedFrame>(delay: .milliseconds(230))
/// scheduler.enqueue(frame, mediaTime: frame.mediaTime.duration, isKeyframe: frame.isKeyframe,
///                   byteCount: frame.bytes.count, arrival: frame.lastArrival)
/// switch scheduler.poll(now: clock.now, timeline: timeline) {
/// case .render(let frame, let instant): decoder.decode(frame); renderer.present(at: instant)
/// case .skip(let frame, .decodeWithoutRender): decoder.decode(frame, output: false)
/// case .skip(_, .drop): break
/// case .wait(let instant): try await clock.sleep(until: instant)
/// case .idle: break
/// }
/// ```
///
/// - Complexity: `enqueue` amortized O(1); `poll` O(1) except when a skip run starts (O(frames
///   skipped)).
///
/// The subscriber's instance, `PlayoutScheduler<EncodedFrame>`, is specialized in this module
/// (`@_specialize(exported: true)`): a generic type's methods are not specialized across modules
/// otherwise, and unspecialized its `poll` cost ≈ 9,300 instructions a frame instead of ≈ 4,800
/// (generic metadata look-ups and value-witness copies; `Benchmarks/Sources/ReceiveOnce`).
public struct PlayoutScheduler<Frame> {
    /// Scheduling tunables; see ``PlayoutSchedulerConfiguration``.
    public typealias Configuration = PlayoutSchedulerConfiguration
    /// Counters; see ``PlayoutSchedulerStatistics``.
    public typealias Statistics = PlayoutSchedulerStatistics

    /// How a skipped frame keeps the decoder consistent.
    public enum SkipMode: Equatable, Sendable {
        /// Decode it but do not present it (its references are needed later).
        case decodeWithoutRender
        /// Do not decode it: a later key frame makes it unnecessary.
        case drop
    }

    /// What to do next.
    public enum Action {
        /// Decode `frame` now and present it at `renderAt`.
        case render(Frame, renderAt: MonotonicInstant)
        /// `frame` is skipped (its render time has passed); `mode` says how the decoder stays
        /// consistent.
        case skip(Frame, SkipMode)
        /// Nothing is due before this instant.
        case wait(until: MonotonicInstant)
        /// No frame is waiting.
        case idle
    }

    private struct Entry {
        var frame: Frame?
        var media: Duration
        var isKeyframe: Bool
        var byteCount: Int
        var arrival: MonotonicInstant
    }

    /// The tunables it was created with.
    public let configuration: Configuration
    /// The counters so far.
    public private(set) var statistics = Statistics()
    /// The playout delay set last: the one in effect, or the one a gradual change under way is
    /// moving to (``delayInEffect(at:)`` says where it is).
    public private(set) var delay: Duration
    /// A gradual change under way: the delay in effect moves from `from` at `start` towards
    /// ``delay`` at `rate`, reaching it at `end`.
    private var ramp: (from: Duration, start: MonotonicInstant, rate: Double, end: MonotonicInstant)?

    private var queue: [Entry] = []
    private var head = 0
    /// Actions decided together (a skip run), handed out one per poll.
    private var pending: [Action] = []
    private var pendingHead = 0
    /// The last rendered frame: when it was scheduled, when it was shown, and its media time.
    private var lastRender: (due: MonotonicInstant, shown: MonotonicInstant, media: Duration)?
    /// Delay increases since the last render: the part of the next render gap they explain.
    private var increasesSinceRender: Duration = .zero
    /// Whether frames were skipped since the last render.
    private var skippedSinceRender = false
    /// Whether the delay decreased since the last render: frames late then were skipped by the
    /// decrease; otherwise they came too late on their own (``PlayoutSchedulerStatistics/framesLate``).
    private var decreasedSinceRender = false

    /// The delay increases since the last render: how long rendering is being held on purpose
    /// (a delay pause under way; zero when none).
    public var pendingDelayPause: Duration { increasesSinceRender }

    /// Creates a scheduler with the playout delay `delay`.
    public init(delay: Duration, configuration: Configuration = Configuration()) {
        self.delay = delay
        self.configuration = configuration
    }

    /// Changes the playout delay in effect (absolute) at once. Increases pause rendering by the
    /// difference; decreases skip what becomes late. A gradual change under way is taken as
    /// finished first (use ``setDelay(_:transition:now:)`` to start from where it is).
    @_specialize(exported: true, where Frame == EncodedFrame)
    public mutating func setDelay(_ newDelay: Duration) {
        ramp = nil
        if newDelay > delay { increasesSinceRender += newDelay - delay }
        if newDelay < delay { decreasedSinceRender = true }
        delay = newDelay
    }

    /// Changes the playout delay (absolute) at `now`, from the delay in effect then:
    /// ``PlayoutDelayTransition/immediate`` pauses on an increase and skips on a decrease;
    /// ``PlayoutDelayTransition/gradual(rate:)`` moves the delay in effect towards `newDelay` at
    /// `rate`, without pause or skip. The last change wins in both modes.
    @_specialize(exported: true, where Frame == EncodedFrame)
    public mutating func setDelay(_ newDelay: Duration, transition: PlayoutDelayTransition, now: MonotonicInstant) {
        let current = delayInEffect(at: now)
        ramp = nil
        delay = newDelay
        switch transition {
        case .immediate:
            if newDelay > current { increasesSinceRender += newDelay - current }
            if newDelay < current { decreasedSinceRender = true }
        case .gradual(let rate):
            guard newDelay != current, rate > 0, rate.isFinite else { return }
            let rate = min(rate, PlayoutDelayTransition.maximumRate)
            let change = newDelay > current ? newDelay - current : current - newDelay
            ramp = (current, now, rate, now.advanced(by: change / rate))
        }
    }

    /// The delay in effect at `now`: ``delay``, or where a gradual change under way has got to.
    public func delayInEffect(at now: MonotonicInstant) -> Duration {
        guard let ramp, now < ramp.end else { return delay }
        guard now > ramp.start else { return ramp.from }
        let moved = ramp.start.duration(to: now) * ramp.rate
        return delay > ramp.from ? ramp.from + moved : ramp.from - moved
    }

    /// Queues a complete frame, in decoding order; `arrival` is when its last part arrived.
    @_specialize(exported: true, where Frame == EncodedFrame)
    public mutating func enqueue(_ frame: Frame, mediaTime: Duration, isKeyframe: Bool, byteCount: Int, arrival: MonotonicInstant) {
        queue.append(Entry(frame: frame, media: mediaTime, isKeyframe: isKeyframe, byteCount: byteCount, arrival: arrival))
        statistics.bufferedFrames += 1
        statistics.bufferedBytes += byteCount
        updateBufferedDuration()
        while statistics.bufferedBytes > configuration.maximumBytes, statistics.bufferedFrames > 1 {
            let dropped = queue[head]
            removeHead()
            statistics.framesDroppedOverflow += 1
            _ = dropped
        }
    }

    /// The stream restarted (a new source behind the same address): the queued frames belong to
    /// the old timeline. Hands each back to `body` (to recycle its bytes), counts it in
    /// ``PlayoutSchedulerStatistics/framesDroppedOnRestart``, and forgets the last render, so
    /// the gap to the new stream's first frame is neither a freeze nor a pause.
    @_specialize(exported: true, where Frame == EncodedFrame)
    public mutating func discardQueued(_ body: (Frame) -> Void = { _ in }) {
        while head < queue.count {
            let frame = queue[head].frame!
            removeHead()
            statistics.framesDroppedOnRestart += 1
            body(frame)
        }
        lastRender = nil
        increasesSinceRender = .zero
        skippedSinceRender = false
        decreasedSinceRender = false
    }

    /// Decoding needs a key frame (the decoder lost its parameter sets or references): the queued
    /// frames before the first queued key frame cannot decode. Hands each back to `body` (to
    /// recycle its bytes) and returns how many were discarded and whether a key frame is queued
    /// (decoding resumes there). Unlike ``discardQueued(_:)`` the timeline stays: the gap until
    /// the key frame renders is what the viewer sees (a freeze when long enough).
    @_specialize(exported: true, where Frame == EncodedFrame)
    public mutating func discardUntilKeyframe(_ body: (Frame) -> Void = { _ in }) -> (discarded: Int, keyframeQueued: Bool) {
        var discarded = 0
        while head < queue.count, !queue[head].isKeyframe {
            let frame = queue[head].frame!
            removeHead()
            discarded += 1
            body(frame)
        }
        return (discarded, head < queue.count)
    }

    /// The render time of a frame of media time `mediaTime` under the delay in effect: the first
    /// instant `t` with `t ≥ localTime(mediaTime) + delayInEffect(at: t)`.
    @_specialize(exported: true, where Frame == EncodedFrame)
    public func renderTime(for mediaTime: Duration, timeline: PlayoutTimeline) -> MonotonicInstant {
        let local = timeline.localTime(for: mediaTime)
        guard let ramp else { return local.advanced(by: delay) }
        // Due before the change began: under the delay in effect then.
        let before = local.advanced(by: ramp.from)
        guard before > ramp.start else { return before }
        // During the ramp the delay moves by ±rate per second, so t − start = (before − start)
        // + (±rate)(t − start), i.e. t − start = (before − start) / (1 ∓ rate).
        let slope = delay > ramp.from ? 1 - ramp.rate : 1 + ramp.rate
        let due = ramp.start.advanced(by: ramp.start.duration(to: before) / slope)
        return due < ramp.end ? due : local.advanced(by: delay)
    }

    /// What to do at `now`. A frame is released `lead` before its render time (default
    /// ``PlayoutSchedulerConfiguration/decodeLead``); a caller that decodes ahead in bursts asks
    /// with a longer lead. Lateness is always judged at `now`.
    @_specialize(exported: true, where Frame == EncodedFrame)
    public mutating func poll(now: MonotonicInstant, timeline: PlayoutTimeline, lead: Duration? = nil) -> Action {
        if let ramp, now >= ramp.end { self.ramp = nil }  // reached: frames due at localTime + delay
        if pendingHead < pending.count {
            let action = pending[pendingHead]
            pending[pendingHead] = .idle  // hold no reference to a frame handed out
            pendingHead += 1
            if pendingHead == pending.count {
                pending.removeAll(keepingCapacity: true)
                pendingHead = 0
            }
            return action
        }
        guard head < queue.count else { return .idle }
        let lateLimit = now.advanced(by: .zero - configuration.lateTolerance)
        let due = renderTime(for: queue[head].media, timeline: timeline)
        if due < lateLimit {
            startSkipRun(now: now, lateLimit: lateLimit, timeline: timeline)
            return poll(now: now, timeline: timeline, lead: lead)
        }
        let release = due.advanced(by: .zero - (lead ?? configuration.decodeLead))
        guard now >= release else { return .wait(until: release) }
        let entry = queue[head]
        removeHead()
        let renderAt = max(due, now)
        statistics.jitterBufferEmittedCount += 1
        statistics.jitterBufferDelay += max(.zero, entry.arrival.duration(to: renderAt))
        statistics.jitterBufferTargetDelay += delayInEffect(at: renderAt)
        statistics.jitterBufferMinimumDelay += max(.zero, timeline.localTime(for: entry.media).duration(to: entry.arrival))
        account(due: due, shown: renderAt, media: entry.media)
        return .render(entry.frame!, renderAt: renderAt)
    }

    /// Frames from the head whose render time has passed are skipped together, keeping the
    /// decoder consistent the faster way.
    private mutating func startSkipRun(now: MonotonicInstant, lateLimit: MonotonicInstant, timeline: PlayoutTimeline) {
        var firstOnTime = head
        while firstOnTime < queue.count, renderTime(for: queue[firstOnTime].media, timeline: timeline) < lateLimit {
            firstOnTime += 1
        }
        // A key frame among the late frames, or the first on-time frame, resets the decoder:
        // everything before the last such key frame can be dropped undecoded.
        var restart = head
        for index in head...min(firstOnTime, queue.count - 1) where queue[index].isKeyframe {
            restart = index
        }
        var end = firstOnTime  // skipped: head..<end
        if restart == head, firstOnTime - head > 0, let keyframe = (firstOnTime..<queue.count).first(where: { queue[$0].isKeyframe }) {
            // No key frame to restart from before we are on time again: decoding the late frames
            // takes their count × decode cost; if that outlasts the wait for the next key frame,
            // jumping there is faster.
            let decodeTime = configuration.decodeCost * (firstOnTime - head)
            let untilKeyframe = now.duration(to: renderTime(for: queue[keyframe].media, timeline: timeline))
            if decodeTime > untilKeyframe {
                restart = keyframe
                end = keyframe
            }
        }
        // Skipped by a delay decrease (the schedule jumped ahead: counted with the media it
        // jumped, ``PlayoutSchedulerStatistics/totalSkippedDuration``), or simply too late.
        if decreasedSinceRender {
            statistics.framesSkipped += end - head
            skippedSinceRender = true
        } else {
            statistics.framesLate += end - head
        }
        statistics.jitterBufferEmittedCount += end - head
        for index in head..<end {
            let mode: SkipMode = index < restart ? .drop : .decodeWithoutRender
            if mode == .drop { statistics.framesDroppedToKeyFrame += 1 } else { statistics.framesDecodedWithoutRender += 1 }
            pending.append(.skip(queue[index].frame!, mode))
        }
        for _ in head..<end { removeHead() }
    }

    /// A frame handed out for rendering was not rendered after all: a delay decrease after its
    /// release made it late before its render time (a caller that decodes ahead held it
    /// meanwhile, and computed its render time again under the new delay). It counts as skipped
    /// by the decrease (``PlayoutSchedulerStatistics/framesSkipped``), not rendered.
    public mutating func releasedFrameSkipped() {
        statistics.framesRendered -= 1
        statistics.framesSkipped += 1
        skippedSinceRender = true
    }

    /// Takes the head out of the queue. Its frame is released at once (the slot stays until the
    /// queue compacts): a frame handed out must be uniquely referenced by its taker, so the
    /// depacketizer can reuse its bytes instead of allocating new ones for every frame.
    private mutating func removeHead() {
        statistics.bufferedFrames -= 1
        statistics.bufferedBytes -= queue[head].byteCount
        queue[head].frame = nil
        head += 1
        if head > 64, head * 2 > queue.count {
            queue.removeFirst(head)
            head = 0
        }
        updateBufferedDuration()
    }

    private mutating func updateBufferedDuration() {
        statistics.bufferedDuration = head < queue.count ? queue[queue.count - 1].media - queue[head].media : .zero
    }

    /// Render-gap accounting. Against the schedule, a render gap longer than the media it covers
    /// is a delay pause (when increases explain it) and a shorter one is a skip (when frames were
    /// skipped): measured on scheduled times, the two balance exactly with the delay change. The
    /// gap actually shown, less delay pauses, feeds the W3C freeze and pause rules.
    private mutating func account(due: MonotonicInstant, shown: MonotonicInstant, media: Duration) {
        defer {
            lastRender = (due, shown, media)
            increasesSinceRender = .zero
            skippedSinceRender = false
            decreasedSinceRender = false
            statistics.framesRendered += 1
        }
        guard let last = lastRender else { return }
        let discrepancy = last.due.duration(to: due) - (media - last.media)  // wall − media
        var pause: Duration = .zero
        if discrepancy > .zero, increasesSinceRender > .zero {
            pause = min(discrepancy, increasesSinceRender)
            statistics.delayPauseCount += 1
            statistics.totalDelayPausesDuration += pause
        } else if discrepancy < .zero, skippedSinceRender {
            statistics.totalSkippedDuration += .zero - discrepancy
        }
        let unexplained = max(.zero, last.shown.duration(to: shown) - pause)
        let seconds = unexplained.seconds
        statistics.totalInterFrameDelay += seconds
        statistics.totalSquaredInterFrameDelay += seconds * seconds
        let intervals = statistics.framesRendered  // gaps measured so far, this one included
        let mean = statistics.totalInterFrameDelay / Double(intervals)
        if unexplained > .seconds(5) {
            statistics.pauseCount += 1
            statistics.totalPausesDuration += unexplained
        } else if intervals > 1, seconds >= max(3 * mean, mean + 0.150) {
            statistics.freezeCount += 1
            statistics.totalFreezesDuration += unexplained
        }
    }
}

/// Scheduling tunables, with their defaults.
public struct PlayoutSchedulerConfiguration: Equatable, Sendable {
    /// How long before its render time a frame is released for decoding (default 20 ms).
    public var decodeLead: Duration
    /// How late a frame may still be rendered instead of skipped (default 20 ms).
    public var lateTolerance: Duration
    /// The estimated cost of decoding one frame, for choosing between decode-without-render
    /// and jumping to the next key frame (default 2 ms: 720p H.264 on one core, live).
    public var decodeCost: Duration
    /// The most bytes held (delay × bitrate plus margin); beyond it the oldest frames are
    /// dropped and counted (default 64 MiB).
    public var maximumBytes: Int

    /// A configuration with the documented defaults.
    public init(
        decodeLead: Duration = .milliseconds(20), lateTolerance: Duration = .milliseconds(20),
        decodeCost: Duration = .milliseconds(2), maximumBytes: Int = 64 << 20
    ) {
        self.decodeLead = decodeLead
        self.lateTolerance = lateTolerance
        self.decodeCost = decodeCost
        self.maximumBytes = maximumBytes
    }
}

/// Counters and smoothness measures (W3C webrtc-stats names where they exist).
public struct PlayoutSchedulerStatistics: Equatable, Sendable {
    /// Frames released for rendering.
    public var framesRendered = 0
    /// Frames skipped because a delay decrease put their render time in the past.
    public var framesSkipped = 0
    /// Frames not rendered because they were complete only after their render time, with no
    /// delay change (late arrivals, a timeline behind the stream). Decoded or dropped like
    /// skipped frames, but no jump of the schedule: not in ``totalSkippedDuration``.
    public var framesLate = 0
    /// How far playout jumped ahead in media time by skipping: the media the viewer never
    /// saw, measured against the schedule (a 5 s → 1 s decrease skips 4 s).
    public var totalSkippedDuration: Duration = .zero
    /// Skipped frames decoded to keep the decoder consistent.
    public var framesDecodedWithoutRender = 0
    /// Skipped frames not decoded, because a key frame made them unnecessary.
    public var framesDroppedToKeyFrame = 0
    /// Frames dropped because the buffer exceeded ``PlayoutSchedulerConfiguration/maximumBytes``.
    public var framesDroppedOverflow = 0
    /// Frames queued when the stream restarted, dropped with the old timeline.
    public var framesDroppedOnRestart = 0
    /// Pauses caused by delay increases, and their total length.
    public var delayPauseCount = 0
    /// Total duration of the delay pauses.
    public var totalDelayPausesDuration: Duration = .zero
    /// W3C freezes: a render gap ≥ max(3 × mean gap, mean + 150 ms), not asked for.
    public var freezeCount = 0
    /// Total duration of the freezes.
    public var totalFreezesDuration: Duration = .zero
    /// W3C pauses: a render gap > 5 s, not asked for.
    public var pauseCount = 0
    /// Total duration of the pauses.
    public var totalPausesDuration: Duration = .zero
    /// Sum of render gaps and of their squares (W3C totalInterFrameDelay and
    /// totalSquaredInterFrameDelay), in seconds.
    public var totalInterFrameDelay: Double = 0
    /// Sum of the squared gaps between releases (seconds²).
    public var totalSquaredInterFrameDelay: Double = 0
    /// Frames and bytes waiting, and the media time they span.
    public var bufferedFrames = 0
    /// Bytes queued now.
    public var bufferedBytes = 0
    /// Media time queued now.
    public var bufferedDuration: Duration = .zero
    /// W3C jitterBufferDelay: for every frame released, the time from its arrival to its
    /// render time, summed (under a 5 s override, each frame adds ≈ 5 s).
    public var jitterBufferDelay: Duration = .zero
    /// W3C jitterBufferTargetDelay: the playout delay in effect at each release, summed.
    public var jitterBufferTargetDelay: Duration = .zero
    /// W3C jitterBufferMinimumDelay: for each release, how late the frame arrived against the
    /// fastest path — the delay it needed at least — summed.
    public var jitterBufferMinimumDelay: Duration = .zero
    /// W3C jitterBufferEmittedCount: frames released (rendered or skipped).
    public var jitterBufferEmittedCount = 0

    public init() {}
}

/// Everything the playout stage knows about one track, read as one snapshot: the network side
/// (``JitterBufferStatistics``), the frame side (``PlayoutSchedulerStatistics``) and the playout
/// delay in effect with its source.
public struct TrackPlayoutStatistics: Equatable, Sendable {
    /// The jitter buffer's counters (packets).
    public var network: JitterBufferStatistics
    /// The scheduler's counters (frames).
    public var frames: PlayoutSchedulerStatistics
    /// The playout delay in effect.
    public var playoutDelay: EffectivePlayoutDelay

    /// A snapshot of these counters.
    public init(network: JitterBufferStatistics, frames: PlayoutSchedulerStatistics, playoutDelay: EffectivePlayoutDelay) {
        self.network = network
        self.frames = frames
        self.playoutDelay = playoutDelay
    }
}
