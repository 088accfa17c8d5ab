/// H.265 over RTP (RFC 7798) without decoding order numbers, as ffmpeg and GStreamer send it:
/// NAL units that fit go alone or, when small and followed by more, aggregated into AP packets
/// (type 48, §4.4.2); larger ones are split into FU fragments (type 49, §4.4.3). Input frames are
/// access units in Annex B form; NAL units shorter than their 2-byte header are skipped.
public struct H265Packetizer: Packetizer {
    private var base: NALUnitPacketizer<H265NALHeader>

    public var maxPayloadSize: Int { base.maxPayloadSize }

    /// Whether consecutive small NAL units (e.g. VPS + SPS + PPS) are aggregated into APs.
    public var aggregates: Bool {
        get { base.aggregates }
        set { base.aggregates = newValue }
    }

    /// Creates a packetizer producing payloads of at most `maxPayloadSize` bytes (≥ 16).
    public init(maxPayloadSize: Int = PacketizerDefaults.maxPayloadSize, aggregates: Bool = true) {
        base = NALUnitPacketizer(maxPayloadSize: maxPayloadSize, aggregates: aggregates)
    }

    public mutating func packetize(_ frame: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer, Bool) throws -> Void) rethrows {
        try base.packetize(frame, emit: emit)
    }
}

/// The H.265 NAL unit header (F, type, LayerId, TID) and RFC 7798's AP and FU headers.
enum H265NALHeader: NALUnitHeaderFormat {
    static var headerLength: Int { 2 }

    /// AP payload header: F if any unit has it, type 48, the lowest LayerId and the lowest TID
    /// (§4.4.2).
    static func appendAggregationHeader(for units: [Range<Int>], in frame: UnsafeRawBufferPointer, to scratch: inout [UInt8]) {
        var forbidden: UInt8 = 0
        var layer: UInt8 = 0x3F
        var temporalID: UInt8 = 0x07
        for unit in units {
            let header0 = frame[unit.lowerBound]
            let header1 = frame[unit.lowerBound + 1]
            forbidden |= header0 & 0x80
            layer = min(layer, (header0 & 0x01) << 5 | header1 >> 3)
            temporalID = min(temporalID, header1 & 0x07)
        }
        scratch.append(forbidden | H265Depacketizer.NALType.aggregationPacket << 1 | layer >> 5)
        scratch.append((layer & 0x1F) << 3 | temporalID)
    }

    /// FU: payload header (the NAL header with type 49), then FU header (S, E, type) (§4.4.3).
    static func appendFragmentHeader(nalHeader header: UnsafeRawBufferPointer, isStart: Bool, isEnd: Bool, to scratch: inout [UInt8]) {
        scratch.append((header[0] & 0x81) | H265Depacketizer.NALType.fragmentationUnit << 1)
        scratch.append(header[1])
        scratch.append((isStart ? 0x80 : 0) | (isEnd ? 0x40 : 0) | H265Depacketizer.NALType.of(header[0]))
    }
}
