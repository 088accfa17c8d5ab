public import PlayoutCore

/// What a sender keeps of the packets it sent, to answer generic NACKs with RTX (RFC 4588) —
/// sans-IO and bounded: a ring of `capacity` slots indexed by sequence number, each reused (its
/// byte storage grows to the largest packet it held, then stays), and packets older than
/// `maximumAge` are not resent (the receiver cannot use them any more).
///
/// ```swift
/// var buffer = RetransmissionBuffer()
/// buffer.store(packetBytes, sequenceNumber: 1_000, now: sent)            // every packet, before SRTP
/// for sequence in nack { buffer.withPacket(sequence, now: now) { original in sendRTX(original) } }
/// ```
public struct RetransmissionBuffer: Sendable {
    /// Packets kept at most (default 1,024: ≈ 2 s of 4 Mbit/s video in 1,200-byte packets).
    public let capacity: Int
    /// How old a packet may be and still be resent (default 1 s).
    public let maximumAge: Duration
    /// The least time between two resends of one packet (a NACK repeated within it is answered
    /// by the retransmission already on its way; default 10 ms).
    public let minimumResendInterval: Duration

    /// What the buffer did.
    public struct Statistics: Equatable, Sendable {
        /// Packets requested by NACKs.
        public var packetsRequested = 0
        /// Packets resent.
        public var packetsResent = 0
        /// Requests for packets no longer kept (too old, overwritten, never sent).
        public var packetsUnavailable = 0
        /// Requests answered by a resend already on its way.
        public var packetsResentRecently = 0

        public init() {}
    }

    private struct Slot {
        var sequence: UInt16 = 0
        var bytes: [UInt8] = []
        var count = 0
        var sent = MonotonicInstant(nanoseconds: .min)
        var resent: MonotonicInstant?
        var used = false
    }

    /// The counters so far.
    public private(set) var statistics = Statistics()
    private var slots: [Slot]

    /// A buffer of `capacity` packets (rounded up to a power of two, 16…65,536) kept `maximumAge`.
    public init(capacity: Int = 1_024, maximumAge: Duration = .seconds(1), minimumResendInterval: Duration = .milliseconds(10)) {
        var size = 16
        while size < min(max(capacity, 16), 65_536) { size <<= 1 }
        self.capacity = size
        self.maximumAge = maximumAge
        self.minimumResendInterval = minimumResendInterval
        slots = Array(repeating: Slot(), count: size)
    }

    /// Keeps a copy of the packet `bytes` (a whole RTP packet, before SRTP), sent at `now`.
    public mutating func store(_ bytes: UnsafeRawBufferPointer, sequenceNumber: UInt16, now: MonotonicInstant) {
        let index = Int(sequenceNumber) & (capacity - 1)
        slots[index].sequence = sequenceNumber
        slots[index].sent = now
        slots[index].resent = nil
        slots[index].used = true
        slots[index].count = bytes.count
        if slots[index].bytes.count < bytes.count {
            slots[index].bytes = [UInt8](repeating: 0, count: bytes.count)
        }
        slots[index].bytes.withUnsafeMutableBytes { destination in
            if let source = bytes.baseAddress, let target = destination.baseAddress, !bytes.isEmpty {
                target.copyMemory(from: source, byteCount: bytes.count)
            }
        }
    }

    /// The length of the kept packet `sequenceNumber` when it may still be resent at `now`
    /// (kept, and younger than ``maximumAge``); nil otherwise. Counts nothing.
    public func packetLength(_ sequenceNumber: UInt16, now: MonotonicInstant) -> Int? {
        let slot = slots[Int(sequenceNumber) & (capacity - 1)]
        guard slot.used, slot.sequence == sequenceNumber, now < slot.sent.advanced(by: maximumAge) else { return nil }
        return slot.count
    }

    /// Answers a NACK for `sequenceNumber` at `now`: calls `body` with the kept packet when it
    /// may be resent, and returns whether it did.
    @discardableResult
    public mutating func withPacket(_ sequenceNumber: UInt16, now: MonotonicInstant, _ body: (UnsafeRawBufferPointer) -> Void) -> Bool {
        statistics.packetsRequested += 1
        let index = Int(sequenceNumber) & (capacity - 1)
        let slot = slots[index]
        guard slot.used, slot.sequence == sequenceNumber, now < slot.sent.advanced(by: maximumAge) else {
            statistics.packetsUnavailable += 1
            return false
        }
        if let resent = slot.resent, now < resent.advanced(by: minimumResendInterval) {
            statistics.packetsResentRecently += 1
            return false
        }
        slots[index].resent = now
        statistics.packetsResent += 1
        slot.bytes.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[0..<slot.count])) }
        return true
    }
}
