import Logging
import PlayoutCodec
import PlayoutCore
import PlayoutJitter

/// One track's playout loop, on its own thread: takes what the track's pipeline releases,
/// decodes ahead in bursts, presents each frame at its render time through the ``Renderer``, and
/// measures how late it was. It owns the track's decoder; nothing else touches it.
///
/// Sans-IO in its timing: ``advance(now:)`` does everything due and says when to come back, so
/// the same loop runs on the real clock (``run()``, the threaded driver) and on a manual clock
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
        case poll(until: MonotonicInstant?, generation: Int)
        /// Another track of the subscription presents then, sooner than a decode would take:
        /// come back at that instant, after it presented.
        case yield(until: MonotonicInstant)
        /// The track was asked to stop.
        case stopped
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
    }

    let track: SubscribedTrack
    /// The track's decoder (nil: frames are not decoded; each renders at its render time as if it
    /// had been, and decode statistics stay 0).
    private let decoder: FFmpegDecoder?
    private let renderer: Renderer
    private let clock: any PlayoutClock
    private let start: MonotonicInstant
    private let ahead: DecodeAhead
    private let logger = Logger(label: "playout.playout-loop")
    private var decoded: [Decoded] = []
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

    /// The loop of `track`, presenting into `renderer`; `start` is the subscription's start (time
    /// zero of a remuxed file). End-to-end latency is measured on `clock`'s wall time against the
    /// sender's capture times.
    init(
        track: SubscribedTrack, renderer: Renderer, clock: any PlayoutClock, start: MonotonicInstant, decoderThreads: Int,
        decoding: Bool = true, ahead: DecodeAhead = DecodeAhead(), frameLog: FrameLog? = nil
    ) throws {
        let setup = track.decoderSetup
        decoder = decoding
            ? try FFmpegDecoder(
                codec: setup.codec, extradata: setup.extradata, sampleRate: setup.sampleRate, channelCount: setup.channelCount,
                configuration: .init(threadCount: decoderThreads, threading: .slice), clock: clock
            ) : nil
        self.track = track
        self.renderer = renderer
        self.clock = clock
        self.start = start
        self.ahead = ahead
        self.frameLog = frameLog
    }

    /// The decoder's counters (zero without decoding).
    private var decoderStatistics: FFmpegDecoder.Statistics { decoder?.statistics ?? FFmpegDecoder.Statistics() }

    /// Whether the loop holds no decoded frame (with the pipeline empty too, the track drained).
    var holdsNothing: Bool { decoded.isEmpty }

    /// Does everything due at `now`: presents the decoded frames whose render time came, decodes
    /// what the pipeline releases (in bursts), skips what is late; returns when to come back.
    /// `deadline`: when another track on the same thread presents next — no decode starts that
    /// would keep it waiting (an average decode and 2 ms), once in a row.
    package func advance(now start: MonotonicInstant, presentingBy deadline: MonotonicInstant? = nil) -> Wake {
        var now = start
        while true {
            if let first = decoded.first {
                // Another decode fits before the first render time: three average decodes plus
                // 2 ms (a key frame costs about three).
                let average = decodes > 0 ? decodeTime / decodes : .milliseconds(5)
                let fits = now.duration(to: first.renderAt) > average * 3 + .milliseconds(2)
                let room = decoded.count < ahead.maximumAhead && decodedBytes < ahead.maximumBytesAhead
                if !(bursting && fits && room) {
                    bursting = false
                    guard first.renderAt <= now else { return .present(at: first.renderAt) }
                    decoded.removeFirst()
                    decodedBytes -= first.bytes
                    present(first)
                    now = clock.now
                    continue
                }
            }
            // Another track presents before a decode would finish: it goes first.
            if let deadline, deadline > now, !yielded {
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
            guard let polled = track.poll(now: now, lead: decoded.isEmpty ? ahead.wakeLead : ahead.horizon, loopHoldsNothing: decoded.isEmpty) else {
                return .stopped
            }
            let generation = polled.generation
            switch polled.action {
            case .render(let frame, let renderAt):
                bursting = true
                var pictures: [RetainedFrame] = []
                var bytes = 0
                defer {
                    decodeTime += now.duration(to: clock.now)
                    decodes += 1
                }
                do {
                    try decoder?.decode(frame) { picture in
                        bytes += picture.width * picture.height * 3 / 2 + picture.sampleCount * picture.channelCount * 4
                        if let kept = picture.retained() { pictures.append(kept) }
                    }
                } catch {
                    logger.debug("\(track.kind.rawValue) frame at \(frame.mediaTime) did not decode: \(error)")
                    track.decodeFailed()
                }
                decoded.append(Decoded(frame: frame, renderAt: renderAt, pictures: pictures, bytes: bytes, schedule: polled.schedule))
                decodedBytes += bytes
                remux(frame, renderAt: renderAt, picture: pictures.first)
            case .skip(let frame, .decodeWithoutRender):
                logSkip(frame, schedule: polled.schedule, at: now)
                do {
                    try decoder?.decode(frame, output: false)
                } catch {
                    track.decodeFailed()
                }
                remux(frame, renderAt: nil, picture: nil)
                track.finished(frame, decoder: decoderStatistics) { _ in }
            case .skip(let frame, _):
                logSkip(frame, schedule: polled.schedule, at: now)
                track.finished(frame, decoder: decoderStatistics) { _ in }
            case .wait(let instant):
                if decoded.isEmpty { return .poll(until: instant, generation: generation) }
                bursting = false  // nothing more released now: present what was decoded
            case .idle:
                if decoded.isEmpty { return .poll(until: nil, generation: generation) }
                bursting = false
            }
            now = clock.now
        }
    }

    /// Stopping: presents what was decoded (the scheduler released it for rendering), then the
    /// pictures the decoder still holds (B-frame reordering).
    package func drain() {
        for frame in decoded { present(frame) }
        decoded.removeAll()
        decodedBytes = 0
        var flushed = 0
        try? decoder?.flush { picture in
            if renderer.present(picture, kind: track.kind) { flushed += 1 }
        }
        track.record(decoder: decoderStatistics) { $0.framesPresented += flushed }
    }

    /// The loop on the real clock (the track's playout thread, in the threaded driver, whose
    /// subscription's clock is the monotonic one): advance, sleep, repeat until the track is
    /// asked to stop; then drain.
    func run() {
        loop: while true {
            switch advance(now: clock.now) {
            case .present(let instant):
                sleepUntil(instant)
            case .poll(let until, let generation):
                track.wait(until: until, generation: generation)
            case .yield(let instant):
                sleepUntil(instant)
            case .stopped:
                break loop
            }
        }
        drain()
    }

    /// Presents `decoded`'s pictures and records the render error and latency.
    private func present(_ decoded: Decoded) {
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
        if let frameLog, let presented, let schedule = decoded.schedule {
            frameLog.record(FrameRecord(
                track: track.index, kind: track.kind, index: frameIndex, mediaTime: frame.mediaTime.duration, captureTime: capture,
                arrival: frame.lastArrival, due: decoded.renderAt, shown: presented, skipped: false, delay: schedule.frame.delay, source: schedule.source,
                endToEndLatency: capture.map { .nanoseconds(wall - $0) }
            ))
            frameIndex += 1
        }
        track.finished(frame, decoder: decoderStatistics) { playback in
            guard let presented else { return }
            playback.framesPresented += pictures
            playback.lastRender = presented
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

    /// Hands a decoded frame to the renderer's remux output, stamped with its render time since
    /// the start (nil: decoded without rendering).
    private func remux(_ frame: EncodedFrame, renderAt: MonotonicInstant?, picture: RetainedFrame?) {
        guard renderer.remuxes else { return }
        let size = picture?.withDecodedFrame { ($0.width, $0.height) }
        renderer.remux(frame, stream: track.index, at: renderAt.map { start.duration(to: $0) }, pictureSize: size)
    }
}
