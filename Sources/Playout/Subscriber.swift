#if canImport(Glibc)
import Glibc
#endif
public import PlayoutCore
import PlayoutCodec
public import PlayoutJitter
public import PlayoutRTP
public import PlayoutTelemetry

/// Subscribes to a stream — RTP/SRTP described by an SDP file, a WHEP endpoint (WebRTC: ICE,
/// DTLS-SRTP, BUNDLE; see ``Options/whep``), or anything libavformat opens —
/// holds it for the playout delay, decodes it and renders each frame at its render time (into the
/// null sink, or the sink of a ``Renderer``), on the real monotonic clock; reports `state`, `qos`
/// and the playout delay in effect as observables.
///
/// Threads (``start()`` runs it on a ``SubscriptionEventLoop`` of its own): one worker thread
/// receives every socket, makes the subscription's decisions (its state, QoS samples, scheduled
/// overrides) and presents each frame on time; the frames decode on a decode thread per track
/// (at most one per core); a libavformat input is read on a thread of its own. **Observers run on
/// none of these**: the `state`, `qos` and `playoutDelay` callbacks run on one observer thread
/// fed through a bounded queue, so a callback that blocks costs the media nothing — while it
/// blocks, the oldest updates are dropped and counted (``observerDelivery``), and the latest
/// value always arrives.
/// A sender that stops and comes back (same or new SSRC or sequence base) is picked up again; a
/// socket or URL that fails is reopened with backoff. Both are visible as state changes.
///
/// ```swift
/// let subscriber = try Subscriber(source: "stream.sdp", options: .init(duration: .seconds(20)))
/// let samples = subscriber.qos.subscribe { print($0.video?.framesRendered ?? 0) }   // observer thread
/// try subscriber.start()
/// let summary = subscriber.waitUntilEnded()
/// print(summary.video?.framesPerSecond ?? 0, summary.total.packetsLost)
/// ```
public final class Subscriber: @unchecked Sendable {
    /// Subscription settings.
    public struct Options: Sendable {
        /// The configured playout delay and its hard cap.
        public var playoutDelay: PlayoutDelay.Configuration
        /// How long to play (nil: until ``Subscriber/stop()``, or a file's end).
        public var duration: Duration?
        /// How often a QoS sample is taken (default 1 s).
        public var qosInterval: Duration
        /// How long nothing may render, with nothing queued, before the state turns `stalled`
        /// (default 1 s).
        public var stallTimeout: Duration
        /// The SRTP master key and salt for every track, replacing the SDP's `a=crypto` lines
        /// (nil: the SDP's keys, or none). For a libavformat `srtp://` input it is passed to
        /// FFmpeg as `srtp_in_suite` and `srtp_in_params` (base64); FFmpeg takes the
        /// AES_CM_128_HMAC_SHA1_80 and _32 suites.
        public var srtpKey: SRTPKeyingMaterial?
        /// Decoder threads per track (1 decodes single-slice live streams best).
        public var decoderThreads: Int
        /// Playout-delay overrides to set and release at instants after the start.
        public var overrides: [ScheduledOverride]
        /// How many updates (state, QoS samples, delay changes) may wait for slow observers
        /// before the oldest is dropped.
        public var observerQueueCapacity: Int
        /// The telemetry engine this subscriber reports to as a tracker (nil: none): state
        /// changes, playout-delay changes, freezes and errors as events, QoS as heartbeats, fed
        /// from the observer thread, never from a media thread.
        public var telemetry: TelemetryInstrument?
        /// The tracker's name in the engine's log lines.
        public var telemetryTrackerName = "subscriber"
        /// Tags on each of this subscriber's telemetry records, after the instrument's own (a
        /// swarm's `viewer`: many subscribers report into one instrument).
        public var telemetryTags: [TelemetryField] = []
        /// Whether the subscriber keeps a session of its own in ``telemetry`` when an analytics
        /// bridge (``MuxSubscriberBridge``, ``HeartbeatSubscriberBridge``,
        /// ``NielsenSubscriberBridge``, ``OpenAVTSubscriberBridge``) reports into the same
        /// instrument. By default (false) the bridge's view is the subscriber's one session there.
        public var telemetrySessionBesideAnalytics = false
        /// How many frames ``Subscriber/frameLog`` records for benchmarking (0, the default:
        /// no log). Reserved at the start; frames beyond it are counted, not recorded.
        public var frameLogCapacity: Int
        /// How long the played RTP source of a track may be silent before the track moves to
        /// another validated source on its port (nil, the default: ``stallTimeout``). A source
        /// that sends RTCP BYE gives way at once.
        public var sourceSwitchTimeout: Duration?
        /// Whether the subscriber talks back to RTP senders (default true): RTCP receiver reports
        /// with SDES CNAME at RFC 3550 intervals, and — only of the kinds the sender's SDP
        /// announces with `a=rtcp-fb` — generic NACKs (with RTX restored), PLI/FIR while decoding
        /// waits for a key frame, and REMB/TMMBR for ``Subscriber/limitBandwidth(_:)``. Sent
        /// from a thread of its own, to where the sender's RTCP comes from. False: silent.
        public var feedback: Bool
        /// Bandwidth limits to set and release at instants after the start, as
        /// ``Subscriber/limitBandwidth(_:)`` does (last wins).
        public var bandwidthLimits: [ScheduledBandwidthLimit]
        /// Where a track's RTCP goes, by kind, when not to where the sender's RTCP comes from
        /// (the default, symmetric RTCP): for a sender that reports from a port it does not
        /// listen on, as GStreamer's `udpsink` does unless it shares `udpsrc`'s socket.
        public var feedbackDestinations: [MediaKind: SocketAddress] = [:]
        /// The clock the subscription runs on: every instant it measures and the wall time it
        /// compares with the sender's capture times come from here, and from nowhere else. The
        /// default, the real `MonotonicClock`, is the one ``Subscriber/start()`` plays on; a
        /// `ManualClock` (PlayoutTesting) makes a subscription that its `EmbeddedDriver`
        /// advances with no thread.
        public var clock: any PlayoutClock
        /// Seeds what the subscriber draws at random — its RTCP SSRCs and CNAME, and so the
        /// randomized receiver-report times: nil (the default) draws afresh; a value gives the
        /// same draws on every run (with a `ManualClock`, the same run to the nanosecond).
        public var seed: UInt64?
        /// Whether frames are decoded (default true). Without decoding a frame renders at its
        /// render time as it would have decoded — every timing statistic (rendered, late,
        /// skipped, freezes, pauses, latency, render error) stays exact — while the decode
        /// statistics (`framesDecoded`, `keyFramesDecoded`, `decodeErrors`, `totalDecodeTime`,
        /// the frame size) are unknown (``TrackQoS/decoded`` false: `null` in the JSON lines, left
        /// out of telemetry records) and a `.y4m` or `.wav` sink gets nothing to write (refused):
        /// for many viewers in one process, where decoding each would cost a core apiece.
        public var decoding = true
        /// The network interface a multicast group is joined on, by name (e.g. `lo` for a test
        /// sender with TTL 0 on this host; nil, the default: the one the routing table picks).
        public var multicastInterface: String?
        /// How a WHEP source is asked (token, STUN server, interface, TLS checks); a source is a
        /// WHEP endpoint when it is an `http(s)://` URL whose path says `whep`, or any with
        /// ``WHEPSourceOptions/always``.
        public var whep = WHEPSourceOptions()

        /// ``multicastInterface``'s index (nil: none named).
        ///
        /// - Throws: ``PlayoutError`` when no interface has that name.
        func multicastInterfaceIndex() throws -> UInt32? {
            guard let name = multicastInterface else { return nil }
            let index = if_nametoindex(name)
            guard index != 0 else { throw PlayoutError(.invalidOption, "multicast interface \(name): no such interface (e.g. lo, eth0)") }
            return index
        }

        /// The silence after which a track moves to another valid source: ``sourceSwitchTimeout``,
        /// else ``stallTimeout``.
        var switchAfterSilence: Duration { sourceSwitchTimeout ?? stallTimeout }

        /// Options with the documented defaults: 230 ms delay, no duration, 1 s samples, the real clock.
        public init(
            playoutDelay: PlayoutDelay.Configuration = .init(), duration: Duration? = nil, qosInterval: Duration = .seconds(1),
            stallTimeout: Duration = .seconds(1), srtpKey: SRTPKeyingMaterial? = nil, decoderThreads: Int = 1,
            overrides: [ScheduledOverride] = [], observerQueueCapacity: Int = 64, telemetry: TelemetryInstrument? = nil,
            frameLogCapacity: Int = 0, feedback: Bool = true, bandwidthLimits: [ScheduledBandwidthLimit] = [],
            clock: any PlayoutClock = MonotonicClock()
        ) {
            self.clock = clock
            self.feedback = feedback
            self.bandwidthLimits = bandwidthLimits
            self.telemetry = telemetry
            self.frameLogCapacity = frameLogCapacity
            self.overrides = overrides
            self.playoutDelay = playoutDelay
            self.duration = duration
            self.qosInterval = qosInterval
            self.stallTimeout = stallTimeout
            self.srtpKey = srtpKey
            self.decoderThreads = decoderThreads
            self.observerQueueCapacity = observerQueueCapacity
        }
    }

    /// The session description being received (nil for a libavformat input).
    public var sessionDescription: SessionDescription? { source.sessionDescription }
    /// The kinds of media received.
    public let mediaKinds: Set<MediaKind>
    /// The video frame rate the source announces, if it does.
    public let announcedFrameRate: Double?
    /// The options it was created with.
    public let options: Options
    /// The subscription's state (callbacks on the observer thread).
    public var state: ReadOnlyObservable<SubscriberState> { delivery.state.readOnly }
    /// The latest QoS sample, every ``Options/qosInterval`` and once at the end (callbacks on
    /// the observer thread).
    public var qos: ReadOnlyObservable<SubscriberQoS> { delivery.qos.readOnly }
    /// The playout delay in effect: the configured one, or the override in effect (callbacks on
    /// the observer thread).
    public var playoutDelay: ReadOnlyObservable<EffectivePlayoutDelay> { delivery.playoutDelay.readOnly }

    /// The instant rendering last resumed after a delay pause (a playout-delay increase held the
    /// picture), set when the first frame after the pause is presented (nil: no pause ended yet).
    /// Observers are called on the subscriber's observer thread.
    public var delayPauseEnded: ReadOnlyObservable<MonotonicInstant?> { delivery.delayPauseEnded.readOnly }

    /// How the start-up went, step by step (``StartupTimeline``): published as each step is
    /// reached — for a WHEP source the offer, the answer, ICE and DTLS, then the first packet, key
    /// frame and presented frame (nil before the first). Observers are called on the subscriber's
    /// observer thread.
    public var startup: ReadOnlyObservable<StartupTimeline?> { delivery.startup.readOnly }

    /// An analytics bridge reporting into `instrument` tells this subscriber's view there: when
    /// the subscriber reports into the same instrument (``Options/telemetry``), its own tracker
    /// steps aside, so the instrument holds one session for it — unless
    /// ``Options/telemetrySessionBesideAnalytics`` asks for two. Called by the bridges before the start.
    package func analyticsBridge(reportsInto instrument: TelemetryInstrument) {
        guard let telemetry, telemetry.instrument === instrument, !options.telemetrySessionBesideAnalytics else { return }
        telemetry.handOver()
    }

    /// What the observer queue did: updates delivered, and dropped because observers were slow.
    public var observerDelivery: ObserverDeliveryStatistics {
        let snapshot = delivery.snapshot
        return ObserverDeliveryStatistics(delivered: snapshot.delivered, dropped: snapshot.dropped, samplesDropped: snapshot.samplesDropped)
    }

    let delayController: PlayoutDelayController
    private let source: SubscriptionSource
    private let delivery: ObserverDelivery
    /// The clock the subscription runs on (``Options/clock``).
    private var clock: any PlayoutClock { options.clock }
    private let lifecycle = RunLifecycle<SubscriberQoS>()
    /// The renderer and the subscription once opened; a stop asked for before it opened.
    private let parts = LockedValue<(renderer: Renderer?, subscription: Subscription?, stopBeforeOpen: Bool, loop: SubscriptionEventLoop?)>(
        (nil, nil, false, nil)
    )
    private var telemetry: SubscriberTelemetry?  // set once, in init
    /// The bandwidth limits held (last wins), applied to the video tracks once started.
    private let bandwidthLimiter = BandwidthLimiter()

    /// Subscribes to `source`: an SDP file (RTP/SRTP on its ports); a WHEP endpoint — an
    /// `http(s)://` URL whose path says `whep`, or any with ``WHEPSourceOptions/always`` — which is
    /// connected over WebRTC when the subscription starts and deleted when it ends; or any input
    /// libavformat opens — a media file (played in real time, like ffmpeg's `-re`), or a URL
    /// (`rtsp://`, `srt://`, `udp://`, `rtp://`, `srtp://`, `http://` …), which is reopened with
    /// backoff when it fails or ends.
    ///
    /// - Throws: ``PlayoutError`` for an unreadable or invalid source, a bad key, or media
    ///   Playout cannot receive; ``PlayoutDelayError`` for an invalid playout delay.
    public convenience init(source: String, options: Options = Options()) throws {
        try self.init(source: try SubscriptionSource(parsing: source, options: options), options: options)
    }

    /// Subscribes to the streams `sessionDescription` describes.
    ///
    /// - Throws: as ``init(source:options:)``.
    public convenience init(sessionDescription: SessionDescription, options: Options = Options()) throws {
        try self.init(source: try SubscriptionSource(sessionDescription: sessionDescription, options: options), options: options)
    }

    init(source: SubscriptionSource, options: Options) throws {
        self.source = source
        self.options = options
        mediaKinds = source.mediaKinds
        announcedFrameRate = source.sessionDescription?.media.first { $0.kind == .video }?.frameRate
        delayController = try PlayoutDelayController(configuration: options.playoutDelay)
        // A scheduled override the cap refuses is refused now, as the configured delay is.
        for override in options.overrides { _ = try options.playoutDelay.validate(override.delay) }
        let delay = delayController.effectiveDelay.value
        delivery = ObserverDelivery(
            state: .idle, qos: SubscriberQoS(elapsed: .zero, state: .idle, playoutDelay: delay), playoutDelay: delay,
            capacity: options.observerQueueCapacity
        )
        if let instrument = options.telemetry {
            telemetry = SubscriberTelemetry(
                instrument: instrument, name: options.telemetryTrackerName, tags: options.telemetryTags, clock: options.clock, state: delivery.state.readOnly,
                qos: delivery.qos.readOnly, playoutDelay: delivery.playoutDelay.readOnly, startup: delivery.startup.readOnly)
        }
    }

    /// The libavformat input a driver reads on a thread of its own (nil for RTP sources).
    var demuxedInput: DemuxedInput? {
        if case .demuxer(let input) = source { return input }
        return nil
    }

    /// The tracks as encoded streams, in track order (for a remux sink).
    var encodedStreams: [EncodedStreamDescription] { source.encodedStreams }

    /// Connects `renderer`; one renderer per subscriber, before ``start()``.
    func attach(_ renderer: Renderer) throws {
        try parts.withLock { parts in
            guard !lifecycle.hasStarted, parts.renderer == nil else {
                throw PlayoutError(.invalidState, "a subscriber has one renderer, created before start() (or the one createRenderer() returns)")
            }
            parts.renderer = renderer
        }
    }

    /// The subscriber's renderer, when it is needed — the Phenix guide's
    /// `subscriber.createRenderer()`: the one made with ``Renderer/init(subscriber:sink:)``, else
    /// the null-sink renderer the subscription renders into (made now if there is none yet). Before
    /// or after ``start()``; the same renderer every time, so an override made through it holds
    /// for the whole subscription.
    ///
    /// ```swift
    /// try subscriber.start()
    /// let renderer = subscriber.createRenderer()
    /// let hold = renderer.overridePlayoutDelay(0.9)   // 900 ms until `hold` is dropped
    /// ```
    public func createRenderer() -> Renderer {
        parts.withLock { parts in
            if let renderer = parts.renderer { return renderer }
            let renderer = Renderer(nullSinkWith: delayController, publishedDelay: playoutDelay)
            parts.renderer = renderer
            return renderer
        }
    }

    /// Binds the ports, opens the decoders and starts receiving and rendering (into the null
    /// sink unless a ``Renderer`` was created for this subscriber), on the real clock: on a
    /// ``SubscriptionEventLoop`` of its own — one worker thread, a decode thread per decoded track
    /// (at most one per core), the observer thread — which ends with the subscription.
    ///
    /// - Throws: ``PlayoutError`` when a port cannot be bound (in use, not permitted), a decoder
    ///   cannot be opened or a thread cannot start (nothing is left running then), or when
    ///   ``Options/clock`` is not the real clock (a subscriber on a `ManualClock` is driven by
    ///   PlayoutTesting's `EmbeddedDriver` instead).
    public func start() throws {
        guard options.clock is MonotonicClock else {
            throw PlayoutError(
                .invalidState, "start() plays on the real clock (MonotonicClock); a subscriber on \(type(of: options.clock)) is driven by EmbeddedDriver (PlayoutTesting)"
            )
        }
        let decodeThreads = options.decoding ? min(SubscriptionEventLoop.defaultWorkerCount, source.trackCount) : 0
        let loop = try SubscriptionEventLoop(workers: 1, decodeThreads: decodeThreads, named: "playout-sub")
        defer { loop.closeWhenIdle() }
        parts.withLock { $0.loop = loop }
        try loop.start(self)
    }

    /// The event loop ``start()`` plays on (nil before it).
    package var ownLoop: SubscriptionEventLoop? { parts.withLock { $0.loop } }

    /// Opens the subscription for a driver: the renderer (the null sink unless one was created),
    /// the tracks (binding their sockets when `bindingSockets`), the decoders. Starts once; a
    /// failure ends the subscription as failed and is thrown.
    package func open(bindingSockets: Bool) throws -> Subscription {
        let renderer = createRenderer()
        if !options.decoding, renderer.sink != .null, !renderer.remuxes {
            throw PlayoutError(.invalidOption, "sink \(renderer.sink) writes decoded pictures or samples: subscribe with decoding on, or remux into .mkv/.mp4")
        }
        try lifecycle.begin("a subscriber")
        let start = clock.now
        telemetry?.started(at: start)
        let subscription: Subscription
        let startup = StartupRecorder(start: start, delivery: delivery)
        let relay = TransportFailureRelay()
        var connection: WebRTCConnection?
        do {
            let delay = delayController.effectiveDelay.value.delay
            let tracks: [SubscribedTrack]
            if case .whep(let connector) = source {
                guard bindingSockets else { throw PlayoutError(.invalidState, "a WHEP source connects over real sockets: start() it on the real clock") }
                connection = try connector.connect(
                    clock: clock, delay: delay, switchAfterSilence: options.switchAfterSilence, feedback: options.feedback, seed: options.seed
                ) { event in
                    switch event {
                    case .milestone(let milestone, let instant): startup.record(milestone, at: instant)
                    case .failed(let reason): relay.fail(reason)
                    }
                }
                tracks = connection!.tracks
            } else {
                tracks = try source.makeTracks(
                    delay: delay, switchAfterSilence: options.switchAfterSilence, bind: bindingSockets,
                    feedback: options.feedback, feedbackDestinations: options.feedbackDestinations, seed: options.seed,
                    multicastInterface: try options.multicastInterfaceIndex()
                )
            }
            bandwidthLimiter.attach(tracks)
            // Frames that are neither decoded nor remuxed are only timed: no payload is copied.
            if !options.decoding, !renderer.remuxes { for track in tracks { track.elidePayloads() } }
            subscription = try Subscription(
                clock: clock, start: start, options: options, delayController: delayController, delivery: delivery, tracks: tracks,
                renderer: renderer, bandwidthLimiter: bandwidthLimiter, connection: connection, startup: startup
            ) { [weak self] final in self?.ended(final) }  // weakly: the subscriber holds the subscription; its driver holds the subscriber until the end
            relay.attach(subscription)
        } catch {
            connection?.close(now: clock.now)
            delivery.post(.state(.failed(reason: "\(error)")))
            delivery.close()
            ended(SubscriberQoS(elapsed: .zero, state: .failed(reason: "\(error)"), playoutDelay: delayController.effectiveDelay.value))
            throw error
        }
        let stopped = parts.withLock {
            $0.subscription = subscription
            return $0.stopBeforeOpen
        }
        if stopped { subscription.stop() }
        return subscription
    }

    /// The end (the subscription finished, or could not open): telemetry's last heartbeat and
    /// viewend (the observers saw the final values), then ``waitUntilEnded()`` returns.
    private func ended(_ final: SubscriberQoS) {
        telemetry?.finish(final: final)
        lifecycle.finish(final)
    }

    /// Stops receiving and rendering; ``waitUntilEnded()`` returns once the playout loops have
    /// finished the frame in hand, the sink is closed and the observers saw the final values.
    public func stop() {
        // The subscription's state machine holds the stop (the next decisions finish); before it
        // exists, it is handed over when it opens.
        let subscription = parts.withLock { parts in
            if parts.subscription == nil { parts.stopBeforeOpen = true }
            return parts.subscription
        }
        subscription?.stop()
        // A WHEP offer under way is abandoned (its session, if the server made one, deleted).
        if subscription == nil, case .whep(let connector) = source { connector.cancel() }
    }

    /// Blocks until the subscription ends (duration, ``stop()``, the end of a file, or a failure)
    /// and the observers have seen the final values; returns the final QoS sample (rates over the
    /// whole run).
    public func waitUntilEnded() -> SubscriberQoS {
        lifecycle.wait()
    }

    /// The per-frame record of the run, when ``Options/frameLogCapacity`` asked for one (nil
    /// before ``start()``). Read it after ``waitUntilEnded()``: a snapshot taken while playing
    /// makes the next frame's append copy the log.
    public var frameLog: FrameLog? {
        parts.withLock { $0.subscription?.frameLog }
    }

    /// The WebRTC transport's counters (a WHEP source, once connected; nil otherwise).
    package var transportStatistics: WebRTCConnection.Statistics? {
        parts.withLock { $0.subscription?.connection?.snapshot }
    }

    /// A QoS sample now (on demand; rates since the last periodic sample).
    public func sampleQoS() -> SubscriberQoS {
        if let subscription = parts.withLock({ $0.subscription }) { return subscription.sample() }
        return delivery.qos.value
    }

    /// Limits the video bandwidth the sender may use to `bitsPerSecond`, told to it as REMB and
    /// TMMBR (RFC 5104) where its SDP announces them (`goog-remb`, `ccm tmmbr`), at once and with
    /// every receiver report while it holds. The last limit set wins; releasing an earlier one
    /// changes nothing, releasing the one in effect returns to no limit — the shape of
    /// ``Renderer/overridePlayoutDelay(_:)``. May be called before ``start()``.
    ///
    /// ```swift
    /// let limit = try subscriber.limitBandwidth(800_000)   // 800 kbit/s
    /// …
    /// limit.dispose()                                       // no limit again
    /// ```
    ///
    /// - Throws: ``PlayoutError`` (`invalidOption`) for 0 bits per second.
    public func limitBandwidth(_ bitsPerSecond: UInt64) throws -> any Disposable {
        guard bitsPerSecond > 0 else {
            throw PlayoutError(.invalidOption, "limitBandwidth needs a positive number of bits per second, e.g. limitBandwidth(800_000) for 800 kbit/s")
        }
        return bandwidthLimiter.hold(bitsPerSecond)
    }

    /// The bandwidth limit in effect (nil: none).
    public var bandwidthLimit: UInt64? { bandwidthLimiter.value }

}

/// Hands a WebRTC transport's failure (ICE, consent, DTLS) to its subscription, which exists
/// only after the transport connected; a failure before that is kept and handed over then.
private final class TransportFailureRelay: @unchecked Sendable {
    private let lock = ConditionLock()
    /// Weakly: the subscription holds the transport, which holds this relay.
    private weak var subscription: Subscription?  // lock
    private var failure: String?  // lock

    func attach(_ subscription: Subscription) {
        let failure = lock.withLock {
            self.subscription = subscription
            return self.failure
        }
        if let failure { subscription.fail(reason: failure) }
    }

    func fail(_ reason: String) {
        let subscription = lock.withLock {
            if self.subscription == nil, failure == nil { failure = reason }
            return self.subscription
        }
        subscription?.fail(reason: reason)
    }
}

/// The ``Subscriber/limitBandwidth(_:)`` holds of one subscriber (last wins) and the video
/// tracks they apply to: set from any thread (the API, the scheduled limits of the control
/// thread); each change goes to the tracks' receivers, which tell the sender at their next poll.
/// The limit in effect is handed to the tracks under the lock, so two threads setting limits at
/// once leave the tracks with the one that won (the tracks' own lock is never held while this
/// one is taken).
final class BandwidthLimiter: @unchecked Sendable {
    private let state = LockedValue<(limits: LastWins<UInt64>, tracks: [SubscribedTrack])>((LastWins(), []))

    /// The limit in effect (nil: none).
    var value: UInt64? { state.withLock { $0.limits.value } }

    /// The tracks started: the limit in effect applies to their video from now on.
    func attach(_ tracks: [SubscribedTrack]) {
        state.withLock { state in
            state.tracks = tracks.filter { $0.kind == .video }
            for track in state.tracks { track.setBandwidthLimit(state.limits.value) }
        }
    }

    /// Holds `bitsPerSecond` until the returned disposable is disposed or released.
    func hold(_ bitsPerSecond: UInt64) -> any Disposable {
        let id = state.withLock { state in
            let id = state.limits.set(bitsPerSecond)
            for track in state.tracks { track.setBandwidthLimit(bitsPerSecond) }
            return id
        }
        return ClosureDisposable { [weak self] in self?.release(id) }
    }

    private func release(_ id: UInt64) {
        state.withLock { state in
            guard state.limits.release(id) != nil else { return }
            for track in state.tracks { track.setBandwidthLimit(nil) }
        }
    }
}

/// What a subscriber's observer queue did.
public struct ObserverDeliveryStatistics: Equatable, Sendable {
    /// Updates (state, QoS samples, delay changes) handed to the observables.
    public var delivered: Int
    /// Updates dropped because observers did not keep up (the oldest go first).
    public var dropped: Int
    /// QoS samples among the dropped.
    public var samplesDropped: Int
}
