/// H.264 over RTP (RFC 6184) in packetization mode 1, as ffmpeg and GStreamer send it: NAL units
/// that fit go alone or, when small and followed by more, aggregated into STAP-A packets; larger
/// ones are split into FU-A fragments. Input frames are access units in Annex B form.
public struct H264Packetizer: Packetizer {
    private var base: NALUnitPacketizer<H264NALHeader>

    public var maxPayloadSize: Int { base.maxPayloadSize }

    /// Whether consecutive small NAL units (e.g. SPS + PPS + SEI) are aggregated into STAP-A.
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

/// The H.264 NAL unit header (F, NRI, type) and RFC 6184's STAP-A and FU-A headers.
enum H264NALHeader: NALUnitHeaderFormat {
    static var headerLength: Int { 1 }

    /// STAP-A indicator: F if any unit has it, the highest NRI, type 24.
    static func appendAggregationHeader(for units: [Range<Int>], in frame: UnsafeRawBufferPointer, to scratch: inout [UInt8]) {
        var nri: UInt8 = 0
        var forbidden: UInt8 = 0
        for unit in units {
            nri = max(nri, frame[unit.lowerBound] & 0x60)
            forbidden |= frame[unit.lowerBound] & 0x80
        }
        scratch.append(forbidden | nri | H264Depacketizer.NALType.stapA)
    }

    /// FU-A: indicator (F, NRI, type 28), then header (S, E, type).
    static func appendFragmentHeader(nalHeader header: UnsafeRawBufferPointer, isStart: Bool, isEnd: Bool, to scratch: inout [UInt8]) {
        scratch.append((header[0] & 0xE0) | H264Depacketizer.NALType.fuA)
        scratch.append((isStart ? 0x80 : 0) | (isEnd ? 0x40 : 0) | (header[0] & 0x1F))
    }
}
