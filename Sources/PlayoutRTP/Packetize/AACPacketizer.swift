/// AAC over RTP as MPEG4-GENERIC (RFC 3640) in AAC-hbr mode, the way ffmpeg sends it: an AU
/// header section (AU-headers-length, then per access unit its AU-size and a zero AU-Index /
/// AU-Index-delta), then the access units. ``packetize(_:emit:)`` sends one access unit per
/// packet; ``packetize(accessUnits:emit:)`` packs several into each packet, as ffmpeg does. An
/// access unit too large for a packet is fragmented, each fragment repeating its AU header with
/// the whole size (RFC 3640 §3.2.3.2).
///
/// Input frames are raw AAC access units (no ADTS header).
public struct AACPacketizer: Packetizer {
    public let maxPayloadSize: Int
    /// The AU-size field's width in bits, as the SDP's `sizelength` announces it.
    public let sizeLength: Int
    /// The AU-Index field's width in bits (`indexlength`); always written as 0.
    public let indexLength: Int
    /// The AU-Index-delta field's width in bits (`indexdeltalength`); always written as 0.
    public let indexDeltaLength: Int
    private var scratch: [UInt8] = []
    /// Whole access units waiting to be sent together (views into the caller's buffers, emptied
    /// before ``packetize(accessUnits:emit:)`` returns).
    private var pending: [UnsafeRawBufferPointer] = []

    /// Creates a packetizer producing payloads of at most `maxPayloadSize` bytes (≥ 16).
    public init(
        maxPayloadSize: Int = PacketizerDefaults.maxPayloadSize, sizeLength: Int = AACDepacketizer.defaultSizeLength,
        indexLength: Int = AACDepacketizer.defaultIndexLength, indexDeltaLength: Int = AACDepacketizer.defaultIndexDeltaLength
    ) {
        precondition(maxPayloadSize >= 16, "a payload must hold the AU header section and some data")
        precondition((1...16).contains(sizeLength), "sizelength is 1…16 bits")
        precondition((0...16).contains(indexLength) && (0...16).contains(indexDeltaLength), "index lengths are 0…16 bits")
        self.maxPayloadSize = maxPayloadSize
        self.sizeLength = sizeLength
        self.indexLength = indexLength
        self.indexDeltaLength = indexDeltaLength
        scratch.reserveCapacity(maxPayloadSize)
        pending.reserveCapacity(64)
    }

    /// The largest access unit the AU-size field can express.
    public var maxAccessUnitSize: Int { (1 << sizeLength) - 1 }

    /// Emits `frame`, one access unit, as one payload or as fragments.
    ///
    /// - Throws: ``PacketizerError/frameSizeNotRepresentable(size:maximum:)`` when the access unit
    ///   is larger than AU-size can say; nothing is emitted for an empty one.
    public mutating func packetize(
        _ frame: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer, Bool) throws -> Void
    ) throws {
        try packetize(accessUnits: CollectionOfOne(frame)) { payload, _, marker in try emit(payload, marker) }
    }

    /// Packs `accessUnits` into payloads in order, as many whole units per payload as fit (RFC 3640
    /// §3.2.3.1), fragmenting a unit that does not fit alone. Calls `emit(payload,
    /// firstAccessUnit, marker)`: the payload's RTP timestamp is that of its first access unit
    /// (`firstAccessUnit` × samples per access unit after the first one's), and `marker` is the RTP
    /// marker bit — set on every payload of whole units and on a fragmented unit's last fragment.
    ///
    /// - Throws: ``PacketizerError/frameSizeNotRepresentable(size:maximum:)`` before emitting
    ///   anything when a unit is larger than AU-size can say.
    public mutating func packetize(
        accessUnits: some Collection<UnsafeRawBufferPointer>,
        emit: (UnsafeRawBufferPointer, _ firstAccessUnit: Int, _ marker: Bool) throws -> Void
    ) throws {
        for unit in accessUnits where unit.count > maxAccessUnitSize {
            throw PacketizerError.frameSizeNotRepresentable(size: unit.count, maximum: maxAccessUnitSize)
        }
        defer { pending.removeAll(keepingCapacity: true) }
        pending.removeAll(keepingCapacity: true)
        var pendingFirst = 0
        var pendingDataSize = 0
        for (index, unit) in accessUnits.enumerated() where !unit.isEmpty {
            let headerBytes = (headerBitsTotal(count: pending.count + 1) + 7) / 8
            if !pending.isEmpty, 2 + headerBytes + pendingDataSize + unit.count > maxPayloadSize {
                try sendPending(first: pendingFirst, emit)
                pendingDataSize = 0
            }
            let aloneHeaderBytes = (headerBitsTotal(count: 1) + 7) / 8
            if pending.isEmpty, 2 + aloneHeaderBytes + unit.count > maxPayloadSize {
                try fragment(unit, index: index, headerBytes: aloneHeaderBytes, emit)
                continue
            }
            if pending.isEmpty { pendingFirst = index }
            pending.append(unit)
            pendingDataSize += unit.count
        }
        if !pending.isEmpty { try sendPending(first: pendingFirst, emit) }
    }

    /// The bits of `count` AU headers.
    private func headerBitsTotal(count: Int) -> Int {
        count == 0 ? 0 : sizeLength + indexLength + (count - 1) * (sizeLength + indexDeltaLength)
    }

    private mutating func writeHeaders(sizes: some Sequence<Int>, count: Int) {
        let bits = headerBitsTotal(count: count)
        scratch.removeAll(keepingCapacity: true)
        scratch.append(UInt8(bits >> 8))
        scratch.append(UInt8(bits & 0xFF))
        var writer = BitWriter()
        for (index, size) in sizes.enumerated() {
            writer.write(size, bits: sizeLength, into: &scratch)
            writer.write(0, bits: index == 0 ? indexLength : indexDeltaLength, into: &scratch)
        }
        writer.flush(into: &scratch)
    }

    /// Sends the whole access units gathered in ``pending`` as one payload, marker set.
    private mutating func sendPending(first: Int, _ emit: (UnsafeRawBufferPointer, Int, Bool) throws -> Void) throws {
        writeHeaders(sizes: pending.lazy.map(\.count), count: pending.count)
        for unit in pending { scratch.append(contentsOf: unit) }
        pending.removeAll(keepingCapacity: true)
        try scratch.withUnsafeBytes { try emit($0, first, true) }
    }

    private mutating func fragment(
        _ unit: UnsafeRawBufferPointer, index: Int, headerBytes: Int, _ emit: (UnsafeRawBufferPointer, Int, Bool) throws -> Void
    ) throws {
        let chunk = maxPayloadSize - 2 - headerBytes
        var offset = 0
        while offset < unit.count {
            let end = min(offset + chunk, unit.count)
            writeHeaders(sizes: CollectionOfOne(unit.count), count: 1)
            scratch.append(contentsOf: unit[offset..<end])
            try scratch.withUnsafeBytes { try emit($0, index, end == unit.count) }
            offset = end
        }
    }
}

/// Appends big-endian bit fields to a byte array.
struct BitWriter {
    private var accumulator: UInt64 = 0
    private var count = 0

    /// Appends the low `bits` bits (0…32) of `value`.
    mutating func write(_ value: Int, bits: Int, into bytes: inout [UInt8]) {
        guard bits > 0 else { return }
        accumulator = accumulator << UInt64(bits) | (UInt64(truncatingIfNeeded: value) & ((1 << UInt64(bits)) - 1))
        count += bits
        while count >= 8 {
            count -= 8
            bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt64(count)))
        }
    }

    /// Pads the last byte with zero bits.
    mutating func flush(into bytes: inout [UInt8]) {
        if count > 0 { bytes.append(UInt8(truncatingIfNeeded: accumulator << UInt64(8 - count))) }
        accumulator = 0
        count = 0
    }
}
