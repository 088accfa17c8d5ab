public import PlayoutCore

/// H.265 over RTP (RFC 7798) without decoding order numbers (`sprop-max-don-diff` = 0, as ffmpeg
/// and GStreamer send): single NAL unit packets, aggregation packets (AP, type 48) and
/// fragmentation units (FU, type 49). Frames are access units in Annex B form (each NAL unit after
/// a `00 00 00 01` start code), which is what decoders and `ffmpeg -f hevc` take.
///
/// Key frames are access units with an IRAP picture (NAL unit types 16…23: BLA, IDR, CRA).
/// Parameter sets from the SDP (`sprop-vps`, `sprop-sps`, `sprop-pps`) are inserted before the
/// first key frame that does not carry its own VPS or SPS. PACI packets (type 50) and DONL fields
/// are not supported: such packets are counted as malformed and their frame is discarded.
public struct H265Depacketizer: Depacketizer {
    /// NAL unit types used here (ITU-T H.265 Table 7-1, RFC 7798 §4.4).
    enum NALType {
        static let irap: ClosedRange<UInt8> = 16...23
        static let vps: UInt8 = 32
        static let sps: UInt8 = 33
        static let pps: UInt8 = 34
        static let aggregationPacket: UInt8 = 48
        static let fragmentationUnit: UInt8 = 49

        /// The type in the first byte of a NAL unit header: F(1) Type(6) LayerId high bit(1).
        static func of(_ firstByte: UInt8) -> UInt8 { (firstByte >> 1) & 0x3F }
    }

    /// The RTP clock rate of H.265 (RFC 7798 §7.1).
    public static let defaultClockRate: Int32 = 90_000

    private var base: NALUnitDepacketizer<H265PayloadFormat>

    public var codec: Codec { .h265 }
    public var statistics: DepacketizerStatistics { base.assembler.statistics }

    /// Creates a depacketizer for one track. `parameterSets` are the SDP's decoded `sprop-vps`,
    /// `sprop-sps` and `sprop-pps` NAL units, in that order, inserted before the first key frame
    /// that needs them.
    public init(track: TrackID, clockRate: Int32 = H265Depacketizer.defaultClockRate, parameterSets: [[UInt8]] = []) {
        base = NALUnitDepacketizer(track: track, codec: .h265, clockRate: clockRate, parameterSets: parameterSets)
    }

    public mutating func push(_ packet: RTPPacket, arrival: MonotonicInstant, emit: (EncodedFrame) -> Void) {
        base.push(packet, arrival: arrival, emit: emit)
    }

    public mutating func flush(emit: (EncodedFrame) -> Void) {
        base.flush(emit: emit)
    }

    public mutating func recycle(_ bytes: consuming [UInt8]) {
        base.assembler.recycle(bytes)
    }

    public mutating func elidePayloads() {
        base.assembler.keepsBytes = false
    }
}

/// RFC 7798's payload structures around the 2-byte H.265 NAL unit header (F, type, LayerId, TID).
enum H265PayloadFormat: NALUnitPayloadFormat {
    static var headerLength: Int { 2 }

    static func payloadKind(_ firstByte: UInt8) -> NALPayloadKind {
        switch H265Depacketizer.NALType.of(firstByte) {
        case 0...47: .single
        case H265Depacketizer.NALType.aggregationPacket: .aggregation
        case H265Depacketizer.NALType.fragmentationUnit: .fragment
        default: .unsupported  // 50 is PACI; 51–63 are unspecified
        }
    }

    static func nalType(_ firstByte: UInt8) -> UInt8 { H265Depacketizer.NALType.of(firstByte) }

    static func fragmentedNALType(_ fuHeader: UInt8) -> UInt8 { fuHeader & 0x3F }

    /// F and LayerId's high bit from the payload header with the FU's type, then the payload
    /// header's second byte (LayerId's low bits and TID).
    static func appendFragmentedNALHeader(payload: UnsafeRawBufferPointer, nalType: UInt8, to bytes: inout [UInt8]) {
        bytes.append((payload[0] & 0x81) | nalType << 1)
        bytes.append(payload[1])
    }

    static func isKeyframe(_ nalType: UInt8) -> Bool { H265Depacketizer.NALType.irap.contains(nalType) }

    static func isParameterSet(_ nalType: UInt8) -> Bool {
        nalType == H265Depacketizer.NALType.vps || nalType == H265Depacketizer.NALType.sps
    }
}
