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

    private var assembler: FrameAssembler
    private let parameterSets: [[UInt8]]
    private var parameterSetsInserted = false
    private var frameHasParameterSets = false

    public var codec: Codec { .h265 }
    public var statistics: DepacketizerStatistics { assembler.statistics }

    public mutating func recycle(_ bytes: consuming [UInt8]) {
        assembler.recycle(bytes)
    }

    /// Creates a depacketizer for one track. `parameterSets` are the SDP's decoded `sprop-vps`,
    /// `sprop-sps` and `sprop-pps` NAL units, in that order, inserted before the first key frame
    /// that needs them.
    public init(track: TrackID, clockRate: Int32 = H265Depacketizer.defaultClockRate, parameterSets: [[UInt8]] = []) {
        assembler = FrameAssembler(track: track, codec: .h265, clockRate: clockRate)
        self.parameterSets = parameterSets.filter { !$0.isEmpty }
    }

    public mutating func push(_ packet: RTPPacket, arrival: MonotonicInstant, emit: (EncodedFrame) -> Void) {
        let (start, completed) = assembler.begin(packet, arrival: arrival)
        if let completed { emitFrame(completed, emit) }
        switch start {
        case .drop:
            return
        case .newFrame:
            frameHasParameterSets = false
        case .sameFrame:
            break
        }
        let payload = packet.payload
        guard payload.count >= 2 else {
            // Not even the 2-byte payload header (RFC 7798 §1.1.4); end of sequence and end of
            // bitstream NAL units are just that header.
            assembler.malformed()
            return finishIfMarked(packet, emit)
        }
        let type = NALType.of(payload[0])
        switch type {
        case 0...47:
            if assembler.fragmentOpen { assembler.isDamaged = true }  // the FU's end was lost
            assembler.fragmentOpen = false
            appendNAL(payload)
        case NALType.aggregationPacket:
            if assembler.fragmentOpen { assembler.isDamaged = true }
            assembler.fragmentOpen = false
            var offset = 2
            var units = 0
            while offset + 2 <= payload.count {
                let size = Int(payload[offset]) << 8 | Int(payload[offset + 1])
                offset += 2
                guard size >= 2, offset + size <= payload.count else { break }
                appendNAL(UnsafeRawBufferPointer(rebasing: payload[offset..<offset + size]))
                offset += size
                units += 1
            }
            if offset != payload.count || units == 0 { assembler.malformed() }
        case NALType.fragmentationUnit:
            guard payload.count >= 4 else {
                assembler.malformed()
                break
            }
            let fuHeader = payload[2]
            let isStart = fuHeader & 0x80 != 0
            let isEnd = fuHeader & 0x40 != 0
            let nalType = fuHeader & 0x3F
            if isStart {
                if assembler.fragmentOpen { assembler.isDamaged = true }
                assembler.bytes += H264Depacketizer.startCode
                assembler.bytes.append((payload[0] & 0x81) | nalType << 1)  // F and LayerId's high bit kept
                assembler.bytes.append(payload[1])  // LayerId's low bits and TID
                noteNALType(nalType)
                assembler.fragmentOpen = true
            } else if !assembler.fragmentOpen {
                // A middle or end fragment without its start: the start was lost.
                assembler.isDamaged = true
                break
            }
            assembler.bytes.append(contentsOf: payload[3...])
            if isEnd { assembler.fragmentOpen = false }
        default:
            // 50 is PACI; 51–63 are unspecified.
            assembler.malformed()
        }
        finishIfMarked(packet, emit)
    }

    public mutating func flush(emit: (EncodedFrame) -> Void) {
        if let frame = assembler.finish() { emitFrame(frame, emit) }
    }

    private mutating func finishIfMarked(_ packet: RTPPacket, _ emit: (EncodedFrame) -> Void) {
        guard packet.marker else { return }
        if let frame = assembler.finish() { emitFrame(frame, emit) }
    }

    private mutating func appendNAL(_ nal: UnsafeRawBufferPointer) {
        guard let header = nal.first else { return }
        assembler.bytes += H264Depacketizer.startCode
        assembler.bytes.append(contentsOf: nal)
        noteNALType(NALType.of(header))
    }

    private mutating func noteNALType(_ type: UInt8) {
        if NALType.irap.contains(type) { assembler.isKeyframe = true }
        if type == NALType.vps || type == NALType.sps { frameHasParameterSets = true }
    }

    /// Inserts the SDP's parameter sets before the first key frame that lacks an in-band VPS/SPS.
    private mutating func emitFrame(_ frame: EncodedFrame, _ emit: (EncodedFrame) -> Void) {
        guard frame.isKeyframe, !parameterSetsInserted else { return emit(frame) }
        parameterSetsInserted = true
        guard !frameHasParameterSets, !parameterSets.isEmpty else { return emit(frame) }
        var frame = frame
        frame.bytes = parameterSets.flatMap { H264Depacketizer.startCode + $0 } + frame.bytes
        emit(frame)
    }
}
