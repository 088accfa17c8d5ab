public import PlayoutCore
public import PlayoutRTP

/// The send path of one RTP track, sans-IO — the mirror of ``TrackPipeline``: encoded frame →
/// packetizer → RTP header (with the `abs-capture-time` extension on each frame's first packet)
/// → SRTP protect → datagrams; and RTCP sender reports (SRTCP when encrypted) that map the
/// track's RTP time to the sender's wall clock, so a receiver can measure end-to-end latency.
public struct TrackSender {
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
    private var buffer = [UInt8](repeating: 0, count: 2_048)

    /// Creates the sender of one track; a random SSRC, sequence base and timestamp base unless
    /// given. SRTP is on when `keyingMaterial` is given.
    ///
    /// - Throws: ``PlayoutError`` for a codec without a packetizer; `SRTPError` for a bad key.
    public init(
        codec: Codec, payloadType: UInt8, clockRate: Int32, keyingMaterial: SRTPKeyingMaterial? = nil,
        ssrc: UInt32 = .random(in: 1...UInt32.max), firstSequenceNumber: UInt16 = .random(in: 0...UInt16.max),
        firstTimestamp: UInt32 = .random(in: 0...UInt32.max), absoluteCaptureTimeID: UInt8? = nil,
        maxPayloadSize: Int = PacketizerDefaults.maxPayloadSize
    ) throws {
        switch codec {
        case .h264: packetizer = H264Packetizer(maxPayloadSize: maxPayloadSize)
        case .h265: packetizer = H265Packetizer(maxPayloadSize: maxPayloadSize)
        case .vp8: packetizer = VP8Packetizer(maxPayloadSize: maxPayloadSize)
        case .vp9: packetizer = VP9Packetizer(maxPayloadSize: maxPayloadSize)
        case .opus: packetizer = OpusPacketizer(maxPayloadSize: maxPayloadSize)
        case .pcmu, .pcma, .aac, .av1:
            throw PlayoutError(.unsupportedMedia, "the publisher sends H.264, H.265, VP8, VP9 or Opus, not \(codec.rawValue)")
        }
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

    /// The RTP timestamp of media time `ticks` (in the clock rate) from the track's start.
    public func rtpTimestamp(ticks: Int64) -> UInt32 {
        firstTimestamp &+ UInt32(truncatingIfNeeded: ticks)
    }

    /// Sends `frame` (its media time counts from the track's start): calls `emit` with each
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
    /// media time `ticks` of this track: SRTCP-protected when encrypted.
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

/// 64-bit NTP timestamps (UQ32.32 seconds since 1900, era 0) to and from nanoseconds since 1970.
enum NTPTime {
    static let unixEpoch: Int64 = 2_208_988_800

    /// Nanoseconds since 1970 as an NTP timestamp.
    static func ntp(unixNanoseconds nanoseconds: Int64) -> UInt64 {
        let seconds = UInt64(truncatingIfNeeded: nanoseconds / 1_000_000_000 + unixEpoch) & 0xFFFF_FFFF
        let fraction = (UInt64(nanoseconds % 1_000_000_000) << 32) / 1_000_000_000
        return seconds << 32 | fraction
    }

    /// An NTP timestamp as nanoseconds since 1970; seconds with the top bit clear are in era 1
    /// (after February 2036), as RFC 4330 §3 resolves them (valid 1968–2104).
    static func unixNanoseconds(ntp: UInt64) -> Int64 {
        let eraSeconds = Int64(ntp >> 32)
        let seconds = (eraSeconds < 0x8000_0000 ? eraSeconds + (1 << 32) : eraSeconds) - unixEpoch
        return seconds * 1_000_000_000 + Int64(((ntp & 0xFFFF_FFFF) * 1_000_000_000) >> 32)
    }
}
