import PlayoutCodec
import PlayoutCore
import PlayoutJitter
import PlayoutRTP
import PlayoutTelemetry
import Synchronization

/// One received track: its sockets, its ``TrackPipeline`` — the very composition
/// `TrackPipelineTests` test, polled as they poll it — and what the playout loop measured.
///
/// One lock guards all of it, never held while decoding: whoever files packets (the event loop's
/// worker, a libavformat input's reading thread) and the playout loop's poll (release,
/// depacketize, schedule: microseconds) take it in turn, and QoS samples read under it.
package final class SubscribedTrack: @unchecked Sendable {
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

    /// What the playout loop measured (under the lock).
    struct Playback {
        var lastRender: MonotonicInstant?
        /// When the first frame was presented.
        var firstRender: MonotonicInstant?
        /// When the first key frame's last packet arrived (released to the decoder).
        var firstKeyFrame: MonotonicInstant?
        var framesPresented = 0
        var framesPresentedLate = 0
        /// Frames released for decoding ahead of their time that were still held when the run
        /// ended before it: counted with the buffered frames, which wait for their time too.
        var framesHeldAtEnd = 0
        var renderError = DurationHistogram()
        var latency = DurationHistogram()
        var transit = DurationHistogram()
        var decoder = FFmpegDecoder.Statistics()
        /// Whether the frames are decoded (false: the decode statistics are unknown).
        var decoded = true
        var width = 0
        var height = 0
    }

    /// The track's position among the subscriber's tracks.
    let index: Int
    package let kind: MediaKind
    let codec: Codec
    /// The RTP port (0 for a libavformat input).
    let port: UInt16
    /// The interface its multicast group is joined on (nil: the routing table's choice).
    private let multicastInterface: UInt32?
    let decoderSetup: DecoderSetup
    private(set) var receivers: [Socket] = []  // the driver's receiving thread
    /// Guards everything below but the sockets.
    private let lock = ConditionLock()
    private var pipeline: TrackPipeline
    private var playback = Playback()
    /// The playout loop holds nothing and the pipeline had nothing for it at its last poll.
    private var loopIdle = false
    /// The delay in effect as last set (any thread), and as the pipeline applied it (at a poll,
    /// with that poll's instant: a transition starts there).
    private var delay: (delay: Duration, transition: PlayoutDelayTransition, source: PlayoutDelaySource)
    private var appliedDelay: (delay: Duration, transition: PlayoutDelayTransition, source: PlayoutDelaySource)
    /// Counts ``setDelay(_:transition:source:)`` calls (written under `lock`): a render time
    /// computed before the last one may be stale.
    private let delayChanges = Atomic<Int>(0)
    /// Where the sender's RTCP comes from: feedback goes back there (symmetric RTCP, RFC 4961),
    /// unless the subscriber was told where (`fixedDestination`).
    private var feedbackDestination: SocketAddress?
    private let fixedDestination: Bool
    /// The socket feedback leaves from (the RTCP port, or the RTP port with rtcp-mux).
    private var feedbackSocket: UDPReceiver?
    /// SRTCP for the feedback, when the track is encrypted (set under the lock, used by the
    /// feedback turns).
    private var feedbackSession: SRTPSession?
    /// RTCP datagrams the feedback turns sent, and could not send (no destination known yet, a
    /// socket error).
    private var feedbackCounters = (sent: 0, unsent: 0)
    /// ``onAttention(_:)``'s closure.
    private var attention: (@Sendable () -> Void)?

    /// A track of an SDP media section; `bind` binds its sockets (deterministic tests feed
    /// datagrams by hand instead). Another valid source is played once the played one said BYE
    /// or was silent for `switchAfterSilence`.
    /// With `keysFromDTLS` (a WebRTC transport), the track binds nothing: the transport hands it
    /// its datagrams (``deliver(_:length:arrival:control:)``), its keys (``setKeys(inbound:outbound:)``)
    /// and where its feedback goes (``sendFeedback(from:to:)``).
    init(
        index: Int, kind: MediaKind, media: MediaDescription, session: SessionDescription?, delay: Duration,
        switchAfterSilence: Duration = .seconds(1), feedback: TrackReceiver.FeedbackSettings? = nil, feedbackDestination: SocketAddress? = nil,
        bind: Bool = true, keysFromDTLS: Bool = false, multicastInterface: UInt32? = nil
    ) throws {
        self.multicastInterface = multicastInterface
        self.feedbackDestination = feedbackDestination
        fixedDestination = feedbackDestination != nil
        self.index = index
        self.kind = kind
        port = media.port
        let pipeline = try TrackPipeline(
            track: TrackID(rawValue: UInt32(index)), media: media, delay: delay, switchAfterSilence: switchAfterSilence, feedback: feedback,
            keysFromDTLS: keysFromDTLS
        )
        self.pipeline = pipeline
        feedbackSession = try feedback == nil ? nil : pipeline.receiver.keyingMaterial.map { try SRTPSession(keyingMaterial: $0, direction: .outbound) }
        codec = pipeline.codec
        self.delay = (delay, .immediate, .configured)
        appliedDelay = self.delay
        let map = media.rtpMap(for: pipeline.payloadType)
        decoderSetup = DecoderSetup(codec: pipeline.codec, sampleRate: Int(map?.clockRate ?? 0), channelCount: Int(map?.channels ?? 0))
        guard bind, !keysFromDTLS else { return }
        let host = media.connection?.address ?? session?.connection?.address ?? "0.0.0.0"
        receivers = [Socket(receiver: try Self.bind(host: host, port: media.port, interface: multicastInterface), isControl: false)]
        if !media.rtcpMux, media.port < UInt16.max {
            let port = media.rtcp?.port ?? media.port + 1
            // Sender reports are optional (latency needs them): a busy RTCP port is not fatal.
            if let control = try? Self.bind(host: host, port: port, interface: multicastInterface) {
                receivers.append(Socket(receiver: control, isControl: true))
            }
        }
        if feedback != nil { feedbackSocket = receivers.last?.receiver }
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
        multicastInterface = nil
        feedbackSession = nil
        fixedDestination = false
        pipeline = try TrackPipeline(track: TrackID(rawValue: UInt32(index)), codec: codec, clockRate: stream.clockRate, delay: delay)
        self.delay = (delay, .immediate, .configured)
        appliedDelay = self.delay
        decoderSetup = DecoderSetup(codec: codec, extradata: stream.extradata, sampleRate: stream.sampleRate, channelCount: stream.channelCount)
    }

    /// Binds the address the SDP names: a multicast group is joined (on `interface` when given),
    /// a unicast address is received on every interface (senders address this host by any of its
    /// names).
    private static func bind(host: String, port: UInt16, interface: UInt32?) throws(UDPError) -> UDPReceiver {
        let multicast = SocketAddress.isMulticastHost(host)
        let bindHost = multicast ? host : (host.contains(":") ? "::" : "0.0.0.0")
        return try UDPReceiver(bindingTo: SocketAddress(host: bindHost, port: port), interfaceIndex: multicast ? interface ?? 0 : 0)
    }

    // MARK: Intake side

    /// Binds the address of socket `index` (of ``receivers``) again after a failure (the thread
    /// that receives: the subscription's decisions run there).
    func reopen(socketAt index: Int) throws {
        let socket = receivers[index]
        let address = socket.receiver.localAddress
        receivers[index] = Socket(
            receiver: try UDPReceiver(bindingTo: address, interfaceIndex: address.isMulticast ? multicastInterface ?? 0 : 0), isControl: socket.isControl)
        lock.withLock { if feedbackSocket === socket.receiver { feedbackSocket = receivers[index].receiver } }
    }

    /// Receives one batch from `socket` (the driver's receiving thread): files its packets.
    func receive(from socket: Socket) throws {
        try intake {
            try socket.receiver.receive(timeout: .zero) { datagram in
                let reports = pipeline.receiver.senderReportsReceived
                if socket.isControl {
                    pipeline.receiveControl(datagram.mutableBytes, length: datagram.bytes.count, arrival: datagram.arrival)
                } else {
                    pipeline.receive(datagram.mutableBytes, length: datagram.bytes.count, arrival: datagram.arrival)
                }
                // The played source's RTCP comes from where it takes feedback (read once a report:
                // the address costs an allocation, so never per packet).
                if pipeline.receiver.senderReportsReceived != reports, feedbackSocket != nil, !fixedDestination { feedbackDestination = datagram.source }
            }
        }
    }

    /// Runs `body` (datagrams into the pipeline) under the lock; when the sender's
    /// `playout-delay` range changed meanwhile, calls ``onAttention(_:)``'s closure after
    /// unlocking: the subscription's decisions apply the range at once.
    private func intake(_ body: () throws -> Void) rethrows {
        let changed: (@Sendable () -> Void)? = try lock.withLock {
            let range = pipeline.receiver.senderPlayoutDelay
            try body()
            return pipeline.receiver.senderPlayoutDelay != range ? attention : nil
        }
        changed?()
    }

    /// Has `call` called whenever the track needs its driver to take a turn soon, under no lock
    /// of the track's: a datagram changed the range the sender asks for with the `playout-delay`
    /// extension (on the thread that delivered it), or a bandwidth limit is to be told (on the
    /// thread that set it: between packets, no turn would come to tell it).
    func onAttention(_ call: @escaping @Sendable () -> Void) {
        lock.withLock { attention = call }
    }

    /// Sends the RTCP this track's receiver decided at `now` (the driver's feedback turn): reports and
    /// feedback, SRTCP-protected when encrypted, from the track's RTCP socket to where the
    /// sender's reports come from. Returns when to call again (nil: the track stays silent).
    /// Off the media path: the intake lock is held only while the decisions are made.
    func sendFeedback(now: MonotonicInstant) -> MonotonicInstant? {
        let (polled, destination, socket) = lock.withLock { (pipeline.pollFeedback(now: now), feedbackDestination, feedbackSocket) }
        let protection = lock.withLock { feedbackSession }
        guard let decided = polled else { return nil }
        var (sent, unsent) = (0, 0)
        for compound in decided.packets {
            var bytes = RTCPPacket.serializeCompound(compound)
            guard let destination, let socket else {
                unsent += 1
                continue
            }
            do {
                if let protection { bytes = try protection.protectRTCP(bytes) }
                try bytes.withUnsafeBytes { try socket.send($0, to: destination) }
                sent += 1
            } catch {
                unsent += 1
            }
        }
        if sent + unsent > 0 { lock.withLock { feedbackCounters = (feedbackCounters.sent + sent, feedbackCounters.unsent + unsent) } }
        return decided.next
    }

    /// The keys a DTLS-SRTP handshake exported: `inbound` for what the sender sends, `outbound`
    /// for the feedback (a WebRTC transport, once connected).
    func setKeys(inbound: SRTPKeyingMaterial, outbound: SRTPKeyingMaterial) throws {
        let session = try SRTPSession(keyingMaterial: outbound, direction: .outbound)
        try lock.withLock {
            try pipeline.setKeys(inbound)
            feedbackSession = session
        }
    }

    /// Sends the feedback from `socket` to `destination` from now on (a WebRTC transport's
    /// selected pair).
    func sendFeedback(from socket: UDPReceiver, to destination: SocketAddress) {
        lock.withLock {
            feedbackSocket = socket
            feedbackDestination = destination
        }
    }

    /// Whether the track talks back to its sender.
    var sendsFeedback: Bool { lock.withLock { feedbackSocket != nil } }

    /// Whether its feedback should be sent now rather than when its last ``sendFeedback(now:)``
    /// said: something that decision could not foresee changed since (a gap, a key frame to ask
    /// for, a bandwidth limit). Asked after each turn: one lock, no decision.
    var feedbackWantsPoll: Bool { lock.withLock { pipeline.feedbackWantsPoll() } }

    /// The bandwidth limit told to the sender (any thread): at the driver's next turn, which
    /// ``onAttention(_:)``'s closure asks for.
    func setBandwidthLimit(_ bitsPerSecond: UInt64?) {
        let call = lock.withLock {
            pipeline.setBandwidthLimit(bitsPerSecond)
            return attention
        }
        call?()
    }

    /// Takes one datagram that arrived at `arrival` (as ``receive(from:)`` does for each datagram
    /// of a batch; deterministic tests call it directly). RTCP when `control`.
    package func deliver(_ bytes: UnsafeMutableRawBufferPointer, length: Int, arrival: MonotonicInstant, control: Bool = false) {
        intake {
            if control {
                pipeline.receiveControl(bytes, length: length, arrival: arrival)
            } else {
                pipeline.receive(bytes, length: length, arrival: arrival)
            }
        }
    }

    /// Takes an assembled frame (libavformat input, its reading thread).
    func receive(frame: EncodedFrame) {
        lock.withLock {
            pipeline.receive(frame: frame)
        }
    }

    /// The source was reopened: its timestamps start again.
    package func restart() {
        lock.withLock {
            pipeline.restart()
        }
    }

    /// The delay in effect changed (any thread); the playout side moves to it by `transition`
    /// from its next poll.
    func setDelay(_ delay: Duration, transition: PlayoutDelayTransition = .immediate, source: PlayoutDelaySource = .configured) {
        lock.withLock {
            self.delay = (delay, transition, source)
            delayChanges.add(1, ordering: .releasing)
        }
    }

    /// Changes with every ``setDelay(_:transition:source:)``: the render times of frames
    /// released before (``Poll/delayGeneration``) follow the delay no more (any thread).
    var delayGeneration: Int { delayChanges.load(ordering: .acquiring) }

    /// Moves the playout side to the delay last set, at `now`. Under `lock`.
    private func applyDelay(now: MonotonicInstant) {
        if delay.delay != appliedDelay.delay || delay.transition != appliedDelay.transition {
            pipeline.setDelay(delay.delay, transition: delay.transition, now: now)
        }
        appliedDelay = delay
    }

    /// The schedules of `frames`, released earlier and not yet presented, under the delay last
    /// set (applied at `now`): the rule every later frame follows. With the delay generation
    /// they are computed under, and how late a frame may still be rendered. The loop's thread.
    func retime(_ frames: [EncodedFrame], now: MonotonicInstant) -> (schedules: [(frame: TrackPipeline.FrameSchedule, source: PlayoutDelaySource)], generation: Int, lateTolerance: Duration) {
        lock.withLock {
            applyDelay(now: now)
            return (frames.map { (pipeline.schedule(of: $0), delay.source) }, delayChanges.load(ordering: .relaxed), pipeline.playout.lateTolerance)
        }
    }

    /// A frame released for rendering and held by the loop was skipped: a delay decrease made
    /// it late before its render time. Counted as skipped by the decrease; its bytes given back.
    func releasedFrameSkipped(_ frame: EncodedFrame, decoder: FFmpegDecoder.Statistics) {
        lock.withLock {
            playback.decoder = decoder
            pipeline.releasedFrameSkipped(frame)
        }
    }

    // MARK: Playout side

    /// What the track's pipeline said at one poll: the action, the schedule of the frame it
    /// released (with the source of the delay in effect).
    struct Poll {
        var action: TrackPipeline.Action
        /// For `.render` and `.skip`: when the frame is due, the delay that puts it there, its
        /// capture time, and where the delay came from.
        var schedule: (frame: TrackPipeline.FrameSchedule, source: PlayoutDelaySource)?
        /// The ``SubscribedTrack/delayGeneration`` the schedule was computed under.
        var delayGeneration = 0
    }

    /// What the pipeline says to do at `now` (a frame released `lead` before its render time),
    /// with everything the loop needs to present and record that frame.
    /// `loopHoldsNothing`: the loop has no decoded frame waiting (with an idle pipeline, the
    /// track is drained). The loop's thread.
    func poll(now: MonotonicInstant, lead: Duration?, loopHoldsNothing: Bool) -> Poll {
        lock.withLock {
            applyDelay(now: now)
            let pauses = pipeline.playout.schedulerStatistics.delayPauseCount
            let action = pipeline.poll(now: now, lead: lead)
            var schedule: (TrackPipeline.FrameSchedule, PlayoutDelaySource)?
            loopIdle = false
            switch action {
            case .render(let frame, let renderAt):
                if frame.isKeyframe, playback.firstKeyFrame == nil { playback.firstKeyFrame = frame.lastArrival }
                var frameSchedule = pipeline.schedule(of: frame, due: renderAt)
                frameSchedule.endsDelayPause = pipeline.playout.schedulerStatistics.delayPauseCount > pauses
                schedule = (frameSchedule, delay.source)
            case .skip(let frame, _): schedule = (pipeline.schedule(of: frame), delay.source)
            case .idle: loopIdle = loopHoldsNothing
            case .wait: break
            }
            return Poll(action: action, schedule: schedule, delayGeneration: delayChanges.load(ordering: .relaxed))
        }
    }

    /// Records what the playout loop did with a frame and gives its bytes back.
    func finished(_ frame: EncodedFrame, decoder: FFmpegDecoder.Statistics, update: (inout Playback) -> Void) {
        lock.withLock {
            update(&playback)
            playback.decoder = decoder
            pipeline.recycle(frame.bytes)
        }
    }

    /// Nothing decodes or writes this track's frames: they carry their size, not their bytes
    /// (``TrackPlayout/elidePayloads()``).
    func elidePayloads() {
        lock.withLock { pipeline.elidePayloads() }
    }

    /// Whether its frames carry their size, not their bytes.
    package var elidesPayloads: Bool { lock.withLock { pipeline.playout.elidesPayloads } }

    /// A frame did not decode (the playout loop); see ``TrackPlayout/decodeFailed()``.
    func decodeFailed() {
        lock.withLock { pipeline.decodeFailed() }
    }

    /// Records measurements that belong to no frame (pictures flushed at the end).
    func record(decoder: FFmpegDecoder.Statistics, update: (inout Playback) -> Void = { _ in }) {
        lock.withLock {
            update(&playback)
            playback.decoder = decoder
        }
    }

    // MARK: Observation

    /// What the subscription's state machine looks at.
    func status() -> SubscriptionStateMachine.TrackStatus {
        lock.withLock {
            // Failures of a sender in sequence (a wrong key), not strangers' garbage, fail the run.
            let (received, failures) = (pipeline.receiver.statistics().packetsReceived, pipeline.receiver.sequencedAuthenticationFailures)
            let buffered = pipeline.playout.schedulerStatistics.bufferedFrames
            return SubscriptionStateMachine.TrackStatus(
                lastRender: playback.lastRender, hasQueuedFrames: buffered > 0,
                delayPause: pipeline.playout.pendingDelayPause, isDrained: loopIdle && buffered == 0,
                authenticationFailuresOnly: received == 0 ? failures : 0, port: port,
                startup: .init(firstPacket: pipeline.receiver.firstPacketArrival, firstKeyFrame: playback.firstKeyFrame, firstFrame: playback.firstRender),
                senderPlayoutDelay: pipeline.receiver.senderPlayoutDelay.map { $0.minimum...max($0.minimum, $0.maximum) }
            )
        }
    }

    /// This track's QoS now (rates not yet measured), one consistent snapshot.
    func qos(playoutDelay: EffectivePlayoutDelay) -> TrackQoS {
        lock.withLock {
            TrackQoS(kind: kind, codec: codec, pipeline: pipeline, playback: playback, rtcp: feedbackCounters, playoutDelay: playoutDelay)
        }
    }
}

extension SocketAddress {
    /// Whether `host` is a multicast group address.
    static func isMulticastHost(_ host: String) -> Bool {
        (try? SocketAddress(host: host, port: 0))?.isMulticast ?? false
    }
}
