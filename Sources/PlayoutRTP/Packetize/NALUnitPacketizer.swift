import PlayoutCore

/// What differs between the H.264 (RFC 6184) and H.265 (RFC 7798) packetizations: the length of
/// the NAL unit header and how aggregation and fragmentation headers are built from it.
protocol NALUnitHeaderFormat {
    /// The NAL unit header's length: 1 byte for H.264, 2 for H.265. It is also the length of the
    /// aggregation packet's header, and the fragment headers take one byte more.
    static var headerLength: Int { get }
    /// Appends the header of an aggregation packet (STAP-A, AP) carrying `units` of `frame`.
    static func appendAggregationHeader(for units: [Range<Int>], in frame: UnsafeRawBufferPointer, to scratch: inout [UInt8])
    /// Appends the headers of one fragment (FU-A, FU) of the NAL unit whose header is `header`.
    static func appendFragmentHeader(nalHeader header: UnsafeRawBufferPointer, isStart: Bool, isEnd: Bool, to scratch: inout [UInt8])
}

/// The packetization H.264 and H.265 share, as ffmpeg and GStreamer send them: NAL units that fit
/// go alone or, when small and followed by more, aggregated; larger ones are fragmented. Input
/// frames are access units in Annex B form; NAL units shorter than their header are skipped.
struct NALUnitPacketizer<Format: NALUnitHeaderFormat> {
    let maxPayloadSize: Int
    var aggregates: Bool
    private var scratch: [UInt8] = []
    private var units: [Range<Int>] = []
    private var aggregate: [Range<Int>] = []

    init(maxPayloadSize: Int, aggregates: Bool) {
        precondition(maxPayloadSize >= 16, "a payload must hold at least a fragment header and some data")
        self.maxPayloadSize = maxPayloadSize
        self.aggregates = aggregates
        scratch.reserveCapacity(maxPayloadSize)
        units.reserveCapacity(32)
        aggregate.reserveCapacity(32)
    }

    mutating func packetize(_ frame: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer, Bool) throws -> Void) rethrows {
        let headerLength = Format.headerLength
        units.removeAll(keepingCapacity: true)
        AnnexB.forEachNALUnit(in: frame) { unit in
            if unit.count >= headerLength { units.append(unit) }
        }
        aggregate.removeAll(keepingCapacity: true)
        var aggregateSize = headerLength
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
                aggregateSize = headerLength
                if aggregates, !isLastUnit, headerLength + 2 + unit.count <= maxPayloadSize {
                    aggregate.append(unit)
                    aggregateSize += 2 + unit.count
                    continue
                }
                try emit(UnsafeRawBufferPointer(rebasing: frame[unit]), isLastUnit)
                continue
            }
            try flushAggregate(frame, isLast: false, emit)
            aggregateSize = headerLength
            try fragment(frame, unit, isLastUnit: isLastUnit, emit)
        }
    }

    /// Sends the aggregated NAL units: one alone as a single NAL unit packet, several as one
    /// aggregation packet (each unit after its 16-bit size).
    private mutating func flushAggregate(
        _ frame: UnsafeRawBufferPointer, isLast: Bool, _ emit: (UnsafeRawBufferPointer, Bool) throws -> Void
    ) rethrows {
        defer { aggregate.removeAll(keepingCapacity: true) }
        guard let first = aggregate.first else { return }
        if aggregate.count == 1 {
            return try emit(UnsafeRawBufferPointer(rebasing: frame[first]), isLast)
        }
        scratch.removeAll(keepingCapacity: true)
        Format.appendAggregationHeader(for: aggregate, in: frame, to: &scratch)
        for unit in aggregate {
            scratch.append(UInt8(unit.count >> 8))
            scratch.append(UInt8(unit.count & 0xFF))
            scratch.append(contentsOf: frame[unit])
        }
        try scratch.withUnsafeBytes { try emit($0, isLast) }
    }

    /// Splits one NAL unit's payload (after its header) into fragments.
    private mutating func fragment(
        _ frame: UnsafeRawBufferPointer, _ unit: Range<Int>, isLastUnit: Bool, _ emit: (UnsafeRawBufferPointer, Bool) throws -> Void
    ) rethrows {
        let headerLength = Format.headerLength
        let header = UnsafeRawBufferPointer(rebasing: frame[unit.lowerBound..<unit.lowerBound + headerLength])
        let firstOffset = unit.lowerBound + headerLength
        var offset = firstOffset
        let chunk = maxPayloadSize - headerLength - 1
        while offset < unit.upperBound {
            let end = min(offset + chunk, unit.upperBound)
            scratch.removeAll(keepingCapacity: true)
            Format.appendFragmentHeader(nalHeader: header, isStart: offset == firstOffset, isEnd: end == unit.upperBound, to: &scratch)
            scratch.append(contentsOf: frame[offset..<end])
            try scratch.withUnsafeBytes { try emit($0, isLastUnit && end == unit.upperBound) }
            offset = end
        }
    }
}
