import Logging
import PlayoutCodec
import PlayoutCore
import PlayoutJitter

/// One track's playout loop: takes what the track's pipeline releases, decodes ahead in bursts,
/// presents each frame at its render time through the ``Renderer``, and measures how late it
/// was. It owns the track's decoder: the decodes run on the thread that advances it, or on a
/// decode pool one at a time (``decode(on:completed:)``) while that thread goes on presenting.
///
/// Sans-IO in its timing: ``advance(now:presentingBy:)`` does everything due and says when to
/// come back, so the same loop runs on the real clock (the event loop) and on a manual clock
/// (the embedded driver).
package final class PlayoutLoop: @unchecked Sendable {
    /// How the loop decodes ahead: when nothing decoded waits, it wakes `wakeLead` before the
    /// next frame's render time and decodes a burst — every frame released within `horizon`,
    /// at most `maximumAhead` — as long as the earliest decoded frame's render time leaves time
    /// for another decode. Decoding back to back keeps the decoder's caches warm: live 720p
    /// H.264 costs ≈ 12 % less CPU per frame in bursts of three or four than decoded one per
    /// wake-up (`Benchmarks/live-subscribe.sh`). Three decoded pictures ahead keep the peak RSS
    /// below GStreamer's; `maximumBytesAhead` caps what is held by size, so memory stays
    /// proportional to the picture size (an 8192×8192 stream decodes one frame ahead).
    struct DecodeAhead {
        var wakeLead: Duration = .milliseconds(50)
        var horizon: Duration = .milliseconds(150)
        var maximumAhead = 3
        var maximumBytesAhead = 16 << 20
    }

    /// A frame presented this long after its render time was late because decoding it did not
    /// finish in time (``TrackQoS/framesRenderedLate``).
    static var lateThreshold: Duration { .milliseconds(20) }

    /// When to call ``advance(now:)`` again.
    package enum Wake: Equatable {
        /// A decoded frame is due then: sleep exactly until it (uninterruptibly, for precision).
        case present(at: MonotonicInstant)
        /// Nothing decoded waits: wait for new packets or until the instant (nil: until woken).
        case poll(until: MonotonicInstant?)
        /// Another track of the subscription presents then, sooner than a decode would take:
        /// come back at that instant, after it presented.
        case yield(until: MonotonicInstant)
        /// A decode is under way on the pool: come back when it completed.
        case decoding
        /// What was due is presented, and other subscriptions' turns are due on the same thread
        /// (``PlayoutLoop/advance(now:presentingBy:othersDue:)``): come back once they are
        /// taken — from `at` on, after any frame that falls due meanwhile — to release and decode
        /// the next frame.
        case readAhead(at: MonotonicInstant)
    }

    /// A frame decoded ahead, waiting for its render time.
    private struct Decoded {
        var frame: EncodedFrame
        var renderAt: MonotonicInstant
        var pictures: [RetainedFrame]
        /// Decoded bytes held (YUV 4:2:0 pictures, float samples).
        var bytes: Int
        /// Its schedule (due, delay, capture time) and the source of the delay, as released.
        var schedule: (frame: TrackPipeline.FrameSchedule, source: PlayoutDelaySource)?
        /// The track's delay generation `renderAt` was computed under.
        var delayGeneration: Int
        /// Frames decoded without rendering after it: remuxed after it, to keep decode order.
        var followers: [EncodedFrame] = []
    }

    /// A frame being decoded: where it renders (nil: decoded without rendering) and its schedule.
    private struct Pending {
        var frame: EncodedFrame
        var renderAt: MonotonicInstant?
        var schedule: (frame: TrackPipeline.FrameSchedule, source: PlayoutDelaySource)?
        var delayGeneration = 0
    }

    /// What one decode made.
    private struct Decoding: Sendable {
        var pictures: [RetainedFrame] = []
        var bytes = 0
        var time: Duration = .zero
        var error: CodecError?
        var statistics = FFmpegDecoder.Statistics()
    }

    /// A decode's result, handed from the pool's thread to the loop's.
    private final class Handback: @unchecked Sendable {
        private let condition = ConditionLock()
        private var result: Decoding?  // condition

        var isReady: Bool { condition.withLock { result != nil } }

        func put(_ decoding: Decoding) {
            condition.withLock {
                result = decoding
                condition.broadcast()
            }
        }

        /// The result, if the decode completed.
        func take() -> Decoding? {
            condition.withLock {
                defer { result = nil }
                return result
            }
        }

        /// Waits until the decode completed; its result.
        func wait() -> Decoding {
            condition.withLock {
                while result == nil { condition.wait(until: nil) }
                defer { result = nil }
                return result!
            }
        }
    }

    let track: SubscribedTrack
    /// The track's decoder (nil: frames are not decoded; each renders at its render time as if it
    /// had been, and the decode statistics are unknown).
    private let decoder: FFmpegDecoder?
    private let renderer: Renderer
    private let clock: any PlayoutClock
    private let start: MonotonicInstant
    private let ahead: DecodeAhead
    private let logger = Logger(label: "playout.playout-loop")
    private var decoded: [Decoded] = []
    /// The pool the decodes run on, the loop's lane (thread) there, and what to call when one
    /// completed (nil: on the advancing thread).
    private var offload: (pool: DecodePool, lane: Int, completed: @Sendable () -> Void)?
    /// The decode under way on the pool, and where its result arrives.
    private var pending: Pending?
    private let offloaded = Handback()
    /// The decoder's counters after its latest decode (zero without decoding).
    private var statistics = FFmpegDecoder.Statistics()
    private var decodedBytes = 0
    private var bursting = false
    /// Time spent decoding, on the loop's clock (what the burst decision weighs; on a manual
    /// clock decoding takes no time, so a simulation decides the same way every run).
    private var decodeTime: Duration = .zero
    private var decodes = 0
    /// Whether the last ``advance(now:presentingBy:)`` yielded to another track: it does not yield
    /// twice in a row, so a decode slower than the other track's frame interval still happens.
    private var yielded = false
    /// The benchmark's per-frame record (nil: not kept) and the next frame's index in it.
    private let frameLog: FrameLog?
    private var frameIndex = 0
    /// Told the instant a frame that ends a delay pause is presented (rendering resumed).
    private let delayPauseEnded: @Sendable (MonotonicInstant) -> Void
    /// A frame that ended a delay pause was not presented (it did not decode): the next one presented ends it.
    private var delayPauseEnding = false
    /// The delay generation of the last delay pause ended: a pause ends once, at the first frame
    /// presented after it, though the scheduler marks a later one when frames held were re-timed.
    private var delayPauseEndedGeneration: Int?

    /// The loop of `track`, presenting into `renderer`; `start` is the subscription's start (time
    /// zero of a remuxed file). End-to-end latency is measured on `clock`'s wall time against the
    /// sender's capture times. `delayPauseEnded` is told when a presented frame ends a delay pause.
    init(
        track: SubscribedTrack, renderer: Renderer, clock: any PlayoutClock, start: MonotonicInstant, decoderThreads: Int,
        decoding: Bool = true, ahead: DecodeAhead = DecodeAhead(), frameLog: FrameLog? = nil,
        delayPauseEnded: @escaping @Sendable (MonotonicInstant) -> Void = { _ in }
    ) throws {
        let setup = track.decoderSetup
        decoder = decoding
            ? try FFmpegDecoder(
                codec: setup.codec, extradata: setup.extradata, sampleRate: setup.sampleRate, channelCount: setup.channelCount,
                configuration: .init(threadCount: decoderThreads, threading: .slice), clock: clock
            ) : nil
        self.track = track
        if !decoding { track.record(decoder: .init()) { $0.decoded = false } }
        self.renderer = renderer
        self.clock = clock
        self.start = start
        self.ahead = ahead
        self.frameLog = frameLog
        self.delayPauseEnded = delayPauseEnded
    }

    /// Does everything due at `now`: presents the decoded frames whose render time came, decodes
    /// what the pipeline releases (in bursts; on the pool when handed one), skips what is late;
    /// returns when to come back. `deadline`: when another track on the same thread presents
    /// next — no inline decode starts that would keep it waiting (an average decode and 2 ms),
    /// once in a row. `othersDue`: other subscriptions' turns are due on the same thread after
    /// this one — once it presented what was due, the loop releases and decodes nothing more
    /// and asks to come back after them (``Wake/readAhead(at:)``).
    package func advance(now start: MonotonicInstant, presentingBy deadline: MonotonicInstant? = nil, othersDue: Bool = false) -> Wake {
        var now = start
        var presentedAny = false
        if let pending, let result = offloaded.take() { absorb(result, of: pending) }
        while true {
            if holdsStaleRenderTimes {
                // Read the clock again: the change was recorded after the turn began.
                now = clock.now
                retime(now: now)
            }
            if let first = decoded.first {
                // Another decode fits before the first render time: three average decodes plus
                // 2 ms (a key frame costs about three).
                let average = decodes > 0 ? decodeTime / decodes : .milliseconds(5)
                let fits = now.duration(to: first.renderAt) > average * 3 + .milliseconds(2)
                let room = decoded.count < ahead.maximumAhead && decodedBytes < ahead.maximumBytesAhead
                let decodeMore = bursting && fits && room
                if !decodeMore || pending != nil {
                    if !decodeMore { bursting = false }
                    guard first.renderAt <= now else { return .present(at: first.renderAt) }
                    decoded.removeFirst()
                    decodedBytes -= first.bytes
                    present(first)
                    presentedAny = true
                    now = clock.now
                    continue
                }
            }
            // A decode is under way on the pool: its completion wakes the driver.
            if pending != nil { return .decoding }
            // Other subscriptions' frames are due on this thread too (a stream fanned out to an
            // audience is due everywhere at once): what was due is shown, and the next frame's
            // release and decode — a key frame's dozens of packets — wait until they are shown.
            if othersDue, presentedAny { return decoded.first.map { .present(at: $0.renderAt) } ?? .readAhead(at: now) }
            // Another track presents before an inline decode would finish: it goes first.
            if let deadline, deadline > now, !yielded, offload == nil {
                let average = decodes > 0 ? decodeTime / decodes : .zero
                if decoder != nil, now.duration(to: deadline) < average + .milliseconds(2) {
                    yielded = true
                    bursting = false
                    if let first = decoded.first, first.renderAt < deadline { return .present(at: first.renderAt) }
                    return .yield(until: deadline)
                }
            }
            yielded = false
            // Nothing decoded waits: ask for the next frame. In a burst: take what is released
            // within the horizon now, without waiting.
            let polled = track.poll(now: now, lead: decoded.isEmpty ? ahead.wakeLead : ahead.horizon, loopHoldsNothing: decoded.isEmpty)
            switch polled.action {
            case .render(let frame, let renderAt):
                bursting = true
                decode(Pending(frame: frame, renderAt: renderAt, schedule: polled.schedule, delayGeneration: polled.delayGeneration))
            case .skip(let frame, .decodeWithoutRender):
                logSkip(frame, schedule: polled.schedule, at: now)
                decode(Pending(frame: frame, renderAt: nil, schedule: polled.schedule))
            case .skip(let frame, _):
                logSkip(frame, schedule: polled.schedule, at: now)
                track.finished(frame, decoder: statistics) { _ in }
            case .wait(let instant):
                if decoded.isEmpty { return .poll(until: instant) }
                bursting = false  // nothing more released now: present what was decoded
            case .idle:
                if decoded.isEmpty { return .poll(until: nil) }
                bursting = false
            }
            now = clock.now
        }
    }

    /// Whether a decode handed to the pool has completed and waits to be taken in (the driver
    /// then advances the loop before its next render time, to start the next decode).
    package var decodeCompleted: Bool { pending != nil && offloaded.isReady }

    /// Whether a decoded frame waits with a render time computed under an earlier delay (the
    /// driver then advances the loop at once, not at that time).
    package var holdsStaleRenderTimes: Bool {
        guard !decoded.isEmpty else { return false }
        // Any of them (three at most): a decode under way when the frames held were re-timed
        // joins them later with the generation it was released under.
        let current = track.delayGeneration
        return decoded.contains { $0.delayGeneration != current }
    }

    /// The decoded frames were released under an earlier delay: computes their render times
    /// again by the rule every frame follows — an increase pauses them with the rest, a decrease
    /// brings them forward and skips those it made late, as the scheduler skips what it holds.
    /// (Decoding ahead in bursts releases frames up to ``DecodeAhead/horizon`` early; without
    /// this, a change kept up to three frames on the old delay: a frame shown inside a pause, or
    /// 80 ms of the old delay after a decrease.)
    private func retime(now: MonotonicInstant) {
        let (schedules, generation, lateTolerance) = track.retime(decoded.map(\.frame), now: now)
        let later = decoded.first.map { schedules[0].frame.due > $0.renderAt } ?? false
        for index in decoded.indices {
            var schedule = schedules[index]
            // Moved later by an increase: the first frame held is the first after the pause.
            schedule.frame.endsDelayPause = index == 0 && later || (decoded[index].schedule?.frame.endsDelayPause ?? false)
            decoded[index].renderAt = schedule.frame.due
            decoded[index].schedule = schedule
            decoded[index].delayGeneration = generation
        }
        let lateLimit = now.advanced(by: .zero - lateTolerance)
        while let first = decoded.first, first.renderAt < lateLimit {
            decoded.removeFirst()
            decodedBytes -= first.bytes
            remux(first, renderAt: nil)
            logSkip(first.frame, schedule: first.schedule, at: now)
            track.releasedFrameSkipped(first.frame, decoder: statistics)
        }
    }

    /// Has the loop's decodes run on `pool` from now on, `completed` called on the pool's thread
    /// after each (the driver advances the loop then). Before the first ``advance(now:presentingBy:)``.
    func decode(on pool: DecodePool, completed: @escaping @Sendable () -> Void) {
        guard decoder != nil else { return }  // nothing to decode
        offload = (pool, pool.assignLane(), completed)
    }

    /// Decodes `pending`'s frame: at once, or on the pool (``decodeCompleted`` says when done).
    private func decode(_ pending: Pending) {
        guard let (pool, lane, completed) = offload else {
            absorb(decodeNow(pending.frame, output: pending.renderAt != nil), of: pending)
            return
        }
        self.pending = pending
        pool.submit({ [self] in
            offloaded.put(decodeNow(pending.frame, output: pending.renderAt != nil))
            completed()
        }, on: lane)
    }

    /// Runs the decoder on `frame` (the advancing thread, or the pool's while the loop waits).
    private func decodeNow(_ frame: EncodedFrame, output: Bool) -> Decoding {
        let began = clock.now
        var result = Decoding()
        do {
            try decoder?.decode(frame, output: output) { picture in
                result.bytes += picture.width * picture.height * 3 / 2 + picture.sampleCount * picture.channelCount * 4
                if let kept = picture.retained() { result.pictures.append(kept) }
            }
        } catch {
            result.error = error
        }
        result.time = began.duration(to: clock.now)
        result.statistics = decoder?.statistics ?? FFmpegDecoder.Statistics()
        return result
    }

    /// Takes a decode's result in: a frame to render joins the decoded ones, one decoded without
    /// rendering is finished.
    private func absorb(_ result: Decoding, of pending: Pending) {
        self.pending = nil
        statistics = result.statistics
        if let error = result.error {
            logger.debug("\(track.kind.rawValue) frame at \(pending.frame.mediaTime) did not decode: \(error)")
            track.decodeFailed()
        }
        guard let renderAt = pending.renderAt else {
            if decoded.isEmpty {
                remux(pending.frame, renderAt: nil, picture: nil)
            } else {
                decoded[decoded.count - 1].followers.append(pending.frame)
            }
            track.finished(pending.frame, decoder: statistics) { _ in }
            return
        }
        decodeTime += result.time
        decodes += 1
        decoded.append(Decoded(
            frame: pending.frame, renderAt: renderAt, pictures: result.pictures, bytes: result.bytes, schedule: pending.schedule, delayGeneration: pending.delayGeneration))
        decodedBytes += result.bytes
    }

    /// Stopping: presents what was decoded (the scheduler released it for rendering) and was due
    /// by `end`, the instant the run ended, then the pictures the decoder still holds (B-frame
    /// reordering). A frame released ahead of its render time (the decode lead) that would show
    /// after `end` is not shown, nor counted as due (the run was over before its time): it is
    /// counted with the frames still buffered, and handed to a remux output as decoded without
    /// rendering. Shown by the drain instead of at its time, it counted as early or, when many
    /// subscriptions ended together and drained one after another, as late (a frame per viewer
    /// of a large swarm).
    package func drain(endedAt end: MonotonicInstant) {
        if let pending { absorb(offloaded.wait(), of: pending) }
        for frame in decoded {
            if frame.renderAt <= end {
                present(frame)
            } else {
                remux(frame, renderAt: nil)
                track.finished(frame.frame, decoder: statistics) { $0.framesHeldAtEnd += 1 }
            }
        }
        decoded.removeAll()
        decodedBytes = 0
        var flushed = 0
        try? decoder?.flush { picture in
            if renderer.present(picture, kind: track.kind) { flushed += 1 }
        }
        statistics = decoder?.statistics ?? statistics
        track.record(decoder: statistics) { $0.framesPresented += flushed }
    }

    /// Presents `decoded`'s pictures and records the render error and latency.
    private func present(_ decoded: Decoded) {
        remux(decoded, renderAt: decoded.renderAt)
        var presented: MonotonicInstant?
        var size: (Int, Int)?
        var pictures = 0
        if decoder == nil {
            // Not decoded: the frame is shown now, at its render time, as its picture would be.
            presented = clock.now
            pictures = 1
        }
        for picture in decoded.pictures {
            let now = clock.now
            picture.withDecodedFrame { frame in
                // A picture the sink could not write (its file failed) is not rendered.
                guard renderer.present(frame, kind: track.kind) else { return }
                presented = presented ?? now
                pictures += 1
                if frame.width > 0 { size = (frame.width, frame.height) }
            }
        }
        let frame = decoded.frame
        let capture = presented == nil ? nil : decoded.schedule?.frame.captureTime
        let wall = clock.wallClockNanoseconds
        let now = clock.now
        if decoded.schedule?.frame.endsDelayPause == true, delayPauseEndedGeneration != decoded.delayGeneration {
            delayPauseEnding = true
            delayPauseEndedGeneration = decoded.delayGeneration
        }
        if let presented, delayPauseEnding {
            delayPauseEnding = false
            delayPauseEnded(presented)
        }
        if let frameLog, let presented, let schedule = decoded.schedule {
            frameLog.record(FrameRecord(
                track: track.index, kind: track.kind, index: frameIndex, mediaTime: frame.mediaTime.duration, captureTime: capture,
                arrival: frame.lastArrival, due: decoded.renderAt, shown: presented, skipped: false, delay: schedule.frame.delay, source: schedule.source,
                endToEndLatency: capture.map { .nanoseconds(wall - $0) }
            ))
            frameIndex += 1
        }
        track.finished(frame, decoder: statistics) { playback in
            guard let presented else { return }
            playback.framesPresented += pictures
            playback.lastRender = presented
            if playback.firstRender == nil { playback.firstRender = presented }
            let error = decoded.renderAt.duration(to: presented)
            playback.renderError.record(error)
            if error > Self.lateThreshold { playback.framesPresentedLate += 1 }
            if let capture {
                playback.latency.record(.nanoseconds(wall - capture))
                // The first packet's arrival on the wall clock, less the capture time.
                playback.transit.record(.nanoseconds(wall - capture) - frame.firstArrival.duration(to: now))
            }
            if let size { (playback.width, playback.height) = size }
        }
    }

    /// Records a skipped frame in the frame log, when one is kept.
    private func logSkip(_ frame: EncodedFrame, schedule: (frame: TrackPipeline.FrameSchedule, source: PlayoutDelaySource)?, at now: MonotonicInstant) {
        guard let frameLog, let schedule else { return }
        frameLog.record(FrameRecord(
            track: track.index, kind: track.kind, index: frameIndex, mediaTime: frame.mediaTime.duration,
            captureTime: schedule.frame.captureTime, arrival: frame.lastArrival, due: schedule.frame.due, shown: now, skipped: true,
            delay: schedule.frame.delay, source: schedule.source, endToEndLatency: nil
        ))
        frameIndex += 1
    }

    /// Hands a decoded frame leaving the loop to the remux output — stamped with its render time
    /// as it is then (a delay change re-times the frames held), nil when skipped — and the frames
    /// decoded without rendering after it.
    private func remux(_ decoded: Decoded, renderAt: MonotonicInstant?) {
        guard renderer.remuxes else { return }
        remux(decoded.frame, renderAt: renderAt, picture: decoded.pictures.first)
        for follower in decoded.followers { remux(follower, renderAt: nil, picture: nil) }
    }

    /// Hands a decoded frame to the renderer's remux output, stamped with its render time since
    /// the start (nil: decoded without rendering).
    private func remux(_ frame: EncodedFrame, renderAt: MonotonicInstant?, picture: RetainedFrame?) {
        guard renderer.remuxes else { return }
        let size = picture?.withDecodedFrame { ($0.width, $0.height) }
        renderer.remux(frame, stream: track.index, at: renderAt.map { start.duration(to: $0) }, pictureSize: size)
    }
}
