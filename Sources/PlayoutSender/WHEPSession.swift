import Playout
public import PlayoutCore
public import PlayoutRTP
public import PlayoutWebRTC

/// What the HTTP side agreed with one WHEP subscriber, handed to the media thread, which opens
/// the session from it (``WHEPSession``).
public struct WHEPSessionPlan: Sendable {
    /// The session id (the last part of its `Location`).
    public var id: String
    /// The session's number (1, 2, …): its simulated network's seed is the configured seed plus it.
    public var number: Int
    /// Our ICE credentials for the session.
    public var credentials: ICECredentials
    /// The subscriber's ICE username fragment.
    public var remoteUsernameFragment: String
    /// The subscriber's DTLS fingerprint.
    public var remoteFingerprint: DTLSFingerprint
    /// What the answer agreed per track.
    public var tracks: [WHEPLiteNegotiatedTrack]

    /// Creates a plan.
    public init(id: String, number: Int, credentials: ICECredentials, remoteUsernameFragment: String, remoteFingerprint: DTLSFingerprint, tracks: [WHEPLiteNegotiatedTrack]) {
        self.id = id
        self.number = number
        self.credentials = credentials
        self.remoteUsernameFragment = remoteUsernameFragment
        self.remoteFingerprint = remoteFingerprint
        self.tracks = tracks
    }
}

/// Why a WHEP session ended.
public enum WHEPSessionEnd: String, Sendable, Hashable, CaseIterable {
    /// The subscriber sent DELETE.
    case deleted
    /// No authenticated Binding request for 30 s (RFC 7675), or none ever.
    case consentExpired
    /// The subscriber closed DTLS (close_notify).
    case closed
    /// The DTLS handshake failed (timeout, wrong fingerprint, alert).
    case dtlsFailed
    /// The publisher stopped.
    case publisherStopped
}

/// One WHEP subscriber's media session on the shared socket, sans-IO: an ICE-lite responder, a
/// DTLS server, then SRTP with the session's own keys. The publisher packetizes each frame once
/// ("canonical" packets: plain RTP, the publisher's own SSRC and numbering); each session
/// rewrites them into its own stream — its SSRC, a sequence number and timestamp offset of its
/// own, the offer's payload type, `sdes:mid` and `abs-capture-time` under the offer's ids — and
/// protects them with its own SRTP context, as an SFU serves an audience from one encode. NACKs
/// are answered from the shared store of canonical packets (the sequence offset maps a
/// session's numbers back), within the session's own ``RetransmissionLimiter``; RTX carries the
/// session's RTX SSRC and numbering. Media passes through the session's own simulated network;
/// STUN, DTLS and RTCP are not impaired (control traffic is kept reliable, as for `--to`).
///
/// Not `Sendable`: the media thread owns it.
public final class WHEPSession {
    /// Where the session is.
    public enum State: Sendable, Hashable {
        /// Waiting for the subscriber's nominated Binding request and DTLS ClientHello.
        case connecting
        /// DTLS done: media flows.
        case connected
        /// Over, with the reason.
        case ended(WHEPSessionEnd)
    }

    /// What one session did.
    public struct Statistics: Sendable, Equatable {
        /// Per kind: RTP packets and bytes sent (before the simulated network), NACKs and RTX.
        public struct Track: Sendable, Equatable {
            /// The codec sent.
            public var codec: String
            /// RTP packets produced for the session (before the simulated network).
            public var packetsSent = 0
            /// Their payload bytes.
            public var payloadBytesSent = 0
            /// RTX packets sent in answer to NACKs.
            public var retransmittedPacketsSent = 0
            /// What the subscriber sent back (reports, NACKs, PLI, FIR, REMB).
            public var feedback = SenderFeedback.Statistics()
            /// What the retransmission bounds refused.
            public var retransmissionLimits = RetransmissionLimiter.Statistics()
        }

        /// The session id.
        public var id: String
        /// Per kind.
        public var tracks: [MediaKind: Track] = [:]
        /// ICE-lite: what was answered and dropped.
        public var ice = ICELiteResponder.Statistics()
        /// DTLS datagrams taken and sent.
        public var dtlsReceived = 0
        /// SRTCP datagrams taken.
        public var rtcpReceived = 0
        /// Of those, the ones that failed to unprotect or parse (dropped).
        public var rtcpUndecodable = 0
        /// What the session's simulated network did.
        public var network = NetworkImpairment.Statistics()
        /// How long from the offer to DTLS connected (nil: not yet).
        public var connectTime: Duration?
        /// Why it ended (nil: live).
        public var end: WHEPSessionEnd?

        /// Binding requests answered (``ice``).
        public var checksAnswered: Int { ice.requestsAnswered }
        /// STUN datagrams dropped unanswered (``ice``).
        public var checksDropped: Int { ice.dropped }
    }

    private struct Track {
        var canonical: Int
        var kind: MediaKind
        var agreed: WHEPLiteNegotiatedTrack
        var sequenceOffset: UInt16
        var timestampOffset: UInt32
        var retransmissionSequence: UInt16
        var feedback: SenderFeedback
        var limiter = RetransmissionLimiter()
        /// The mid as the `sdes:mid` element carries it (empty: longer than the one-byte form's
        /// 16 bytes, so not sent).
        var midBytes: [UInt8]
        var statistics: Statistics.Track
        /// The canonical timestamp and wall clock of the latest packet (for sender reports).
        var packetsSent = 0
        var payloadBytesSent = 0
    }

    /// The plan it was opened from.
    public let plan: WHEPSessionPlan
    /// Where it is.
    public private(set) var state: State = .connecting
    /// The ICE-lite side.
    public private(set) var ice: ICELiteResponder
    private let dtls: DTLSEndpoint
    private var outbound: SRTPSession?
    private var inbound: SRTPSession?
    private var impairment: NetworkImpairment
    private var tracks: [Track]
    private let openedAt: MonotonicInstant
    private var statisticsValue: Statistics
    private var scratch = [UInt8](repeating: 0, count: 2_048)
    /// Datagrams to send now (not impaired): STUN answers, DTLS, RTCP.
    private var outgoing: [(bytes: [UInt8], to: SocketAddress)] = []
    private var keyFrameWanted = false
    private var bitrateLimitChanged = false

    /// The subscriber's latest bit-rate limit (REMB/TMMBR; nil: none).
    public private(set) var bitrateLimit: UInt64?

    /// Opens a session from `plan` at `now`.
    ///
    /// - Parameters:
    ///   - kinds: the kind of each canonical track, by index (what `plan.tracks[…].track` points at).
    ///   - codecs: the codec of each canonical track.
    ///   - certificate: the process's DTLS certificate (its fingerprint is in the answer).
    ///   - impairment: the simulated network of the publisher; the session's seed is its seed plus the plan's number.
    /// - Throws: ``DTLSError`` when OpenSSL cannot be set up, ``PlayoutError`` for an invalid impairment.
    public init(
        plan: WHEPSessionPlan, kinds: [MediaKind], codecs: [Codec], certificate: DTLSCertificate,
        impairment configuration: NetworkImpairment.Configuration, now: MonotonicInstant
    ) throws {
        self.plan = plan
        ice = ICELiteResponder(local: plan.credentials, remoteUsernameFragment: plan.remoteUsernameFragment, now: now)
        dtls = try DTLSEndpoint(role: .server, certificate: certificate, remoteFingerprint: plan.remoteFingerprint)
        var seeded = configuration
        seeded.seed = configuration.seed &+ UInt64(truncatingIfNeeded: plan.number)
        impairment = try NetworkImpairment(configuration: seeded)
        openedAt = now
        var system = SystemRandomNumberGenerator()
        tracks = plan.tracks.compactMap { agreed in
            guard kinds.indices.contains(agreed.track) else { return nil }
            return Track(
                canonical: agreed.track, kind: kinds[agreed.track], agreed: agreed,
                sequenceOffset: .random(in: 0...UInt16.max, using: &system), timestampOffset: .random(in: 0...UInt32.max, using: &system),
                retransmissionSequence: .random(in: 0...UInt16.max, using: &system), feedback: SenderFeedback(ssrc: agreed.ssrc),
                midBytes: agreed.mid.utf8.count <= 16 ? Array(agreed.mid.utf8) : [],
                statistics: Statistics.Track(codec: codecs.indices.contains(agreed.track) ? codecs[agreed.track].rawValue : "")
            )
        }
        statisticsValue = Statistics(id: plan.id)
        for track in tracks { statisticsValue.tracks[track.kind] = track.statistics }
        dtls.start(now: now)
    }

    /// What the session did so far.
    public var statistics: Statistics {
        var snapshot = statisticsValue
        snapshot.ice = ice.statistics
        snapshot.network = impairment.statistics
        for track in tracks {
            var values = track.statistics
            values.feedback = track.feedback.statistics
            values.retransmissionLimits = track.limiter.statistics
            snapshot.tracks[track.kind] = values
        }
        return snapshot
    }

    /// Whether the session is over.
    public var hasEnded: Bool {
        if case .ended = state { return true }
        return false
    }

    /// Where media goes (the nominated address), once ICE nominated one.
    public var mediaAddress: SocketAddress? { ice.selectedAddress }

    // MARK: Input

    /// Takes a STUN datagram for this session (its USERNAME starts with our ufrag).
    public func receiveSTUN(_ bytes: UnsafeRawBufferPointer, from source: SocketAddress, now: MonotonicInstant) {
        guard !hasEnded else { return }
        if let response = ice.receive(bytes, from: source, now: now) { outgoing.append((response, source)) }
    }

    /// Takes a DTLS datagram from a validated address of this session.
    public func receiveDTLS(_ bytes: UnsafeRawBufferPointer, now: MonotonicInstant) {
        guard !hasEnded else { return }
        statisticsValue.dtlsReceived += 1
        dtls.receive(bytes, now: now)
        drainDTLS(now: now)
    }

    /// Takes an SRTCP datagram from the subscriber (unprotected in place): NACK → RTX from
    /// `stores` (the canonical packets kept, by canonical track), PLI/FIR → a key frame
    /// (``takeKeyFrameRequest()``), REMB/TMMBR → ``bitrateLimit``.
    public func receiveRTCP(
        _ bytes: UnsafeMutableRawBufferPointer, length: Int, now: MonotonicInstant, arrivalNTP: UInt64, stores: inout [RetransmissionBuffer?]
    ) {
        guard !hasEnded, let inbound else { return }
        statisticsValue.rtcpReceived += 1
        guard let plain = try? inbound.unprotectRTCP(bytes, length: length),
              let packets = try? RTCPPacket.parseCompound(UnsafeRawBufferPointer(rebasing: bytes[0..<plain]))
        else {
            statisticsValue.rtcpUndecodable += 1
            return
        }
        for index in tracks.indices {
            let actions = tracks[index].feedback.receive(packets, now: now, arrivalNTP: arrivalNTP)
            tracks[index].limiter.roundTripTime = tracks[index].feedback.statistics.roundTripTime
            for action in actions {
                switch action {
                case .retransmit(let lost):
                    let canonical = tracks[index].canonical
                    guard stores.indices.contains(canonical), stores[canonical] != nil else { continue }
                    retransmit(lost, track: index, from: &stores[canonical]!, now: now)
                case .keyFrame:
                    // Only the kinds the answer agreed are acted on.
                    let agreed = tracks[index].agreed.feedback
                    if tracks[index].kind == .video, agreed.contains(where: { $0.parameter == "pli" || $0.parameter == "fir" }) { keyFrameWanted = true }
                case .bitrateLimit(let limit):
                    let agreed = tracks[index].agreed.feedback
                    guard tracks[index].kind == .video, agreed.contains(where: { $0.type == "goog-remb" || $0.parameter == "tmmbr" }) else { continue }
                    bitrateLimit = limit
                    bitrateLimitChanged = true
                }
            }
        }
    }

    /// Whether the subscriber asked for a key frame since the last call (PLI, FIR, or the
    /// session just connected and needs one to start).
    public func takeKeyFrameRequest() -> Bool {
        defer { keyFrameWanted = false }
        return keyFrameWanted
    }

    /// Whether ``bitrateLimit`` changed since the last call.
    public func takeBitrateLimitChange() -> Bool {
        defer { bitrateLimitChanged = false }
        return bitrateLimitChanged
    }

    // MARK: Media

    /// Sends the canonical packet `packet` of canonical track `canonical` (plain RTP, its
    /// `abs-capture-time` under `captureTimeID`) as this session's packet, into its simulated
    /// network. Nothing before DTLS connected.
    public func send(canonical packet: UnsafeRawBufferPointer, track canonical: Int, captureTimeID: UInt8?, now: MonotonicInstant) {
        guard state == .connected, let parsed = try? RTPPacket(parsing: packet) else { return }
        send(canonical: parsed, track: canonical, captureTime: captureTimeID.flatMap { parsed.headerExtension(id: $0) }, now: now)
    }

    /// As ``send(canonical:track:captureTimeID:now:)`` with the packet parsed once for every
    /// session (``WHEPRouter``), and its `abs-capture-time` value (nil: none).
    public func send(canonical parsed: RTPPacket, track canonical: Int, captureTime: UnsafeRawBufferPointer?, now: MonotonicInstant) {
        guard state == .connected, let outbound, let index = tracks.firstIndex(where: { $0.canonical == canonical }) else { return }
        let length = rewrite(parsed, track: index, captureTime: captureTime)
        guard length > 0 else { return }
        // In place: the track's feedback and limiter are not copied per packet.
        tracks[index].limiter.mediaSent(sequenceNumber: parsed.sequenceNumber.rawValue &+ tracks[index].sequenceOffset, bytes: length, now: now)
        tracks[index].statistics.packetsSent += 1
        tracks[index].statistics.payloadBytesSent += parsed.payload.count
        tracks[index].packetsSent += 1
        tracks[index].payloadBytesSent += parsed.payload.count
        guard let protected = scratch.withUnsafeMutableBytes({ try? outbound.protectRTP($0, length: length) }) else { return }
        impairment.submit(Array(scratch[0..<protected]), label: canonical, now: now)
    }

    /// The sender reports of the session's tracks at `now` (wall clock `wallClock` ns since
    /// 1970, canonical media time `ticks(track)`), queued to send. Only when connected.
    public func sendReports(wallClock: Int64, canonicalTimestamp: (Int) -> UInt32?, now: MonotonicInstant) {
        guard state == .connected, let outbound, let address = mediaAddress else { return }
        for index in tracks.indices {
            guard let canonicalTimestamp = canonicalTimestamp(tracks[index].canonical) else { continue }
            let report = RTCPPacket.senderReport(RTCPSenderReport(
                ssrc: tracks[index].agreed.ssrc, ntpTimestamp: NTPTime.ntp(unixNanoseconds: wallClock),
                rtpTimestamp: canonicalTimestamp &+ tracks[index].timestampOffset,
                packetCount: UInt32(truncatingIfNeeded: tracks[index].packetsSent), octetCount: UInt32(truncatingIfNeeded: tracks[index].payloadBytesSent)
            ))
            let description = RTCPPacket.sourceDescription([RTCPSourceDescriptionChunk(ssrc: tracks[index].agreed.ssrc, items: [(1, Array("playout".utf8))])])
            let extras = tracks[index].feedback.senderReportExtras(now: now)
            let compound = RTCPPacket.serializeCompound([report, description] + extras)
            if let protected = try? outbound.protectRTCP(compound) { outgoing.append((protected, address)) }
        }
    }

    // MARK: Output

    /// Runs the session's timers at `now` (DTLS retransmissions, consent) and hands every
    /// datagram due to `send`: control traffic first, then what the simulated network releases.
    /// Returns when it must run again (nil: nothing pending but consent, which ``consentDeadline`` gives).
    public func poll(now: MonotonicInstant, send: (UnsafeRawBufferPointer, SocketAddress) -> Void) -> MonotonicInstant? {
        if !hasEnded, ice.consentExpired(now: now) { end(.consentExpired, now: now) }
        drainDTLS(now: now)
        for (bytes, address) in outgoing { bytes.withUnsafeBytes { send($0, address) } }
        outgoing.removeAll(keepingCapacity: true)
        var next = dtls.nextDeadline
        let address = mediaAddress
        loop: while true {
            switch impairment.poll(now: now) {
            case .send(let datagram, _):
                if let address { datagram.withUnsafeBytes { send($0, address) } }
            case .wait(let instant):
                next = min(next ?? instant, instant)
                break loop
            case .idle:
                break loop
            }
        }
        if !hasEnded { next = min(next ?? ice.consentDeadline, ice.consentDeadline) }
        return next
    }

    /// Ends the session (DELETE, the publisher's stop): close_notify is queued for
    /// ``poll(now:send:)``; what the simulated network still holds is dropped.
    public func end(_ reason: WHEPSessionEnd, now: MonotonicInstant) {
        guard !hasEnded else { return }
        state = .ended(reason)
        statisticsValue.end = reason
        if reason != .closed, reason != .dtlsFailed { dtls.close(now: now) }
        drainDTLS(now: now, afterEnd: true)
        _ = impairment.discardPending()
    }

    private func drainDTLS(now: MonotonicInstant, afterEnd: Bool = false) {
        while let action = dtls.poll(now: now) {
            switch action {
            case .send(let datagram):
                if let address = mediaAddress ?? ice.validatedAddresses.last { outgoing.append((datagram, address)) }
            case .connected(let keys):
                guard !afterEnd, !hasEnded else { continue }
                do {
                    outbound = try SRTPSession(
                        keyingMaterial: keys.outbound, direction: .outbound, configuration: .init(replayWindowSize: FanoutStream.outboundReplayWindow)
                    )
                    inbound = try SRTPSession(keyingMaterial: keys.inbound, direction: .inbound)
                    state = .connected
                    statisticsValue.connectTime = openedAt.duration(to: now)
                    keyFrameWanted = true  // the new viewer starts at once, not at the next periodic key frame
                } catch {
                    end(.dtlsFailed, now: now)
                }
            case .failed:
                if !hasEnded {
                    state = .ended(.dtlsFailed)
                    statisticsValue.end = .dtlsFailed
                }
            case .closed:
                if !hasEnded {
                    state = .ended(.closed)
                    statisticsValue.end = .closed
                }
            }
        }
    }

    /// Writes the session's version of canonical packet `parsed` into ``scratch`` (``RTPRewrite``):
    /// the session's payload type, offsets and SSRC, `sdes:mid` and `abs-capture-time` under the
    /// offer's ids. Returns its length (0 when it does not fit). Allocates nothing.
    private func rewrite(_ parsed: RTPPacket, track index: Int, captureTime: UnsafeRawBufferPointer?) -> Int {
        let track = tracks[index]
        let mid = track.agreed.midExtensionID.flatMap { id in track.midBytes.isEmpty ? nil : (id: id, bytes: track.midBytes) }
        let capture = captureTime.flatMap { value in track.agreed.absoluteCaptureTimeExtensionID.map { (id: $0, value: value) } }
        return scratch.withUnsafeMutableBytes { out in
            // Room for the SRTP tag after the packet.
            RTPRewrite.write(
                parsed, into: out, payloadType: track.agreed.payloadType, sequenceNumber: parsed.sequenceNumber.rawValue &+ track.sequenceOffset,
                timestamp: parsed.timestamp.rawValue &+ track.timestampOffset, ssrc: track.agreed.ssrc, mid: mid, captureTime: capture, trailer: 32
            )
        }
    }

    /// Answers a NACK on session track `index` from the canonical `store`.
    private func retransmit(_ lost: [UInt16], track index: Int, from store: inout RetransmissionBuffer, now: MonotonicInstant) {
        guard let outbound, let rtxPayloadType = tracks[index].agreed.retransmissionPayloadType,
              let rtxSSRC = tracks[index].agreed.retransmissionSSRC
        else { return }
        var original = [UInt8](repeating: 0, count: 2_048)
        for sequence in lost {
            let canonical = sequence &- tracks[index].sequenceOffset
            guard let length = store.packetLength(canonical, now: now),
                  tracks[index].limiter.decide(sequenceNumber: sequence, bytes: length + 2, now: now) == .resend
            else { continue }
            var written = 0
            store.withPacket(canonical, now: now) { packet in
                guard let parsed = try? RTPPacket(parsing: packet) else { return }
                written = rewrite(parsed, track: index, captureTime: nil)
            }
            guard written > 0 else { continue }
            let rtxLength = scratch.withUnsafeBytes { session in
                original.withUnsafeMutableBytes { out in
                    RTPRetransmission.packetize(
                        UnsafeRawBufferPointer(rebasing: session[0..<written]), into: out, payloadType: rtxPayloadType, ssrc: rtxSSRC,
                        sequenceNumber: tracks[index].retransmissionSequence
                    )
                }
            }
            guard let rtxLength, let protected = original.withUnsafeMutableBytes({ try? outbound.protectRTP($0, length: rtxLength) }) else { continue }
            tracks[index].retransmissionSequence &+= 1
            tracks[index].statistics.retransmittedPacketsSent += 1
            // Labelled apart (bit 7): RTX is not a first delivery.
            impairment.submit(Array(original[0..<protected]), label: 0x80 | tracks[index].canonical, now: now)
        }
    }
}
