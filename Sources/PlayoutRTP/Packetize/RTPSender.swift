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
        try buffer.withUnsafeMutableBytes { raw in
            var length = try header.write(payload: payload, into: raw)
            if let session { length = try session.protectRTP(raw, length: length) }
            try emit(Array(raw[0..<length]))
        }
    }

    /// A sender report for wall-clock instant `wallClock` (nanoseconds since 1970), which is
    /// media time `ticks` of this stream: SRTCP-protected when encrypted.
    public func senderReport(wallClock: Int64, ticks: Int64) throws -> [UInt8] {
        let report = RTCPPacket.senderReport(RTCPSenderReport(
            ssrc: ssrc, ntpTimestamp: NTPTime.ntp(unixNanoseconds: wallClock), rtpTimestamp: rtpTimestamp(ticks: ticks),
            packetCount: UInt32(truncatingIfNeeded: packetsSent), octetCount: UInt32(truncatingIfNeeded: payloadBytesSent)
        ))
        let bytes = RTCPPacket.serializeCompound([report])
        guard let session else { return bytes }
        return try session.protectRTCP(bytes)
    }
}
