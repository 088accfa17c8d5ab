import Foundation
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

    /// A kind's sink: counts, and writes when a file sink takes this kind.
    private struct Output {
        var null = NullSink()
        var video: Y4MSink?
        var audio: WAVSink?
        var errors = 0
    }

    /// Creates the renderer of `subscriber`, writing into `sink`. A file sink's path is checked
    /// (created) now, before anything starts.
    ///
    /// - Throws: ``SinkError`` for an unwritable path or a sink that does not fit the stream
    ///   (`.y4m` needs video, `.wav` audio); ``PlayoutError`` when the subscriber already has a
    ///   renderer or has started.
    public init(subscriber: Subscriber, sink: SinkSpec = .null) throws {
        self.subscriber = subscriber
        self.sink = sink
        var video = Output()
        var audio = Output()
        let kinds = subscriber.mediaKinds
        switch sink {
        case .null: break
        case .y4m(let path):
            guard kinds.contains(.video) else { throw SinkError(.sink, "--sink \(sink): the stream has no video to write as .y4m") }
            let rate = subscriber.announcedFrameRate.map { Int($0.rounded()) } ?? 30
            video.video = try Y4MSink(path: path, frameRate: (max(1, rate), 1))
        case .wav(let path):
            guard kinds.contains(.audio) else { throw SinkError(.sink, "--sink \(sink): the stream has no audio to write as .wav") }
            audio.audio = try WAVSink(path: path)
        case .remux:
            throw SinkError(.sink, "--sink \(sink): subscribe writes .y4m (video) or .wav (audio); remuxing a received stream is not supported yet")
        }
        outputs = [.video: LockedValue(video), .audio: LockedValue(audio)]
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
    public var sinkErrors: Int { outputs.values.reduce(0) { $0 + $1.withLock(\.errors) } }

    /// The playout loop of one track (its own thread): decode what is due, sleep until its render
    /// time, present, measure.
    func play(_ track: SubscribedTrack, subscriber: Subscriber) {
        let clock = subscriber.clock
        while let action = track.nextAction(clock: clock) {
            switch action {
            case .render(let frame, let renderAt):
                var presented: MonotonicInstant?
                var size: (Int, Int)?
                do {
                    try track.decoder.decode(frame) { decoded in
                        sleepUntil(renderAt)
                        presented = clock.now
                        present(decoded, kind: track.kind)
                        if decoded.width > 0 { size = (decoded.width, decoded.height) }
                    }
                } catch {
                    logger.debug("\(track.kind.rawValue) frame at \(frame.mediaTime) did not decode: \(error)")
                }
                let capture = presented == nil ? nil : track.captureTime(of: frame.mediaTime)
                let wall = wallClockNanoseconds()
                let now = clock.now
                track.finished(frame) { playback in
                    guard let presented else { return }
                    playback.lastRender = presented
                    playback.renderError.record(renderAt.duration(to: presented))
                    if let capture {
                        playback.latency.record(.nanoseconds(wall - capture))
                        // The first packet's arrival on the wall clock, less the capture time.
                        playback.transit.record(.nanoseconds(wall - capture) - frame.firstArrival.duration(to: now))
                    }
                    if let size { (playback.width, playback.height) = size }
                }
            case .skip(let frame, .decodeWithoutRender):
                try? track.decoder.decode(frame, output: false)
                track.finished(frame) { _ in }
            case .skip(let frame, _):
                track.finished(frame) { _ in }
            case .wait, .idle:
                break  // nextAction only returns frames
            }
        }
        // Pictures the decoder still holds (B-frame reordering) go to the sink at the end.
        try? track.decoder.flush { decoded in present(decoded, kind: track.kind) }
        track.recordDecoderStatistics()
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

    /// Closes the file sinks (after the playout threads ended).
    func finish() {
        for output in outputs.values {
            output.withLock { output in
                output.video?.finish()
                output.audio?.finish()
            }
        }
    }
}
