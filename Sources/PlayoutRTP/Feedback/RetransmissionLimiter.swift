public import PlayoutCore

/// Decides whether a packet a NACK asks for is resent, sans-IO — the bounds a real sender puts
/// on retransmission, so that feedback cannot turn it into a traffic amplifier:
/// - a **bit-rate budget**: the RTX bytes sent over the last ``Configuration/window`` stay within
///   ``Configuration/budgetShare`` of the media bytes sent over the same window (libwebrtc bounds
///   its retransmission rate the same way, with a sliding one-second window);
/// - **a few resends per packet** at most (``Configuration/maximumResends``);
/// - **not twice within one round trip**: a repeated NACK that arrives before the first RTX could
///   have reached the receiver and been missed again is answered by the RTX already on its way
///   (the interval is the reported round-trip time, at least ``Configuration/minimumInterval``
///   and at most ``Configuration/maximumInterval``).
///
/// It takes events with the time passed in — each media packet sent, the latest round-trip
/// time — and answers ``decide(sequenceNumber:bytes:now:)``; what it refused is counted by reason.
///
/// ```swift
/// var limiter = RetransmissionLimiter()
/// limiter.mediaSent(sequenceNumber: 1_000, bytes: 1_200, now: sent)   // every media packet
/// limiter.roundTripTime = .milliseconds(40)                           // from receiver reports
/// if limiter.decide(sequenceNumber: 1_000, bytes: 1_202, now: now) == .resend { sendRTX() }
/// ```
///
/// - Complexity: O(1) per event and per decision (a fixed ring of buckets and of packets).
public struct RetransmissionLimiter: Sendable {
    /// The bounds.
    public struct Configuration: Equatable, Sendable {
        /// The share of the media rate RTX may use (default 0.25: a quarter of the media bytes
        /// sent over the window).
        public var budgetShare: Double
        /// The window the budget is measured over (default 1 s, in ten buckets).
        public var window: Duration
        /// How often one packet is resent at most (default 3).
        public var maximumResends: Int
        /// The least time between two resends of one packet when no round-trip time is known,
        /// and the floor under a reported one (default 10 ms).
        public var minimumInterval: Duration
        /// The ceiling over a reported round-trip time (default 1 s): a report cannot stop
        /// retransmission for longer.
        public var maximumInterval: Duration

        /// The documented defaults: 25 % of the media rate over 1 s, 3 resends, one RTT apart (10 ms…1 s).
        public init(
            budgetShare: Double = 0.25, window: Duration = .seconds(1), maximumResends: Int = 3,
            minimumInterval: Duration = .milliseconds(10), maximumInterval: Duration = .seconds(1)
        ) {
            self.budgetShare = budgetShare.isFinite ? min(max(budgetShare, 0), 10) : 0.25
            self.window = max(window, .milliseconds(10))
            self.maximumResends = max(maximumResends, 0)
            self.minimumInterval = max(minimumInterval, .zero)
            self.maximumInterval = max(maximumInterval, self.minimumInterval)
        }
    }

    /// What to do with one requested packet.
    public enum Decision: Equatable, Sendable {
        /// Resend it.
        case resend
        /// Refused: it was resent ``Configuration/maximumResends`` times already.
        case resentTooOften
        /// Refused: it was resent less than one round trip ago.
        case resentWithinRoundTrip
        /// Refused: resending it would pass the bit-rate budget.
        case overBudget
    }

    /// What it decided.
    public struct Statistics: Equatable, Sendable {
        /// Packets it let through, and their bytes.
        public var packetsAllowed = 0
        public var bytesAllowed = 0
        /// Packets refused, by reason.
        public var refusedTooOften = 0
        public var refusedWithinRoundTrip = 0
        public var refusedOverBudget = 0
        /// All the packets refused.
        public var packetsRefused: Int { refusedTooOften + refusedWithinRoundTrip + refusedOverBudget }

        public init() {}
    }

    /// The bounds it applies.
    public let configuration: Configuration
    /// The decisions so far.
    public private(set) var statistics = Statistics()
    /// The latest round-trip time the receiver's reports gave (nil: none yet).
    public var roundTripTime: Duration?

    private static let bucketCount = 10
    private static let packetSlots = 1_024
    private let bucketNanoseconds: Int64
    private var mediaBytes: [Int]
    private var resentBytes: [Int]
    /// The bucket `mediaBytes[…]` last written: `instant / bucketNanoseconds`.
    private var currentBucket: Int64 = .min
    private struct PacketSlot {
        var sequenceNumber: UInt16 = 0
        var used = false
        var resends = 0
        var lastResent: MonotonicInstant?
    }
    private var packets: [PacketSlot]

    /// A limiter with `configuration`.
    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
        bucketNanoseconds = max(configuration.window.nanoseconds / Int64(Self.bucketCount), 1)
        mediaBytes = Array(repeating: 0, count: Self.bucketCount)
        resentBytes = Array(repeating: 0, count: Self.bucketCount)
        packets = Array(repeating: PacketSlot(), count: Self.packetSlots)
    }

    /// A media packet (`bytes` long) went out at `now`: it adds to the budget, and starts the
    /// packet's resend count afresh.
    public mutating func mediaSent(sequenceNumber: UInt16, bytes: Int, now: MonotonicInstant) {
        advance(to: now)
        mediaBytes[bucketIndex] += max(bytes, 0)
        packets[Int(sequenceNumber) % Self.packetSlots] = PacketSlot(sequenceNumber: sequenceNumber, used: true)
    }

    /// Whether packet `sequenceNumber` is resent now as an RTX packet of `bytes`; a `.resend`
    /// is counted against the budget and the packet's resends at once.
    public mutating func decide(sequenceNumber: UInt16, bytes: Int, now: MonotonicInstant) -> Decision {
        advance(to: now)
        let index = Int(sequenceNumber) % Self.packetSlots
        if !packets[index].used || packets[index].sequenceNumber != sequenceNumber {
            packets[index] = PacketSlot(sequenceNumber: sequenceNumber, used: true)
        }
        let slot = packets[index]
        guard slot.resends < configuration.maximumResends else {
            statistics.refusedTooOften += 1
            return .resentTooOften
        }
        if let last = slot.lastResent, now < last.advanced(by: resendInterval) {
            statistics.refusedWithinRoundTrip += 1
            return .resentWithinRoundTrip
        }
        let size = max(bytes, 0)
        guard Double(resentBytes.reduce(0, +) + size) <= configuration.budgetShare * Double(mediaBytes.reduce(0, +)) else {
            statistics.refusedOverBudget += 1
            return .overBudget
        }
        resentBytes[bucketIndex] += size
        packets[index].resends += 1
        packets[index].lastResent = now
        statistics.packetsAllowed += 1
        statistics.bytesAllowed += size
        return .resend
    }

    /// The least time between two resends of one packet now: the round-trip time within
    /// ``Configuration/minimumInterval`` … ``Configuration/maximumInterval``.
    public var resendInterval: Duration {
        min(max(roundTripTime ?? .zero, configuration.minimumInterval), configuration.maximumInterval)
    }

    /// The bytes RTX may still send now (the budget left in the window).
    public func budgetLeft(now: MonotonicInstant) -> Int {
        var copy = self
        copy.advance(to: now)
        return max(Int(configuration.budgetShare * Double(copy.mediaBytes.reduce(0, +))) - copy.resentBytes.reduce(0, +), 0)
    }

    private var bucketIndex: Int { Int(currentBucket.magnitude % UInt64(Self.bucketCount)) }

    /// Empties the buckets that fell out of the window by `now`.
    private mutating func advance(to now: MonotonicInstant) {
        let bucket = now.nanoseconds / bucketNanoseconds
        guard bucket > currentBucket else { return }
        if currentBucket == .min || bucket - currentBucket >= Int64(Self.bucketCount) {
            for index in 0..<Self.bucketCount {
                mediaBytes[index] = 0
                resentBytes[index] = 0
            }
        } else {
            var next = currentBucket + 1
            while next <= bucket {
                let index = Int(next.magnitude % UInt64(Self.bucketCount))
                mediaBytes[index] = 0
                resentBytes[index] = 0
                next += 1
            }
        }
        currentBucket = bucket
    }
}
