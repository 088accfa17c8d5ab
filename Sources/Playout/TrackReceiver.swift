import PlayoutCore
public import PlayoutJitter
public import PlayoutRTP

/// The intake half of a track's receive path (where datagrams arrive): SRTP unprotect, RTP parse (once),
/// one copy into a pooled buffer, source validation (``RTPSourceValidator``: probation, one
/// played source, RFC 3550 A.1 sequence and timestamp checks), the jitter buffer; RTCP.
/// ``release(now:into:)`` hands what the jitter buffer releases to the ``TrackPlayout`` — pointers
/// to pooled packets, in order.
///
/// Only the played source's packets reach the jitter buffer (so its `packetsReceived` and
/// `bytesReceived` count that source alone); everything else is counted by reason in
/// ``intakeStatistics`` and ``sourceStatistics``. RTCP sender reports and BYEs count only from
/// the played source (a report from another source never moves the timeline).
@_spi(Pipeline) public struct TrackReceiver {
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
        /// Datagrams that came before the track's keys (DTLS-SRTP still handshaking).
        public var datagramsBeforeKeys = 0

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

    /// Retransmissions (RFC 4588 RTX) received on the track: W3C `retransmittedPacketsReceived` and
    /// `retransmittedBytesReceived` count those that filled a gap (so they are in
    /// `packetsReceived`); late and duplicate ones are counted apart, and RTX the track cannot
    /// use (no source played yet, another RTX stream's SSRC, no original sequence number,
    /// malformed) is dropped and counted.
    public struct RetransmissionStatistics: Equatable, Sendable {
        /// RTX packets restored that filled a gap, and their payload bytes (as restored).
        public var packetsReceived = 0
        public var bytesReceived = 0
        /// RTX packets that came after their packet was given up on.
        public var packetsLate = 0
        /// RTX packets of packets already received.
        public var packetsDuplicated = 0
        /// RTX packets dropped: foreign SSRC, nothing played yet, no original sequence number,
        /// or a restored packet that does not parse.
        public var packetsDropped = 0

        public init() {}
    }

    /// How the track talks back to its sender (nil: it stays silent).
    public struct FeedbackSettings: Sendable {
        /// The receiver's SSRC and SDES CNAME.
        public var ssrc: UInt32
        public var cname: String

        public init(ssrc: UInt32 = .random(in: 1...UInt32.max), cname: String) {
            self.ssrc = ssrc
            self.cname = cname
        }
    }

    public let payloadType: UInt8
    /// The RTX payload type that carries this track's retransmissions (`apt=` its payload
    /// type), if the SDP announces one.
    public let retransmissionPayloadType: UInt8?
    /// The key SRTCP feedback is protected with (the track's SRTP key), when encrypted.
    public private(set) var keyingMaterial: SRTPKeyingMaterial?
    /// Whether the track waits for keys a DTLS handshake gives (``setKeys(_:)``): until then
    /// every datagram is dropped and counted in ``IntakeStatistics/datagramsBeforeKeys``.
    public private(set) var awaitsKeys = false
    /// The RTP clock rate.
    public let clockRate: Int32
    /// The `a=extmap` id of `abs-capture-time` in the track's SDP, if it has one.
    public let absoluteCaptureTimeID: UInt8?
    /// The `a=extmap` id of `playout-delay` in the track's SDP, if it has one.
    public let playoutDelayID: UInt8?
    /// The played source's latest `playout-delay` extension: the range it asks the receiver to
    /// hold its frames in (nil: none seen).
    public private(set) var senderPlayoutDelay: PlayoutDelayLimits?
    private var session: SRTPSession?
    private var pool = RTPPacketPool()
    private var buffer = JitterBuffer<StoredRTPPacket>()
    /// Packets travel through validation with their arrival, so a held one keeps its own.
    private var validator: RTPSourceValidator<ArrivedRTPPacket>
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
    /// When the played source's first packet arrived (nil: none yet).
    public private(set) var firstPacketArrival: MonotonicInstant?
    /// The latest RTCP sender report.
    public private(set) var senderReport: RTCPSenderReport?
    /// Where capture times come from (see ``captureTime(of:)``), once known.
    public private(set) var captureClock: CaptureClock?
    /// RTCP BYE packets received (the sender said it stopped).
    public private(set) var goodbyesReceived = 0
    /// RTCP datagrams that failed SRTCP authentication or parsing.
    public private(set) var controlPacketsIgnored = 0
    /// Sender reports of the played source taken (a driver learns where its RTCP comes from).
    public private(set) var senderReportsReceived = 0
    /// What retransmissions did.
    public private(set) var retransmissionStatistics = RetransmissionStatistics()
    /// The RTX stream's SSRC, once one of its packets filled a gap.
    private var retransmissionSSRC: UInt32?
    private let feedbackConfiguration: ReceiverFeedback.Configuration?
    /// The feedback decisions (made at the first packet or poll; nil when silent).
    private var feedback: ReceiverFeedback?
    /// The played source as its reports count it: extended sequence numbers and packets received.
    private var reception: (first: Int64, highest: Int64, received: Int64)?
    private var usefulFor: Duration = .zero
    private var bandwidthLimit: UInt64?

    init(
        factory: DepacketizerFactory, media: MediaDescription, delay: Duration, switchAfterSilence: Duration, feedback: FeedbackSettings? = nil,
        keysFromDTLS: Bool = false
    ) throws {
        payloadType = factory.payloadType
        clockRate = factory.clockRate
        absoluteCaptureTimeID = media.extensionID(uri: AbsoluteCaptureTime.uri)
        playoutDelayID = media.extensionID(uri: PlayoutDelayLimits.uri)
        retransmissionPayloadType = media.retransmissionPayloadTypes.first { $0.original == factory.payloadType }?.rtx
        feedbackConfiguration = feedback.map {
            ReceiverFeedback.Configuration(media: media, payloadType: factory.payloadType, clockRate: factory.clockRate, ssrc: $0.ssrc, cname: $0.cname)
        }
        keyingMaterial = try media.crypto.first.map { try SRTPKeyingMaterial(crypto: $0) }
        if keysFromDTLS {
            awaitsKeys = true
        } else if let keyingMaterial {
            session = try SRTPSession(keyingMaterial: keyingMaterial, direction: .inbound)
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

    /// The keys a DTLS-SRTP handshake exported for what the sender sends (``awaitsKeys``): the
    /// track takes SRTP from now on.
    ///
    /// - Throws: ``SRTPError`` when libsrtp2 refuses the key.
    public mutating func setKeys(_ inbound: SRTPKeyingMaterial) throws {
        session = try SRTPSession(keyingMaterial: inbound, direction: .inbound)
        keyingMaterial = inbound
        awaitsKeys = false
    }

    /// The delay in effect changed: the jitter buffer waits for reordered packets up to it (less
    /// the decode margin).
    public mutating func setDelay(_ delay: Duration) {
        buffer.configuration.maximumReorderDelay = max(.milliseconds(20), delay - TrackPipeline.decodeMargin)
        // A retransmission helps while the jitter buffer still waits for its packet.
        usefulFor = buffer.configuration.maximumReorderDelay
        feedback?.setUsefulFor(usefulFor)
    }

    /// Takes one received datagram (`length` bytes at the start of `bytes`, which it may decrypt in
    /// place): RTCP multiplexed on the RTP port (RFC 5761) goes to ``receiveControl(_:length:)``;
    /// an RTP packet of the track's payload type is parsed, copied into a pooled buffer and, when
    /// source validation plays it, filed in the jitter buffer; anything else is counted by reason.
    public mutating func receive(_ bytes: UnsafeMutableRawBufferPointer, length: Int, arrival: MonotonicInstant) {
        let length = min(max(length, 0), bytes.count)
        guard !awaitsKeys else {
            datagramsIgnored += 1
            intakeStatistics.datagramsBeforeKeys += 1
            return
        }
        switch MultiplexedPacketKind(classifying: UnsafeRawBufferPointer(rebasing: bytes[0..<length])) {
        case .rtcp:
            receiveControl(bytes, length: length, arrival: arrival)
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
            if packet.payloadType == retransmissionPayloadType {
                receiveRetransmission(bytes, length: plain, ssrc: packet.ssrc, arrival: arrival)
                return
            }
            datagramsIgnored += 1
            intakeStatistics.packetsWrongPayloadType += 1
            return
        }
        accept(packet, arrival: arrival)
    }

    /// Source validation, then the jitter buffer; returns what the buffer did with the packet
    /// (nil when validation did not play it).
    @discardableResult
    private mutating func accept(_ packet: RTPPacket, arrival: MonotonicInstant) -> JitterBuffer<StoredRTPPacket>.InsertResult? {
        let stored = pool.store(packet)
        switch validator.receive(
            ssrc: packet.ssrc, sequenceNumber: packet.sequenceNumber.rawValue, timestamp: packet.timestamp.rawValue, payload: ArrivedRTPPacket(packet: stored, arrival: arrival),
            now: arrival
        ) {
        case .hold, .reject:
            return nil
        case .play(let previous, let restart):
            switch restart {
            case .resync?:
                buffer.startNewStream()
                restartFeedback()
            case .newSource(_, let ssrc)?:
                forgetOtherSources(than: ssrc)
                restartFeedback()
            case nil: break
            }
            if let previous { file(previous.packet, arrival: previous.arrival) }
            return file(stored, arrival: arrival)
        }
    }

    /// An RTX packet (`length` plain bytes at the start of `bytes`) of RTX stream `ssrc`:
    /// restored in place into the played source's packet (RFC 4588 §4), then validated and
    /// filed like any packet of it.
    private mutating func receiveRetransmission(_ bytes: UnsafeMutableRawBufferPointer, length: Int, ssrc: UInt32, arrival: MonotonicInstant) {
        // Session multiplexing: one RTX stream of its own SSRC per played source.
        guard let played = validator.playedSSRC, ssrc != played, retransmissionSSRC == nil || retransmissionSSRC == ssrc,
              let (start, restoredLength) = RTPRetransmission.restore(bytes, length: length, payloadType: payloadType, ssrc: played),
              let packet = try? RTPPacket(parsing: UnsafeRawBufferPointer(rebasing: bytes[start..<start + restoredLength]))
        else {
            retransmissionStatistics.packetsDropped += 1
            return
        }
        switch accept(packet, arrival: arrival) {
        case .queued?:
            retransmissionSSRC = ssrc
            retransmissionStatistics.packetsReceived += 1
            retransmissionStatistics.bytesReceived += packet.payload.count
        case .late?:
            retransmissionStatistics.packetsLate += 1
        case .duplicate?:
            retransmissionStatistics.packetsDuplicated += 1
        case .dropped?, nil:
            retransmissionStatistics.packetsDropped += 1
        }
    }

    /// Files a packet of the played source in the jitter buffer.
    @discardableResult
    private mutating func file(_ stored: StoredRTPPacket, arrival: MonotonicInstant) -> JitterBuffer<StoredRTPPacket>.InsertResult {
        let header = stored.header
        // The earliest arrival: probation files the packets it held after the one that passed it.
        if firstPacketArrival.map({ arrival < $0 }) ?? true { firstPacketArrival = arrival }
        if let id = absoluteCaptureTimeID {
            stored.withPacket { packet in
                if let capture = packet.absoluteCaptureTime(id: id) {
                    captureClock = CaptureClock(absoluteCaptureTime: capture, rtpTimestamp: header.timestamp.rawValue)
                }
            }
        }
        if let id = playoutDelayID, let limits = stored.withPacket({ $0.playoutDelay(id: id) }) { senderPlayoutDelay = limits }
        let result = buffer.insert(
            sequenceNumber: header.sequenceNumber, timestamp: header.timestamp, ssrc: header.ssrc, isFrameEnd: header.marker,
            byteCount: stored.withPacket { $0.payload.count }, payload: stored, now: arrival
        )
        if feedbackConfiguration != nil, result != .duplicate { countReception(header.sequenceNumber.rawValue, now: arrival) }
        return result
    }

    /// The played source's packet `sequenceNumber` counts for the reports and the NACK decisions
    /// (no allocation unless it opens a gap).
    private mutating func countReception(_ sequenceNumber: UInt16, now: MonotonicInstant) {
        startFeedback(now: now)
        guard var counted = reception else {
            reception = (Int64(sequenceNumber), Int64(sequenceNumber), 1)
            feedback?.received(sequenceNumber: Int64(sequenceNumber), now: now)
            return
        }
        let extended = counted.highest + Int64(Int16(bitPattern: sequenceNumber &- UInt16(truncatingIfNeeded: counted.highest)))
        counted.highest = max(counted.highest, extended)
        counted.first = min(counted.first, extended)
        counted.received += 1
        reception = counted
        feedback?.received(sequenceNumber: extended, now: now)
    }

    private mutating func startFeedback(now: MonotonicInstant) {
        guard feedback == nil, let configuration = feedbackConfiguration else { return }
        var started = ReceiverFeedback(configuration: configuration, now: now, seed: UInt64(configuration.ssrc))
        started.setUsefulFor(usefulFor)
        started.setBandwidthLimit(bandwidthLimit)
        feedback = started
    }

    /// The played source changed or restarted: its reception counts start over.
    private mutating func restartFeedback() {
        reception = nil
        retransmissionSSRC = nil
        feedback?.restart()
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
    public mutating func receiveControl(_ bytes: UnsafeMutableRawBufferPointer, length: Int, arrival: MonotonicInstant? = nil) {
        var length = min(max(length, 0), bytes.count)
        guard !awaitsKeys else {
            controlPacketsIgnored += 1
            return
        }
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
                senderReportsReceived += 1
                if let arrival {
                    startFeedback(now: arrival)
                    feedback?.receivedSenderReport(report, at: arrival)
                }
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
            case .extendedReport(let report):
                guard played == nil || report.ssrc == played else {
                    intakeStatistics.controlPacketsFromOtherSources += 1
                    continue
                }
                if let arrival { feedback?.receivedExtendedReport(report, at: arrival) }
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

    // MARK: Feedback

    /// The RTCP to send at `now` (compound packets, reports first) and when to ask again; nil
    /// when the track stays silent. `waitingForKeyFrame`: decoding waits for one.
    public mutating func pollFeedback(now: MonotonicInstant, waitingForKeyFrame: Bool) -> (packets: [[RTCPPacket]], next: MonotonicInstant)? {
        guard feedbackConfiguration != nil else { return nil }
        startFeedback(now: now)
        let counted = reception.map { counted in
            ReceiverFeedback.Reception(
                ssrc: validator.playedSSRC ?? 0, firstSequenceNumber: counted.first, highestSequenceNumber: counted.highest,
                received: counted.received, jitter: buffer.statistics.jitter
            )
        }
        return feedback?.poll(now: now, reception: validator.playedSSRC == nil ? nil : counted, waitingForKeyFrame: waitingForKeyFrame)
    }

    /// Whether the feedback should be polled now rather than at the `next` its last poll
    /// returned: a gap opened, or a bandwidth limit is to be told
    /// (``ReceiverFeedback/wantsPoll(receptionKnown:)``).
    public var feedbackWantsPoll: Bool {
        feedback?.wantsPoll(receptionKnown: validator.playedSSRC != nil && reception != nil) ?? false
    }

    /// The bandwidth limit in effect (nil: none), told to the sender as REMB/TMMBR where it
    /// accepts them.
    public mutating func setBandwidthLimit(_ bitsPerSecond: UInt64?) {
        bandwidthLimit = bitsPerSecond
        feedback?.setBandwidthLimit(bitsPerSecond)
    }

    /// What the feedback decided so far: NACK messages, PLIs, FIRs, compound packets sent, and the
    /// round-trip time (nil when silent).
    public var feedbackStatistics: (nackCount: Int, pliCount: Int, firCount: Int, packetsSent: Int, roundTripTime: Duration?)? {
        guard feedbackConfiguration != nil else { return nil }
        return (
            feedback?.nacks.statistics.nackCount ?? 0, feedback?.keyFrames.pliCount ?? 0, feedback?.keyFrames.firCount ?? 0,
            feedback?.compoundPacketsSent ?? 0, feedback?.roundTripTime
        )
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
