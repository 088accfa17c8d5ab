/// H.265 over RTP (RFC 7798) without decoding order numbers, as ffmpeg and GStreamer send it:
/// NAL units that fit go alone or, when small and followed by more, aggregated into AP packets
/// (type 48, §4.4.2); larger ones are split into FU fragments (type 49, §4.4.3). Input frames are
/// access units in Annex B form; NAL units shorter than their 2-byte header are skipped.
public struct H265Packetizer: Packetizer {
    public let maxPayloadSize: Int
    /// Whether consecutive small NAL units (e.g. VPS + SPS + PPS) are aggregated into APs.
    public var aggregates: Bool
    private var scratch: [UInt8] = []
    private var units: [Range<Int>] = []
    private var aggregate: [Range<Int>] = []

    /// Creates a packetizer producing payloads of at most `maxPayloadSize` bytes (≥ 16).
    public init(maxPayloadSize: Int = PacketizerDefaults.maxPayloadSize, aggregates: Bool = true) {
        precondition(maxPayloadSize >= 16, "a payload must hold at least an FU header and some data")
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
        AnnexB.forEachNALUnit(in: frame) { unit in
            if unit.count >= 2 { units.append(unit) }
        }
        aggregate.removeAll(keepingCapacity: true)
        var aggregateSize = 2  // the AP's payload header
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
                aggregateSize = 2
                if aggregates, !isLastUnit, 4 + unit.count <= maxPayloadSize {
                    aggregate.append(unit)
                    aggregateSize += 2 + unit.count
                    continue
                }
                try emit(UnsafeRawBufferPointer(rebasing: frame[unit]), isLastUnit)
                continue
            }
            try flushAggregate(frame, isLast: false, emit)
            aggregateSize = 2
            try fragment(frame, unit, isLastUnit: isLastUnit, emit)
        }
    }

    /// Sends the aggregated NAL units: one alone as a single NAL unit packet, several as an AP
    /// whose header has F = any F, the lowest LayerId and the lowest TID (RFC 7798 §4.4.2).
    private mutating func flushAggregate(
        _ frame: UnsafeRawBufferPointer, isLast: Bool, _ emit: (UnsafeRawBufferPointer, Bool) throws -> Void
    ) rethrows {
        defer { aggregate.removeAll(keepingCapacity: true) }
        guard let first = aggregate.first else { return }
        if aggregate.count == 1 {
            return try emit(UnsafeRawBufferPointer(rebasing: frame[first]), isLast)
        }
        scratch.removeAll(keepingCapacity: true)
        var forbidden: UInt8 = 0
        var layer: UInt8 = 0x3F
        var temporalID: UInt8 = 0x07
        for unit in aggregate {
            let header0 = frame[unit.lowerBound]
            let header1 = frame[unit.lowerBound + 1]
            forbidden |= header0 & 0x80
            layer = min(layer, (header0 & 0x01) << 5 | header1 >> 3)
            temporalID = min(temporalID, header1 & 0x07)
        }
        scratch.append(forbidden | H265Depacketizer.NALType.aggregationPacket << 1 | layer >> 5)
        scratch.append((layer & 0x1F) << 3 | temporalID)
        for unit in aggregate {
            scratch.append(UInt8(unit.count >> 8))
            scratch.append(UInt8(unit.count & 0xFF))
            scratch.append(contentsOf: frame[unit])
        }
        try scratch.withUnsafeBytes { try emit($0, isLast) }
    }

    /// FU: payload header (the NAL header with type 49), FU header (S, E, type), then a slice of
    /// the NAL unit's payload.
    private mutating func fragment(
        _ frame: UnsafeRawBufferPointer, _ unit: Range<Int>, isLastUnit: Bool, _ emit: (UnsafeRawBufferPointer, Bool) throws -> Void
    ) rethrows {
        let header0 = frame[unit.lowerBound]
        let header1 = frame[unit.lowerBound + 1]
        let type = H265Depacketizer.NALType.of(header0)
        var offset = unit.lowerBound + 2
        let chunk = maxPayloadSize - 3
        while offset < unit.upperBound {
            let end = min(offset + chunk, unit.upperBound)
            scratch.removeAll(keepingCapacity: true)
            scratch.append((header0 & 0x81) | H265Depacketizer.NALType.fragmentationUnit << 1)
            scratch.append(header1)
            var fuHeader = type
            if offset == unit.lowerBound + 2 { fuHeader |= 0x80 }
            if end == unit.upperBound { fuHeader |= 0x40 }
            scratch.append(fuHeader)
            scratch.append(contentsOf: frame[offset..<end])
            try scratch.withUnsafeBytes { try emit($0, isLastUnit && end == unit.upperBound) }
            offset = end
        }
    }
}
