import Logging
public import PlayoutCodec
public import PlayoutCore
public import PlayoutJitter

/// Fans a subscription's presented frames out to its sink: the null sink (counts), a `.y4m`
/// (video) or `.wav` (audio) file, or a `.mkv`/`.mp4` that gets the received encoded frames
/// without re-encoding, stamped with their render times. It decides nothing about timing: each
/// track's playout loop decodes and calls it at the render time.
///
/// It is also where a user overrides the playout delay while playing, with the semantics of
/// ``PlayoutDelayController``: the value is absolute, an increase pauses rendering, a decrease
/// skips what became late, and the last override wins.
///
/// ```swift
/// let subscriber = try Subscriber(source: "stream.sdp")
/// let renderer = try Renderer(subscriber: subscriber, sink: .y4m(path: "out.y4m"))
/// try subscriber.start()
/// let hold = try renderer.overridePlayoutDelay(.seconds(2))   // pauses ≈ 1.77 s
/// hold.dispose()                                             // back to 230 ms: skips ≈ 1.77 s
/// ```
///
/// A renderer only for overrides may also be made when it is needed, after the start, as the
/// Phenix guide does: ``Subscriber/createRenderer()``.
public final class Renderer: @unchecked Sendable {
    /// Where frames go.
    public let sink: SinkSpec
    private let delayController: PlayoutDelayController
    private let publishedDelay: ReadOnlyObservable<EffectivePlayoutDelay>
    private let logger = Logger(label: "playout.renderer")
    /// One output per kind, each with its own lock: writing a picture never delays audio.
    private let outputs: [MediaKind: LockedValue<Output>]
    /// The remux sink: one file for every track, behind its own lock.
    private let remuxOutput: LockedValue<RemuxOutput>?

    /// A kind's sink: counts, and writes when a file sink takes this kind.
    private struct Output {
        var null = NullSink()
        var video: Y4MSink?
        var audio: WAVSink?
        var errors = 0
    }

    /// A remuxed file: the encoded frames the playout loops decoded, stamped with their render
    /// times since the subscription started (so pauses and skips are in the file as they played).
    private struct RemuxOutput {
        var sink: RemuxSink
        /// Per stream: the last timestamp written, in the stream's clock-rate ticks.
        var lastTicks: [Int: Int64] = [:]
        var errors = 0
    }

    /// Creates the renderer of `subscriber`, writing into `sink`, and hands it to the subscriber
    /// (one renderer per subscriber, before ``Subscriber/start()``; without one, the subscriber
    /// renders into the null sink). A file sink's path is checked (created) now, before anything
    /// starts.
    ///
    /// - Throws: ``SinkError`` for an unwritable path or a sink that does not fit the stream
    ///   (`.y4m` needs video, `.wav` audio); ``PlayoutError`` when the subscriber already has a
    ///   renderer or has started.
    public convenience init(subscriber: Subscriber, sink: SinkSpec = .null) throws {
        try self.init(
            sink: sink, kinds: subscriber.mediaKinds, frameRate: subscriber.announcedFrameRate,
            streams: subscriber.encodedStreams, delayController: subscriber.delayController, publishedDelay: subscriber.playoutDelay
        )
        try subscriber.attach(self)
    }

    convenience init(
        sink: SinkSpec, kinds: Set<MediaKind>, frameRate: Double?, streams: [EncodedStreamDescription], delayController: PlayoutDelayController,
        publishedDelay: ReadOnlyObservable<EffectivePlayoutDelay>
    ) throws {
        var video = Output()
        var audio = Output()
        var remux: RemuxSink?
        switch sink {
        case .null: break
        case .y4m(let path):
            guard kinds.contains(.video) else { throw SinkError(.sink, "sink \(sink): the stream has no video to write as .y4m (use .wav for audio, or .mkv/.mp4 to remux)") }
            let rate = frameRate.map { Int($0.rounded()) } ?? 30
            video.video = try Y4MSink(path: path, frameRate: (max(1, rate), 1))
        case .wav(let path):
            guard kinds.contains(.audio) else { throw SinkError(.sink, "sink \(sink): the stream has no audio to write as .wav (use .y4m for video, or .mkv/.mp4 to remux)") }
            audio.audio = try WAVSink(path: path)
        case .remux(let path):
            guard !streams.isEmpty else {
                throw SinkError(.sink, "sink \(sink): the codecs of a WHEP source are known only from its answer, so it cannot be remuxed yet (use .y4m or .wav)")
            }
            remux = try RemuxSink(path: path, streams: streams)
        }
        self.init(sink: sink, video: video, audio: audio, remux: remux, delayController: delayController, publishedDelay: publishedDelay)
    }

    /// A renderer into the null sink (nothing to open: it cannot fail).
    convenience init(nullSinkWith delayController: PlayoutDelayController, publishedDelay: ReadOnlyObservable<EffectivePlayoutDelay>) {
        self.init(sink: .null, video: Output(), audio: Output(), remux: nil, delayController: delayController, publishedDelay: publishedDelay)
    }

    private init(
        sink: SinkSpec, video: Output, audio: Output, remux: RemuxSink?, delayController: PlayoutDelayController,
        publishedDelay: ReadOnlyObservable<EffectivePlayoutDelay>
    ) {
        self.sink = sink
        self.delayController = delayController
        self.publishedDelay = publishedDelay
        outputs = [.video: LockedValue(video), .audio: LockedValue(audio)]
        remuxOutput = remux.map { LockedValue(RemuxOutput(sink: $0)) }
    }

    /// The playout delay in effect (callbacks on the subscriber's observer thread, never on a
    /// media thread).
    public var playoutDelay: ReadOnlyObservable<EffectivePlayoutDelay> {
        publishedDelay
    }

    /// Sets an absolute playout delay until the returned handle is released (last override
    /// wins; releasing the one in effect returns to the configured delay). `transition`:
    /// ``PlayoutDelayTransition/immediate`` (the default: pause on increase, skip on decrease) or
    /// ``PlayoutDelayTransition/gradual(rate:)`` (play at most `rate` slower or faster until the
    /// delay in effect gets there, and back the same way on release).
    ///
    /// ```swift
    /// let hold = try renderer.overridePlayoutDelay(.seconds(2), transition: .gradual(rate: 0.1))  // settles in 17.7 s
    /// ```
    ///
    /// - Throws: ``PlayoutDelayError`` for a negative, non-finite or too large value, or a
    ///   gradual rate outside (0, 90 %].
    public func overridePlayoutDelay(_ delay: Duration, transition: PlayoutDelayTransition = .immediate) throws(PlayoutDelayError) -> PlayoutDelayOverride {
        try delayController.overridePlayoutDelay(delay, transition: transition)
    }

    /// The Phenix guide's `overridePlayoutDelay(desiredPlayoutDelay)`, as it writes it:
    /// `desiredPlayoutDelay` in seconds (a `TimeInterval`, absolute), held until the returned
    /// disposable is released or dropped — the rules of ``overridePlayoutDelay(_:transition:)``.
    /// A value that one refuses (negative, non-finite, above the hard cap) overrides nothing:
    /// the reason is logged and the result is nil.
    ///
    /// ```swift
    /// self.currentRenderer = subscriber.createRenderer()
    /// let playoutDelay: TimeInterval = 0.9
    /// self.currentRendererPlayoutDelayOverride = self.currentRenderer?.overridePlayoutDelay(playoutDelay)
    /// …
    /// self.currentRendererPlayoutDelayOverride = nil   // dropping it undoes the override
    /// ```
    public func overridePlayoutDelay(_ desiredPlayoutDelay: Double) -> PlayoutDelayOverride? {
        guard let delay = Duration(exactlySeconds: desiredPlayoutDelay) else {
            logger.error("overridePlayoutDelay(\(desiredPlayoutDelay)): the delay must be a finite number of seconds ≥ 0")
            return nil
        }
        do {
            return try overridePlayoutDelay(delay)
        } catch {
            logger.error("overridePlayoutDelay(\(desiredPlayoutDelay)): \(error)")
            return nil
        }
    }

    /// Frames the sink failed to write.
    public var sinkErrors: Int {
        outputs.values.reduce(0) { $0 + $1.withLock(\.errors) } + (remuxOutput?.withLock(\.errors) ?? 0)
    }

    /// Why the sink's file cannot be written any more (full disk, I/O error), once it happened:
    /// the subscription then ends as failed with this reason, and no later frame counts as
    /// rendered.
    public var failure: SinkError? { failureValue.withLock { $0 } }
    private let failureValue = LockedValue<SinkError?>(nil)
    /// ``onFailure(_:)``'s closure.
    private let failed = LockedValue<(@Sendable () -> Void)?>(nil)

    /// Has `call` called once the sink's file failed (on the thread that wrote it): the
    /// subscription's decisions end the run at once.
    func onFailure(_ call: @escaping @Sendable () -> Void) {
        failed.withLock { $0 = call }
    }

    /// Records a sink error: a failed file is logged once and ends the run; an error with one
    /// frame is logged the first time and counted.
    private func record(_ error: any Error, errors: inout Int) {
        if let sinkError = error as? SinkError, sinkError.code == .sinkFailed {
            let first = failureValue.withLock { failure in
                defer { failure = failure ?? sinkError }
                return failure == nil
            }
            if first {
                logger.notice("\(sinkError)")  // the run ends failed with this reason
                failed.withLock { $0 }?()
            }
        } else if errors == 0 {
            logger.error("\(error)")
        }
        errors += 1
    }

    /// Presents one decoded picture or audio frame of `kind` (a playout loop, at its render time);
    /// false when the sink did not take it (its file failed).
    @discardableResult
    func present(_ frame: borrowing DecodedFrame, kind: MediaKind) -> Bool {
        // Once the file failed (the remux file too), nothing more is rendered.
        guard failureValue.withLock({ $0 == nil }) else { return false }
        return outputs[kind]?.withLock { output in
            do {
                try output.video?.render(frame)
                try output.audio?.render(frame)
            } catch {
                record(error, errors: &output.errors)
                return false
            }
            output.null.render(frame)
            return true
        } ?? true
    }

    /// Whether the sink remuxes encoded frames (then the playout loops call ``remux(_:stream:at:pictureSize:)``).
    var remuxes: Bool { remuxOutput != nil }

    /// Writes a decoded frame into the remux sink: stamped `elapsed` after the start (one tick
    /// after the stream's last frame for a frame decoded without rendering, `elapsed` nil); the
    /// first picture's size completes the video stream's description.
    func remux(_ frame: EncodedFrame, stream: Int, at elapsed: Duration?, pictureSize: (Int, Int)?) {
        remuxOutput?.withLock { output in
            guard stream < output.sink.streams.count else { return }
            let rate = Int64(max(1, output.sink.streams[stream].clockRate))
            let last = output.lastTicks[stream]
            var ticks = last.map { $0 + 1 } ?? 0
            if let elapsed {
                let nanoseconds = max(0, elapsed.nanoseconds)
                ticks = max(ticks, Int64((Int128(nanoseconds) * Int128(rate)) / 1_000_000_000))
            }
            output.lastTicks[stream] = ticks
            if let size = pictureSize, size.0 > 0 { output.sink.setPictureSize(width: size.0, height: size.1, stream: stream) }
            do {
                try output.sink.write(frame, stream: stream, timestamp: MediaTime(ticks: ticks, clockRate: Int32(rate)))
            } catch {
                record(error, errors: &output.errors)
            }
        }
    }

    /// Closes the file sinks (after the playout loops ended).
    func finish() {
        remuxOutput?.withLock { output in
            do {
                try output.sink.finish()
            } catch {
                record(error, errors: &output.errors)
            }
        }
        for output in outputs.values {
            output.withLock { output in
                output.video?.finish()
                output.audio?.finish()
                for failure in [output.video?.failure, output.audio?.failure].compactMap({ $0 }) { record(failure, errors: &output.errors) }
            }
        }
    }
}
