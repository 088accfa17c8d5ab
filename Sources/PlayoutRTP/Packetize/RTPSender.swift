public import PlayoutCore

/// Why an RTP sender cannot be made.
public enum RTPSenderError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The codec is known, but Playout has no packetizer for it.
    case noPacketizer(Codec)

    public var description: String {
        switch self {
        case .noPacketizer(let codec):
            return "the publisher sends H.264, H.265, VP8, VP9 or Opus, not \(codec.rawValue)"
        }
    }
}

/// The send path of one RTP stream, sans-IO — the mirror of the receive path: encoded frame →
/// packetizer → RTP header (with the `abs-capture-time` extension on each frame's first packet)
/// → SRTP protect → datagrams; and RTCP sender reports (SRTCP when encrypted) that map the
/// stream's RTP time to the sender's wall clock, so a receiver can measure end-to-end latency.
///
/// ```swift
/// var sender = try RTPSender(codec: .h264, payloadType: 96, clockRate: 90_000, absoluteCaptureTimeID: 1)
/// try sender.send(frame, captureTime: nowNanoseconds) { datagram in try socket.send(datagram) }
/// let report = try sender.senderReport(wallClock: nowNanoseconds, ticks: mediaTicks)
/// ```
public struct RTPSender {
    public let codec: Codec
    public let payloadType: UInt8
    public let clockRate: Int32
    public let ssrc: UInt32
    /// The `a=extmap` id of `abs-capture-time` (nil: not sent).
    public let absoluteCaptureTimeID: UInt8?
    /// RTP packets and payload bytes sent (for sender reports and the publisher's statistics).
    public private(set) var packetsSent = 0
    public private(set) var payloadBytesSent = 0
    /// Frames sent.
    public private(set) var framesSent = 0

    private var packetizer: any Packetizer
    private var header: RTPPacketBuilder
    private let firstTimestamp: UInt32
    private let session: SRTPSession?
    /// What is kept to answer NACKs (nil: retransmission off).
    private var retransmissions: RetransmissionBuffer?
    /// What bounds the answers to NACKs (budget, resends per packet, one RTT apart).
    private var limiter = RetransmissionLimiter()
    /// The RTX stream (RFC 4588): its payload type, SSRC and next sequence number.
    private var retransmissionStream: (payloadType: UInt8, ssrc: UInt32, sequenceNumber: UInt16)?
    /// The instant the packets being sent are kept with.
    private var sendInstant = MonotonicInstant(nanoseconds: 0)
    /// RTX packets sent (RFC 4588), and their bytes (headers and OSN included, before SRTP).
    public private(set) var retransmittedPacketsSent = 0
    public private(set) var retransmittedBytesSent = 0
    /// One packet being written: room for the largest payload, the header (CSRCs and an
    /// abs-capture-time extension at most) and the SRTP tag.
    private var buffer: [UInt8]

    /// The packetizer of `codec`.
    ///
    /// - Throws: ``RTPSenderError/noPacketizer(_:)`` for PCMU, PCMA, AAC and AV1.
    public static func makePacketizer(for codec: Codec, maxPayloadSize: Int = PacketizerDefaults.maxPayloadSize) throws(RTPSenderError) -> any Packetizer {
        switch codec {
        case .h264: H264Packetizer(maxPayloadSize: maxPayloadSize)
        case .h265: H265Packetizer(maxPayloadSize: maxPayloadSize)
        case .vp8: VP8Packetizer(maxPayloadSize: maxPayloadSize)
        case .vp9: VP9Packetizer(maxPayloadSize: maxPayloadSize)
        case .opus: OpusPacketizer(maxPayloadSize: maxPayloadSize)
        case .pcmu, .pcma, .aac, .av1: throw .noPacketizer(codec)
        }
    }

    /// Creates the sender of one stream; a random SSRC, sequence base and timestamp base unless
    /// given. SRTP is on when `keyingMaterial` is given.
    ///
    /// - Throws: ``RTPSenderError`` for a codec without a packetizer; `SRTPError` for a bad key.
    public init(
        codec: Codec, payloadType: UInt8, clockRate: Int32, keyingMaterial: SRTPKeyingMaterial? = nil,
        ssrc: UInt32 = .random(in: 1...UInt32.max), firstSequenceNumber: UInt16 = .random(in: 0...UInt16.max),
        firstTimestamp: UInt32 = .random(in: 0...UInt32.max), absoluteCaptureTimeID: UInt8? = nil,
        maxPayloadSize: Int = PacketizerDefaults.maxPayloadSize
    ) throws {
        packetizer = try Self.makePacketizer(for: codec, maxPayloadSize: maxPayloadSize)
        buffer = [UInt8](repeating: 0, count: max(2_048, maxPayloadSize + 256))
        self.codec = codec
        self.payloadType = payloadType
        self.clockRate = clockRate
        self.ssrc = ssrc
        self.firstTimestamp = firstTimestamp
        self.absoluteCaptureTimeID = absoluteCaptureTimeID
        header = RTPPacketBuilder(
            payloadType: payloadType, sequenceNumber: SequenceNumber(rawValue: firstSequenceNumber),
            timestamp: RTPTimestamp(rawValue: firstTimestamp), ssrc: ssrc
        )
        session = try keyingMaterial.map { try SRTPSession(keyingMaterial: $0, direction: .outbound) }
    }

    /// The RTP timestamp of media time `ticks` (in the clock rate) from the stream's start.
    public func rtpTimestamp(ticks: Int64) -> UInt32 {
        firstTimestamp &+ UInt32(truncatingIfNeeded: ticks)
    }

    /// Sends `frame` (its media time counts from the stream's start): calls `emit` with each
    /// datagram. `captureTime` (nanoseconds since 1970) goes into `abs-capture-time`.
    ///
    /// - Throws: what the packetizer, the RTP writer or SRTP throw; nothing is emitted for a
    ///   frame that fails to packetize.
    public mutating func send(_ frame: EncodedFrame, captureTime: Int64?, emit: ([UInt8]) throws -> Void) throws {
        try send(frame, captureTime: captureTime, now: sendInstant, emit: emit)
    }

    /// As ``send(_:captureTime:emit:)``, keeping each packet with `now` for retransmission when
    /// ``enableRetransmission(payloadType:ssrc:buffer:)`` turned it on.
    public mutating func send(_ frame: EncodedFrame, captureTime: Int64?, now: MonotonicInstant, emit: ([UInt8]) throws -> Void) throws {
        sendInstant = now
        header.timestamp = RTPTimestamp(rawValue: rtpTimestamp(ticks: frame.mediaTime.ticks))
        var first = true
        var packetizer = self.packetizer
        defer { self.packetizer = packetizer }
        try frame.bytes.withUnsafeBytes { access in
            try packetizer.packetize(access) { payload, isLast in
                header.marker = isLast
                header.extensions = []
                if first, let id = absoluteCaptureTimeID, let captureTime {
                    header.extensions = [.init(id: id, bytes: AbsoluteCaptureTime(captureTimestamp: NTPTime.ntp(unixNanoseconds: captureTime)).bytes)]
                }
                first = false
                try emitPacket(payload: payload, emit: emit)
                header.sequenceNumber = header.sequenceNumber.advanced(by: 1)
                packetsSent += 1
                payloadBytesSent += payload.count
            }
        }
        framesSent += 1
    }

    private mutating func emitPacket(payload: UnsafeRawBufferPointer, emit: ([UInt8]) throws -> Void) throws {
        let header = self.header
        let session = self.session
        let sequenceNumber = header.sequenceNumber.rawValue
        let now = sendInstant
        try buffer.withUnsafeMutableBytes { raw in
            var length = try header.write(payload: payload, into: raw)
            if retransmissions != nil {
                retransmissions?.store(UnsafeRawBufferPointer(rebasing: raw[0..<length]), sequenceNumber: sequenceNumber, now: now)
                limiter.mediaSent(sequenceNumber: sequenceNumber, bytes: length, now: now)
            }
            if let session { length = try session.protectRTP(raw, length: length) }
            try emit(Array(raw[0..<length]))
        }
    }

    /// Keeps every packet sent from now on in `buffer` and answers NACKs with RTX packets
    /// (RFC 4588) of payload type `payloadType` on SSRC `ssrc`, within the bounds of `limiter`.
    public mutating func enableRetransmission(
        payloadType: UInt8, ssrc: UInt32, buffer: RetransmissionBuffer = RetransmissionBuffer(), limiter: RetransmissionLimiter = RetransmissionLimiter()
    ) {
        retransmissions = buffer
        self.limiter = limiter
        retransmissionStream = (payloadType, ssrc, .random(in: 0...UInt16.max))
    }

    /// The RTX stream's SSRC, when retransmission is on.
    public var retransmissionSSRC: UInt32? { retransmissionStream?.ssrc }
    /// What the retransmission buffer did (nil: retransmission off).
    public var retransmissionStatistics: RetransmissionBuffer.Statistics? { retransmissions?.statistics }
    /// What the retransmission bounds refused and let through (nil: retransmission off).
    public var retransmissionLimits: RetransmissionLimiter.Statistics? { retransmissions == nil ? nil : limiter.statistics }
    /// The latest round-trip time the receivers reported: no packet is resent twice within it.
    public var retransmissionRoundTripTime: Duration? {
        get { limiter.roundTripTime }
        set { limiter.roundTripTime = newValue }
    }

    /// Answers a NACK at `now`: calls `emit` with an RTX packet (SRTP-protected when encrypted)
    /// for each of `sequenceNumbers` still kept, not resent within the resend interval, and
    /// allowed by the ``RetransmissionLimiter`` (bit-rate budget, resends per packet, one round
    /// trip apart). Returns how many were sent; none when retransmission is off.
    @discardableResult
    public mutating func retransmit(_ sequenceNumbers: [UInt16], now: MonotonicInstant, emit: ([UInt8]) throws -> Void) throws -> Int {
        guard var kept = retransmissions, var stream = retransmissionStream else { return 0 }
        var scratch = buffer
        // Moved out while in use, so neither the ring nor the packet buffer is copied.
        retransmissions = nil
        buffer = []
        var sent = 0
        var bytes = 0
        defer {
            retransmissions = kept
            retransmissionStream = stream
            buffer = scratch
            retransmittedPacketsSent += sent
            retransmittedBytesSent += bytes
        }
        let session = self.session
        var failure: (any Error)?
        for sequenceNumber in sequenceNumbers {
            guard let length = kept.packetLength(sequenceNumber, now: now) else {
                kept.withPacket(sequenceNumber, now: now) { _ in }  // counted as unavailable
                continue
            }
            guard limiter.decide(sequenceNumber: sequenceNumber, bytes: length + 2, now: now) == .resend else { continue }
            kept.withPacket(sequenceNumber, now: now) { original in
                do {
                    try scratch.withUnsafeMutableBytes { raw in
                        guard var length = RTPRetransmission.packetize(
                            original, into: raw, payloadType: stream.payloadType, ssrc: stream.ssrc, sequenceNumber: stream.sequenceNumber
                        ) else { return }
                        bytes += length
                        if let session { length = try session.protectRTP(raw, length: length) }
                        stream.sequenceNumber &+= 1
                        sent += 1
                        try emit(Array(raw[0..<length]))
                    }
                } catch {
                    failure = error
                }
            }
            if let failure { throw failure }
        }
        return sent
    }

    /// A sender report for wall-clock instant `wallClock` (nanoseconds since 1970), which is
    /// media time `ticks` of this stream, followed in its compound by `extras` (e.g. a DLRR
    /// block): SRTCP-protected when encrypted.
    public func senderReport(wallClock: Int64, ticks: Int64, extras: [RTCPPacket] = []) throws -> [UInt8] {
        let report = RTCPPacket.senderReport(RTCPSenderReport(
            ssrc: ssrc, ntpTimestamp: NTPTime.ntp(unixNanoseconds: wallClock), rtpTimestamp: rtpTimestamp(ticks: ticks),
            packetCount: UInt32(truncatingIfNeeded: packetsSent), octetCount: UInt32(truncatingIfNeeded: payloadBytesSent)
        ))
        let bytes = RTCPPacket.serializeCompound([report] + extras)
        guard let session else { return bytes }
        return try session.protectRTCP(bytes)
    }
}
