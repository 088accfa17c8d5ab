import PlayoutCodec
import PlayoutCore
import PlayoutJitter
import PlayoutRTP
import PlayoutTelemetry

/// One received track: its sockets (intake thread), its receive pipeline (filled by the intake
/// thread, polled by the track's playout loop, under `lock` — held only to file packets or to
/// take the next frame, never while decoding), and what the playout loop measured.
final class SubscribedTrack: @unchecked Sendable {
    /// A bound socket and what it carries.
    struct Socket {
        var receiver: UDPReceiver
        var isControl: Bool
    }

    /// How to open this track's decoder.
    struct DecoderSetup {
        var codec: Codec
        var extradata: [UInt8] = []
        var sampleRate = 0
        var channelCount = 0
    }

    /// What the playout loop measured (under `lock`).
    struct Playback {
        var lastRender: MonotonicInstant?
        var framesPresented = 0
        var framesPresentedLate = 0
        var renderError = DurationHistogram()
        var latency = DurationHistogram()
        var transit = DurationHistogram()
        var decoder = FFmpegDecoder.Statistics()
        var width = 0
        var height = 0
    }

    /// The track's position among the subscriber's tracks.
    let index: Int
    let kind: MediaKind
    let codec: Codec
    /// The RTP port (0 for a libavformat input).
    let port: UInt16
    let decoderSetup: DecoderSetup
    private(set) var receivers: [Socket] = []  // intake thread
    private let lock = ConditionLock()
    // Guarded by `lock`:
    private var pipeline: TrackPipeline
    private var delay: Duration
    private var appliedDelay: Duration
    private var stopping = false
    /// Bumped by everything that can change what a poll returns (packets, a delay change, a
    /// stop), so the playout loop never sleeps through one.
    private var generation = 0
    private var loopWaits = false
    /// The playout loop holds nothing and the pipeline had nothing for it at its last poll.
    private var loopIdle = false
    private var playback = Playback()

    /// A track of an SDP media section; `bind` binds its sockets (deterministic tests feed
    /// datagrams by hand instead).
    init(index: Int, kind: MediaKind, media: MediaDescription, session: SessionDescription?, delay: Duration, bind: Bool = true) throws {
        self.index = index
        self.kind = kind
        port = media.port
        pipeline = try TrackPipeline(track: TrackID(rawValue: UInt32(index)), media: media, delay: delay)
        codec = pipeline.codec
        self.delay = delay
        appliedDelay = delay
        let map = media.rtpMap(for: pipeline.payloadType)
        decoderSetup = DecoderSetup(codec: pipeline.codec, sampleRate: Int(map?.clockRate ?? 0), channelCount: Int(map?.channels ?? 0))
        guard bind else { return }
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
    init(index: Int, stream: FFmpegDemuxer.Stream, delay: Duration) throws {
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
        decoderSetup = DecoderSetup(codec: codec, extradata: stream.extradata, sampleRate: stream.sampleRate, channelCount: stream.channelCount)
    }

    /// Binds the address the SDP names: a multicast group is joined, a unicast address is
    /// received on every interface (senders address this host by any of its names).
    private static func bind(host: String, port: UInt16) throws(UDPError) -> UDPReceiver {
        let multicast = SocketAddress.isMulticastHost(host)
        let bindHost = multicast ? host : (host.contains(":") ? "::" : "0.0.0.0")
        return try UDPReceiver(bindingTo: SocketAddress(host: bindHost, port: port))
    }

    // MARK: Intake side

    /// Binds `socket`'s address again after a failure (intake thread).
    func reopen(_ socket: Socket) throws -> Socket {
        let address = socket.receiver.localAddress
        let fresh = Socket(receiver: try UDPReceiver(bindingTo: address), isControl: socket.isControl)
        if let index = receivers.firstIndex(where: { $0.receiver === socket.receiver }) { receivers[index] = fresh }
        return fresh
    }

    /// Receives one batch from `socket` into the pipeline (intake thread).
    func receive(from socket: Socket) throws {
        lock.lock()
        defer { unlockAfterDelivery() }
        try socket.receiver.receive(timeout: .zero) { datagram in
            if socket.isControl {
                pipeline.receiveControl(datagram.mutableBytes, length: datagram.bytes.count)
            } else {
                pipeline.receive(datagram.mutableBytes, length: datagram.bytes.count, arrival: datagram.arrival)
            }
        }
    }

    /// Takes one datagram that arrived at `arrival` (as ``receive(from:)`` does for each datagram
    /// of a batch; deterministic tests call it directly). RTCP when `control`.
    func deliver(_ bytes: UnsafeMutableRawBufferPointer, length: Int, arrival: MonotonicInstant, control: Bool = false) {
        lock.lock()
        defer { unlockAfterDelivery() }
        if control {
            pipeline.receiveControl(bytes, length: length)
        } else {
            pipeline.receive(bytes, length: length, arrival: arrival)
        }
    }

    /// Takes an assembled frame (libavformat input).
    func receive(frame: EncodedFrame) {
        lock.lock()
        defer { unlockAfterDelivery() }
        pipeline.receive(frame: frame)
    }

    /// The source was reopened: its timestamps start again.
    func restart() {
        lock.lock()
        defer { unlockAfterDelivery() }
        pipeline.restart()
    }

    /// The delay in effect changed (any thread).
    func setDelay(_ delay: Duration) {
        lock.lock()
        defer { unlockAfterDelivery() }
        self.delay = delay
    }

    /// Asks the playout loop to end.
    func requestStop() {
        lock.lock()
        defer { unlockAfterDelivery() }
        stopping = true
    }

    /// Unlocks after a change, waking the playout loop if it waits.
    private func unlockAfterDelivery() {
        generation &+= 1
        if loopWaits { lock.broadcast() }
        lock.unlock()
    }

    // MARK: Playout side

    /// What the pipeline says to do at `now` (a frame released `lead` before its render time),
    /// with the generation it saw; nil once stopping. `loopHoldsNothing`: the loop has no decoded
    /// frame waiting (with an idle pipeline, the track is drained).
    func poll(now: MonotonicInstant, lead: Duration?, loopHoldsNothing: Bool) -> (action: TrackPipeline.Action, generation: Int)? {
        lock.withLock {
            guard !stopping else { return nil }
            if delay != appliedDelay {
                pipeline.setDelay(delay)
                appliedDelay = delay
            }
            let action = pipeline.poll(now: now, lead: lead)
            if case .idle = action { loopIdle = loopHoldsNothing } else { loopIdle = false }
            return (action, generation)
        }
    }

    /// Waits until `deadline` (nil: until woken), unless anything changed since `generation`
    /// (playout thread, real clock).
    func wait(until deadline: MonotonicInstant?, generation seen: Int) {
        lock.withLock {
            guard generation == seen, !stopping else { return }
            loopWaits = true
            lock.wait(until: deadline)
            loopWaits = false
        }
    }

    /// Whether the loop was asked to stop.
    var isStopping: Bool { lock.withLock { stopping } }

    /// Records what the playout loop did with a frame and gives its bytes back.
    func finished(_ frame: EncodedFrame, decoder: FFmpegDecoder.Statistics, update: (inout Playback) -> Void) {
        lock.withLock {
            update(&playback)
            playback.decoder = decoder
            pipeline.recycle(frame.bytes)
        }
    }

    /// Records measurements that belong to no frame (pictures flushed at the end).
    func record(decoder: FFmpegDecoder.Statistics, update: (inout Playback) -> Void = { _ in }) {
        lock.withLock {
            update(&playback)
            playback.decoder = decoder
        }
    }

    /// When `mediaTime` was captured on the sender's wall clock (nanoseconds since 1970).
    func captureTime(of mediaTime: MediaTime) -> Int64? {
        lock.withLock { pipeline.captureTime(of: mediaTime) }
    }

    // MARK: Observation

    /// What the subscription's state machine looks at.
    func status() -> SubscriptionStateMachine.TrackStatus {
        lock.withLock {
            let statistics = pipeline.statistics
            let failures = pipeline.srtpStatistics?.authFailures ?? 0
            return SubscriptionStateMachine.TrackStatus(
                lastRender: playback.lastRender, hasQueuedFrames: statistics.frames.bufferedFrames > 0,
                isDrained: loopIdle && statistics.frames.bufferedFrames == 0,
                authenticationFailuresOnly: statistics.network.packetsReceived == 0 ? failures : 0, port: port
            )
        }
    }

    /// This track's QoS now (rates not yet measured), one consistent snapshot.
    func qos(playoutDelay: EffectivePlayoutDelay) -> TrackQoS {
        lock.withLock {
            let statistics = pipeline.statistics
            let network = statistics.network
            let frames = statistics.frames
            var qos = TrackQoS(kind: kind, codec: codec)
            let srtp = pipeline.srtpStatistics
            qos.packetsReceived = network.packetsReceived
            qos.packetsLost = network.packetsLost
            qos.packetsDiscarded = network.packetsDiscarded
            qos.packetsDuplicated = network.packetsDuplicated + (srtp?.replayDrops ?? 0)
            qos.bytesReceived = network.bytesReceived
            qos.jitter = Duration(exactlySeconds: network.jitter) ?? .zero
            qos.authFailures = srtp?.authFailures
            qos.replayDrops = srtp?.replayDrops
            qos.restarts = pipeline.restarts
            qos.framesReceived = pipeline.framesReceived
            qos.framesDecoded = playback.decoder.framesDecoded
            qos.keyFramesDecoded = playback.decoder.keyFramesDecoded
            qos.decodeErrors = playback.decoder.decodeErrors
            qos.totalDecodeTime = playback.decoder.totalDecodeTime
            // Rendered means presented: a frame released for rendering counts once its picture
            // reached the sink.
            qos.framesRendered = playback.framesPresented
            qos.framesRenderedLate = playback.framesPresentedLate
            qos.framesSkipped = frames.framesSkipped
            qos.totalSkippedDuration = frames.totalSkippedDuration
            qos.framesIncomplete = pipeline.depacketizerStatistics.framesDiscarded
            qos.framesDroppedWaitingForKeyframe = pipeline.framesDroppedWaitingForKeyframe
            qos.framesDroppedOverflow = frames.framesDroppedOverflow
            qos.framesDroppedOnRestart = frames.framesDroppedOnRestart
            qos.framesDropped = qos.framesSkipped + qos.framesDroppedOverflow + qos.framesDroppedOnRestart + qos.decodeErrors
                + qos.framesIncomplete + qos.framesDroppedWaitingForKeyframe
            qos.frameWidth = playback.width
            qos.frameHeight = playback.height
            qos.totalInterFrameDelay = frames.totalInterFrameDelay
            qos.totalSquaredInterFrameDelay = frames.totalSquaredInterFrameDelay
            qos.freezeCount = frames.freezeCount
            qos.totalFreezesDuration = frames.totalFreezesDuration
            qos.pauseCount = frames.pauseCount
            qos.totalPausesDuration = frames.totalPausesDuration
            qos.delayPauseCount = frames.delayPauseCount
            qos.totalDelayPausesDuration = frames.totalDelayPausesDuration
            qos.playoutDelay = playoutDelay
            qos.jitterBufferDelay = frames.jitterBufferDelay
            qos.jitterBufferEmittedCount = frames.jitterBufferEmittedCount
            qos.jitterBufferTargetDelay = frames.jitterBufferTargetDelay
            qos.jitterBufferMinimumDelay = frames.jitterBufferMinimumDelay
            qos.bufferedDuration = frames.bufferedDuration
            qos.bufferedFrames = frames.bufferedFrames
            qos.bufferedBytes = frames.bufferedBytes
            qos.renderError = playback.renderError
            qos.endToEndLatency = playback.latency
            qos.transit = playback.transit
            return qos
        }
    }
}

extension SocketAddress {
    /// Whether `host` is a multicast group address.
    static func isMulticastHost(_ host: String) -> Bool {
        (try? SocketAddress(host: host, port: 0))?.isMulticast ?? false
    }
}
