import Playout
public import PlayoutCore
public import PlayoutRTP

/// The send path of one RTP track, sans-IO — the mirror of ``TrackPipeline``. The RTP work
/// (packetizing, `abs-capture-time` stamping, SRTP, sender reports) is PlayoutRTP's
/// ``RTPSender``; this wrapper only turns its errors into ``PlayoutError``s for the facade.
public struct TrackSender {
    private var base: RTPSender

    public var codec: Codec { base.codec }
    public var payloadType: UInt8 { base.payloadType }
    public var clockRate: Int32 { base.clockRate }
    public var ssrc: UInt32 { base.ssrc }
    /// The `a=extmap` id of `abs-capture-time` (nil: not sent).
    public var absoluteCaptureTimeID: UInt8? { base.absoluteCaptureTimeID }
    /// RTP packets and payload bytes sent (for sender reports and the publisher's statistics).
    public var packetsSent: Int { base.packetsSent }
    public var payloadBytesSent: Int { base.payloadBytesSent }
    /// Frames sent.
    public var framesSent: Int { base.framesSent }

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
        do {
            base = try RTPSender(
                codec: codec, payloadType: payloadType, clockRate: clockRate, keyingMaterial: keyingMaterial, ssrc: ssrc,
                firstSequenceNumber: firstSequenceNumber, firstTimestamp: firstTimestamp,
                absoluteCaptureTimeID: absoluteCaptureTimeID, maxPayloadSize: maxPayloadSize
            )
        } catch let error as RTPSenderError {
            throw PlayoutError(.unsupportedMedia, error.description)
        }
    }

    /// The RTP timestamp of media time `ticks` (in the clock rate) from the track's start.
    public func rtpTimestamp(ticks: Int64) -> UInt32 {
        base.rtpTimestamp(ticks: ticks)
    }

    /// Sends `frame` (its media time counts from the track's start): calls `emit` with each
    /// datagram. `captureTime` (nanoseconds since 1970) goes into `abs-capture-time`.
    ///
    /// - Throws: what the packetizer, the RTP writer or SRTP throw; nothing is emitted for a
    ///   frame that fails to packetize.
    public mutating func send(_ frame: EncodedFrame, captureTime: Int64?, emit: ([UInt8]) throws -> Void) throws {
        try base.send(frame, captureTime: captureTime, emit: emit)
    }

    /// As ``send(_:captureTime:emit:)``, keeping the packets with `now` for retransmission.
    public mutating func send(_ frame: EncodedFrame, captureTime: Int64?, now: MonotonicInstant, emit: ([UInt8]) throws -> Void) throws {
        try base.send(frame, captureTime: captureTime, now: now, emit: emit)
    }

    /// Keeps what is sent and answers NACKs with RTX (RFC 4588) of `payloadType` on `ssrc`.
    public mutating func enableRetransmission(payloadType: UInt8, ssrc: UInt32 = .random(in: 1...UInt32.max)) {
        base.enableRetransmission(payloadType: payloadType, ssrc: ssrc)
    }

    /// Sends RTX packets for `sequenceNumbers` still kept; returns how many.
    @discardableResult
    public mutating func retransmit(_ sequenceNumbers: [UInt16], now: MonotonicInstant, emit: ([UInt8]) throws -> Void) throws -> Int {
        try base.retransmit(sequenceNumbers, now: now, emit: emit)
    }

    /// What the retransmission bounds decided (nil: retransmission off).
    public var retransmissionLimits: RetransmissionLimiter.Statistics? { base.retransmissionLimits }
    /// The receivers' latest round-trip time: no packet is resent twice within it.
    public var retransmissionRoundTripTime: Duration? {
        get { base.retransmissionRoundTripTime }
        set { base.retransmissionRoundTripTime = newValue }
    }

    /// RTX packets sent and their bytes; the RTX SSRC (nil: retransmission off).
    public var retransmittedPacketsSent: Int { base.retransmittedPacketsSent }
    public var retransmittedBytesSent: Int { base.retransmittedBytesSent }
    public var retransmissionSSRC: UInt32? { base.retransmissionSSRC }

    /// A sender report for wall-clock instant `wallClock` (nanoseconds since 1970), which is
    /// media time `ticks` of this track: SRTCP-protected when encrypted.
    public func senderReport(wallClock: Int64, ticks: Int64, extras: [RTCPPacket] = []) throws -> [UInt8] {
        try base.senderReport(wallClock: wallClock, ticks: ticks, extras: extras)
    }
}
