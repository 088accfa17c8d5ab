public import PlayoutCore

/// Opus over RTP (RFC 7587): each packet carries exactly one Opus packet (one frame of 2.5 to
/// 120 ms), so each RTP packet is one frame. The marker bit is ignored (RFC 7587 §4.1 leaves it to
/// talkspurt signalling) and every frame is a key frame: an Opus decoder can start anywhere.
///
/// The RTP clock is always 48 kHz (RFC 7587 §4.1), whatever the encoder's sampling rate.
public struct OpusDepacketizer: Depacketizer {
    /// The RTP clock rate of Opus (RFC 7587 §4.1).
    public static let defaultClockRate: Int32 = 48_000

    private var assembler: FrameAssembler

    public var codec: Codec { .opus }
    public var statistics: DepacketizerStatistics { assembler.statistics }

    public mutating func recycle(_ bytes: consuming [UInt8]) {
        assembler.recycle(bytes)
    }

    /// Creates a depacketizer for one track (`clockRate` is 48,000 for any conforming stream).
    public init(track: TrackID, clockRate: Int32 = OpusDepacketizer.defaultClockRate) {
        assembler = FrameAssembler(track: track, codec: .opus, clockRate: clockRate)
    }

    public mutating func push(_ packet: RTPPacket, arrival: MonotonicInstant, emit: (EncodedFrame) -> Void) {
        assembler.pushWholeFramePacket(packet, arrival: arrival, emit: emit)
    }

    public mutating func flush(emit: (EncodedFrame) -> Void) {
        if let frame = assembler.finish() { emit(frame) }
    }
}

extension FrameAssembler {
    /// Handles a packet of a format where every packet is one complete frame and every frame is a
    /// key frame (Opus, G.711): an empty payload is malformed.
    mutating func pushWholeFramePacket(_ packet: RTPPacket, arrival: MonotonicInstant, emit: (EncodedFrame) -> Void) {
        let (start, completed) = begin(packet, arrival: arrival)
        if let completed { emit(completed) }
        guard start != .drop else { return }
        if packet.payload.isEmpty {
            malformed()
        } else {
            bytes.append(contentsOf: packet.payload)
            isKeyframe = true
        }
        if let frame = finish() { emit(frame) }
    }
}
