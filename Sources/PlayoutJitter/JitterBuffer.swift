public import PlayoutCore

/// Puts one track's RTP packets back in sequence order: reorders, drops duplicates, and resolves
/// every gap — by the packet arriving, by a deadline, by overflow or by a sender restart — so
/// that the consumer never waits forever.
///
/// The buffer only orders, de-duplicates and resolves gaps. Frame completeness and "wait for a key
/// frame after loss" are the depacketizer's job: it sees the ``PollResult/lost(range:)`` event,
/// discards the incomplete frame and flags the next one `followsLoss`. `Payload` is whatever the
/// caller carries per packet (payload bytes, a pooled buffer handle); the buffer never looks in it.
///
/// Sans-IO: no clock is read and no I/O is done; every call takes `now`. After inserting, the
/// caller loops ``poll(now:)`` until it returns ``PollResult/wait(until:)`` (sleep until then, or
/// until the next packet) or ``PollResult/empty``.
///
/// Semantics:
/// - In-sequence packets are released at once. A gap is declared lost, as one
///   ``PollResult/lost(range:)`` event however long it is, when the first packet after it has
///   waited ``JitterBufferConfiguration/maximumReorderDelay`` — or at once when the buffer is over
///   budget. A packet of a gap that arrives afterwards is ``InsertResult/late``: counted in
///   ``JitterBufferStatistics/packetsDiscarded`` and no longer in `packetsLost`.
/// - Sequence numbers are extended to 64 bits against the highest one received, accepting
///   packets up to 49,152 behind it (reordering inside a 2^16-packet buffer) and 16,383 ahead.
///   Timestamps are extended with a ``RTPTimestampUnwrapper``. Both wrap freely.
/// - A new SSRC restarts the stream at once; a jump of more than
///   ``JitterBufferConfiguration/restartThreshold`` sequence numbers restarts it when the next
///   packet agrees with the jump (until then the first packet is held, and discarded if the old
///   stream goes on). On a restart, what is queued is flushed in order (gaps in it are reported
///   lost at once, without waiting), then ``PollResult/restart(ssrc:)`` is returned, then the new
///   stream's packets. Extended sequence numbers stay contiguous across a restart (the new stream
///   continues after the old one's highest), so they only ever grow; timestamps start afresh.
/// - The first packet starts the stream: one that precedes it and arrives after it was released is
///   late. Duplicates are recognized while queued and, through the history, for 2^16 sequence
///   numbers after release.
/// - Timestamp jumps with continuous sequence numbers (DTX, a paused source) pass straight
///   through: only sequence gaps are waited on.
/// - Memory is bounded by ``JitterBufferConfiguration/maximumBytes`` and
///   ``JitterBufferConfiguration/maximumPackets``: over either, the oldest queued packets are
///   dropped (counted in ``JitterBufferStatistics/packetsDropped``, reported to the consumer in
///   the next `lost` range, and their payloads released).
///
/// Storage is a ring of slots indexed by extended sequence number modulo its capacity (a power of
/// two that grows on demand up to ``JitterBufferConfiguration/maximumPackets``), an occupancy
/// bitmap to skip gaps 64 slots at a time, and a 2^16-bit history of released sequence numbers to
/// tell duplicates from late packets. Steady-state insert/poll: 0 allocations (checked by the
/// `Jitter` benchmark's malloc counter). The hot path is `@inlinable` so that it is specialized for
/// the caller's `Payload`.
///
/// ```swift
/// var buffer = JitterBuffer<[UInt8]>(configuration: .init(clockRate: 90_000))
/// _ = buffer.insert(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp,
///                   ssrc: packet.ssrc, isFrameEnd: packet.marker, byteCount: payload.count,
///                   payload: payload, now: clock.now)
/// loop: while true {
///     switch buffer.poll(now: clock.now) {
///     case .packet(let packet): depacketizer.push(packet)
///     case .lost(let range): depacketizer.markLost(range)
///     case .restart: depacketizer.reset()
///     case .wait(let deadline): wakeUp = deadline; break loop
///     case .empty: break loop
///     }
/// }
/// ```
public struct JitterBuffer<Payload> {
    /// Tunables; see ``JitterBufferConfiguration``.
    public typealias Configuration = JitterBufferConfiguration
    /// Counters; see ``JitterBufferStatistics``.
    public typealias Statistics = JitterBufferStatistics

    /// A packet released in sequence order.
    public struct Packet {
        /// The sequence number extended to 64 bits: within one stream it grows by one per wire
        /// sequence number, across the 65535 → 0 wrap too. A sender restart continues it right
        /// after the old stream's highest, so it only ever grows; before the first restart it is
        /// the wire value plus a multiple of 2^16, after one it no longer carries the wire value.
        public var sequenceNumber: Int64
        /// The RTP timestamp extended to 64 bits (starts afresh after a restart).
        public var timestamp: Int64
        /// The sender's SSRC.
        public var ssrc: UInt32
        /// The RTP marker bit: the last packet of a video frame.
        public var isFrameEnd: Bool
        /// The payload size the caller gave, counted against the byte budget.
        public var byteCount: Int
        /// What the caller inserted.
        public var payload: Payload
        /// When the packet was inserted.
        public var arrival: MonotonicInstant

        /// Creates a packet (the buffer makes them; this is for tests and adapters).
        @inlinable
        public init(
            sequenceNumber: Int64, timestamp: Int64, ssrc: UInt32, isFrameEnd: Bool, byteCount: Int, payload: Payload,
            arrival: MonotonicInstant
        ) {
            self.sequenceNumber = sequenceNumber
            self.timestamp = timestamp
            self.ssrc = ssrc
            self.isFrameEnd = isFrameEnd
            self.byteCount = byteCount
            self.payload = payload
            self.arrival = arrival
        }
    }

    /// What happened to an inserted packet.
    public enum InsertResult: Equatable, Sendable {
        /// Held until it can be released in order (or, for a packet far from the stream, held as
        /// the possible first packet of a restarted stream).
        case queued
        /// A copy of a packet already queued, released or dropped: ignored.
        case duplicate
        /// Its sequence number was already given up on or passed: ignored, counted as discarded.
        case late
        /// Not kept; see the reason.
        case dropped(DropReason)
    }

    /// Why an inserted packet was not kept.
    public enum DropReason: Equatable, Sendable {
        /// The buffer was over budget and this was the oldest packet.
        case overflow
        /// The packet alone is larger than ``JitterBufferConfiguration/maximumBytes``.
        case oversized
    }

    /// What the consumer should do next.
    public enum PollResult {
        /// The next packet in sequence order.
        case packet(Packet)
        /// These extended sequence numbers will never be released (lost in the network, given up
        /// on at their deadline, or dropped for overflow). One event per gap, however long.
        case lost(range: ClosedRange<Int64>)
        /// The sender restarted (new SSRC or a sequence jump); what follows is the new stream.
        case restart(ssrc: UInt32)
        /// Nothing can be released before this instant (the current gap's deadline), unless a
        /// packet arrives.
        case wait(until: MonotonicInstant)
        /// Nothing is queued.
        case empty
    }

    /// A packet far from the stream, held until the next packet says whether it starts a
    /// restarted stream.
    @usableFromInline
    struct Held {
        @usableFromInline var sequenceNumber: SequenceNumber
        @usableFromInline var timestamp: RTPTimestamp
        @usableFromInline var isFrameEnd: Bool
        @usableFromInline var byteCount: Int
        @usableFromInline var payload: Payload
        @usableFromInline var arrival: MonotonicInstant

        @inlinable
        init(
            sequenceNumber: SequenceNumber, timestamp: RTPTimestamp, isFrameEnd: Bool, byteCount: Int, payload: Payload,
            arrival: MonotonicInstant
        ) {
            self.sequenceNumber = sequenceNumber
            self.timestamp = timestamp
            self.isFrameEnd = isFrameEnd
            self.byteCount = byteCount
            self.payload = payload
            self.arrival = arrival
        }
    }

    @inlinable static var historyBits: Int64 { 1 << 16 }
    @inlinable static var initialCapacity: Int { 1 << 10 }
    /// Forward jumps up to this are placed ahead of the highest sequence number; beyond, behind.
    @inlinable static var forwardWindow: Int64 { 1 << 14 }

    /// The tunables; may be changed at any time (see ``JitterBufferConfiguration``).
    public var configuration: Configuration

    @usableFromInline var slots: ContiguousArray<Packet?>
    @usableFromInline var occupied: ContiguousArray<UInt64>
    @usableFromInline var mask: Int64
    @usableFromInline var history: ContiguousArray<UInt64>

    @usableFromInline var started = false
    @usableFromInline var ssrc: UInt32 = 0
    /// The next extended sequence number to release; everything below is released or given up.
    @usableFromInline var head: Int64 = 0
    /// Start of the lost range `[lostFrom, head - 1]` not yet reported.
    @usableFromInline var lostFrom: Int64?
    /// Where a restarted stream starts, until ``PollResult/restart(ssrc:)`` is returned.
    @usableFromInline var restartAt: Int64?
    @usableFromInline var restartSSRC: UInt32 = 0
    /// ``startNewStream()`` was called: the next packet begins a new stream even with the same SSRC.
    @usableFromInline var newStreamPending = false
    @usableFromInline var held: Held?

    @usableFromInline var count = 0
    @usableFromInline var bytes = 0
    /// The lowest queued sequence number (valid when `count > 0`).
    @usableFromInline var nextQueued: Int64 = 0
    /// An upper bound of the queued sequence numbers (valid when `count > 0`).
    @usableFromInline var highestQueued: Int64 = 0

    @usableFromInline var timestampUnwrapper = RTPTimestampUnwrapper()
    /// Extended sequence number minus the stream's own extension of the wire value.
    @usableFromInline var epochOffset: Int64 = 0
    @usableFromInline var epochFloor: Int64 = .min
    @usableFromInline var epochLowest: Int64 = 0
    @usableFromInline var epochHighest: Int64 = -1
    @usableFromInline var epochHasPackets = false
    @usableFromInline var expectedBeforeEpoch = 0
    @usableFromInline var receivedInSequence = 0
    @usableFromInline var lastTransit: Double?
    @usableFromInline var jitterTicks: Double = 0
    @usableFromInline var counters = Statistics()

    /// Creates an empty buffer. Allocates the slot ring (1,024 slots to start), its occupancy bitmap
    /// and the 8 KiB duplicate history.
    @inlinable
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        let capacity = min(Self.initialCapacity, Self.maximumCapacity(for: configuration))
        slots = ContiguousArray(repeating: nil, count: capacity)
        occupied = ContiguousArray(repeating: 0, count: max(1, capacity / 64))
        mask = Int64(capacity - 1)
        history = ContiguousArray(repeating: 0, count: Int(Self.historyBits / 64))
    }

    /// The counters, as one snapshot.
    @inlinable
    public var statistics: Statistics {
        var snapshot = counters
        let expected = expectedBeforeEpoch + (epochHasPackets ? Int(epochHighest - epochLowest + 1) : 0)
        snapshot.packetsLost = expected - receivedInSequence
        snapshot.jitter = jitterTicks / Double(max(1, configuration.clockRate))
        snapshot.highestSequenceNumber = started ? epochHighest : -1
        snapshot.bufferedPackets = count
        snapshot.bufferedBytes = bytes
        return snapshot
    }

    // MARK: Insert

    /// Adds a packet as it arrives.
    ///
    /// - Parameters:
    ///   - sequenceNumber: The RTP sequence number.
    ///   - timestamp: The RTP timestamp.
    ///   - ssrc: The RTP SSRC; a new one restarts the stream.
    ///   - isFrameEnd: The RTP marker bit.
    ///   - byteCount: The payload size counted against ``JitterBufferConfiguration/maximumBytes``
    ///     (negative counts as 0).
    ///   - payload: What to hand back from ``poll(now:)``.
    ///   - now: The arrival instant; it may go backwards (it is only compared, never trusted).
    /// - Returns: Whether the packet was queued, and if not, why.
    /// - Complexity: Amortized O(1); no allocation in steady state (the ring grows, by doubling,
    ///   only while the span of queued sequence numbers exceeds its capacity).
    @inlinable
    public mutating func insert(
        sequenceNumber: SequenceNumber, timestamp: RTPTimestamp, ssrc: UInt32, isFrameEnd: Bool,
        byteCount: Int, payload: Payload, now: MonotonicInstant
    ) -> InsertResult {
        let byteCount = max(0, byteCount)
        guard started else {
            started = true
            self.ssrc = ssrc
            head = Int64(sequenceNumber.rawValue)
            return accept(
                Int64(sequenceNumber.rawValue), timestamp: timestampUnwrapper.unwrap(timestamp), ssrc: ssrc,
                isFrameEnd: isFrameEnd, byteCount: byteCount, payload: payload, arrival: now, counted: false
            )
        }
        if ssrc != self.ssrc || newStreamPending {
            newStreamPending = false
            discardHeld()
            let base = epochHighest + 1
            beginEpoch(base: base, ssrc: ssrc)
            epochOffset = base - Int64(sequenceNumber.rawValue)
            return accept(
                base, timestamp: timestampUnwrapper.unwrap(timestamp), ssrc: ssrc, isFrameEnd: isFrameEnd,
                byteCount: byteCount, payload: payload, arrival: now, counted: false
            )
        }
        let extended = extend(sequenceNumber)
        let threshold = Int64(max(0, configuration.restartThreshold))
        if extended > epochHighest + threshold || extended < head - threshold {
            if let candidate = held {
                let delta = candidate.sequenceNumber.distance(to: sequenceNumber)
                if delta == 0 {
                    counters.packetsDuplicated += 1
                    return .duplicate
                }
                if abs(delta) <= threshold {
                    return confirmRestart(
                        delta: delta, timestamp: timestamp, ssrc: ssrc, isFrameEnd: isFrameEnd, byteCount: byteCount,
                        payload: payload, arrival: now
                    )
                }
                discardHeld()
            }
            held = Held(
                sequenceNumber: sequenceNumber, timestamp: timestamp, isFrameEnd: isFrameEnd, byteCount: byteCount,
                payload: payload, arrival: now
            )
            counters.packetsReceived += 1
            counters.bytesReceived += byteCount
            return .queued
        }
        discardHeld()
        return accept(
            extended, timestamp: timestampUnwrapper.unwrap(timestamp), ssrc: ssrc, isFrameEnd: isFrameEnd,
            byteCount: byteCount, payload: payload, arrival: now, counted: false
        )
    }

    /// The next packet begins a new stream, as a new SSRC would: what is queued is flushed, a
    /// ``PollResult/restart(ssrc:)`` follows, and the packet's sequence number and timestamp start
    /// afresh. For a sender that restarted its sequence or timeline under the same SSRC, as the
    /// caller's source validation decided (RFC 3550 A.1 resync). Before the first packet it does
    /// nothing.
    public mutating func startNewStream() {
        if started { newStreamPending = true }
    }

    /// The extension of `sequenceNumber` nearest the highest one received, biased backwards:
    /// from 49,152 behind to 16,383 ahead.
    @inlinable func extend(_ sequenceNumber: SequenceNumber) -> Int64 {
        let difference = Int64(sequenceNumber.rawValue &- UInt16(truncatingIfNeeded: epochHighest - epochOffset))
        return epochHighest + (difference < Self.forwardWindow ? difference : difference - (1 << 16))
    }

    @inlinable mutating func discardHeld() {
        if held != nil {
            held = nil
            counters.packetsDiscarded += 1
        }
    }

    /// Starts a new stream whose first extended sequence number is `base`; what is queued is
    /// flushed first.
    @inlinable mutating func beginEpoch(base: Int64, ssrc: UInt32) {
        expectedBeforeEpoch += epochHasPackets ? Int(epochHighest - epochLowest + 1) : 0
        counters.restarts += 1
        restartAt = base
        restartSSRC = ssrc
        self.ssrc = ssrc
        epochFloor = base
        epochHasPackets = false
        timestampUnwrapper.reset()
        lastTransit = nil
    }

    /// The held packet and this one agree on a jump: restart with both.
    @inlinable mutating func confirmRestart(
        delta: Int64, timestamp: RTPTimestamp, ssrc: UInt32, isFrameEnd: Bool, byteCount: Int, payload: Payload,
        arrival: MonotonicInstant
    ) -> InsertResult {
        guard let candidate = held.take() else { return .late }
        let base = epochHighest + 1
        beginEpoch(base: base, ssrc: ssrc)
        let first = delta > 0 ? base : base - delta
        epochOffset = first - Int64(candidate.sequenceNumber.rawValue)
        _ = accept(
            first, timestamp: timestampUnwrapper.unwrap(candidate.timestamp), ssrc: ssrc,
            isFrameEnd: candidate.isFrameEnd, byteCount: candidate.byteCount, payload: candidate.payload,
            arrival: candidate.arrival, counted: true
        )
        return accept(
            first + delta, timestamp: timestampUnwrapper.unwrap(timestamp), ssrc: ssrc, isFrameEnd: isFrameEnd,
            byteCount: byteCount, payload: payload, arrival: arrival, counted: false
        )
    }

    /// Places a packet whose extended sequence number is known. `counted`: already in
    /// `packetsReceived` (a held packet).
    @inlinable mutating func accept(
        _ sequence: Int64, timestamp: Int64, ssrc: UInt32, isFrameEnd: Bool, byteCount: Int, payload: Payload,
        arrival: MonotonicInstant, counted: Bool
    ) -> InsertResult {
        if sequence < head {
            if head - sequence <= Self.historyBits {
                if testBit(history, sequence & (Self.historyBits - 1)) {
                    counters.packetsDuplicated += 1
                    return .duplicate
                }
                setBit(&history, sequence & (Self.historyBits - 1))
            }
            countReceived(byteCount, counted: counted)
            counters.packetsDiscarded += 1
            if sequence >= epochFloor && sequence < epochLowest { epochLowest = sequence }
            return .late
        }
        if sequence - head <= mask && testBit(occupied, sequence & mask) {
            counters.packetsDuplicated += 1
            return .duplicate
        }
        countReceived(byteCount, counted: counted)
        if !epochHasPackets {
            epochHasPackets = true
            epochLowest = sequence
            epochHighest = sequence
            lastTransit = transit(timestamp: timestamp, arrival: arrival)
        } else if sequence > epochHighest {
            epochHighest = sequence
            let transit = transit(timestamp: timestamp, arrival: arrival)
            if let lastTransit {
                // RFC 3550 A.8: J += (|D| - J) / 16.
                jitterTicks += (abs(transit - lastTransit) - jitterTicks) / 16
            }
            lastTransit = transit
        } else if sequence < epochLowest {
            epochLowest = sequence
        }
        if byteCount > configuration.maximumBytes {
            counters.packetsDropped += 1
            return .dropped(.oversized)
        }
        if sequence - head > mask {
            grow(toHold: sequence - head + 1)
            if sequence - head > mask { makeRoom(newHead: sequence - mask) }
        }
        let index = Int(sequence & mask)
        slots[index] = Packet(
            sequenceNumber: sequence, timestamp: timestamp, ssrc: ssrc, isFrameEnd: isFrameEnd,
            byteCount: byteCount, payload: payload, arrival: arrival
        )
        setBit(&occupied, sequence & mask)
        if count == 0 {
            nextQueued = sequence
            highestQueued = sequence
        } else {
            nextQueued = min(nextQueued, sequence)
            highestQueued = max(highestQueued, sequence)
        }
        count += 1
        bytes += byteCount
        let maximumPackets = max(1, configuration.maximumPackets)
        while count > maximumPackets || bytes > configuration.maximumBytes {
            dropOldest()
        }
        return sequence < head ? .dropped(.overflow) : .queued
    }

    @inlinable mutating func countReceived(_ byteCount: Int, counted: Bool) {
        receivedInSequence += 1
        if !counted {
            counters.packetsReceived += 1
            counters.bytesReceived += byteCount
        }
    }

    /// RFC 3550 A.8 relative transit time, in timestamp units.
    @inlinable func transit(timestamp: Int64, arrival: MonotonicInstant) -> Double {
        Double(arrival.nanoseconds) / 1e9 * Double(max(1, configuration.clockRate)) - Double(timestamp)
    }

    // MARK: Poll

    /// Returns the next thing the consumer should know: a packet in order, a gap given up on, a
    /// restart, or how long nothing will change. Call it until it returns
    /// ``PollResult/wait(until:)`` or ``PollResult/empty``.
    ///
    /// A gap is declared lost when `now` reaches its deadline — the arrival of the packet right
    /// after it plus ``JitterBufferConfiguration/maximumReorderDelay`` — and that deadline is the
    /// instant `.wait(until:)` names.
    ///
    /// - Complexity: Amortized O(1): finding the next queued packet after a release or a gap skips
    ///   empty slots 64 at a time, each slot once. No allocation.
    @inlinable
    public mutating func poll(now: MonotonicInstant) -> PollResult {
        guard started else { return .empty }
        var deadline: MonotonicInstant?
        if !(count > 0 && testBit(occupied, head & mask)) {
            if let restartAt, head < restartAt {
                // Flushing before a restart: the old stream's gaps are not waited on.
                advanceHead(to: count > 0 ? min(nextQueued, restartAt) : restartAt)
            } else if count > 0, let next = slots[Int(nextQueued & mask)] {
                let due = next.arrival.advanced(by: configuration.maximumReorderDelay)
                if now >= due {
                    advanceHead(to: nextQueued)
                } else {
                    deadline = due
                }
            }
        }
        if let lostFrom {
            self.lostFrom = nil
            counters.lossEvents += 1
            return .lost(range: lostFrom...(head - 1))
        }
        if let restartAt, head >= restartAt {
            self.restartAt = nil
            return .restart(ssrc: restartSSRC)
        }
        if count > 0, testBit(occupied, head & mask) {
            return .packet(release())
        }
        if let deadline { return .wait(until: deadline) }
        return .empty
    }

    @inlinable mutating func release() -> Packet {
        let index = Int(head & mask)
        guard let packet = slots[index].take() else { preconditionFailure("occupancy bitmap out of step") }
        clearBit(&occupied, head & mask)
        setBit(&history, head & (Self.historyBits - 1))
        count -= 1
        bytes -= packet.byteCount
        head += 1
        if count > 0 { nextQueued = nextOccupied(from: head) }
        return packet
    }

    // MARK: Budget and gaps

    /// Gives up on `[head, newHead)`, which holds no queued packet.
    @inlinable mutating func advanceHead(to newHead: Int64) {
        guard newHead > head else { return }
        clearBits(&history, from: head, count: newHead - head, mask: Self.historyBits - 1)
        if lostFrom == nil { lostFrom = head }
        head = newHead
    }

    /// Drops the oldest queued packet (and gives up on the gap before it).
    @inlinable mutating func dropOldest() {
        let sequence = nextQueued
        let index = Int(sequence & mask)
        let packet = slots[index].take()
        clearBit(&occupied, sequence & mask)
        count -= 1
        bytes -= packet?.byteCount ?? 0
        counters.packetsDropped += 1
        advanceHead(to: sequence + 1)
        setBit(&history, sequence & (Self.historyBits - 1))
        if count > 0 { nextQueued = nextOccupied(from: head) }
    }

    /// Moves the head forward to `newHead`, dropping what is queued below it.
    @inlinable mutating func makeRoom(newHead: Int64) {
        while count > 0 && nextQueued < newHead {
            dropOldest()
        }
        advanceHead(to: newHead)
    }

    @inlinable static func maximumCapacity(for configuration: Configuration) -> Int {
        let wanted = min(max(configuration.maximumPackets, 64), 1 << 24)
        return 1 << (Int.bitWidth - (wanted - 1).leadingZeroBitCount)
    }

    /// Doubles the ring until it spans `span` sequence numbers or reaches its maximum.
    @inlinable mutating func grow(toHold span: Int64) {
        let maximum = Int64(Self.maximumCapacity(for: configuration))
        var capacity = mask + 1
        guard capacity < maximum else { return }
        while capacity < span && capacity < maximum { capacity *= 2 }
        var newSlots = ContiguousArray<Packet?>(repeating: nil, count: Int(capacity))
        var newOccupied = ContiguousArray<UInt64>(repeating: 0, count: max(1, Int(capacity) / 64))
        let newMask = capacity - 1
        if count > 0 {
            var sequence = nextQueued
            var moved = 0
            while moved < count {
                newSlots[Int(sequence & newMask)] = slots[Int(sequence & mask)].take()
                setBit(&newOccupied, sequence & newMask)
                moved += 1
                if moved < count { sequence = nextOccupied(from: sequence + 1) }
            }
        }
        slots = newSlots
        occupied = newOccupied
        mask = newMask
    }

    /// The lowest queued sequence number at or after `start` (one must exist).
    @inlinable func nextOccupied(from start: Int64) -> Int64 {
        var sequence = start
        while sequence <= highestQueued {
            let bit = Int(sequence & mask)
            let word = occupied[bit >> 6] >> UInt64(bit & 63)
            if word != 0 { return sequence + Int64(word.trailingZeroBitCount) }
            sequence += Int64(64 - (bit & 63))
        }
        preconditionFailure("no queued packet after \(start)")
    }
}

extension JitterBuffer: Sendable where Payload: Sendable {}
extension JitterBuffer.Packet: Sendable where Payload: Sendable {}
extension JitterBuffer.Held: Sendable where Payload: Sendable {}
extension JitterBuffer.Packet: Equatable where Payload: Equatable {}
extension JitterBuffer.PollResult: Sendable where Payload: Sendable {}
extension JitterBuffer.PollResult: Equatable where Payload: Equatable {}

// MARK: Bitmaps

@inlinable @inline(__always)
func testBit(_ words: ContiguousArray<UInt64>, _ bit: Int64) -> Bool {
    words[Int(bit >> 6)] & (1 << UInt64(bit & 63)) != 0
}

@inlinable @inline(__always)
func setBit(_ words: inout ContiguousArray<UInt64>, _ bit: Int64) {
    words[Int(bit >> 6)] |= 1 << UInt64(bit & 63)
}

@inlinable @inline(__always)
func clearBit(_ words: inout ContiguousArray<UInt64>, _ bit: Int64) {
    words[Int(bit >> 6)] &= ~(1 << UInt64(bit & 63))
}

/// Clears `count` bits from position `start` (taken modulo `mask + 1`), word by word.
@inlinable
func clearBits(_ words: inout ContiguousArray<UInt64>, from start: Int64, count: Int64, mask: Int64) {
    if count > mask {
        for index in words.indices { words[index] = 0 }
        return
    }
    var position = start
    var remaining = count
    while remaining > 0 {
        let bit = position & mask
        let offset = bit & 63
        let take = min(remaining, 64 - offset)
        let bits: UInt64 = take == 64 ? ~0 : ((1 << UInt64(take)) - 1) << UInt64(offset)
        words[Int(bit >> 6)] &= ~bits
        position += take
        remaining -= take
    }
}
