/// A received RTP packet kept for later: a copy of its bytes in storage recycled by an
/// ``RTPPacketPool``, and the ``RTPHeader`` parsed when it arrived, so that it is never parsed
/// again.
///
/// The bytes never change while a stored packet exists: the pool refills a buffer only once
/// nothing refers to it any more. Dropping the value (the jitter buffer releasing it, a duplicate
/// thrown away, an overflow) is what gives the buffer back.
///
/// One reference wide: the header is kept in the buffer beside the bytes, so the jitter buffer
/// moves a pointer per packet, not the header.
public struct StoredRTPPacket {
    @usableFromInline let storage: RTPPacketStorage

    @inlinable
    init(storage: RTPPacketStorage) {
        self.storage = storage
    }

    /// The header parsed on arrival.
    @inlinable
    public var header: RTPHeader { storage.header }

    /// The packet, rebuilt from the stored header over the stored bytes (no parsing). Its views
    /// point into this value's storage: valid only while this value lives, so keep it alive
    /// (`withExtendedLifetime`) for as long as the packet is used, or use ``withPacket(_:)``.
    @inlinable
    public var packet: RTPPacket {
        RTPPacket(header: storage.header, bytes: UnsafeRawBufferPointer(start: storage.start, count: storage.count))
    }

    /// Calls `body` with the packet, rebuilt from the stored header over the stored bytes (no
    /// parsing). The packet's views are valid during the call only.
    @inlinable
    public func withPacket<Result, Failure: Error>(_ body: (RTPPacket) throws(Failure) -> Result) throws(Failure) -> Result {
        // `self` (and so `storage`) is alive for the whole call.
        try body(packet)
    }
}

/// Buffers for received RTP packets, recycled: each packet's bytes are copied once, into a buffer
/// whose capacity is reused, and travel with their parsed header (``StoredRTPPacket``) through the
/// jitter buffer to the depacketizer. In steady state storing a packet allocates nothing.
///
/// The buffers form a ring handed out in turn. A buffer is free again when no stored packet refers
/// to it (its reference count is back to the pool's one), which is checked when the turn comes back
/// to it: packets are released roughly in the order they arrived, so the buffer at the cursor is
/// almost always the oldest and free. When it is still held (the jitter buffer holds more packets
/// than the ring has buffers, e.g. behind a long gap), the ring doubles — up to
/// ``maximumBuffers``; beyond that, packets get buffers of their own that are freed with them. So
/// the pool settles at no more than twice the most packets held at once, and a buffer grows only
/// for a packet larger than any it held before.
///
/// Owned by one task, or by several under one lock (not `Sendable`): a packet dropped on one thread
/// must be ordered before the pool's next ``store(_:)`` on another.
///
/// ```swift
/// var pool = RTPPacketPool()
/// let stored = pool.store(try RTPPacket(parsing: datagram))   // one copy, header kept
/// _ = jitterBuffer.insert(sequenceNumber: stored.header.sequenceNumber, …, payload: stored, now: arrival)
/// // released in order:
/// released.payload.withPacket { depacketizer.push($0, arrival: released.arrival, emit: handle) }
/// ```
///
/// - Complexity: ``store(_:)`` O(packet length) for the copy, amortized O(1) otherwise.
public struct RTPPacketPool {
    /// The capacity of a new buffer: 2,048 bytes, more than an Ethernet MTU's datagram.
    public static let defaultBufferCapacity = 2_048
    /// The default most buffers in the ring: 2^17, twice the jitter buffer's default packet limit.
    public static let defaultMaximumBuffers = 1 << 17
    /// The ring's first size (its buffers are created on first use).
    public static let initialRingSize = 64

    /// What the pool has done.
    public struct Statistics: Equatable, Sendable {
        /// Packets stored.
        public var packetsStored = 0
        /// Buffers created: the ring's (each once) and the ones beyond ``RTPPacketPool/maximumBuffers``.
        public var buffersCreated = 0
        /// Times a buffer's storage was enlarged for a packet larger than its capacity.
        public var buffersEnlarged = 0
        /// Times the ring doubled because the buffer at the cursor was still held.
        public var ringGrowths = 0
        /// Slots in the ring now (buffers created or yet to be).
        public var ringSize = 0

        public init() {}
    }

    /// The most buffers the ring grows to.
    public let maximumBuffers: Int
    /// The capacity of a new buffer.
    public let bufferCapacity: Int
    @usableFromInline var ring: ContiguousArray<RTPPacketStorage?>
    @usableFromInline var cursor = 0
    @usableFromInline var counters = Statistics()

    /// Creates an empty pool. Buffers are created on first use, with `bufferCapacity` bytes (or
    /// the first packet's length, if larger).
    public init(bufferCapacity: Int = Self.defaultBufferCapacity, maximumBuffers: Int = Self.defaultMaximumBuffers) {
        self.bufferCapacity = max(bufferCapacity, RTPPacket.fixedHeaderLength)
        self.maximumBuffers = max(maximumBuffers, 1)
        ring = ContiguousArray(repeating: nil, count: min(Self.initialRingSize, self.maximumBuffers))
    }

    /// The counters, as one snapshot.
    public var statistics: Statistics {
        var snapshot = counters
        snapshot.ringSize = ring.count
        return snapshot
    }

    /// Copies `packet`'s bytes into a free buffer and returns them with the packet's header.
    @inlinable
    public mutating func store(_ packet: RTPPacket) -> StoredRTPPacket {
        let storage = acquire()
        if storage.assign(packet.bytes) { counters.buffersEnlarged += 1 }
        storage.header = packet.header
        counters.packetsStored += 1
        return StoredRTPPacket(storage: storage)
    }

    /// The buffer at the cursor when it is free (the common case); otherwise a new one.
    @inlinable
    mutating func acquire() -> RTPPacketStorage {
        let index = cursor
        cursor = index + 1 == ring.count ? 0 : index + 1
        if isKnownUniquelyReferenced(&ring[index]), let storage = ring[index] {
            return storage
        }
        return acquireSlowly(at: index)
    }

    /// The slot at `index` is empty (create its buffer) or held (grow the ring, or hand out a
    /// buffer of the packet's own at the maximum).
    @usableFromInline
    mutating func acquireSlowly(at index: Int) -> RTPPacketStorage {
        let storage = RTPPacketStorage(capacity: bufferCapacity)
        counters.buffersCreated += 1
        if ring[index] == nil {
            ring[index] = storage
            return storage
        }
        let count = ring.count
        guard count < maximumBuffers else { return storage }
        // Rotate so the held buffer (the oldest) comes first, then add empty slots: the new buffer
        // takes the first of them, and the turn comes back to the oldest after the rest.
        var grown = ContiguousArray<RTPPacketStorage?>()
        let newCount = min(count * 2, maximumBuffers)
        grown.reserveCapacity(newCount)
        grown.append(contentsOf: ring[index...])
        grown.append(contentsOf: ring[..<index])
        grown.append(storage)
        grown.append(contentsOf: repeatElement(nil, count: newCount - count - 1))
        ring = grown
        cursor = count + 1 == newCount ? 0 : count + 1
        counters.ringGrowths += 1
        return storage
    }
}

/// One recycled packet buffer: raw storage that grows to the largest packet it held, and the
/// packet's parsed header.
///
/// Its properties are exempt from Swift's dynamic exclusivity checks: each read or write of a
/// class's stored property otherwise costs a runtime access-set update (≈ 90 instructions, six
/// per packet between storing and depacketizing, ≈ 20 % of what the receive path adds to SRTP
/// and parsing). That is safe because a storage is written only by the pool's owner, while the
/// ring alone references it (``RTPPacketPool`` checks with `isKnownUniquelyReferenced` before it
/// reuses one), and is only read once a ``StoredRTPPacket`` holds it.
@usableFromInline
final class RTPPacketStorage {
    @exclusivity(unchecked) @usableFromInline var start: UnsafeMutableRawPointer
    @exclusivity(unchecked) @usableFromInline var count = 0
    @exclusivity(unchecked) @usableFromInline var capacity: Int
    @exclusivity(unchecked) @usableFromInline var header = RTPHeader.placeholder

    @usableFromInline
    init(capacity: Int) {
        self.capacity = capacity
        start = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit {
        start.deallocate()
    }

    /// Copies `bytes` in; returns whether the storage had to be enlarged.
    @inlinable
    func assign(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var enlarged = false
        if bytes.count > capacity {
            start.deallocate()
            capacity = bytes.count
            start = .allocate(byteCount: capacity, alignment: 16)
            enlarged = true
        }
        if let source = bytes.baseAddress { start.copyMemory(from: source, byteCount: bytes.count) }
        count = bytes.count
        return enlarged
    }
}
