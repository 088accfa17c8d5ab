public import PlayoutCore

/// H.264 over RTP (RFC 6184), packetization modes 0 and 1: single NAL unit packets, STAP-A and
/// FU-A. Frames are access units in Annex B form (each NAL unit after a `00 00 00 01` start
/// code), which is what decoders and `ffmpeg -f h264` take.
///
/// Parameter sets from the SDP (`sprop-parameter-sets`) are inserted before the first key frame
/// that does not carry its own SPS. Interleaved mode (STAP-B, MTAP, FU-B) is not supported: such
/// packets are counted as malformed and their frame is discarded.
public struct H264Depacketizer: Depacketizer {
    /// NAL unit types used here (ITU-T H.264 Table 7-1, RFC 6184 §5.2).
    enum NALType {
        static let idr: UInt8 = 5
        static let sps: UInt8 = 7
        static let pps: UInt8 = 8
        static let stapA: UInt8 = 24
        static let fuA: UInt8 = 28
    }

    private var base: NALUnitDepacketizer<H264PayloadFormat>

    public var codec: Codec { .h264 }
    public var statistics: DepacketizerStatistics { base.assembler.statistics }

    /// Creates a depacketizer for one track. `parameterSets` are the SDP's decoded
    /// `sprop-parameter-sets` NAL units (SPS, PPS), inserted before the first key frame that needs
    /// them.
    public init(track: TrackID, clockRate: Int32 = 90_000, parameterSets: [[UInt8]] = []) {
        base = NALUnitDepacketizer(track: track, codec: .h264, clockRate: clockRate, parameterSets: parameterSets)
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

/// RFC 6184's payload structures around the 1-byte H.264 NAL unit header (F, NRI, type).
enum H264PayloadFormat: NALUnitPayloadFormat {
    static var headerLength: Int { 1 }

    static func payloadKind(_ firstByte: UInt8) -> NALPayloadKind {
        switch firstByte & 0x1F {
        case 1...23: .single
        case H264Depacketizer.NALType.stapA: .aggregation
        case H264Depacketizer.NALType.fuA: .fragment
        default: .unsupported  // 0 and 30–31 are reserved; 25–27 and 29 are interleaved-mode only
        }
    }

    static func nalType(_ firstByte: UInt8) -> UInt8 { firstByte & 0x1F }

    static func fragmentedNALType(_ fuHeader: UInt8) -> UInt8 { fuHeader & 0x1F }

    /// F and NRI from the FU indicator, the type from the FU header.
    static func appendFragmentedNALHeader(payload: UnsafeRawBufferPointer, nalType: UInt8, to bytes: inout [UInt8]) {
        bytes.append((payload[0] & 0xE0) | nalType)
    }

    static func isKeyframe(_ nalType: UInt8) -> Bool { nalType == H264Depacketizer.NALType.idr }

    static func isParameterSet(_ nalType: UInt8) -> Bool { nalType == H264Depacketizer.NALType.sps }
}
