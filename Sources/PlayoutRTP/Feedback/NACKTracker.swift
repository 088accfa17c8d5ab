public import PlayoutCore

/// Decides which lost packets a receiver asks the sender to retransmit (generic NACK, RFC 4585
/// §6.2.1), and when — sans-IO: it takes the packets received (extended sequence numbers) and
/// the time, and ``poll(now:roundTripTime:)`` answers what to NACK now and when to ask again.
///
/// A missing packet is asked for after `reorderWait` (it may only be late), again every
/// max(round-trip time, `minimumRetryInterval`) up to `maximumRetries` times, and only while a
/// retransmission sent now can still arrive in time: before `usefulFor` (the playout delay in
/// effect less a decode margin) has passed since the gap was seen. Then it is given up. At most
/// `maximumMissing` packets are tracked (the oldest are given up first), so memory is bounded
/// whatever the network does.
///
/// ```swift
/// var tracker = NACKTracker()
/// tracker.received(sequenceNumber: 1_000, now: t0)
/// tracker.received(sequenceNumber: 1_003, now: t1)        // 1001 and 1002 missing
/// let ask = tracker.poll(now: t1 + .milliseconds(10), roundTripTime: rtt)   // [1001, 1002]
/// ```
public struct NACKTracker: Sendable {
    /// The tracker's tunables, with their defaults.
    public struct Configuration: Equatable, Sendable {
        /// How long a gap may be reordering before it is asked for (default 10 ms).
        public var reorderWait: Duration = .milliseconds(10)
        /// The least time between two requests for one packet (default 20 ms; the round-trip
        /// time when it is longer).
        public var minimumRetryInterval: Duration = .milliseconds(20)
        /// Requests per packet at most (default 10; 0 tracks losses without asking for them, to
        /// learn when one cannot be repaired).
        public var maximumRetries = 10
        /// How long after a gap is seen a retransmission is still useful: the playout delay in
        /// effect less a decode margin (set from it; default 200 ms).
        public var usefulFor: Duration = .milliseconds(200)
        /// Packets tracked at most (default 1,000).
        public var maximumMissing = 1_000

        public init() {}
    }

    /// What the tracker did.
    public struct Statistics: Equatable, Sendable {
        /// NACK messages asked for (W3C `nackCount`: one per poll that asked for anything).
        public var nackCount = 0
        /// Packet requests in them (a packet asked for twice counts twice).
        public var packetsRequested = 0
        /// Missing packets that arrived after they were asked for.
        public var packetsRecovered = 0
        /// Missing packets that arrived before they were asked for (reordering).
        public var packetsReordered = 0
        /// Missing packets given up: too late to be useful, retries exhausted, or over the limit.
        public var packetsAbandoned = 0
        /// Of those, given up by ``NACKTracker/poll(now:roundTripTime:)`` (too late or retries
        /// exhausted): losses of the stream that repair could not fix, so decoding will need a key frame.
        public var packetsUnrepairable = 0

        public init() {}
    }

    private struct Missing {
        var sequence: Int64
        var detected: MonotonicInstant
        var lastRequest: MonotonicInstant?
        var requests: Int
    }

    /// The tunables in effect (``Configuration/usefulFor`` follows the playout delay).
    public var configuration: Configuration
    /// The counters so far.
    public private(set) var statistics = Statistics()
    private var highest: Int64?
    /// Missing packets in sequence order.
    private var missing: [Missing] = []

    /// A tracker with `configuration`.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// The packets tracked as missing, oldest first.
    public var missingSequenceNumbers: [Int64] { missing.map(\.sequence) }

    /// Packet `sequenceNumber` (extended) arrived at `now`. A jump ahead opens a gap of missing
    /// packets; a packet that was missing is no longer. A jump of more than
    /// `maximumMissing` packets is a new stream, not a gap: nothing is asked for. Returns whether
    /// a gap opened: then something falls due (after the reorder wait) that the last
    /// ``poll(now:roundTripTime:)`` could not foresee.
    @discardableResult
    public mutating func received(sequenceNumber: Int64, now: MonotonicInstant) -> Bool {
        guard let last = highest else {
            highest = sequenceNumber
            return false
        }
        if sequenceNumber > last {
            let gap = sequenceNumber - last - 1
            var opened = false
            if gap > Int64(configuration.maximumMissing) {
                statistics.packetsAbandoned += missing.count
                missing.removeAll(keepingCapacity: true)
            } else if gap > 0 {
                opened = true
                for sequence in (last + 1)..<sequenceNumber {
                    missing.append(Missing(sequence: sequence, detected: now, lastRequest: nil, requests: 0))
                }
                let excess = missing.count - configuration.maximumMissing
                if excess > 0 {
                    missing.removeFirst(excess)
                    statistics.packetsAbandoned += excess
                }
            }
            highest = sequenceNumber
            return opened
        }
        // Older than the highest: a late, retransmitted or duplicate packet.
        if let index = Self.index(of: sequenceNumber, in: missing) {
            if missing[index].requests > 0 { statistics.packetsRecovered += 1 } else { statistics.packetsReordered += 1 }
            missing.remove(at: index)
        }
        return false
    }

    /// What to ask for at `now` given the round-trip time (nil before one is measured: the
    /// minimum retry interval is used, and the packet's usefulness decides alone): the sequence
    /// numbers to NACK now (oldest first), and when to poll again (nil: nothing is missing).
    public mutating func poll(now: MonotonicInstant, roundTripTime: Duration?) -> (nack: [UInt16], next: MonotonicInstant?) {
        let retry = max(roundTripTime ?? .zero, configuration.minimumRetryInterval)
        let transit = roundTripTime ?? .zero
        var nack: [UInt16] = []
        var next: MonotonicInstant?
        var kept = 0  // entries still tracked are moved to the front, in place
        for index in missing.indices {
            var entry = missing[index]
            let usefulUntil = entry.detected.advanced(by: configuration.usefulFor)
            // Given up once the last request's answer had its round trip to come (with no
            // requests allowed, once the reorder wait has passed: the loss is then certain), or
            // once a retransmission asked for now could not arrive before the frame is due.
            let waitedOut = now >= (entry.lastRequest.map { $0.advanced(by: retry) } ?? entry.detected.advanced(by: configuration.reorderWait))
            guard entry.requests < configuration.maximumRetries || !waitedOut, now.advanced(by: transit) < usefulUntil else {
                statistics.packetsAbandoned += 1
                statistics.packetsUnrepairable += 1
                continue
            }
            let due = entry.lastRequest.map { $0.advanced(by: retry) } ?? entry.detected.advanced(by: configuration.reorderWait)
            if now >= due, entry.requests < configuration.maximumRetries {
                nack.append(UInt16(truncatingIfNeeded: entry.sequence))
                entry.requests += 1
                entry.lastRequest = now
                statistics.packetsRequested += 1
            }
            let again = entry.lastRequest.map { $0.advanced(by: retry) } ?? due
            next = min(next ?? again, again, usefulUntil)
            missing[kept] = entry
            kept += 1
        }
        missing.removeLast(missing.count - kept)
        if !nack.isEmpty { statistics.nackCount += 1 }
        return (nack, next)
    }

    /// The stream restarted (new source or sequence base): nothing is missing any more.
    public mutating func reset() {
        statistics.packetsAbandoned += missing.count
        missing.removeAll(keepingCapacity: true)
        highest = nil
    }

    private static func index(of sequence: Int64, in missing: [Missing]) -> Int? {
        var low = 0
        var high = missing.count
        while low < high {
            let middle = (low + high) / 2
            if missing[middle].sequence < sequence { low = middle + 1 } else { high = middle }
        }
        return low < missing.count && missing[low].sequence == sequence ? low : nil
    }
}
