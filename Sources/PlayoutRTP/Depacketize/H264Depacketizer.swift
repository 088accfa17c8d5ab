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

    static let startCode: [UInt8] = [0, 0, 0, 1]

    private var assembler: FrameAssembler
    private let parameterSets: [[UInt8]]
    private var parameterSetsInserted = false
    private var frameHasSPS = false

    public var codec: Codec { .h264 }
    public var statistics: DepacketizerStatistics { assembler.statistics }

    /// Creates a depacketizer for one track. `parameterSets` are the SDP's decoded
    /// `sprop-parameter-sets` NAL units (SPS, PPS), inserted before the first key frame that needs
    /// them.
    public init(track: TrackID, clockRate: Int32 = 90_000, parameterSets: [[UInt8]] = []) {
        assembler = FrameAssembler(track: track, codec: .h264, clockRate: clockRate)
        self.parameterSets = parameterSets.filter { !$0.isEmpty }
    }

    public mutating func push(_ packet: RTPPacket, arrival: MonotonicInstant, emit: (EncodedFrame) -> Void) {
        let (start, completed) = assembler.begin(packet, arrival: arrival)
        if let completed { emitFrame(completed, emit) }
        switch start {
        case .drop:
            return
        case .newFrame:
            frameHasSPS = false
        case .sameFrame:
            break
        }
        let payload = packet.payload
        guard let header = payload.first else {
            assembler.malformed()
            return finishIfMarked(packet, emit)
        }
        let type = header & 0x1F
        switch type {
        case 1...23:
            if assembler.fragmentOpen { assembler.isDamaged = true }  // the FU-A's end was lost
            assembler.fragmentOpen = false
            appendNAL(payload)
        case NALType.stapA:
            if assembler.fragmentOpen { assembler.isDamaged = true }
            assembler.fragmentOpen = false
            var offset = 1
            var units = 0
            while offset + 2 <= payload.count {
                let size = Int(payload[offset]) << 8 | Int(payload[offset + 1])
                offset += 2
                guard size > 0, offset + size <= payload.count else { break }
                appendNAL(UnsafeRawBufferPointer(rebasing: payload[offset..<offset + size]))
                offset += size
                units += 1
            }
            if offset != payload.count || units == 0 { assembler.malformed() }
        case NALType.fuA:
            guard payload.count >= 3 else {
                assembler.malformed()
                break
            }
            let fuHeader = payload[1]
            let isStart = fuHeader & 0x80 != 0
            let isEnd = fuHeader & 0x40 != 0
            let nalType = fuHeader & 0x1F
            let data = UnsafeRawBufferPointer(rebasing: payload[2...])
            if isStart {
                if assembler.fragmentOpen { assembler.isDamaged = true }
                assembler.bytes += Self.startCode
                assembler.bytes.append((header & 0xE0) | nalType)
                noteNALType(nalType)
                assembler.fragmentOpen = true
            } else if !assembler.fragmentOpen {
                // A middle or end fragment without its start: the start was lost.
                assembler.isDamaged = true
                break
            }
            assembler.bytes.append(contentsOf: data)
            if isEnd { assembler.fragmentOpen = false }
        default:
            // 0 and 30–31 are reserved; 25–27 and 29 are interleaved-mode only.
            assembler.malformed()
        }
        finishIfMarked(packet, emit)
    }

    public mutating func flush(emit: (EncodedFrame) -> Void) {
        if let frame = assembler.finish() { emitFrame(frame, emit) }
    }

    public mutating func recycle(_ bytes: consuming [UInt8]) {
        assembler.recycle(bytes)
    }

    private mutating func finishIfMarked(_ packet: RTPPacket, _ emit: (EncodedFrame) -> Void) {
        guard packet.marker else { return }
        if let frame = assembler.finish() { emitFrame(frame, emit) }
    }

    private mutating func appendNAL(_ nal: UnsafeRawBufferPointer) {
        guard let header = nal.first else { return }
        assembler.bytes += Self.startCode
        assembler.bytes.append(contentsOf: nal)
        noteNALType(header & 0x1F)
    }

    private mutating func noteNALType(_ type: UInt8) {
        if type == NALType.idr { assembler.isKeyframe = true }
        if type == NALType.sps { frameHasSPS = true }
    }

    /// Inserts the SDP's parameter sets before the first key frame that lacks an in-band SPS.
    private mutating func emitFrame(_ frame: EncodedFrame, _ emit: (EncodedFrame) -> Void) {
        guard frame.isKeyframe, !parameterSetsInserted else { return emit(frame) }
        parameterSetsInserted = true
        guard !frameHasSPS, !parameterSets.isEmpty else { return emit(frame) }
        var frame = frame
        frame.bytes = parameterSets.flatMap { Self.startCode + $0 } + frame.bytes
        emit(frame)
    }
}
