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
/// It is two halves a subscriber runs on two threads: the ``TrackReceiver`` (the intake thread:
/// unprotect, parse once, copy once into a pooled buffer, file in the jitter buffer, RTCP) and the
/// ``TrackPlayout`` (the playout thread: depacketize what the jitter buffer releases, schedule).
/// Between them only pointers to pooled packets move (``TrackReceiver/release(now:into:)``), so
/// the intake thread never waits while a packet is depacketized or a frame decoded. This type
/// runs both on one thread, for tests and benchmarks.
///
/// In steady state no packet allocates (SRTP's cipher library aside; the `Receive` benchmark
/// counts it), and frame buffers given back through ``recycle(_:)`` are reused once nothing else
/// holds them. The jitter buffer's loss deadline follows the playout delay in effect (minus a
/// decode margin), so a 5 s override lets reordered packets arrive up to ≈ 5 s late.
public struct TrackPipeline {
    /// What one poll asks the caller to do.
    public typealias Action = PlayoutScheduler<EncodedFrame>.Action

    /// The intake half.
    public private(set) var receiver: TrackReceiver
    /// The playout half.
    public private(set) var playout: TrackPlayout
    /// What the jitter buffer released, handed from the receiver to the playout half; kept so its
    /// capacity is reused.
    private var released: [TrackReceiver.Release] = []

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
    /// `switchAfterSilence` without packets.
    ///
    /// - Throws: ``PlayoutError`` for media Playout cannot receive, a bad key, or SRTP without one.
    public init(
        track: TrackID, media: MediaDescription, delay: Duration,
        switchAfterSilence: Duration = RTPSourceValidation.Configuration.defaultSwitchAfterSilence
    ) throws {
        let factory: DepacketizerFactory
        do {
            factory = try DepacketizerFactory(media: media, track: track)
        } catch {
            throw PlayoutError(.unsupportedMedia, error.description)
        }
        receiver = try TrackReceiver(factory: factory, media: media, delay: delay, switchAfterSilence: switchAfterSilence)
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

    /// Takes one RTCP datagram; see ``TrackReceiver/receiveControl(_:length:)``.
    public mutating func receiveControl(_ bytes: UnsafeMutableRawBufferPointer, length: Int) {
        receiver.receiveControl(bytes, length: length)
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

    /// Gives back the bytes of a rendered or skipped frame for reuse.
    public mutating func recycle(_ bytes: [UInt8]) {
        playout.recycle(bytes)
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
    /// The `a=extmap` id of `abs-capture-time` in the track's SDP, if it has one.
    public var absoluteCaptureTimeID: UInt8? { receiver.absoluteCaptureTimeID }
    /// Complete frames received (assembled from packets, or from libavformat).
    public var framesReceived: Int { playout.framesReceived }
    /// Video frames dropped after a loss while waiting for a key frame.
    public var framesDroppedWaitingForKeyframe: Int { playout.framesDroppedWaitingForKeyframe }
    /// Times the stream restarted (new SSRC, or a sequence or timestamp jump).
    public var restarts: Int { playout.restarts }
}

/// The intake half of a track's receive path (the intake thread): SRTP unprotect, RTP parse (once),
/// one copy into a pooled buffer, source validation (``RTPSourceValidator``: probation, one
/// played source, RFC 3550 A.1 sequence and timestamp checks), the jitter buffer; RTCP.
/// ``release(now:into:)`` hands what the jitter buffer releases to the ``TrackPlayout`` — pointers
/// to pooled packets, in order.
///
/// Only the played source's packets reach the jitter buffer (so its `packetsReceived` and
/// `bytesReceived` count that source alone); everything else is counted by reason in
/// ``intakeStatistics`` and ``sourceStatistics``. RTCP sender reports and BYEs count only from
/// the played source (a report from another source never moves the timeline).
public struct TrackReceiver {
    /// Datagrams and packets the intake turned away before source validation, by reason.
    public struct IntakeStatistics: Equatable, Sendable {
        /// Datagrams that are neither RTP nor RTCP (too short, not version 2).
        public var datagramsNotRTP = 0
        /// RTP-looking datagrams whose version is not 2.
        public var datagramsBadVersion = 0
        /// Datagrams shorter than the header, CSRC list or header extension they declare.
        public var datagramsTruncated = 0
        /// Datagrams whose header extension length runs past the end.
        public var datagramsBadExtension = 0
        /// Datagrams whose padding count is 0 or larger than what follows the header.
        public var datagramsBadPadding = 0
        /// RTP packets of a payload type other than the track's.
        public var packetsWrongPayloadType = 0
        /// RTCP sender reports and BYEs from a source that is not played.
        public var controlPacketsFromOtherSources = 0

        /// Every undecodable datagram: not RTP, bad version, truncated, bad extension, bad padding.
        public var datagramsUndecodable: Int {
            datagramsNotRTP + datagramsBadVersion + datagramsTruncated + datagramsBadExtension + datagramsBadPadding
        }

        public init() {}
    }

    /// One thing the jitter buffer released, in order.
    public enum Release {
        /// A packet, as parsed on intake, with its arrival.
        case packet(StoredRTPPacket, arrival: MonotonicInstant)
        /// The stream restarted (a new SSRC, or a jump in sequence numbers or time).
        case restart
    }

    public let payloadType: UInt8
    /// The RTP clock rate.
    public let clockRate: Int32
    /// The `a=extmap` id of `abs-capture-time` in the track's SDP, if it has one.
    public let absoluteCaptureTimeID: UInt8?
    private var session: SRTPSession?
    private var pool = RTPPacketPool()
    private var buffer = JitterBuffer<StoredRTPPacket>()
    /// Packets travel through validation with their arrival, so a held one keeps its own.
    private var validator: RTPSourceValidator<(packet: StoredRTPPacket, arrival: MonotonicInstant)>
    /// Datagrams that were not RTP of this track (wrong payload type, malformed, failed SRTP
    /// authentication).
    public private(set) var datagramsIgnored = 0
    /// What the intake turned away before source validation, by reason.
    public private(set) var intakeStatistics = IntakeStatistics()
    /// SRTP authentication failures of packets that came in sequence from one SSRC: what a sender
    /// with another key causes (garbage from strangers fails too, but not in sequence). A
    /// subscription fails on these, never on strangers.
    public private(set) var sequencedAuthenticationFailures = 0
    private var failedSources: [(ssrc: UInt32, sequence: UInt16, inRun: Bool)] = []
    /// The latest RTCP sender report.
    public private(set) var senderReport: RTCPSenderReport?
    /// Where capture times come from (see ``captureTime(of:)``), once known.
    public private(set) var captureClock: CaptureClock?
    /// RTCP BYE packets received (the sender said it stopped).
    public private(set) var goodbyesReceived = 0
    /// RTCP datagrams that failed SRTCP authentication or parsing.
    public private(set) var controlPacketsIgnored = 0

    init(factory: DepacketizerFactory, media: MediaDescription, delay: Duration, switchAfterSilence: Duration) throws {
        payloadType = factory.payloadType
        clockRate = factory.clockRate
        absoluteCaptureTimeID = media.extensionID(uri: AbsoluteCaptureTime.uri)
        if let crypto = media.crypto.first {
            session = try SRTPSession(keyingMaterial: SRTPKeyingMaterial(crypto: crypto), direction: .inbound)
        } else if media.proto.isSecure {
            throw PlayoutError(
                .unsupportedMedia,
                "the \(media.kind.rawValue) section on port \(media.port) is \(media.proto.rawValue) (SRTP) but has no a=crypto line: give the key with --srtp-key"
            )
        }
        validator = RTPSourceValidator(configuration: .init(clockRate: factory.clockRate, switchAfterSilence: switchAfterSilence))
        buffer.configuration.clockRate = Int(clockRate)
        setDelay(delay)
    }

    /// The delay in effect changed: the jitter buffer waits for reordered packets up to it (less
    /// the decode margin).
    public mutating func setDelay(_ delay: Duration) {
        buffer.configuration.maximumReorderDelay = max(.milliseconds(20), delay - TrackPipeline.decodeMargin)
    }

    /// Takes one received datagram (`length` bytes at the start of `bytes`, which it may decrypt in
    /// place): RTCP multiplexed on the RTP port (RFC 5761) goes to ``receiveControl(_:length:)``;
    /// an RTP packet of the track's payload type is parsed, copied into a pooled buffer and, when
    /// source validation plays it, filed in the jitter buffer; anything else is counted by reason.
    public mutating func receive(_ bytes: UnsafeMutableRawBufferPointer, length: Int, arrival: MonotonicInstant) {
        let length = min(max(length, 0), bytes.count)
        switch MultiplexedPacketKind(classifying: UnsafeRawBufferPointer(rebasing: bytes[0..<length])) {
        case .rtcp:
            receiveControl(bytes, length: length)
            return
        case .unknown:
            datagramsIgnored += 1
            intakeStatistics.datagramsNotRTP += 1
            return
        case .rtp:
            break
        }
        var plain = length
        if let session {
            guard let unprotected = try? session.unprotectRTP(bytes, length: length) else {
                datagramsIgnored += 1
                countAuthenticationFailure(UnsafeRawBufferPointer(rebasing: bytes[0..<length]))
                return
            }
            plain = unprotected
        }
        let datagram = UnsafeRawBufferPointer(rebasing: bytes[0..<plain])
        let packet: RTPPacket
        do {
            packet = try RTPPacket(parsing: datagram)
        } catch {
            datagramsIgnored += 1
            count(error, datagram: datagram)
            return
        }
        guard packet.payloadType == payloadType else {
            datagramsIgnored += 1
            intakeStatistics.packetsWrongPayloadType += 1
            return
        }
        let stored = pool.store(packet)
        switch validator.receive(
            ssrc: packet.ssrc, sequenceNumber: packet.sequenceNumber.rawValue, timestamp: packet.timestamp.rawValue, payload: (stored, arrival),
            now: arrival
        ) {
        case .hold, .reject:
            return
        case .play(let previous, let restart):
            switch restart {
            case .resync?: buffer.startNewStream()
            case .newSource(_, let ssrc)?: forgetOtherSources(than: ssrc)
            case nil: break
            }
            if let previous { file(previous.packet, arrival: previous.arrival) }
            file(stored, arrival: arrival)
        }
    }

    /// Files a packet of the played source in the jitter buffer.
    private mutating func file(_ stored: StoredRTPPacket, arrival: MonotonicInstant) {
        let header = stored.header
        if let id = absoluteCaptureTimeID {
            stored.withPacket { packet in
                if let capture = packet.absoluteCaptureTime(id: id) {
                    captureClock = CaptureClock(absoluteCaptureTime: capture, rtpTimestamp: header.timestamp.rawValue)
                }
            }
        }
        _ = buffer.insert(
            sequenceNumber: header.sequenceNumber, timestamp: header.timestamp, ssrc: header.ssrc, isFrameEnd: header.marker,
            byteCount: stored.withPacket { $0.payload.count }, payload: stored, now: arrival
        )
    }

    /// A new source is played: a sender report or capture time of another source no longer holds.
    private mutating func forgetOtherSources(than ssrc: UInt32) {
        if let report = senderReport, report.ssrc != ssrc {
            senderReport = nil
            captureClock = nil
        } else if captureClock?.source == .absoluteCaptureTime {
            captureClock = nil
        }
    }

    /// Counts an RTP datagram that did not parse, by reason.
    private mutating func count(_ error: RTPParseError, datagram: UnsafeRawBufferPointer) {
        switch error {
        case .unsupportedVersion:
            intakeStatistics.datagramsBadVersion += 1
        case .invalidPadding:
            intakeStatistics.datagramsBadPadding += 1
        case .truncated:
            // The fixed header and CSRCs fit, so the header extension is what runs past the end.
            let csrcEnd = RTPPacket.fixedHeaderLength + 4 * Int(datagram.count > 0 ? datagram[0] & 0x0F : 0)
            if datagram.count >= csrcEnd, datagram.count > 0, datagram[0] & 0x10 != 0 {
                intakeStatistics.datagramsBadExtension += 1
            } else {
                intakeStatistics.datagramsTruncated += 1
            }
        }
    }

    /// An SRTP packet failed authentication: counted in ``sequencedAuthenticationFailures`` when
    /// its clear header follows the previous failed packet of its SSRC in sequence (a sender with
    /// another key, not strangers' garbage). A few SSRCs are remembered, the oldest replaced.
    private mutating func countAuthenticationFailure(_ datagram: UnsafeRawBufferPointer) {
        guard let header = try? RTPPacket(parsing: datagram) else { return }
        let ssrc = header.ssrc
        let sequence = header.sequenceNumber.rawValue
        if let index = failedSources.firstIndex(where: { $0.ssrc == ssrc }) {
            if sequence == failedSources[index].sequence &+ 1 {
                // The first packet of a run counts once its successor shows it was a sender's.
                sequencedAuthenticationFailures += failedSources[index].inRun ? 1 : 2
                failedSources[index].inRun = true
            } else {
                failedSources[index].inRun = false
            }
            failedSources[index].sequence = sequence
        } else {
            if failedSources.count >= 8 { failedSources.removeFirst() }
            failedSources.append((ssrc, sequence, false))
        }
    }

    /// Source validation's counters.
    public var sourceStatistics: RTPSourceValidation.Statistics { validator.statistics }
    /// The SSRC played, once a source passed probation.
    public var playedSSRC: UInt32? { validator.playedSSRC }

    /// Takes one RTCP datagram (SRTCP when the track is encrypted): sender reports give the
    /// mapping from RTP time to the sender's wall clock that end-to-end latency is measured with.
    public mutating func receiveControl(_ bytes: UnsafeMutableRawBufferPointer, length: Int) {
        var length = min(max(length, 0), bytes.count)
        if let session {
            guard let plain = try? session.unprotectRTCP(bytes, length: length) else {
                controlPacketsIgnored += 1
                return
            }
            length = plain
        }
        guard let packets = try? RTCPPacket.parseCompound(UnsafeRawBufferPointer(rebasing: bytes[0..<length])) else {
            controlPacketsIgnored += 1
            return
        }
        let played = validator.playedSSRC
        for packet in packets {
            switch packet {
            case .senderReport(let report):
                // Only the played source's clock places its frames (before one is played, the
                // report is kept and dropped if another source is chosen).
                guard played == nil || report.ssrc == played else {
                    intakeStatistics.controlPacketsFromOtherSources += 1
                    continue
                }
                senderReport = report
                // A frame's own capture time beats the sender's clock at the report's instant.
                if captureClock?.source != .absoluteCaptureTime {
                    captureClock = CaptureClock(senderReport: report)
                }
            case .goodbye(let goodbye):
                for ssrc in goodbye.ssrcs { validator.receiveGoodbye(ssrc: ssrc) }
                if let played, goodbye.ssrcs.contains(played) {
                    goodbyesReceived += 1
                } else {
                    intakeStatistics.controlPacketsFromOtherSources += 1
                }
            default: break
            }
        }
    }

    /// When `mediaTime` was captured, in nanoseconds since 1970 on the sender's wall clock (nil
    /// before the first capture time or sender report): from the latest `abs-capture-time`
    /// extension when the stream carries it (a frame's own capture instant; other frames are
    /// placed from it by their RTP time), else from the latest RTCP sender report (the sender's
    /// clock at the report's RTP time).
    public func captureTime(of mediaTime: MediaTime) -> Int64? {
        captureClock?.unixNanoseconds(rtpTimestamp: UInt32(truncatingIfNeeded: mediaTime.ticks), clockRate: clockRate)
    }

    /// Hands what the jitter buffer releases at `now` to `released` (appended, in order); returns
    /// its next loss deadline, if it waits for one. Cheap: pointers move, nothing is parsed.
    public mutating func release(now: MonotonicInstant, into released: inout [Release]) -> MonotonicInstant? {
        while true {
            switch buffer.poll(now: now) {
            case .packet(let packet):
                released.append(.packet(packet.payload, arrival: packet.arrival))
            case .lost:
                continue  // the depacketizer sees the gap in sequence numbers and drops the frame
            case .restart:
                released.append(.restart)
            case .wait(let deadline):
                return deadline
            case .empty:
                return nil
            }
        }
    }

    /// The jitter buffer's counters, plus `assembledBytes` (frames libavformat delivered).
    public func statistics(assembledBytes: Int = 0) -> JitterBufferStatistics {
        var network = buffer.statistics
        network.bytesReceived += assembledBytes
        return network
    }

    /// SRTP counters, when the track is encrypted.
    public var srtpStatistics: SRTPSession.Statistics? {
        session?.statistics
    }

    /// The packet pool's counters.
    public var packetPoolStatistics: RTPPacketPool.Statistics {
        pool.statistics
    }
}

/// The playout half of a track's receive path (the playout thread): depacketizes what the
/// ``TrackReceiver`` released, decides "wait for a key frame after loss", and schedules frames
/// (timeline and ``PlayoutScheduler``).
public struct TrackPlayout {
    /// What one poll asks the caller to do.
    public typealias Action = PlayoutScheduler<EncodedFrame>.Action

    /// The track's identity and codec.
    public let track: TrackID
    public let codec: Codec
    private var depacketizer: any Depacketizer
    private let factory: DepacketizerFactory
    /// The frames one packet completed, handed from the depacketizer to ``accept(_:)``; kept so
    /// its capacity is reused.
    private var completedFrames: [EncodedFrame] = []
    /// The scheduler's last answer when it was to wait (or idle), and the lead it was asked with:
    /// until a frame is queued or the delay changes, its answer cannot change before that instant,
    /// so polls in between (one per packet while a frame assembles) do not ask again.
    private var schedulerAnswer = SchedulerAnswer.none
    private var schedulerAnswerLead: Duration?
    public private(set) var timeline = PlayoutTimeline()
    private var scheduler: PlayoutScheduler<EncodedFrame>
    /// Video frames dropped after a loss while waiting for a key frame (their references are
    /// gone; decoding them would show corrupt pictures).
    public private(set) var framesDroppedWaitingForKeyframe = 0
    /// Video waits for a key frame at the start and after a loss (nothing before it decodes).
    private var waitingForKeyframe: Bool
    /// Complete frames received (assembled from packets, or from libavformat).
    public private(set) var framesReceived = 0
    /// Bytes of the frames libavformat delivered (RTP bytes are the jitter buffer's).
    public private(set) var assembledBytesReceived = 0
    /// Times the stream restarted (new SSRC, or a sequence or timestamp jump).
    public private(set) var restarts = 0

    init(track: TrackID, factory: DepacketizerFactory, delay: Duration) {
        self.track = track
        self.factory = factory
        codec = factory.codec
        waitingForKeyframe = codec.kind == .video
        depacketizer = factory.makeDepacketizer()
        scheduler = PlayoutScheduler(delay: delay)
        completedFrames.reserveCapacity(4)
    }

    /// The playout delay the scheduler applies.
    public var delay: Duration { scheduler.delay }

    /// Takes a frame that came assembled (libavformat), with its arrival instants set.
    public mutating func receive(frame: EncodedFrame) {
        assembledBytesReceived += frame.bytes.count
        accept(frame)
    }

    /// The stream starts again (a reopened source): a new timeline, and video waits for a key
    /// frame.
    public mutating func restart() {
        schedulerAnswer = .none
        var depacketizer = self.depacketizer
        scheduler.discardQueued { depacketizer.recycle($0.bytes) }
        depacketizer = factory.makeDepacketizer()
        self.depacketizer = depacketizer
        timeline.reset()
        waitingForKeyframe = codec.kind == .video
        restarts += 1
    }

    /// The delay in effect changed (an override was set or released): at once.
    public mutating func setDelay(_ delay: Duration) {
        schedulerAnswer = .none
        scheduler.setDelay(delay)
    }

    /// The delay changed at `now`, moving rendering there by `transition` (see
    /// ``PlayoutScheduler/setDelay(_:transition:now:)``).
    public mutating func setDelay(_ delay: Duration, transition: PlayoutDelayTransition, now: MonotonicInstant) {
        schedulerAnswer = .none
        scheduler.setDelay(delay, transition: transition, now: now)
    }

    /// The delay in effect at `now` (moving while a gradual transition is under way).
    public func delayInEffect(at now: MonotonicInstant) -> Duration {
        scheduler.delayInEffect(at: now)
    }

    /// When a frame of `mediaTime` is due under the delay in effect (the scheduler's rule).
    public func dueTime(for mediaTime: Duration) -> MonotonicInstant {
        scheduler.renderTime(for: mediaTime, timeline: timeline)
    }

    /// Depacketizes `released` (emptied, its capacity kept), then says what to do at `now`: a
    /// frame to render or skip, or the instant to poll again (the earlier of the next render and
    /// `bufferDeadline`, the jitter buffer's next loss deadline).
    public mutating func poll(
        now: MonotonicInstant, lead: Duration?, released: inout [TrackReceiver.Release], bufferDeadline: MonotonicInstant?
    ) -> TrackPipeline.Action {
        var start = released.startIndex
        while start < released.endIndex {
            // The packets up to the next restart go to the depacketizer in one call, which opens
            // the existential once (mutating it per packet cost a box-uniqueness check each).
            let end = released[start...].firstIndex { if case .restart = $0 { true } else { false } } ?? released.endIndex
            if start < end {
                var frames: [EncodedFrame] = []
                swap(&frames, &completedFrames)
                Self.push(released[start..<end], to: &depacketizer, into: &frames)
                for frame in frames { accept(frame) }
                frames.removeAll(keepingCapacity: true)
                swap(&frames, &completedFrames)
            }
            if end < released.endIndex { restart() }
            start = end + 1
        }
        released.removeAll(keepingCapacity: true)
        let action = schedulerPoll(now: now, lead: lead)
        switch action {
        case .wait(let instant):
            return .wait(until: bufferDeadline.map { min($0, instant) } ?? instant)
        case .idle:
            return bufferDeadline.map { .wait(until: $0) } ?? .idle
        case .render, .skip:
            return action
        }
    }

    /// Pushes `packets` (as parsed on intake: rebuilt from their stored headers, not parsed
    /// again) to `depacketizer`, appending the frames they complete to `frames`.
    private static func push<D: Depacketizer>(_ packets: ArraySlice<TrackReceiver.Release>, to depacketizer: inout D, into frames: inout [EncodedFrame]) {
        for case .packet(let packet, let arrival) in packets {
            depacketizer.push(packet, arrival: arrival) { frames.append($0) }
        }
    }

    /// What ``schedulerPoll(now:lead:)`` remembers of the scheduler's last answer.
    private enum SchedulerAnswer {
        case none
        case wait(until: MonotonicInstant)
        case idle
    }

    /// The scheduler's answer at `now`, or its last one when nothing it depends on changed: the
    /// queued frames, the timeline and the delay change only through ``accept(_:)``,
    /// ``setDelay(_:)`` and ``restart()``, which forget it. Exact for a lead and a late tolerance
    /// that are not negative (a frame released at `due − lead` cannot be late before then).
    private mutating func schedulerPoll(now: MonotonicInstant, lead: Duration?) -> Action {
        switch schedulerAnswer {
        case .wait(let until) where now < until && schedulerAnswerLead == lead: return .wait(until: until)
        case .idle where schedulerAnswerLead == lead: return .idle
        default: break
        }
        let action = scheduler.poll(now: now, timeline: timeline, lead: lead)
        let configuration = scheduler.configuration
        let cacheable = (lead ?? configuration.decodeLead) >= .zero && configuration.lateTolerance >= .zero
        switch action {
        case .wait(let until) where cacheable:
            schedulerAnswer = .wait(until: until)
        case .idle where cacheable:
            schedulerAnswer = .idle
        default:
            schedulerAnswer = .none
        }
        schedulerAnswerLead = lead
        return action
    }

    /// Where "wait for a key frame after loss" is decided (the depacketizer only flags the first
    /// frame after a loss): video frames after a loss are dropped until a key frame.
    private mutating func accept(_ frame: EncodedFrame) {
        schedulerAnswer = .none
        framesReceived += 1
        if codec.kind == .video {
            if frame.followsLoss, !frame.isKeyframe { waitingForKeyframe = true }
            if waitingForKeyframe {
                guard frame.isKeyframe else {
                    framesDroppedWaitingForKeyframe += 1
                    depacketizer.recycle(frame.bytes)
                    return
                }
                waitingForKeyframe = false
            }
        }
        let media = frame.mediaTime.duration
        timeline.observe(mediaTime: media, arrival: frame.firstArrival)
        scheduler.enqueue(frame, mediaTime: media, isKeyframe: frame.isKeyframe, byteCount: frame.bytes.count, arrival: frame.lastArrival)
    }

    /// Gives back the bytes of a rendered or skipped frame for reuse.
    public mutating func recycle(_ bytes: [UInt8]) {
        depacketizer.recycle(bytes)
    }

    /// The scheduler's counters.
    public var schedulerStatistics: PlayoutSchedulerStatistics {
        scheduler.statistics
    }

    /// The depacketizer's counters (frames discarded for loss, malformed payloads).
    public var depacketizerStatistics: DepacketizerStatistics {
        depacketizer.statistics
    }
}
