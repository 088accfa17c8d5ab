/// H.264 over RTP (RFC 6184) in packetization mode 1, as ffmpeg and GStreamer send it: NAL units
/// that fit go alone or, when small and followed by more, aggregated into STAP-A packets; larger
/// ones are split into FU-A fragments. Input frames are access units in Annex B form.
public struct H264Packetizer: Packetizer {
    public let maxPayloadSize: Int
    /// Whether consecutive small NAL units (e.g. SPS + PPS + SEI) are aggregated into STAP-A.
    public var aggregates: Bool
    private var scratch: [UInt8] = []
    private var units: [Range<Int>] = []
    private var aggregate: [Range<Int>] = []

    /// Creates a packetizer producing payloads of at most `maxPayloadSize` bytes (≥ 16).
    public init(maxPayloadSize: Int = PacketizerDefaults.maxPayloadSize, aggregates: Bool = true) {
        precondition(maxPayloadSize >= 16, "a payload must hold at least an FU-A header and some data")
        self.maxPayloadSize = maxPayloadSize
        self.aggregates = aggregates
        scratch.reserveCapacity(maxPayloadSize)
        units.reserveCapacity(32)
        aggregate.reserveCapacity(32)
    }

    public mutating func packetize(
        _ frame: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer, Bool) throws -> Void
    ) rethrows {
        units.removeAll(keepingCapacity: true)
        AnnexB.forEachNALUnit(in: frame) { units.append($0) }
        aggregate.removeAll(keepingCapacity: true)
        var aggregateSize = 1  // the STAP-A header
        for (position, unit) in units.enumerated() {
            let isLastUnit = position == units.count - 1
            if unit.count <= maxPayloadSize {
                if aggregates, aggregateSize + 2 + unit.count <= maxPayloadSize, !(aggregate.isEmpty && isLastUnit) {
                    aggregate.append(unit)
                    aggregateSize += 2 + unit.count
                    if isLastUnit { try flushAggregate(frame, isLast: true, emit) }
                    continue
                }
                try flushAggregate(frame, isLast: false, emit)
                aggregateSize = 1
                if aggregates, !isLastUnit, 3 + unit.count <= maxPayloadSize {
                    aggregate.append(unit)
                    aggregateSize += 2 + unit.count
                    continue
                }
                try emit(UnsafeRawBufferPointer(rebasing: frame[unit]), isLastUnit)
                continue
            }
            try flushAggregate(frame, isLast: false, emit)
            aggregateSize = 1
            try fragment(frame, unit, isLastUnit: isLastUnit, emit)
        }
    }

    /// Sends the aggregated NAL units: one alone as a single NAL unit packet, several as STAP-A.
    private mutating func flushAggregate(
        _ frame: UnsafeRawBufferPointer, isLast: Bool, _ emit: (UnsafeRawBufferPointer, Bool) throws -> Void
    ) rethrows {
        defer { aggregate.removeAll(keepingCapacity: true) }
        guard let first = aggregate.first else { return }
        if aggregate.count == 1 {
            return try emit(UnsafeRawBufferPointer(rebasing: frame[first]), isLast)
        }
        scratch.removeAll(keepingCapacity: true)
        var nri: UInt8 = 0
        var forbidden: UInt8 = 0
        for unit in aggregate {
            nri = max(nri, frame[unit.lowerBound] & 0x60)
            forbidden |= frame[unit.lowerBound] & 0x80
        }
        scratch.append(forbidden | nri | H264Depacketizer.NALType.stapA)
        for unit in aggregate {
            scratch.append(UInt8(unit.count >> 8))
            scratch.append(UInt8(unit.count & 0xFF))
            scratch.append(contentsOf: frame[unit])
        }
        try scratch.withUnsafeBytes { try emit($0, isLast) }
    }

    /// FU-A: indicator (F, NRI, type 28), header (S, E, type), then a slice of the NAL body.
    private mutating func fragment(
        _ frame: UnsafeRawBufferPointer, _ unit: Range<Int>, isLastUnit: Bool, _ emit: (UnsafeRawBufferPointer, Bool) throws -> Void
    ) rethrows {
        let header = frame[unit.lowerBound]
        var offset = unit.lowerBound + 1
        let chunk = maxPayloadSize - 2
        while offset < unit.upperBound {
            let end = min(offset + chunk, unit.upperBound)
            scratch.removeAll(keepingCapacity: true)
            scratch.append((header & 0xE0) | H264Depacketizer.NALType.fuA)
            var fuHeader = header & 0x1F
            if offset == unit.lowerBound + 1 { fuHeader |= 0x80 }
            if end == unit.upperBound { fuHeader |= 0x40 }
            scratch.append(fuHeader)
            scratch.append(contentsOf: frame[offset..<end])
            try scratch.withUnsafeBytes { try emit($0, isLastUnit && end == unit.upperBound) }
            offset = end
        }
    }
}
