public import PlayoutCore
public import PlayoutRTP

/// One viewer's stream of a publisher that fans one encode out to N viewers (`publish --fanout N`),
/// sans-IO: it reads no clock and opens no socket. The publisher packetizes each frame once
/// ("canonical" packets: plain RTP); each stream rewrites them into its own (``RTPRewrite``, the
/// piece ``WHEPSession`` uses too) — its SSRC per track, a sequence-number and timestamp offset
/// of its own drawn at random as an SFU does — and protects them with its own SRTP context
/// (``SRTPKeyingMaterial/fannedOut(viewer:)``: separate `srtp_t` sessions and keys per viewer).
/// Its RTCP is its own: sender reports with its SSRC, packet counts and timestamps, and the
/// feedback its viewer sends (NACK answered with RTX from the shared store of canonical
/// packets within its own ``RetransmissionLimiter``; PLI/FIR and REMB/TMMBR reported to the
/// caller, since there is one encoder). With impairment, its packets pass through a simulated
/// network of its own, seeded with the configured seed + the viewer number.
///
/// ```swift
/// let stream = try FanoutStream(viewer: 3, tracks: plans, keyingMaterial: key, impairment: .init())
/// let length = stream.write(canonical: parsed, track: 0, captureTime: nil, now: now, into: slot)  // RTP → SRTP, in place
/// ```
///
/// Not `Sendable`: the publisher's thread owns it (while a frame goes out to many viewers, one of
/// two sending threads has it, never both).
public final class FanoutStream {
    /// What one track of the stream is: the publisher decides, from the viewer number.
    public struct TrackPlan: Sendable, Equatable {
        /// Audio or video.
        public var kind: MediaKind
        /// The RTP payload type.
        public var payloadType: UInt8
        /// The RTP clock rate.
        public var clockRate: Int32
        /// The stream's SSRC on this track.
        public var ssrc: UInt32
        /// RTX (RFC 4588) payload type and SSRC (nil: NACKs are not answered).
        public var retransmission: (payloadType: UInt8, ssrc: UInt32)? {
            get { retransmissionPayloadType.map { ($0, retransmissionSSRC) } }
            set {
                retransmissionPayloadType = newValue?.payloadType
                retransmissionSSRC = newValue?.ssrc ?? 0
            }
        }
        /// The `abs-capture-time` extension id (nil: not sent).
        public var captureTimeID: UInt8?
        /// Where its RTP goes.
        public var destination: SocketAddress
        /// Where its sender reports go (the RTP port + 1).
        public var controlDestination: SocketAddress
        /// Whether a PLI/FIR asks for a key frame and REMB/TMMBR limits the bit rate (the video
        /// track of an encoding publisher).
        public var answersRequests: Bool
        var retransmissionPayloadType: UInt8?
        var retransmissionSSRC: UInt32 = 0

        /// Creates a plan.
        public init(
            kind: MediaKind, payloadType: UInt8, clockRate: Int32, ssrc: UInt32, retransmission: (payloadType: UInt8, ssrc: UInt32)? = nil,
            captureTimeID: UInt8? = nil, destination: SocketAddress, controlDestination: SocketAddress, answersRequests: Bool = false
        ) {
            self.kind = kind
            self.payloadType = payloadType
            self.clockRate = clockRate
            self.ssrc = ssrc
            self.captureTimeID = captureTimeID
            self.destination = destination
            self.controlDestination = controlDestination
            self.answersRequests = answersRequests
            self.retransmission = retransmission
        }

        public static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.kind == rhs.kind && lhs.payloadType == rhs.payloadType && lhs.clockRate == rhs.clockRate && lhs.ssrc == rhs.ssrc
                && lhs.retransmissionPayloadType == rhs.retransmissionPayloadType && lhs.retransmissionSSRC == rhs.retransmissionSSRC
                && lhs.captureTimeID == rhs.captureTimeID && lhs.destination == rhs.destination && lhs.controlDestination == rhs.controlDestination
                && lhs.answersRequests == rhs.answersRequests
        }
    }

    /// What one stream did.
    public struct Statistics: Equatable, Sendable {
        /// Per track.
        public struct Track: Equatable, Sendable {
            /// The stream's SSRC on the track.
            public var ssrc: UInt32
            /// RTP packets written for the stream (before its simulated network), and their payload bytes.
            public var packetsSent = 0
            public var payloadBytesSent = 0
            /// RTX packets sent in answer to its viewer's NACKs.
            public var retransmittedPacketsSent = 0
            /// What its viewer sent back (reports, NACKs, PLI, FIR, REMB, TMMBR).
            public var feedback = SenderFeedback.Statistics()
            /// What the retransmission bounds refused.
            public var retransmissionLimits = RetransmissionLimiter.Statistics()
        }

        /// The viewer number (0…N−1).
        public var viewer: Int
        /// Per track, by kind.
        public var tracks: [MediaKind: Track] = [:]
        /// RTCP datagrams from the viewer's addresses that were taken.
        public var rtcpAccepted = 0
        /// RTCP datagrams from the viewer's addresses refused: they failed SRTCP authentication
        /// with the viewer's keys or did not parse.
        public var feedbackRefused = 0
        /// Sender reports sent (all tracks).
        public var senderReportsSent = 0
        /// What its simulated network did (all zero without impairment).
        public var network = NetworkImpairment.Statistics()

        /// RTP packets written for the stream, all tracks.
        public var packetsSent: Int { tracks.values.reduce(0) { $0 + $1.packetsSent } }
    }

    /// What the viewer's feedback asks of the one encoder.
    public struct Requests: Equatable, Sendable {
        /// A PLI or a new FIR on a track that answers them.
        public var keyFrame = false
        /// The viewer's bit-rate limit changed: the new one (nil inside: none).
        public var bitrateLimit: UInt64??
    }

    private struct Track {
        var plan: TrackPlan
        var destination: DatagramDestination
        var controlDestination: DatagramDestination
        var sequenceOffset: UInt16
        var timestampOffset: UInt32
        var retransmissionSequence: UInt16
        var feedback: SenderFeedback
        var limiter = RetransmissionLimiter()
        var statistics: Statistics.Track
    }

    /// The replay window of the streams' outbound SRTP sessions: 64 packets, the smallest
    /// libsrtp2 accepts (the default 32,767 suits receivers, and costs a sender a 4 KB shift per packet).
    public static let outboundReplayWindow = 64

    /// The viewer number.
    public let viewer: Int
    private var tracks: [Track]
    private let outbound: SRTPSession?
    private let inbound: SRTPSession?
    private var impairment: NetworkImpairment?
    private var statisticsValue: Statistics
    private var rtx = [UInt8](repeating: 0, count: 2_048)

    /// Opens viewer `viewer`'s stream.
    ///
    /// - Parameters:
    ///   - tracks: its tracks, in the publisher's canonical track order.
    ///   - keyingMaterial: the publisher's keys (viewer 0's); the stream uses ``SRTPKeyingMaterial/fannedOut(viewer:)``
    ///     (nil: plain RTP).
    ///   - impairment: the publisher's simulated network; the stream's seed is its seed + `viewer`
    ///     (none when it impairs nothing: packets go straight out).
    /// - Throws: ``PlayoutError`` for an invalid impairment or destination; `SRTPError` when libsrtp2 refuses the keys.
    public init(viewer: Int, tracks plans: [TrackPlan], keyingMaterial: SRTPKeyingMaterial?, impairment configuration: NetworkImpairment.Configuration) throws {
        self.viewer = viewer
        let keys = keyingMaterial?.fannedOut(viewer: viewer)
        // A sender's replay window only has to hold its own in-order numbering: the smallest one
        // libsrtp2 takes, so that each protect shifts one word of it instead of 512.
        outbound = try keys.map { try SRTPSession(keyingMaterial: $0, direction: .outbound, configuration: .init(replayWindowSize: Self.outboundReplayWindow)) }
        inbound = try keys.map { try SRTPSession(keyingMaterial: $0, direction: .inbound) }
        var seeded = configuration
        seeded.seed = configuration.seed &+ UInt64(truncatingIfNeeded: viewer)
        impairment = seeded.isNone ? nil : try NetworkImpairment(configuration: seeded)
        var random = SystemRandomNumberGenerator()
        var built: [Track] = []
        for plan in plans {
            built.append(Track(
                plan: plan, destination: try DatagramDestination(plan.destination), controlDestination: try DatagramDestination(plan.controlDestination),
                sequenceOffset: .random(in: 0...UInt16.max, using: &random), timestampOffset: .random(in: 0...UInt32.max, using: &random),
                retransmissionSequence: .random(in: 0...UInt16.max, using: &random), feedback: SenderFeedback(ssrc: plan.ssrc),
                statistics: Statistics.Track(ssrc: plan.ssrc)
            ))
        }
        tracks = built
        statisticsValue = Statistics(viewer: viewer)
    }

    /// Its tracks' plans.
    public var plans: [TrackPlan] { tracks.map(\.plan) }
    /// Whether its packets pass through a simulated network (``submit(_:label:now:)`` and
    /// ``pollNetwork(now:)``) rather than straight out.
    public var impairs: Bool { impairment != nil }
    /// Where track `track`'s RTP goes (resolved once).
    public func destination(track: Int) -> DatagramDestination { tracks[track].destination }
    /// The addresses its viewer's RTCP is taken from: each track's RTP and RTCP destination.
    public var feedbackSources: [SocketAddress] { tracks.flatMap { [$0.plan.destination.normalized, $0.plan.controlDestination.normalized] } }

    /// What the stream did so far.
    public var statistics: Statistics {
        var snapshot = statisticsValue
        snapshot.network = impairment?.statistics ?? NetworkImpairment.Statistics()
        for track in tracks {
            var values = track.statistics
            values.feedback = track.feedback.statistics
            values.retransmissionLimits = track.limiter.statistics
            snapshot.tracks[track.plan.kind] = values
        }
        return snapshot
    }

    // MARK: Media

    /// Writes the stream's SRTP (or RTP) packet for canonical packet `parsed` of track `track`
    /// (its `abs-capture-time` value `captureTime`, nil: none) into `out`, which must hold the
    /// packet and ``SRTPSession/maximumTrailerLength`` more bytes. Returns its length (0: it did
    /// not fit or could not be protected; nothing is counted then). Allocates nothing.
    public func write(canonical parsed: RTPPacket, track index: Int, captureTime: UnsafeRawBufferPointer?, now: MonotonicInstant, into out: UnsafeMutableRawBufferPointer) -> Int {
        guard tracks.indices.contains(index) else { return 0 }
        let length = rewrite(parsed, track: index, captureTime: captureTime, into: out)
        guard length > 0 else { return 0 }
        var protected = length
        if let outbound {
            guard let value = try? outbound.protectRTP(out, length: length) else { return 0 }
            protected = value
        }
        tracks[index].limiter.mediaSent(sequenceNumber: parsed.sequenceNumber.rawValue &+ tracks[index].sequenceOffset, bytes: length, now: now)
        tracks[index].statistics.packetsSent += 1
        tracks[index].statistics.payloadBytesSent += parsed.payload.count
        return protected
    }

    /// Hands a datagram of track `track` (bit 7 of `label`: a retransmission) to the stream's
    /// simulated network (only when ``impairs``).
    public func submit(_ datagram: [UInt8], label: Int, now: MonotonicInstant) {
        impairment?.submit(datagram, label: label, now: now)
    }

    /// What the stream's simulated network releases at `now` (``NetworkImpairment/Output/idle``
    /// without impairment).
    public func pollNetwork(now: MonotonicInstant) -> NetworkImpairment.Output {
        impairment?.poll(now: now) ?? .idle
    }

    /// As ``pollNetwork(now:)`` at the end of a run (``NetworkImpairment/drain(now:deadline:)``).
    public func drainNetwork(now: MonotonicInstant, deadline: MonotonicInstant) -> NetworkImpairment.Output {
        impairment?.drain(now: now, deadline: deadline) ?? .idle
    }

    /// Drops what the simulated network still holds (a stop); returns how many.
    @discardableResult
    public func discardPending() -> Int {
        impairment?.discardPending() ?? 0
    }

    // MARK: RTCP

    /// Takes an (S)RTCP datagram from the viewer's address (unprotected in place with the
    /// viewer's keys): a NACK is answered with RTX from `stores` (the canonical packets kept, by
    /// track), handed to `emit` (track, datagram) — into the simulated network or straight out,
    /// as the caller sends media; PLI/FIR and REMB/TMMBR are returned for the one encoder.
    /// Datagrams that fail authentication or do not parse are counted in
    /// ``Statistics/feedbackRefused`` and dropped.
    public func receiveRTCP(
        _ bytes: UnsafeMutableRawBufferPointer, length: Int, now: MonotonicInstant, arrivalNTP: UInt64, stores: inout [RetransmissionBuffer?],
        emit: (Int, UnsafeRawBufferPointer) -> Void
    ) -> Requests {
        var requests = Requests()
        var plain = min(length, bytes.count)
        if let inbound {
            guard let value = try? inbound.unprotectRTCP(bytes, length: plain) else {
                statisticsValue.feedbackRefused += 1
                return requests
            }
            plain = value
        }
        guard let packets = try? RTCPPacket.parseCompound(UnsafeRawBufferPointer(rebasing: bytes[0..<plain])) else {
            statisticsValue.feedbackRefused += 1
            return requests
        }
        statisticsValue.rtcpAccepted += 1
        for index in tracks.indices {
            let actions = tracks[index].feedback.receive(packets, now: now, arrivalNTP: arrivalNTP)
            tracks[index].limiter.roundTripTime = tracks[index].feedback.statistics.roundTripTime
            for action in actions {
                switch action {
                case .retransmit(let lost):
                    guard stores.indices.contains(index), stores[index] != nil else { continue }
                    retransmit(lost, track: index, from: &stores[index]!, now: now, emit: emit)
                case .keyFrame:
                    if tracks[index].plan.answersRequests { requests.keyFrame = true }
                case .bitrateLimit(let limit):
                    if tracks[index].plan.answersRequests { requests.bitrateLimit = .some(limit) }
                }
            }
        }
        return requests
    }

    /// The stream's sender reports at `now` (wall clock `wallClock`, ns since 1970; canonical
    /// RTP timestamp `canonicalTimestamp(track)` then), each handed to `emit` (track, SRTCP
    /// compound) for its track's RTCP destination.
    public func senderReports(wallClock: Int64, canonicalTimestamp: (Int) -> UInt32?, now: MonotonicInstant, emit: (Int, [UInt8]) -> Void) {
        for index in tracks.indices {
            guard let canonical = canonicalTimestamp(index) else { continue }
            let ssrc = tracks[index].plan.ssrc
            let report = RTCPPacket.senderReport(RTCPSenderReport(
                ssrc: ssrc, ntpTimestamp: NTPTime.ntp(unixNanoseconds: wallClock), rtpTimestamp: canonical &+ tracks[index].timestampOffset,
                packetCount: UInt32(truncatingIfNeeded: tracks[index].statistics.packetsSent),
                octetCount: UInt32(truncatingIfNeeded: tracks[index].statistics.payloadBytesSent)
            ))
            let description = RTCPPacket.sourceDescription([RTCPSourceDescriptionChunk(ssrc: ssrc, items: [(1, Array("playout".utf8))])])
            let compound = RTCPPacket.serializeCompound([report, description] + tracks[index].feedback.senderReportExtras(now: now))
            let datagram: [UInt8]
            if let outbound {
                guard let protected = try? outbound.protectRTCP(compound) else { continue }
                datagram = protected
            } else {
                datagram = compound
            }
            statisticsValue.senderReportsSent += 1
            emit(index, datagram)
        }
    }

    /// Where track `track`'s sender reports go (resolved once).
    public func controlDestination(track: Int) -> DatagramDestination { tracks[track].controlDestination }

    // MARK: Private

    private func rewrite(_ parsed: RTPPacket, track index: Int, captureTime: UnsafeRawBufferPointer?, into out: UnsafeMutableRawBufferPointer) -> Int {
        let plan = tracks[index].plan
        let capture = captureTime.flatMap { value in plan.captureTimeID.map { (id: $0, value: value) } }
        return RTPRewrite.write(
            parsed, into: out, payloadType: plan.payloadType, sequenceNumber: parsed.sequenceNumber.rawValue &+ tracks[index].sequenceOffset,
            timestamp: parsed.timestamp.rawValue &+ tracks[index].timestampOffset, ssrc: plan.ssrc, mid: nil, captureTime: capture,
            trailer: SRTPSession.maximumTrailerLength
        )
    }

    /// Answers a NACK on track `index` from the canonical `store`: each packet still kept and
    /// allowed by the limiter is rewritten, wrapped as RTX (RFC 4588) and protected.
    private func retransmit(_ lost: [UInt16], track index: Int, from store: inout RetransmissionBuffer, now: MonotonicInstant, emit: (Int, UnsafeRawBufferPointer) -> Void) {
        guard let rtxPayloadType = tracks[index].plan.retransmissionPayloadType else { return }
        let rtxSSRC = tracks[index].plan.retransmissionSSRC
        var stream = [UInt8](repeating: 0, count: 2_048)
        for sequence in lost {
            let canonical = sequence &- tracks[index].sequenceOffset
            guard let length = store.packetLength(canonical, now: now),
                  tracks[index].limiter.decide(sequenceNumber: sequence, bytes: length + 2, now: now) == .resend
            else { continue }
            var written = 0
            _ = store.withPacket(canonical, now: now) { packet in
                guard let parsed = try? RTPPacket(parsing: packet) else { return }
                written = stream.withUnsafeMutableBytes { rewrite(parsed, track: index, captureTime: nil, into: $0) }
            }
            guard written > 0 else { continue }
            let rtxLength = stream.withUnsafeBytes { original in
                rtx.withUnsafeMutableBytes { out in
                    RTPRetransmission.packetize(
                        UnsafeRawBufferPointer(rebasing: original[0..<written]), into: out, payloadType: rtxPayloadType, ssrc: rtxSSRC,
                        sequenceNumber: tracks[index].retransmissionSequence
                    )
                }
            }
            guard var total = rtxLength, total + SRTPSession.maximumTrailerLength <= rtx.count else { continue }
            if let outbound {
                guard let protected = rtx.withUnsafeMutableBytes({ try? outbound.protectRTP($0, length: total) }) else { continue }
                total = protected
            }
            tracks[index].retransmissionSequence &+= 1
            tracks[index].statistics.retransmittedPacketsSent += 1
            rtx.withUnsafeBytes { emit(index, UnsafeRawBufferPointer(rebasing: $0[0..<total])) }
        }
    }
}
