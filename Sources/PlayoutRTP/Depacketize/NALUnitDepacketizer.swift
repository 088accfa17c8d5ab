import PlayoutCore

/// What differs between H.264 (RFC 6184) and H.265 (RFC 7798) depacketization: the NAL unit header
/// length, which payload types are single units, aggregations or fragments, how a fragmented
/// unit's header is rebuilt, and which unit types make a key frame or carry parameter sets.
protocol NALUnitPayloadFormat {
    /// The NAL unit header's length: 1 byte for H.264, 2 for H.265. Aggregation packets have a
    /// header this long; fragments have one byte more (the FU header).
    static var headerLength: Int { get }
    /// What an RTP payload starting with `firstByte` carries.
    static func payloadKind(_ firstByte: UInt8) -> NALPayloadKind
    /// The NAL unit type in a NAL unit header's first byte.
    static func nalType(_ firstByte: UInt8) -> UInt8
    /// The NAL unit type in a fragment's FU header.
    static func fragmentedNALType(_ fuHeader: UInt8) -> UInt8
    /// Appends the header of the NAL unit a fragment belongs to, rebuilt from the fragment's
    /// payload header and the unit's type.
    static func appendFragmentedNALHeader(payload: UnsafeRawBufferPointer, nalType: UInt8, to bytes: inout [UInt8])
    /// Whether a unit of this type makes its access unit a key frame.
    static func isKeyframe(_ nalType: UInt8) -> Bool
    /// Whether a unit of this type is an in-band parameter set that makes the SDP's unnecessary.
    static func isParameterSet(_ nalType: UInt8) -> Bool
}

/// The kinds of RTP payload a NAL-unit payload format has.
enum NALPayloadKind {
    case single, aggregation, fragment, unsupported
}

/// The depacketization H.264 and H.265 share: single NAL unit packets, aggregation packets (16-bit
/// size before each unit) and fragmentation units, into access units in Annex B form (each NAL
/// unit after a `00 00 00 01` start code). Parameter sets from the SDP are inserted before the
/// first key frame that does not carry its own.
struct NALUnitDepacketizer<Format: NALUnitPayloadFormat> {
    static var startCode: [UInt8] { [0, 0, 0, 1] }

    var assembler: FrameAssembler
    private let parameterSets: [[UInt8]]
    private var parameterSetsInserted = false
    private var frameHasParameterSets = false

    init(track: TrackID, codec: Codec, clockRate: Int32, parameterSets: [[UInt8]]) {
        assembler = FrameAssembler(track: track, codec: codec, clockRate: clockRate)
        self.parameterSets = parameterSets.filter { !$0.isEmpty }
    }

    mutating func push(_ packet: RTPPacket, arrival: MonotonicInstant, emit: (EncodedFrame) -> Void) {
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
        let headerLength = Format.headerLength
        let payload = packet.payload
        guard payload.count >= headerLength else {
            assembler.malformed()
            return finishIfMarked(packet, emit)
        }
        switch Format.payloadKind(payload[0]) {
        case .single:
            if assembler.fragmentOpen { assembler.isDamaged = true }  // the fragmented unit's end was lost
            assembler.fragmentOpen = false
            appendNAL(payload)
        case .aggregation:
            if assembler.fragmentOpen { assembler.isDamaged = true }
            assembler.fragmentOpen = false
            var offset = headerLength
            var units = 0
            while offset + 2 <= payload.count {
                let size = Int(payload[offset]) << 8 | Int(payload[offset + 1])
                offset += 2
                guard size >= headerLength, offset + size <= payload.count else { break }
                appendNAL(UnsafeRawBufferPointer(rebasing: payload[offset..<offset + size]))
                offset += size
                units += 1
            }
            if offset != payload.count || units == 0 { assembler.malformed() }
        case .fragment:
            guard payload.count >= headerLength + 2 else {
                assembler.malformed()
                break
            }
            let fuHeader = payload[headerLength]
            let isStart = fuHeader & 0x80 != 0
            let isEnd = fuHeader & 0x40 != 0
            if isStart {
                if assembler.fragmentOpen { assembler.isDamaged = true }
                let nalType = Format.fragmentedNALType(fuHeader)
                assembler.append(Self.startCode)
                if assembler.keepsBytes {
                    Format.appendFragmentedNALHeader(payload: payload, nalType: nalType, to: &assembler.bytes)
                } else {
                    assembler.elidedByteCount += headerLength
                }
                noteNALType(nalType)
                assembler.fragmentOpen = true
            } else if !assembler.fragmentOpen {
                // A middle or end fragment without its start: the start was lost.
                assembler.isDamaged = true
                break
            }
            assembler.append(payload[(headerLength + 1)...])
            if isEnd { assembler.fragmentOpen = false }
        case .unsupported:
            assembler.malformed()
        }
        finishIfMarked(packet, emit)
    }

    mutating func flush(emit: (EncodedFrame) -> Void) {
        if let frame = assembler.finish() { emitFrame(frame, emit) }
    }

    private mutating func finishIfMarked(_ packet: RTPPacket, _ emit: (EncodedFrame) -> Void) {
        guard packet.marker else { return }
        if let frame = assembler.finish() { emitFrame(frame, emit) }
    }

    private mutating func appendNAL(_ nal: UnsafeRawBufferPointer) {
        guard let header = nal.first else { return }
        assembler.append(Self.startCode)
        assembler.append(nal)
        noteNALType(Format.nalType(header))
    }

    private mutating func noteNALType(_ type: UInt8) {
        if Format.isKeyframe(type) { assembler.isKeyframe = true }
        if Format.isParameterSet(type) { frameHasParameterSets = true }
    }

    /// Inserts the SDP's parameter sets before the first key frame that lacks in-band ones.
    private mutating func emitFrame(_ frame: EncodedFrame, _ emit: (EncodedFrame) -> Void) {
        guard frame.isKeyframe, !parameterSetsInserted else { return emit(frame) }
        parameterSetsInserted = true
        guard !frameHasParameterSets, !parameterSets.isEmpty else { return emit(frame) }
        var frame = frame
        if assembler.keepsBytes {
            frame.bytes = parameterSets.flatMap { Self.startCode + $0 } + frame.bytes
        } else {
            frame.elidedByteCount += parameterSets.reduce(0) { $0 + Self.startCode.count + $1.count }
        }
        emit(frame)
    }
}
