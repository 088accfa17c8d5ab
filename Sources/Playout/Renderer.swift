#if canImport(Glibc)
import Glibc
#endif
import Logging
public import PlayoutCodec
public import PlayoutCore
public import PlayoutJitter
import PlayoutRTP

/// Presents a subscriber's frames at their render times into a sink, on the real monotonic
/// clock: sleeps until the instant, presents, and measures how late it was (the render error,
/// reported per track in ``TrackQoS/renderError``). Each track is decoded on its own playout
/// thread, never on the intake path.
///
/// The playout delay can be overridden while playing, with the semantics of
/// ``PlayoutDelayController``: the value is absolute, an increase pauses rendering, a decrease
/// skips what became late, and the last override wins.
public final class Renderer: @unchecked Sendable {
    /// Where frames go.
    public let sink: SinkSpec
    private let subscriber: Subscriber
    private let logger = Logger(label: "playout.renderer")
    /// One output per kind, each with its own lock: writing a picture never delays audio.
    private let outputs: [MediaKind: LockedValue<Output>]
    /// The remux sink: one file for every track, behind its own lock.
    private let remux: LockedValue<RemuxOutput>?

    /// A kind's sink: counts, and writes when a file sink takes this kind.
    private struct Output {
        var null = NullSink()
        var video: Y4MSink?
        var audio: WAVSink?
        var errors = 0
    }

    /// A remuxed file: the encoded frames the playout threads decoded, stamped with their render
    /// times since the subscriber started (so pauses and skips are in the file as they played).
    private struct RemuxOutput {
        var sink: RemuxSink
        /// Per track: the last timestamp written, in the track's clock-rate ticks.
        var lastTicks: [Int: Int64] = [:]
        var errors = 0
    }

    /// Creates the renderer of `subscriber`, writing into `sink`. A file sink's path is checked
    /// (created) now, before anything starts.
    ///
    /// A `.mkv`/`.mp4` sink gets the received encoded frames without re-encoding — every frame
    /// decoded, stamped with its render time since ``Subscriber/start()``.
    ///
    /// - Throws: ``SinkError`` for an unwritable path or a sink that does not fit the stream
    ///   (`.y4m` needs video, `.wav` audio); ``PlayoutError`` when the subscriber already has a
    ///   renderer or has started.
    public init(subscriber: Subscriber, sink: SinkSpec = .null) throws {
        self.subscriber = subscriber
        self.sink = sink
        var video = Output()
        var audio = Output()
        var remux: RemuxSink?
        let kinds = subscriber.mediaKinds
        switch sink {
        case .null: break
        case .y4m(let path):
            guard kinds.contains(.video) else { throw SinkError(.sink, "sink \(sink): the stream has no video to write as .y4m (use .wav for audio, or .mkv/.mp4 to remux)") }
            let rate = subscriber.announcedFrameRate.map { Int($0.rounded()) } ?? 30
            video.video = try Y4MSink(path: path, frameRate: (max(1, rate), 1))
        case .wav(let path):
            guard kinds.contains(.audio) else { throw SinkError(.sink, "sink \(sink): the stream has no audio to write as .wav (use .y4m for video, or .mkv/.mp4 to remux)") }
            audio.audio = try WAVSink(path: path)
        case .remux(let path):
            remux = try RemuxSink(path: path, streams: subscriber.encodedStreams)
        }
        outputs = [.video: LockedValue(video), .audio: LockedValue(audio)]
        self.remux = remux.map { LockedValue(RemuxOutput(sink: $0)) }
        try subscriber.attach(self)
    }

    /// The playout delay in effect.
    public var playoutDelay: ReadOnlyObservable<EffectivePlayoutDelay> {
        subscriber.playoutDelay
    }

    /// Sets an absolute playout delay until the returned handle is released (last override
    /// wins; releasing the one in effect returns to the configured delay).
    ///
    /// - Throws: ``PlayoutDelayError`` for a negative, non-finite or too large value.
    public func overridePlayoutDelay(_ delay: Duration) throws(PlayoutDelayError) -> PlayoutDelayOverride {
        try subscriber.delayController.overridePlayoutDelay(delay)
    }

    /// Frames the sink failed to write.
    public var sinkErrors: Int {
        outputs.values.reduce(0) { $0 + $1.withLock(\.errors) } + (remux?.withLock(\.errors) ?? 0)
    }

    /// How the playout loop decodes ahead: when nothing decoded waits, it wakes `wakeLead` before
    /// the next frame's render time and decodes a burst — every frame released within
    /// `horizon`, at most `maximumAhead` — as long as the earliest decoded frame's render time
    /// leaves time for another decode. Decoding back to back keeps the decoder's caches warm:
    /// live 720p H.264 costs ≈ 12 % less CPU per frame in bursts of three or four than decoded one
    /// per wake-up (`Benchmarks/live-subscribe.sh`). Three decoded pictures ahead keep the peak RSS
    /// below GStreamer's.
    struct DecodeAhead {
        var wakeLead: Duration = .milliseconds(50)
        var horizon: Duration = .milliseconds(150)
        var maximumAhead = 3
    }

    /// A frame decoded ahead, waiting for its render time.
    private struct Decoded {
        var frame: EncodedFrame
        var renderAt: MonotonicInstant
        var pictures: [RetainedFrame]
    }

    /// The playout loop of one track (its own thread): decode ahead in bursts, sleep until each
    /// frame's render time, present, measure.
    func play(_ track: SubscribedTrack, subscriber: Subscriber, ahead: DecodeAhead = DecodeAhead()) {
        let clock = subscriber.clock
        var decoded: [Decoded] = []
        var bursting = false
        while true {
            let now = clock.now
            if let first = decoded.first {
                // Another decode fits before the first render time: three average decodes plus
                // 2 ms (a key frame costs about three).
                let statistics = track.decoder.statistics
                let average = statistics.framesDecoded > 0 ? statistics.totalDecodeTime / statistics.framesDecoded : .milliseconds(5)
                let fits = now.duration(to: first.renderAt) > average * 3 + .milliseconds(2)
                if !(bursting && fits && decoded.count < ahead.maximumAhead) {
                    bursting = false
                    decoded.removeFirst()
                    present(first, track: track, clock: clock)
                    continue
                }
            }
            // Nothing decoded waits: wait for the next frame. In a burst: take what is
            // released within the horizon now, without waiting.
            let action = decoded.isEmpty
                ? track.nextAction(clock: clock, lead: ahead.wakeLead)
                : track.nextAction(clock: clock, lead: ahead.horizon, deadline: now)
            guard let action else { break }
            switch action {
            case .render(let frame, let renderAt):
                bursting = true
                var pictures: [RetainedFrame] = []
                do {
                    try track.decoder.decode(frame) { picture in
                        if let kept = picture.retained() { pictures.append(kept) }
                    }
                } catch {
                    logger.debug("\(track.kind.rawValue) frame at \(frame.mediaTime) did not decode: \(error)")
                }
                decoded.append(Decoded(frame: frame, renderAt: renderAt, pictures: pictures))
                remux(frame, track: track, renderAt: renderAt, picture: pictures.first)
            case .skip(let frame, .decodeWithoutRender):
                try? track.decoder.decode(frame, output: false)
                remux(frame, track: track, renderAt: nil, picture: nil)
                track.finished(frame) { _ in }
            case .skip(let frame, _):
                track.finished(frame) { _ in }
            case .wait, .idle:
                bursting = false  // nothing more released now: present what was decoded
            }
        }
        // Stopping: what was decoded is presented (the scheduler counted it rendered), then the
        // pictures the decoder still holds (B-frame reordering).
        for frame in decoded { present(frame, track: track, clock: clock) }
        try? track.decoder.flush { decoded in present(decoded, kind: track.kind) }
        track.recordDecoderStatistics()
    }

    /// Sleeps until `decoded`'s render time, presents its pictures and records the render error
    /// and latency.
    private func present(_ decoded: Decoded, track: SubscribedTrack, clock: MonotonicClock) {
        var presented: MonotonicInstant?
        var size: (Int, Int)?
        for picture in decoded.pictures {
            sleepUntil(decoded.renderAt)
            presented = presented ?? clock.now
            picture.withDecodedFrame { frame in
                present(frame, kind: track.kind)
                if frame.width > 0 { size = (frame.width, frame.height) }
            }
        }
        let frame = decoded.frame
        let capture = presented == nil ? nil : track.captureTime(of: frame.mediaTime)
        let wall = wallClockNanoseconds()
        let now = clock.now
        track.finished(frame) { playback in
            guard let presented else { return }
            playback.lastRender = presented
            playback.renderError.record(decoded.renderAt.duration(to: presented))
            if let capture {
                playback.latency.record(.nanoseconds(wall - capture))
                // The first packet's arrival on the wall clock, less the capture time.
                playback.transit.record(.nanoseconds(wall - capture) - frame.firstArrival.duration(to: now))
            }
            if let size { (playback.width, playback.height) = size }
        }
    }

    private func present(_ frame: borrowing DecodedFrame, kind: MediaKind) {
        outputs[kind]?.withLock { output in
            output.null.render(frame)
            do {
                try output.video?.render(frame)
                try output.audio?.render(frame)
            } catch {
                if output.errors == 0 { logger.error("\(error)") }
                output.errors += 1
            }
        }
    }

    /// Writes a decoded frame into the remux sink, if there is one: stamped with its render time
    /// since the subscriber started (one tick after the track's last frame for a frame decoded
    /// without rendering); the first picture's size completes the video stream's description.
    private func remux(_ frame: EncodedFrame, track: SubscribedTrack, renderAt: MonotonicInstant?, picture: RetainedFrame?) {
        guard let remux else { return }
        let size = picture?.withDecodedFrame { ($0.width, $0.height) }
        let origin = subscriber.startedAt
        remux.withLock { output in
            guard track.index < output.sink.streams.count else { return }
            let rate = Int64(max(1, output.sink.streams[track.index].clockRate))
            let last = output.lastTicks[track.index]
            var ticks = last.map { $0 + 1 } ?? 0
            if let renderAt {
                let elapsed = max(0, origin.duration(to: renderAt).nanoseconds)
                ticks = max(ticks, Int64((Int128(elapsed) * Int128(rate)) / 1_000_000_000))
            }
            output.lastTicks[track.index] = ticks
            if let size, size.0 > 0 { output.sink.setPictureSize(width: size.0, height: size.1, stream: track.index) }
            do {
                try output.sink.write(frame, stream: track.index, timestamp: MediaTime(ticks: ticks, clockRate: Int32(rate)))
            } catch {
                if output.errors == 0 { logger.error("\(error)") }
                output.errors += 1
            }
        }
    }

    /// Closes the file sinks (after the playout threads ended).
    func finish() {
        remux?.withLock { output in
            do {
                try output.sink.finish()
            } catch {
                logger.error("\(error)")
                output.errors += 1
            }
        }
        for output in outputs.values {
            output.withLock { output in
                output.video?.finish()
                output.audio?.finish()
            }
        }
    }
}
