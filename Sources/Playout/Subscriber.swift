import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import Logging
public import PlayoutCore
import PlayoutCodec
public import PlayoutJitter
public import PlayoutRTP

/// Subscribes to an RTP/SRTP stream described by an SDP file: receives on the SDP's ports,
/// orders, depacketizes and schedules every track, and hands each frame at its render time to a
/// ``Renderer``, on the real monotonic clock; reports `state` and `qos` as observables.
///
/// Threads: one intake thread receives every socket (it never decodes, so a slow decode cannot
/// delay packet reception) and one playout thread per track decodes and presents. A sender
/// that stops and comes back (same or new SSRC or sequence base) is picked up again; a socket
/// that fails is reopened with backoff. Both are visible as state changes.
///
/// ```swift
/// let subscriber = try Subscriber(source: "stream.sdp", options: .init(duration: .seconds(20)))
/// let renderer = try Renderer(subscriber: subscriber, sink: .null)
/// let samples = subscriber.qos.subscribe { print($0.tracks[.video]?.statistics.frames.framesRendered ?? 0) }
/// try subscriber.start()
/// let summary = subscriber.waitUntilEnded()
/// ```
public final class Subscriber: @unchecked Sendable {
    /// Subscription settings.
    public struct Options: Sendable {
        /// The configured playout delay and its hard cap.
        public var playoutDelay: PlayoutDelay.Configuration
        /// How long to play (nil: until ``Subscriber/stop()``).
        public var duration: Duration?
        /// How often a QoS sample is taken.
        public var qosInterval: Duration
        /// How long nothing may render before the state turns `stalled`.
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

        public init(
            playoutDelay: PlayoutDelay.Configuration = .init(), duration: Duration? = nil, qosInterval: Duration = .seconds(1),
            stallTimeout: Duration = .seconds(1), srtpKey: SRTPKeyingMaterial? = nil, decoderThreads: Int = 1, overrides: [ScheduledOverride] = []
        ) {
            self.overrides = overrides
            self.playoutDelay = playoutDelay
            self.duration = duration
            self.qosInterval = qosInterval
            self.stallTimeout = stallTimeout
            self.srtpKey = srtpKey
            self.decoderThreads = decoderThreads
        }
    }

    /// The session description being received (nil for a libavformat input).
    public let sessionDescription: SessionDescription?
    /// The kinds of media received.
    public let mediaKinds: Set<MediaKind>
    /// The video frame rate the source announces, if it does.
    public let announcedFrameRate: Double?
    public let options: Options
    /// The subscription's state.
    public var state: ReadOnlyObservable<SubscriberState> { stateObservable.readOnly }
    /// The latest QoS sample, updated every ``Options/qosInterval``.
    public var qos: ReadOnlyObservable<SubscriberQoS> { qosObservable.readOnly }
    /// The playout delay in effect (the configured one, or the override in effect).
    public var playoutDelay: ReadOnlyObservable<EffectivePlayoutDelay> { delayController.effectiveDelay }

    let delayController: PlayoutDelayController
    let clock = MonotonicClock()
    private let stateObservable = Observable(SubscriberState.idle)
    private let qosObservable: Observable<SubscriberQoS>
    private let logger = Logger(label: "playout.subscriber")
    private let input: Input
    private let lifecycle = ConditionLock()
    private var started = false  // lifecycle
    private var stopRequested = false  // lifecycle
    private var inputEnded = false  // lifecycle: a file source reached its end
    private var reconnecting = false  // lifecycle: a source is being reopened
    private var finished = false  // lifecycle
    private var startInstant = MonotonicInstant.zero
    private var tracks: [SubscribedTrack] = []
    private var overrides = OverrideTimetable([], start: .zero)  // intake thread
    private var finalSample: SubscriberQoS?  // lifecycle
    private var renderer: Renderer?  // lifecycle; released at the end (the renderer holds its subscriber)

    /// Subscribes to `source`: an SDP file (RTP/SRTP on its ports), or any input libavformat
    /// opens — a media file (played in real time, like ffmpeg's `-re`), or a URL (`rtsp://`,
    /// `srt://`, `udp://`, `rtp://`, `srtp://`, `http://` …), which is reopened with backoff when it
    /// fails or ends.
    ///
    /// - Throws: ``PlayoutError`` for an unreadable or invalid source, a bad key, or media
    ///   Playout cannot receive; ``PlayoutDelayError`` for an invalid playout delay.
    public convenience init(source: String, options: Options = Options()) throws {
        let isURL = source.contains("://") && !source.hasPrefix("file://")
        if !isURL, let text = Self.sdpText(at: source) {
            let description: SessionDescription
            do {
                description = try SessionDescription(parsing: text)
            } catch {
                throw PlayoutError(.invalidSource, "\(source): \(error)")
            }
            try self.init(sessionDescription: description, options: options)
            return
        }
        if !isURL, access(source.hasPrefix("file://") ? String(source.dropFirst(7)) : source, R_OK) != 0 {
            throw PlayoutError(.invalidSource, "cannot read \(source): no such file (give an SDP file, a media file or a URL)")
        }
        try self.init(demuxing: source, isFile: !isURL, options: options)
    }

    /// The text of `path` when it is an SDP file (starts with `v=`).
    private static func sdpText(at path: String) -> String? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        // An SDP is small; a larger file is media (or not an SDP).
        var bytes = [UInt8](repeating: 0, count: 1 << 20)
        let count = fread(&bytes, 1, bytes.count, file)
        guard count >= 2, count < bytes.count, bytes[0] == UInt8(ascii: "v"), bytes[1] == UInt8(ascii: "=") else { return nil }
        return String(decoding: bytes[..<count], as: UTF8.self)
    }

    /// Opens a libavformat input now (so a bad one fails before anything starts).
    private init(demuxing url: String, isFile: Bool, options: Options) throws {
        // A live input that stops sending fails after 2 s instead of blocking; it is reopened.
        var formatOptions: [String: String] = isFile ? [:] : ["rw_timeout": "2000000", "timeout": "2000000"]
        if let key = options.srtpKey {
            formatOptions["srtp_in_suite"] = key.suite.name
            formatOptions["srtp_in_params"] = key.base64
        }
        let demuxer = try FFmpegDemuxer(url: url, options: formatOptions)
        var streams: [FFmpegDemuxer.Stream] = []
        for kind in [MediaKind.video, .audio] {
            guard let stream = demuxer.streams.first(where: { $0.kind == kind && $0.codec != nil && $0.codec != .av1 }) else { continue }
            streams.append(stream)
        }
        guard !streams.isEmpty else {
            let found = demuxer.streams.map(\.codecName).joined(separator: ", ")
            throw PlayoutError(.unsupportedMedia, "\(url) has no stream Playout decodes (found: \(found.isEmpty ? "none" : found))")
        }
        sessionDescription = nil
        mediaKinds = Set(streams.compactMap(\.kind))
        announcedFrameRate = nil
        self.options = options
        input = .demuxer(DemuxedInput(url: url, options: formatOptions, isFile: isFile, streams: streams, opened: demuxer))
        delayController = try PlayoutDelayController(configuration: options.playoutDelay)
        qosObservable = Observable(SubscriberQoS(elapsed: .zero, state: .idle, playoutDelay: delayController.effectiveDelay.value))
    }

    /// Subscribes to the streams `sessionDescription` describes.
    ///
    /// - Throws: as ``init(source:options:)``.
    public init(sessionDescription: SessionDescription, options: Options = Options()) throws {
        self.sessionDescription = sessionDescription
        self.options = options
        announcedFrameRate = sessionDescription.media.first { $0.kind == .video }?.frameRate
        delayController = try PlayoutDelayController(configuration: options.playoutDelay)
        var media: [(MediaKind, MediaDescription)] = []
        for var section in sessionDescription.media {
            guard let kind = section.kind == .video ? MediaKind.video : section.kind == .audio ? MediaKind.audio : nil else { continue }
            guard !media.contains(where: { $0.0 == kind }) else {
                logger.warning("only the first \(kind.rawValue) section is received; ignoring the one on port \(section.port)")
                continue
            }
            if let key = options.srtpKey {
                section.crypto = [CryptoAttribute(suite: SDPCryptoSuite(rawValue: key.suite.name), keys: [.init(keyAndSalt: key.concatenated)])]
            }
            // Fail now, not after start, on a codec or key the pipeline cannot take.
            _ = try TrackPipeline(track: TrackID(rawValue: UInt32(media.count)), media: section, delay: options.playoutDelay.delay)
            media.append((kind, section))
        }
        guard !media.isEmpty else { throw PlayoutError(.unsupportedMedia, "the SDP has no audio or video section to receive") }
        input = .rtp(media.map { (kind: $0.0, description: $0.1) })
        mediaKinds = Set(media.map(\.0))
        qosObservable = Observable(SubscriberQoS(elapsed: .zero, state: .idle, playoutDelay: delayController.effectiveDelay.value))
    }

    /// The tracks as encoded streams, in track order (for a remux sink): what the SDP or the
    /// container says of each. H.264/H.265 configuration is left to the first key frame's
    /// parameter sets (the frames are Annex B, while an MP4's extradata is avcC). Every entry
    /// of `input` has a codec (checked when the subscriber was created), so positions match the
    /// tracks'.
    var encodedStreams: [EncodedStreamDescription] {
        switch input {
        case .rtp(let media):
            return media.compactMap { _, section in
                guard let payloadType = section.payloadTypes.first, let map = section.rtpMap(for: payloadType),
                      let codec = Codec(encodingName: map.encodingName) else { return nil }
                let isAudio = codec.kind == .audio
                return EncodedStreamDescription(
                    codec: codec, clockRate: Int32(clamping: map.clockRate),
                    extradata: codec == .aac ? section.formatParameters(for: payloadType)?.config ?? [] : [],
                    sampleRate: isAudio ? Int(map.clockRate) : 0, channelCount: isAudio ? Int(map.channels ?? 1) : 0
                )
            }
        case .demuxer(let demuxed):
            return demuxed.streams.compactMap { stream in
                guard let codec = stream.codec else { return nil }
                let isAnnexB = codec == .h264 || codec == .h265
                return EncodedStreamDescription(
                    codec: codec, clockRate: stream.clockRate, extradata: isAnnexB ? [] : stream.extradata,
                    width: stream.width, height: stream.height, sampleRate: stream.sampleRate, channelCount: stream.channelCount
                )
            }
        }
    }

    /// When ``start()`` was called (time zero of a remuxed file). Set before the playout threads
    /// start, which read it.
    var startedAt: MonotonicInstant { startInstant }

    /// Connects `renderer`; one renderer per subscriber, before ``start()``.
    func attach(_ renderer: Renderer) throws {
        try lifecycle.withLock {
            guard !started, self.renderer == nil else {
                throw PlayoutError(.invalidState, "a subscriber has one renderer, created before start()")
            }
            self.renderer = renderer
        }
    }

    /// Binds the ports and starts receiving and rendering (into the null sink unless a
    /// ``Renderer`` was created for this subscriber).
    ///
    /// - Throws: ``PlayoutError`` when a port cannot be bound (in use, not permitted) or a
    ///   decoder cannot be opened; nothing is left running then.
    public func start() throws {
        if lifecycle.withLock({ self.renderer == nil }) { _ = try Renderer(subscriber: self, sink: .null) }
        let renderer: Renderer = try lifecycle.withLock {
            guard !started, let renderer = self.renderer else { throw PlayoutError(.invalidState, "a subscriber starts once") }
            started = true
            return renderer
        }
        stateObservable.value = .connecting
        startInstant = clock.now
        var created: [SubscribedTrack] = []
        do {
            let delay = delayController.effectiveDelay.value.delay
            switch input {
            case .rtp(let media):
                for (index, entry) in media.enumerated() {
                    created.append(try SubscribedTrack(
                        index: index, kind: entry.kind, media: entry.description, session: sessionDescription,
                        delay: delay, decoderThreads: options.decoderThreads
                    ))
                }
            case .demuxer(let demuxed):
                for (index, stream) in demuxed.streams.enumerated() {
                    created.append(try SubscribedTrack(index: index, stream: stream, delay: delay, decoderThreads: options.decoderThreads))
                }
            }
        } catch {
            stateObservable.value = .failed(reason: "\(error)")
            throw error
        }
        let tracks = created
        self.tracks = tracks
        stateObservable.value = .buffering
        let delayWatch = delayController.effectiveDelay.subscribe { [tracks] effective in
            for track in tracks { track.setDelay(effective.delay) }
        }
        let group = DispatchGroup()
        do {
            for track in tracks {
                group.enter()
                do {
                    try startThread(named: "playout-\(track.kind.rawValue)") { [self] in
                        renderer.play(track, subscriber: self)
                        group.leave()
                    }
                } catch {
                    group.leave()
                    throw error
                }
            }
            try startThread(named: "playout-intake") { [self] in
                receive(tracks)
                for track in tracks { track.requestStop() }
                group.wait()
                delayWatch.dispose()
                renderer.finish()
                var finalState = SubscriberState.ended
                if case .failed = state.value { finalState = state.value }
                finish(with: sample(state: finalState))
            }
        } catch {
            // No thread could be started: the playout threads already running end at once.
            for track in tracks { track.requestStop() }
            delayWatch.dispose()
            stateObservable.value = .failed(reason: "\(error)")
            finish(with: sample(state: state.value))
            throw error
        }
        if case .demuxer(let demuxed) = input {
            do {
                try startThread(named: "playout-demux") { [self] in demux(demuxed, into: tracks) }
            } catch {
                stop()  // the intake thread ends the subscription
                throw error
            }
        }
    }

    /// Publishes the final sample and wakes ``waitUntilEnded()``.
    private func finish(with final: SubscriberQoS) {
        if final.state == .ended { stateObservable.value = .ended }
        qosObservable.value = final
        lifecycle.withLock {
            renderer = nil
            finalSample = final
            finished = true
            lifecycle.broadcast()
        }
    }

    /// Stops receiving and rendering; ``waitUntilEnded()`` returns once the playout threads have
    /// finished the frame in hand and the sink is closed.
    public func stop() {
        lifecycle.withLock {
            stopRequested = true
            lifecycle.broadcast()
        }
    }

    /// Blocks until the subscription ends (duration, ``stop()``, or failure) and returns the
    /// final QoS sample.
    public func waitUntilEnded() -> SubscriberQoS {
        lifecycle.withLock {
            while !finished { lifecycle.wait(until: nil) }
            return finalSample!
        }
    }

    /// A QoS sample now (on demand; the intake thread takes one every ``Options/qosInterval``).
    public func sampleQoS() -> SubscriberQoS {
        sample(state: state.value)
    }

    private func sample(state: SubscriberState) -> SubscriberQoS {
        let delay = delayController.effectiveDelay.value
        var qos = SubscriberQoS(elapsed: startInstant.duration(to: clock.now), state: state, playoutDelay: delay)
        for track in tracks {
            var track = track.qos
            track.statistics.playoutDelay = delay
            qos.tracks[track.kind] = track
        }
        return qos
    }

    /// The intake loop: waits on every socket at once, hands datagrams to their track, takes QoS
    /// samples and follows the state, until the duration passes or ``stop()``.
    private func receive(_ tracks: [SubscribedTrack]) {
        let end = options.duration.map { startInstant.advanced(by: $0) }
        var nextSample = startInstant.advanced(by: options.qosInterval)
        var sockets = tracks.flatMap { track in track.receivers.map { (track, $0) } }
        var descriptors = sockets.map { pollfd(fd: $0.1.receiver.fileDescriptor, events: Int16(POLLIN), revents: 0) }
        var backoff = Duration.milliseconds(100)
        var nextStateCheck = startInstant
        // Overrides held to the end stay in effect for the final sample (and until the
        // subscriber is released).
        overrides = OverrideTimetable(options.overrides, start: startInstant)
        while !lifecycle.withLock({ stopRequested }), !inputDrained {
            let now = clock.now
            if let end, now >= end { break }
            overrides.apply(now: now, controller: delayController, logger: logger)
            // The state follows within 20 ms (checking it per datagram would lock every track).
            if now >= nextStateCheck {
                nextStateCheck = now.advanced(by: .milliseconds(20))
                updateState(now: now, tracks: tracks)
                if case .failed = stateObservable.value { break }
            }
            if now >= nextSample {
                qosObservable.value = sample(state: stateObservable.value)
                nextSample = nextSample.advanced(by: options.qosInterval)
                if nextSample < now { nextSample = now.advanced(by: options.qosInterval) }
            }
            var wake = min(nextSample, overrides.next ?? nextSample, nextStateCheck)
            if let end { wake = min(wake, end) }
            let timeout = Int32(clamping: min(50, max(0, now.duration(to: wake).nanoseconds / 1_000_000 + 1)))
            let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
            if ready < 0, errno != EINTR {
                logger.error("waiting for datagrams failed: \(String(cString: strerror(errno)))")
                break
            }
            guard ready > 0 else { continue }
            for index in descriptors.indices where descriptors[index].revents != 0 {
                descriptors[index].revents = 0
                let (track, socket) = sockets[index]
                do {
                    try track.receive(from: socket)
                    backoff = .milliseconds(100)
                } catch {
                    // The socket failed: reopen it with backoff, visibly.
                    logger.warning("receiving on \(socket.receiver.localAddress) failed: \(error); reopening in \(backoff.compactDescription)")
                    lifecycle.withLock { reconnecting = true }
                    stateObservable.value = .connecting
                    sleepUntil(clock.now.advanced(by: backoff))
                    backoff = min(backoff * 2, .seconds(5))
                    if let reopened = try? track.reopen(socket) {
                        sockets[index] = (track, reopened)
                        descriptors[index].fd = reopened.receiver.fileDescriptor
                        lifecycle.withLock { reconnecting = false }
                        stateObservable.value = .buffering
                    }
                }
            }
        }
        updateState(now: clock.now, tracks: tracks)
    }

    /// Whether a file source ended and every track rendered what it held (the graceful end).
    private var inputDrained: Bool {
        guard lifecycle.withLock({ inputEnded }) else { return false }
        return tracks.allSatisfy(\.isDrained)
    }

    /// Reads a libavformat input on its own thread (reads block): paces a file in real time,
    /// hands each frame to its track, and reopens a failed or ended URL with backoff.
    private func demux(_ input: DemuxedInput, into tracks: [SubscribedTrack]) {
        var demuxer = input.takeOpened()  // the subscriber keeps no reference: a reopen can bind again
        demuxer?.usesDecodingTimestamps = true
        var pacer = RealTimePacer(clock: clock)
        var backoff = Duration.milliseconds(200)
        var mapping = Self.trackMapping(input.streams, tracks: tracks)
        var latest: [Int: MediaTime] = [:]
        while !lifecycle.withLock({ stopRequested || finished }) {
            guard let current = demuxer else {
                // Reopen, with backoff, visibly.
                lifecycle.withLock { reconnecting = true }
                stateObservable.value = .connecting
                sleepUntil(clock.now.advanced(by: backoff))
                backoff = min(backoff * 2, .seconds(5))
                if let reopened = try? FFmpegDemuxer(url: input.url, options: input.options) {
                    reopened.usesDecodingTimestamps = true
                    demuxer = reopened
                    mapping = Self.trackMapping(reopened.streams.filter { $0.kind != nil }, tracks: tracks)
                    pacer = RealTimePacer(clock: clock)
                    latest = [:]
                    for track in tracks { track.restart() }
                    lifecycle.withLock { reconnecting = false }
                    stateObservable.value = .buffering
                    logger.info("reopened \(input.url)")
                }
                continue
            }
            do {
                guard var frame = try current.read() else {
                    if input.isFile {
                        lifecycle.withLock { inputEnded = true }
                        return
                    }
                    logger.warning("\(input.url) ended; reopening")
                    demuxer = nil
                    continue
                }
                guard let track = mapping[Int(frame.track.rawValue)] else { continue }
                if input.isFile { sleepUntil(pacer.dueInstant(for: frame.mediaTime.duration)) }
                let now = clock.now
                frame.firstArrival = now
                frame.lastArrival = now
                // A sender that restarted behind the same URL: its timestamps start again.
                let stream = Int(frame.track.rawValue)
                if let last = latest[stream], frame.mediaTime < last || frame.mediaTime.duration > last.duration + .seconds(5) {
                    logger.info("\(input.url): timestamps jumped from \(last) to \(frame.mediaTime); restarting the track")
                    track.restart()
                }
                latest[stream] = frame.mediaTime
                track.receive(frame: frame)
                backoff = .milliseconds(200)
            } catch {
                logger.warning("\(error); reopening in \(backoff.compactDescription)")
                demuxer = nil
            }
        }
    }

    /// Demuxer stream index → the track of its kind.
    private static func trackMapping(_ streams: [FFmpegDemuxer.Stream], tracks: [SubscribedTrack]) -> [Int: SubscribedTrack] {
        var mapping: [Int: SubscribedTrack] = [:]
        for track in tracks {
            if let stream = streams.first(where: { $0.kind == track.kind && $0.codec == track.codec }) { mapping[stream.index] = track }
        }
        return mapping
    }

    /// Follows playing / stalled / buffering from what the tracks rendered, and fails when every
    /// datagram fails SRTP authentication (a wrong key).
    private func updateState(now: MonotonicInstant, tracks: [SubscribedTrack]) {
        let current = stateObservable.value
        if case .failed = current { return }
        if lifecycle.withLock({ reconnecting }) { return }
        let status = tracks.map(\.renderStatus)
        let lastRender = status.compactMap(\.lastRender).max()
        let next: SubscriberState
        if let lastRender {
            // Nothing rendered for a while is a stall only when nothing waits to be rendered
            // either: during a delay pause (an override raised the delay) frames are queued.
            let starved = !status.contains { $0.hasQueuedFrames }
            next = lastRender.duration(to: now) > options.stallTimeout && starved ? .stalled : .playing
        } else if let reason = tracks.lazy.compactMap(\.failureReason).first {
            next = .failed(reason: reason)
        } else {
            next = current == .connecting ? .connecting : .buffering
        }
        if next != current {
            stateObservable.value = next
            logger.info("state \(next)")
        }
    }
}

/// Where a subscription's frames come from.
private enum Input {
    /// RTP/SRTP on the ports of these SDP media sections.
    case rtp([(kind: MediaKind, description: MediaDescription)])
    /// A libavformat input.
    case demuxer(DemuxedInput)
}

/// A libavformat input, opened once up front and handed to the reading thread.
private final class DemuxedInput: @unchecked Sendable {
    let url: String
    let options: [String: String]
    let isFile: Bool
    let streams: [FFmpegDemuxer.Stream]
    private let opened: LockedValue<FFmpegDemuxer?>

    init(url: String, options: [String: String], isFile: Bool, streams: [FFmpegDemuxer.Stream], opened: FFmpegDemuxer) {
        self.url = url
        self.options = options
        self.isFile = isFile
        self.streams = streams
        self.opened = LockedValue(opened)
    }

    /// The demuxer opened up front, once.
    func takeOpened() -> FFmpegDemuxer? {
        opened.withLock { demuxer in
            defer { demuxer = nil }
            return demuxer
        }
    }
}

/// Scheduled overrides in time order: set each at its instant, release it `hold` later.
struct OverrideTimetable {
    private var steps: [(at: MonotonicInstant, index: Int, set: Bool)]
    private let planned: [ScheduledOverride]
    private var held: [Int: PlayoutDelayOverride] = [:]

    init(_ planned: [ScheduledOverride], start: MonotonicInstant) {
        self.planned = planned
        steps = planned.enumerated().flatMap { index, override in
            [(start.advanced(by: override.at), index, true)]
                + (override.hold.map { [(start.advanced(by: override.at + $0), index, false)] } ?? [])
        // At one instant, sets go before releases: a new override takes over before an older one
        // lets go (no brief return to the configured delay), and `D@T/0s` sets then releases.
        }.sorted { ($0.at, $0.set ? 0 : 1, $0.index) < ($1.at, $1.set ? 0 : 1, $1.index) }
    }

    /// When the next step is due.
    var next: MonotonicInstant? { steps.first?.at }

    /// Takes the steps due at `now`.
    mutating func apply(now: MonotonicInstant, controller: PlayoutDelayController, logger: Logger) {
        while let step = steps.first, step.at <= now {
            steps.removeFirst()
            if step.set {
                do {
                    held[step.index] = try controller.overridePlayoutDelay(planned[step.index].delay)
                } catch {
                    logger.error("override \(planned[step.index]) refused: \(error)")
                }
            } else {
                held.removeValue(forKey: step.index)?.dispose()
            }
        }
    }
}

extension PlayoutError.Code {
    /// A source (SDP file, URL) cannot be read or understood.
    public static let invalidSource = Self("invalidSource")
    /// An operation that does not fit the object's state (starting twice).
    public static let invalidState = Self("invalidState")
}

extension SocketAddress {
    /// Whether `host` is a multicast group address.
    static func isMulticastHost(_ host: String) -> Bool {
        (try? SocketAddress(host: host, port: 0))?.isMulticast ?? false
    }
}

/// One received track: its sockets and pipeline (shared between the intake thread and the
/// track's playout thread under `lock`), and its decoder (playout thread only).
final class SubscribedTrack: @unchecked Sendable {
    /// A bound socket and what it carries.
    struct Socket {
        var receiver: UDPReceiver
        var isControl: Bool
    }

    /// The track's position among the subscriber's tracks.
    let index: Int
    let kind: MediaKind
    let codec: Codec
    /// The RTP port (0 for a libavformat input).
    let port: UInt16
    let lock = ConditionLock()
    private(set) var receivers: [Socket]
    // Guarded by `lock`:
    var pipeline: TrackPipeline
    private var delay: Duration
    private var appliedDelay: Duration
    private var stopping = false
    private var playerIdle = false
    private var playback = Playback()
    // Playout thread only:
    let decoder: FFmpegDecoder

    /// What the playout thread measured.
    struct Playback {
        var lastRender: MonotonicInstant?
        var renderError = DurationHistogram()
        var latency = DurationHistogram()
        var transit = DurationHistogram()
        var decoder = FFmpegDecoder.Statistics()
        var width = 0
        var height = 0
    }

    init(index: Int, kind: MediaKind, media: MediaDescription, session: SessionDescription?, delay: Duration, decoderThreads: Int) throws {
        self.index = index
        self.kind = kind
        port = media.port
        pipeline = try TrackPipeline(track: TrackID(rawValue: UInt32(index)), media: media, delay: delay)
        codec = pipeline.codec
        self.delay = delay
        appliedDelay = delay
        let map = media.rtpMap(for: pipeline.payloadType)
        decoder = try FFmpegDecoder(
            codec: pipeline.codec, sampleRate: Int(map?.clockRate ?? 0), channelCount: Int(map?.channels ?? 0),
            configuration: .init(threadCount: decoderThreads, threading: .slice)
        )
        let host = media.connection?.address ?? session?.connection?.address ?? "0.0.0.0"
        receivers = [Socket(receiver: try Self.bind(host: host, port: media.port), isControl: false)]
        if !media.rtcpMux, media.port < UInt16.max {
            let port = media.rtcp?.port ?? media.port + 1
            // Sender reports are optional (latency needs them): a busy RTCP port is not fatal.
            if let control = try? Self.bind(host: host, port: port) {
                receivers.append(Socket(receiver: control, isControl: true))
            }
        }
    }

    /// A track of a libavformat input: no sockets, frames come assembled.
    init(index: Int, stream: FFmpegDemuxer.Stream, delay: Duration, decoderThreads: Int) throws {
        guard let codec = stream.codec, let kind = stream.kind else {
            throw PlayoutError(.unsupportedMedia, "stream \(stream.index) (\(stream.codecName)) cannot be decoded")
        }
        self.index = index
        self.kind = kind
        self.codec = codec
        port = 0
        pipeline = try TrackPipeline(track: TrackID(rawValue: UInt32(index)), codec: codec, clockRate: stream.clockRate, delay: delay)
        self.delay = delay
        appliedDelay = delay
        decoder = try FFmpegDecoder(
            codec: codec, extradata: stream.extradata, sampleRate: stream.sampleRate, channelCount: stream.channelCount,
            configuration: .init(threadCount: decoderThreads, threading: .slice)
        )
        receivers = []
    }

    /// Takes an assembled frame (libavformat input).
    func receive(frame: EncodedFrame) {
        lock.withLock {
            pipeline.receive(frame: frame)
            if playerIdle { lock.broadcast() }
        }
    }

    /// The source was reopened: its timestamps start again.
    func restart() {
        lock.withLock { pipeline.restart() }
    }

    /// Whether the playout thread waits with nothing left to render.
    var isDrained: Bool {
        lock.withLock { playerIdle && pipeline.statistics.frames.bufferedFrames == 0 }
    }

    /// Binds the address the SDP names: a multicast group is joined, a unicast address is
    /// received on every interface (senders address this host by any of its names).
    private static func bind(host: String, port: UInt16) throws(UDPError) -> UDPReceiver {
        let multicast = SocketAddress.isMulticastHost(host)
        let bindHost = multicast ? host : (host.contains(":") ? "::" : "0.0.0.0")
        return try UDPReceiver(bindingTo: SocketAddress(host: bindHost, port: port))
    }

    /// Binds `socket`'s address again after a failure.
    func reopen(_ socket: Socket) throws -> Socket {
        let address = socket.receiver.localAddress
        let fresh = Socket(receiver: try UDPReceiver(bindingTo: address), isControl: socket.isControl)
        if let index = receivers.firstIndex(where: { $0.receiver === socket.receiver }) { receivers[index] = fresh }
        return fresh
    }

    /// Receives one batch from `socket` into the pipeline (intake thread); wakes the playout
    /// thread if it waits for data.
    func receive(from socket: Socket) throws {
        lock.lock()
        defer { lock.unlock() }
        try socket.receiver.receive(timeout: .zero) { datagram in
            if socket.isControl {
                pipeline.receiveControl(datagram.mutableBytes, length: datagram.bytes.count)
            } else {
                pipeline.receive(datagram.mutableBytes, length: datagram.bytes.count, arrival: datagram.arrival)
            }
        }
        if playerIdle { lock.broadcast() }
    }

    /// Why this track cannot play, when every datagram failed SRTP authentication.
    var failureReason: String? {
        lock.withLock {
            guard let failures = pipeline.srtpStatistics?.authFailures, failures >= 50, pipeline.statistics.network.packetsReceived == 0 else { return nil }
            return "every SRTP packet on port \(port) fails authentication (\(failures) so far): wrong key?"
        }
    }

    /// The delay in effect changed.
    func setDelay(_ delay: Duration) {
        lock.withLock {
            self.delay = delay
            lock.broadcast()
        }
    }

    func requestStop() {
        lock.withLock {
            stopping = true
            lock.broadcast()
        }
    }

    /// When this track last rendered, and whether frames wait in its scheduler (a deliberate
    /// delay pause, not a stall).
    var renderStatus: (lastRender: MonotonicInstant?, hasQueuedFrames: Bool) {
        lock.withLock { (playback.lastRender, pipeline.statistics.frames.bufferedFrames > 0) }
    }

    /// The next thing to do (playout thread): waits until a frame is released (`lead` before its
    /// render time; the scheduler's decode lead when nil) to be rendered or skipped, or until
    /// `deadline` passes (then `.wait(until: deadline)`; a deadline already past polls once);
    /// nil once stopping.
    func nextAction(clock: MonotonicClock, lead: Duration? = nil, deadline: MonotonicInstant? = nil) -> TrackPipeline.Action? {
        lock.lock()
        defer { lock.unlock() }
        while !stopping {
            if delay != appliedDelay {
                pipeline.setDelay(delay)
                appliedDelay = delay
            }
            let now = clock.now
            let action = pipeline.poll(now: now, lead: lead)
            switch action {
            case .render, .skip:
                return action
            case .wait, .idle:
                // Until the pipeline's next instant (none when idle) or the deadline, if earlier.
                var until: MonotonicInstant?
                if case .wait(let instant) = action { until = instant }
                if let deadline, until.map({ deadline <= $0 }) ?? true {
                    if deadline <= now { return .wait(until: deadline) }
                    until = deadline
                }
                playerIdle = until == nil  // only then does a new frame need to wake this thread
                lock.wait(until: until)
                playerIdle = false
            }
        }
        return nil
    }

    /// Records what the playout thread did with a frame and gives its bytes back.
    func finished(_ frame: EncodedFrame, update: (inout Playback) -> Void) {
        lock.withLock {
            update(&playback)
            playback.decoder = decoder.statistics
            pipeline.recycle(frame.bytes)
        }
    }

    /// Publishes the decoder's counters (after the final flush).
    func recordDecoderStatistics() {
        lock.withLock { playback.decoder = decoder.statistics }
    }

    /// When `mediaTime` was captured on the sender's wall clock (nanoseconds since 1970).
    func captureTime(of mediaTime: MediaTime) -> Int64? {
        lock.withLock { pipeline.captureTime(of: mediaTime) }
    }

    /// This track's QoS now.
    var qos: TrackQoS {
        lock.withLock {
            var qos = TrackQoS(kind: kind, codec: codec, statistics: pipeline.statistics)
            let depacketizer = pipeline.depacketizerStatistics
            qos.framesReceived = pipeline.framesReceived
            qos.framesIncomplete = depacketizer.framesDiscarded
            qos.framesDroppedWaitingForKeyframe = pipeline.framesDroppedWaitingForKeyframe
            qos.framesDecoded = playback.decoder.framesDecoded
            qos.keyFramesDecoded = playback.decoder.keyFramesDecoded
            qos.totalDecodeTime = playback.decoder.totalDecodeTime
            qos.decodeErrors = playback.decoder.decodeErrors
            qos.frameWidth = playback.width
            qos.frameHeight = playback.height
            qos.authFailures = pipeline.srtpStatistics?.authFailures
            qos.replayDrops = pipeline.srtpStatistics?.replayDrops
            qos.restarts = pipeline.restarts
            qos.renderError = playback.renderError
            qos.endToEndLatency = playback.latency
            qos.transit = playback.transit
            return qos
        }
    }
}
