import PlayoutCore
public import PlayoutJitter
public import PlayoutRTP

/// Why a track cannot be received.
extension PlayoutError.Code {
    /// The SDP's media section cannot be received (unknown codec, no payload type).
    public static let unsupportedMedia = Self("unsupportedMedia")
}

/// The receive path of one RTP track, sans-IO: datagram → SRTP unprotect → RTP parse → jitter
/// buffer → depacketizer → timeline and playout scheduler. It reads no clock and does no I/O: the
/// caller hands it datagrams with their arrival instants and asks ``poll(now:lead:)`` what to
/// decode and render.
///
/// It is two halves: the ``TrackReceiver`` (unprotect, parse once, copy once into a pooled
/// buffer, file in the jitter buffer, RTCP) and the ``TrackPlayout`` (depacketize what the jitter
/// buffer releases, schedule); between them only pointers to pooled packets move
/// (``TrackReceiver/release(now:into:)``). A subscription runs exactly this composition — each
/// of its tracks holds one pipeline and polls it as the tests do — with decoding outside it.
///
/// In steady state no packet allocates (SRTP's cipher library aside; the `Receive` benchmark
/// counts it), and frame buffers given back through ``recycle(_:)`` are reused once nothing else
/// holds them. The jitter buffer's loss deadline follows the playout delay in effect (minus a
/// decode margin), so a 5 s override lets reordered packets arrive up to ≈ 5 s late.
@_spi(Pipeline) public struct TrackPipeline {
    /// What one poll asks the caller to do.
    public typealias Action = PlayoutScheduler<EncodedFrame>.Action

    /// The intake half.
    public private(set) var receiver: TrackReceiver
    /// The playout half.
    private(set) var playout: TrackPlayout
    /// What the jitter buffer released, handed from the receiver to the playout half; kept so its
    /// capacity is reused.
    private var released: [TrackReceiver.Release] = []
    /// ``TrackPlayout/keyframeNeeds`` at the last feedback poll.
    private var keyframeNeedsPolled = 0

    /// How long before its render time a frame must be complete (decode margin).
    public static let decodeMargin: Duration = .milliseconds(30)

    /// The track's identity and codec.
    public var track: TrackID { playout.track }
    public var codec: Codec { playout.codec }
    /// The payload type received.
    public var payloadType: UInt8 { receiver.payloadType }
    /// The RTP clock rate.
    public var clockRate: Int32 { receiver.clockRate }

    /// Creates the pipeline for `media` (an SDP media section) as track `track`, with the playout
    /// delay `delay`. SRTP is on when the section has an `a=crypto` line; an `RTP/SAVP` section
    /// without one is an error. The played source gives way to another valid one after a BYE or
    /// `switchAfterSilence` without packets. With `keysFromDTLS` the keys come later, from a
    /// DTLS-SRTP handshake (``TrackReceiver/setKeys(_:)``).
    ///
    /// - Throws: ``PlayoutError`` for media Playout cannot receive, a bad key, or SRTP without one.
    public init(
        track: TrackID, media: MediaDescription, delay: Duration,
        switchAfterSilence: Duration = RTPSourceValidation.Configuration.defaultSwitchAfterSilence,
        feedback: TrackReceiver.FeedbackSettings? = nil, keysFromDTLS: Bool = false
    ) throws {
        let factory: DepacketizerFactory
        do {
            factory = try DepacketizerFactory(media: media, track: track)
        } catch {
            throw PlayoutError(.unsupportedMedia, error.description)
        }
        receiver = try TrackReceiver(
            factory: factory, media: media, delay: delay, switchAfterSilence: switchAfterSilence, feedback: feedback, keysFromDTLS: keysFromDTLS
        )
        playout = TrackPlayout(track: track, factory: factory, delay: delay)
        released.reserveCapacity(64)
    }

    /// Creates the pipeline of a stream whose frames come assembled (from libavformat), as
    /// track `track`; ``receive(frame:)`` takes them.
    ///
    /// - Throws: ``PlayoutError`` for a codec Playout cannot schedule.
    public init(track: TrackID, codec: Codec, clockRate: Int32, delay: Duration) throws {
        var media = MediaDescription(kind: codec.kind == .video ? .video : .audio, port: 0, payloadTypes: [96])
        media.rtpMaps = [RTPMap(payloadType: 96, encodingName: codec.rawValue, clockRate: UInt32(max(1, clockRate)))]
        try self.init(track: track, media: media, delay: delay)
    }

    /// Takes a frame that came assembled (libavformat), with its arrival instants set.
    public mutating func receive(frame: EncodedFrame) {
        playout.receive(frame: frame)
    }

    /// The stream starts again (a reopened source): a new timeline, and video waits for a key
    /// frame.
    public mutating func restart() {
        playout.restart()
    }

    /// Frames carry their size but not their bytes from now on; see
    /// ``TrackPlayout/elidePayloads()``.
    public mutating func elidePayloads() {
        playout.elidePayloads()
    }

    /// A frame did not decode; see ``TrackPlayout/decodeFailed()``.
    public mutating func decodeFailed() {
        playout.decodeFailed()
    }

    /// The delay in effect changed (an override was set or released): at once.
    public mutating func setDelay(_ delay: Duration) {
        receiver.setDelay(delay)
        playout.setDelay(delay)
    }

    /// The delay changed at `now`, moving rendering there by `transition`.
    public mutating func setDelay(_ delay: Duration, transition: PlayoutDelayTransition, now: MonotonicInstant) {
        receiver.setDelay(delay)
        playout.setDelay(delay, transition: transition, now: now)
    }

    /// Takes one received datagram; see ``TrackReceiver/receive(_:length:arrival:)``.
    public mutating func receive(_ bytes: UnsafeMutableRawBufferPointer, length: Int, arrival: MonotonicInstant) {
        receiver.receive(bytes, length: length, arrival: arrival)
    }

    /// The keys a DTLS-SRTP handshake exported for what the sender sends (``TrackReceiver/setKeys(_:)``).
    public mutating func setKeys(_ inbound: SRTPKeyingMaterial) throws {
        try receiver.setKeys(inbound)
    }

    /// Takes one RTCP datagram; see ``TrackReceiver/receiveControl(_:length:arrival:)``.
    public mutating func receiveControl(_ bytes: UnsafeMutableRawBufferPointer, length: Int, arrival: MonotonicInstant? = nil) {
        receiver.receiveControl(bytes, length: length, arrival: arrival)
    }

    /// The RTCP feedback to send at `now`; see ``TrackReceiver/pollFeedback(now:waitingForKeyFrame:)``
    /// (whether decoding waits for a key frame is the playout half's).
    public mutating func pollFeedback(now: MonotonicInstant) -> (packets: [[RTCPPacket]], next: MonotonicInstant)? {
        keyframeNeedsPolled = playout.keyframeNeeds
        return receiver.pollFeedback(now: now, waitingForKeyFrame: playout.isWaitingForKeyframe)
    }

    /// Whether the feedback should be polled now rather than when its last poll said: a gap
    /// opened or a bandwidth limit is to be told (``TrackReceiver/feedbackWantsPoll``), or
    /// decoding, waiting for a key frame, dropped a frame or failed one since (a request to decide
    /// at once; a key frame merely still arriving asks for nothing). Changes nothing; `mutating`
    /// so that it reads the pipeline where it is: a getter of a pipeline held by a class takes a
    /// copy of it, a reference count for each buffer it holds (a turn asks after every packet).
    public mutating func feedbackWantsPoll() -> Bool {
        receiver.feedbackWantsPoll || (playout.isWaitingForKeyframe && playout.keyframeNeeds != keyframeNeedsPolled)
    }

    /// The bandwidth limit told to the sender; see ``TrackReceiver/setBandwidthLimit(_:)``.
    public mutating func setBandwidthLimit(_ bitsPerSecond: UInt64?) {
        receiver.setBandwidthLimit(bitsPerSecond)
    }

    /// When `mediaTime` was captured; see ``TrackReceiver/captureTime(of:)``.
    public func captureTime(of mediaTime: MediaTime) -> Int64? {
        receiver.captureTime(of: mediaTime)
    }

    /// Moves what the jitter buffer can release into frames, then says what to do at `now`: a
    /// frame to render or skip, or the instant to poll again (the earlier of the next render and
    /// the jitter buffer's next loss deadline). A frame is released `lead` before its render
    /// time (the scheduler's decode lead unless given).
    public mutating func poll(now: MonotonicInstant, lead: Duration? = nil) -> Action {
        let deadline = receiver.release(now: now, into: &released)
        return playout.poll(now: now, lead: lead, released: &released, bufferDeadline: deadline)
    }

    /// Where a frame the last poll released stands: when it is due under the schedule in effect,
    /// the delay that puts it there (due − its local time) and when it was captured — what a
    /// driver records and measures with the frame, read with the action rather than asked for
    /// again at its render time.
    public struct FrameSchedule: Equatable, Sendable {
        /// When the frame is due (the render time of a `.render` action).
        public var due: MonotonicInstant
        /// The playout delay that puts it there.
        public var delay: Duration
        /// When it was captured on the sender's wall clock (nanoseconds since 1970), once known.
        public var captureTime: Int64?
        /// Whether rendering it ends a delay pause (the scheduler counted one when releasing it).
        public var endsDelayPause = false
    }

    /// The schedule of `frame`, just released by ``poll(now:lead:)`` (`due`: the render time the
    /// action said, if it said one).
    ///
    /// It changes nothing, yet is `mutating`: the pipeline lives in a class's property, and the
    /// compiler copied the whole pipeline (every reference in it retained, then released) to call
    /// a non-mutating method there, twice per frame — 5 % of a swarm's worker in the turns that
    /// present a frame to every viewer at once.
    public mutating func schedule(of frame: EncodedFrame, due: MonotonicInstant? = nil) -> FrameSchedule {
        let due = due ?? playout.dueTime(for: frame.mediaTime.duration)
        let delay = playout.timeline.localTime(for: frame.mediaTime.duration).duration(to: due)
        return FrameSchedule(due: due, delay: delay, captureTime: receiver.captureTime(of: frame.mediaTime))
    }

    /// Gives back the bytes of a rendered or skipped frame for reuse.
    public mutating func recycle(_ bytes: [UInt8]) {
        playout.recycle(bytes)
    }

    /// A frame released for rendering was skipped after all: a delay decrease after its release
    /// made it late; see ``PlayoutScheduler/releasedFrameSkipped()``. Gives its bytes back.
    public mutating func releasedFrameSkipped(_ frame: EncodedFrame) {
        playout.releasedFrameSkipped()
        playout.recycle(frame.bytes)
    }

    /// Counters of every stage, as one snapshot.
    public var statistics: TrackPlayoutStatistics {
        TrackPlayoutStatistics(network: receiver.statistics(assembledBytes: playout.assembledBytesReceived), frames: playout.schedulerStatistics, playoutDelay: EffectivePlayoutDelay(delay: playout.delay, source: .configured))
    }

    /// The timeline (media time → local time).
    public var timeline: PlayoutTimeline { playout.timeline }
    /// The depacketizer's counters (frames discarded for loss, malformed payloads).
    public var depacketizerStatistics: DepacketizerStatistics { playout.depacketizerStatistics }
    /// SRTP counters, when the track is encrypted.
    public var srtpStatistics: SRTPSession.Statistics? { receiver.srtpStatistics }
    /// The packet pool's counters: in steady state its ring stops growing and no buffer is
    /// created or enlarged.
    public var packetPoolStatistics: RTPPacketPool.Statistics { receiver.packetPoolStatistics }
    /// Datagrams that were not RTP of this track (wrong payload type, malformed, failed SRTP
    /// authentication).
    public var datagramsIgnored: Int { receiver.datagramsIgnored }
    /// What the intake turned away, by reason (see ``TrackReceiver/intakeStatistics``).
    public var intakeStatistics: TrackReceiver.IntakeStatistics { receiver.intakeStatistics }
    /// Source validation's counters: packets of other sources, jumps, switches.
    public var sourceStatistics: RTPSourceValidation.Statistics { receiver.sourceStatistics }
    /// The SSRC played, once a source passed probation.
    public var playedSSRC: UInt32? { receiver.playedSSRC }
    /// RTCP datagrams that failed SRTCP authentication or parsing.
    public var controlPacketsIgnored: Int { receiver.controlPacketsIgnored }
    /// The latest RTCP sender report.
    public var senderReport: RTCPSenderReport? { receiver.senderReport }
    /// Where capture times come from, once known.
    public var captureClock: CaptureClock? { receiver.captureClock }
    /// RTCP BYE packets received (the sender said it stopped).
    public var goodbyesReceived: Int { receiver.goodbyesReceived }
    /// What retransmissions did (RTX restored, late, duplicate, dropped).
    public var retransmissionStatistics: TrackReceiver.RetransmissionStatistics { receiver.retransmissionStatistics }
    /// What the feedback decided (nil when silent).
    public var feedbackStatistics: (nackCount: Int, pliCount: Int, firCount: Int, packetsSent: Int, roundTripTime: Duration?)? { receiver.feedbackStatistics }
    /// The `a=extmap` id of `abs-capture-time` in the track's SDP, if it has one.
    public var absoluteCaptureTimeID: UInt8? { receiver.absoluteCaptureTimeID }
    /// Complete frames received (assembled from packets, or from libavformat).
    public var framesReceived: Int { playout.framesReceived }
    /// Video frames dropped after a loss while waiting for a key frame.
    public var framesDroppedWaitingForKeyframe: Int { playout.framesDroppedWaitingForKeyframe }
    /// Times the stream restarted (new SSRC, or a sequence or timestamp jump).
    public var restarts: Int { playout.restarts }
}
