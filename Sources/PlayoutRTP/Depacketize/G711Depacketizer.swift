public import PlayoutCore

/// G.711 µ-law (PCMU) and A-law (PCMA) over RTP (RFC 3551 §4.5.14): each packet is a run of
/// 8-bit samples, one frame; every frame is a key frame. Output is the samples as received.
///
/// The static payload types are 0 (PCMU) and 8 (PCMA) at 8 kHz; a dynamic payload type may use
/// another clock rate (one sample per tick, as `ffmpeg -ar 48000 -c:a pcm_mulaw -f rtp` sends).
public struct G711Depacketizer: Depacketizer {
    /// The companding law, which picks the codec reported.
    public enum Law: Sendable, Hashable {
        /// µ-law, PCMU, static payload type 0.
        case muLaw
        /// A-law, PCMA, static payload type 8.
        case aLaw

        /// The codec of this law.
        public var codec: Codec {
            switch self {
            case .muLaw: .pcmu
            case .aLaw: .pcma
            }
        }
    }

    /// The clock rate of the static payload types 0 and 8 (RFC 3551 Table 4).
    public static let defaultClockRate: Int32 = 8_000

    private var assembler: FrameAssembler

    public var codec: Codec { assembler.codec }
    public var statistics: DepacketizerStatistics { assembler.statistics }

    public mutating func recycle(_ bytes: consuming [UInt8]) {
        assembler.recycle(bytes)
    }

    /// Creates a depacketizer for one track of `law` samples at `clockRate` samples per second.
    public init(track: TrackID, law: Law, clockRate: Int32 = G711Depacketizer.defaultClockRate) {
        assembler = FrameAssembler(track: track, codec: law.codec, clockRate: clockRate)
    }

    public mutating func push(_ packet: RTPPacket, arrival: MonotonicInstant, emit: (EncodedFrame) -> Void) {
        assembler.pushWholeFramePacket(packet, arrival: arrival, emit: emit)
    }

    public mutating func flush(emit: (EncodedFrame) -> Void) {
        if let frame = assembler.finish() { emit(frame) }
    }
}
