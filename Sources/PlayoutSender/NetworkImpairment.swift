public import PlayoutCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension PlayoutError.Code {
    /// A network impairment setting (``NetworkImpairment/Configuration/loss``,
    /// ``NetworkImpairment/Configuration/jitter``, …) is out of range, or a percentage cannot be
    /// parsed.
    public static let invalidImpairment = Self("invalidImpairment")
}

/// The test publisher's network impairment simulation, sans-IO: it reads no clock and opens no
/// socket. The publisher hands it each outgoing datagram with the current instant and asks it
/// what to send when; like Linux `netem` on the sender's interface.
///
/// Each submitted datagram goes through, in this order:
/// 1. **loss** — dropped with probability ``Configuration/loss`` (Bernoulli), or while the
///    Gilbert–Elliott chain of ``Configuration/burstLoss`` is in its bad state;
/// 2. **duplication** — with probability ``Configuration/duplicate`` it is sent twice; each copy
///    goes through the next steps on its own;
/// 3. **bandwidth** — with a ``Configuration/bandwidth`` cap, the datagram queues behind earlier
///    ones for a link of that rate and leaves when its last bit has crossed it; a datagram that
///    would wait in the queue longer than ``Configuration/queueLimit`` is dropped (tail drop);
/// 4. **jitter** — an extra delay drawn from a half-normal distribution with standard deviation
///    ``Configuration/jitter``; the order is kept (a datagram never leaves before the one
///    submitted before it, as netem with a FIFO);
/// 5. **reordering** — with probability ``Configuration/reorder`` the datagram is held back a
///    further ``Configuration/reorderDelay``, outside the FIFO, so later ones may overtake it.
///
/// Every random choice comes from a generator seeded by ``Configuration/seed`` (one independent
/// stream per kind of impairment, so that turning jitter on does not change which datagrams are
/// lost): the same configuration and the same submissions give the same output, instant for
/// instant.
///
/// ```swift
/// var impairment = try NetworkImpairment(configuration: .init(loss: 0.02, jitter: .milliseconds(5)))
/// impairment.submit(datagram, now: clock.now)
/// loop: while true {
///     switch impairment.poll(now: clock.now) {
///     case .send(let bytes, _): socket.send(bytes)
///     case .wait(until: let instant): wake = instant; break loop
///     case .idle: wake = nil; break loop
///     }
/// }
/// ```
///
/// **The end of a run.** A run stops sending at its end (``Publisher/Options/duration``, a file's
/// end, a stop) while the simulated network may still hold datagrams — with `--jitter 10s`, nearly
/// everything submitted in the last seconds. The run then drains with
/// ``drain(now:deadline:)`` for at most ``Configuration/drainLimit`` (between 1 s and 2 s): what
/// is due by then is sent, and what would leave later is dropped and counted in
/// ``Statistics/datagramsDroppedAtEnd``, as a link that goes down at the end of a run. So a run
/// never outlives its end by more than 2 s, however large the jitter, and nothing is lost
/// silently. A jitter of up to ``Configuration/maximumDuration`` is still accepted: a stream
/// longer than the jitter plays through it.
///
/// Memory is bounded: with a bandwidth cap the queue holds at most ``Configuration/queueLimit``
/// worth of datagrams at that rate plus those in flight for jitter and reordering; without one,
/// only the datagrams submitted within the largest jitter delay plus ``Configuration/reorderDelay``.
///
/// - Complexity: ``submit(_:label:now:)`` and ``poll(now:)`` are O(log *n*) for *n* datagrams pending;
///   neither allocates once the queue has grown to its working size (payloads are not copied).
public struct NetworkImpairment: Sendable {
    /// What to impair, and how much. The defaults impair nothing.
    public struct Configuration: Equatable, Sendable {
        /// The default ``reorderDelay``: 10 ms.
        public static let defaultReorderDelay: Duration = .milliseconds(10)
        /// The default ``queueLimit``: 200 ms.
        public static let defaultQueueLimit: Duration = .milliseconds(200)
        /// The default ``seed``: 1.
        public static let defaultSeed: UInt64 = 1
        /// The longest ``jitter``, ``reorderDelay`` and ``queueLimit`` accepted: 1 hour.
        public static let maximumDuration: Duration = .seconds(3_600)
        /// The shortest ``drainLimit``: 1 s.
        public static let minimumDrain: Duration = .seconds(1)
        /// The longest ``drainLimit``: 2 s.
        public static let maximumDrain: Duration = .seconds(2)

        /// The probability, 0...1, that a datagram is lost, independently of every other
        /// (Bernoulli loss; default 0). Adds to ``burstLoss``: a datagram is lost when either
        /// loses it.
        public var loss: Double
        /// Bursty loss by a Gilbert–Elliott model, or nil for none (the default).
        public var burstLoss: BurstLoss?
        /// The standard deviation of the extra delay each datagram gets (default 0: none).
        ///
        /// The delay is half-normal: |*Z*| × `jitter` / √(1 − 2/π) for a standard normal *Z*, so
        /// its standard deviation is exactly `jitter`, its mean ≈ 1.32 × `jitter`, and it is
        /// never negative. Datagrams keep their order: each leaves at its own time or when the
        /// one submitted before it left, whichever is later (unless held back by ``reorder``).
        public var jitter: Duration
        /// The probability, 0...1, that a datagram is held back a further ``reorderDelay`` so
        /// that later ones overtake it (default 0).
        public var reorder: Double
        /// How long a datagram picked by ``reorder`` is held back (default
        /// ``defaultReorderDelay``).
        public var reorderDelay: Duration
        /// The probability, 0...1, that a datagram is sent twice (default 0).
        public var duplicate: Double
        /// The link rate in bits per second, counting datagram (UDP payload) bytes only; nil for
        /// no cap (the default). Datagrams queue for the link in order; see ``queueLimit``.
        public var bandwidth: Int?
        /// The longest a datagram may wait in the ``bandwidth`` queue before its first bit goes
        /// out; one that would wait longer is dropped (tail drop) and counted in
        /// ``Statistics/datagramsDroppedByBandwidth`` (default ``defaultQueueLimit``).
        public var queueLimit: Duration
        /// The seed of every random choice (default ``defaultSeed``).
        public var seed: UInt64
        /// Windows, measured from the first datagram submitted, in which the link is down: every
        /// datagram submitted inside one is lost (counted in ``Statistics/datagramsLost`` and
        /// ``Statistics/datagramsLostInOutage``). Default none. `[Duration.seconds(2)..<Duration.seconds(3)]` makes
        /// a receiver stall for a second, two seconds into the stream.
        public var outages: [Range<Duration>] = []

        /// Creates a configuration; every parameter has a default, and the defaults impair
        /// nothing.
        public init(
            loss: Double = 0,
            burstLoss: BurstLoss? = nil,
            jitter: Duration = .zero,
            reorder: Double = 0,
            reorderDelay: Duration = Self.defaultReorderDelay,
            duplicate: Double = 0,
            bandwidth: Int? = nil,
            queueLimit: Duration = Self.defaultQueueLimit,
            seed: UInt64 = Self.defaultSeed
        ) {
            self.loss = loss
            self.burstLoss = burstLoss
            self.jitter = jitter
            self.reorder = reorder
            self.reorderDelay = reorderDelay
            self.duplicate = duplicate
            self.bandwidth = bandwidth
            self.queueLimit = queueLimit
            self.seed = seed
        }

        /// How long a run drains the simulated network after it stops sending (see
        /// ``NetworkImpairment/drain(now:deadline:)``): twice the ``jitter``, at least
        /// ``minimumDrain`` and at most ``maximumDrain``. A jitter of tens of milliseconds drains
        /// completely (1 s is dozens of its standard deviations); with a jitter near a second or
        /// more, what would arrive later than that after the end is dropped and counted, so that
        /// no jitter, reordering or bandwidth queue holds a run open for long after its end.
        public var drainLimit: Duration {
            min(Self.maximumDrain, max(Self.minimumDrain, jitter * 2))
        }

        /// Whether nothing is impaired: every datagram is sent once, unchanged, in order, the
        /// instant it is submitted.
        public var isNone: Bool {
            loss == 0 && (burstLoss?.rate ?? 0) == 0 && jitter == .zero
                && (reorder == 0 || reorderDelay == .zero) && duplicate == 0 && bandwidth == nil && outages.allSatisfy(\.isEmpty)
        }
    }

    /// Bursty loss by the Gilbert–Elliott two-state model, parameterised the way users think: the
    /// average loss rate and the mean burst length in packets. Every datagram is lost in the bad
    /// state and none in the good one; the chain moves once per submitted datagram.
    ///
    /// With mean burst length *L* and rate *r*, the chain leaves the bad state with probability
    /// 1/*L* and enters it with probability *r* / (*L* (1 − *r*)), so it spends the fraction *r*
    /// of datagrams in the bad state, in runs of *L* on average (geometrically distributed). That
    /// needs *r* ≤ *L* / (*L* + 1): a 50 % rate needs bursts of at least 1 packet on average, a
    /// 75 % rate bursts of at least 3.
    public struct BurstLoss: Equatable, Sendable {
        /// The long-run fraction of datagrams lost, 0..<1.
        public var rate: Double
        /// The mean number of consecutive datagrams lost per burst, 1 or more.
        public var meanBurstLength: Double

        /// Creates a burst-loss model with average loss `rate` and `meanBurstLength` packets per
        /// burst.
        public init(rate: Double, meanBurstLength: Double) {
            self.rate = rate
            self.meanBurstLength = meanBurstLength
        }

        /// The probability of moving from the good state to the bad one per datagram.
        var enterProbability: Double {
            rate == 0 ? 0 : rate / (meanBurstLength * (1 - rate))
        }

        /// The probability of moving from the bad state to the good one per datagram.
        var leaveProbability: Double {
            1 / meanBurstLength
        }
    }

    /// A snapshot of the simulation's counters, cumulative since it was created. Once every
    /// pending datagram has been polled or dropped at the end, `datagramsSubmitted −
    /// datagramsLost − datagramsDroppedByBandwidth − datagramsDroppedAtEnd + datagramsDuplicated
    /// == datagramsSent`.
    public struct Statistics: Equatable, Sendable {
        /// Datagrams handed to ``NetworkImpairment/submit(_:label:now:)``.
        public var datagramsSubmitted = 0
        /// Datagrams returned by ``NetworkImpairment/poll(now:)``, duplicates included.
        public var datagramsSent = 0
        /// Datagrams lost to random or burst loss or to an outage (each counted once).
        public var datagramsLost = 0
        /// The datagrams of ``datagramsLost`` submitted during an outage.
        public var datagramsLostInOutage = 0
        /// Datagram copies dropped because the bandwidth queue was longer than the queue limit.
        public var datagramsDroppedByBandwidth = 0
        /// Datagram copies still held (by jitter, reordering or the bandwidth queue) when the run
        /// ended: not sent, dropped by ``NetworkImpairment/drain(now:deadline:)`` or
        /// ``NetworkImpairment/discardPending()``.
        public var datagramsDroppedAtEnd = 0
        /// Datagrams sent twice (the extra copies).
        public var datagramsDuplicated = 0
        /// Datagrams sent after a datagram submitted later than them: those held back by
        /// reordering that were actually overtaken.
        public var datagramsReordered = 0
        /// The bytes of the datagrams counted in ``datagramsSent``.
        public var bytesSent = 0

        /// All zero.
        public init() {}
    }

    /// What ``NetworkImpairment/poll(now:)`` asks of the caller.
    public enum Output: Equatable, Sendable {
        /// Send this datagram now (then poll again); `label` is the one it was submitted with.
        case send([UInt8], label: Int)
        /// Nothing is due yet: poll again at this instant (or when submitting another datagram).
        case wait(until: MonotonicInstant)
        /// Nothing is pending: poll again after the next submission.
        case idle
    }

    /// The configuration in effect, as validated by ``init(configuration:)``.
    public let configuration: Configuration
    /// The counters, read as one snapshot.
    public private(set) var statistics = Statistics()

    /// Datagrams waiting for their send time: a binary min-heap on (send time, order).
    private var pending: [Pending] = []
    /// Increases with every datagram copy queued; breaks send-time ties in submission order.
    private var nextOrder: UInt64 = 0
    /// The latest `now` seen by ``submit(_:label:now:)``, so that time never runs backwards.
    private var latestSubmission: MonotonicInstant?
    /// The first `now` seen by ``submit(_:label:now:)``: the origin of the outages.
    private var firstSubmission: MonotonicInstant?
    /// When the bandwidth-capped link finishes sending what is queued for it.
    private var linkFreeAt = MonotonicInstant(nanoseconds: .min)
    /// When the last datagram that kept its order leaves (the FIFO horizon for jitter).
    private var fifoHorizon = MonotonicInstant(nanoseconds: .min)
    /// The highest submission index sent so far, to count datagrams that were overtaken.
    private var highestIndexSent: Int = -1
    /// Whether the Gilbert–Elliott chain is in its bad (losing) state.
    private var inBurst = false
    /// The scale of the half-normal jitter delay, in nanoseconds: `jitter / √(1 − 2/π)`.
    private let jitterScale: Double

    private var lossRandom: Xoshiro256StarStar
    private var burstRandom: Xoshiro256StarStar
    private var duplicateRandom: Xoshiro256StarStar
    private var jitterRandom: Xoshiro256StarStar
    private var reorderRandom: Xoshiro256StarStar

    /// Creates a simulation for `configuration`, after checking every setting.
    ///
    /// - Throws: ``PlayoutError`` with code ``PlayoutError/Code/invalidImpairment`` when a
    ///   probability is not within 0...1, a duration is negative or longer than
    ///   ``Configuration/maximumDuration``, the bandwidth is not positive, or the burst loss cannot
    ///   be modelled (mean burst length below 1, or a rate too high for it); the message names the
    ///   setting and an example value.
    public init(configuration: Configuration) throws(PlayoutError) {
        try Self.validate(configuration)
        self.configuration = configuration
        jitterScale = Double(configuration.jitter.nanoseconds) / (1 - 2 / Double.pi).squareRoot()
        lossRandom = Xoshiro256StarStar(seed: configuration.seed, stream: 1)
        burstRandom = Xoshiro256StarStar(seed: configuration.seed, stream: 2)
        duplicateRandom = Xoshiro256StarStar(seed: configuration.seed, stream: 3)
        jitterRandom = Xoshiro256StarStar(seed: configuration.seed, stream: 4)
        reorderRandom = Xoshiro256StarStar(seed: configuration.seed, stream: 5)
        if let burst = configuration.burstLoss, burst.rate > 0 {
            // Start in the chain's stationary distribution, so the first datagrams see the rate too.
            inBurst = burstRandom.nextUniform() < burst.rate
        }
    }

    /// Takes one outgoing datagram submitted at `now`: decides whether it is lost, duplicated,
    /// queued for the bandwidth cap or dropped, and when each copy is due. Poll afterwards: the
    /// datagram may be due at once.
    ///
    /// `now` should not decrease from one call to the next; an earlier instant is taken as the
    /// latest one seen.
    public mutating func submit(_ datagram: [UInt8], label: Int = 0, now: MonotonicInstant) {
        let now = max(now, latestSubmission ?? now)
        latestSubmission = now
        let origin = firstSubmission ?? now
        firstSubmission = origin
        let index = statistics.datagramsSubmitted
        statistics.datagramsSubmitted += 1
        if !configuration.outages.isEmpty {
            let elapsed = origin.duration(to: now)
            if configuration.outages.contains(where: { $0.contains(elapsed) }) {
                statistics.datagramsLost += 1
                statistics.datagramsLostInOutage += 1
                return
            }
        }

        var lost = false
        if configuration.loss > 0, lossRandom.nextUniform() < configuration.loss {
            lost = true
        }
        if let burst = configuration.burstLoss, burst.rate > 0 {
            if inBurst { lost = true }
            let flip = inBurst ? burst.leaveProbability : burst.enterProbability
            if burstRandom.nextUniform() < flip { inBurst.toggle() }
        }
        if lost {
            statistics.datagramsLost += 1
            return
        }

        var copies = 1
        if configuration.duplicate > 0, duplicateRandom.nextUniform() < configuration.duplicate {
            copies = 2
            statistics.datagramsDuplicated += 1
        }
        for _ in 0..<copies {
            enqueue(datagram, label: label, index: index, now: now)
        }
    }

    /// The next datagram whose send time has come (oldest send time first, ties in submission
    /// order); otherwise when to poll again, or ``Output/idle`` when nothing is pending.
    public mutating func poll(now: MonotonicInstant) -> Output {
        guard let first = pending.first else { return .idle }
        guard first.sendTime <= now else { return .wait(until: first.sendTime) }
        let next = popFirst()
        statistics.datagramsSent += 1
        statistics.bytesSent += next.bytes.count
        if next.index < highestIndexSent {
            statistics.datagramsReordered += 1
        } else {
            highestIndexSent = next.index
        }
        return .send(next.bytes, label: next.label)
    }

    /// Polls at the end of a run: like ``poll(now:)``, but once the next datagram would leave
    /// after `deadline` (the run's end plus ``Configuration/drainLimit``), every datagram still
    /// held is dropped, counted in ``Statistics/datagramsDroppedAtEnd``, and the answer is
    /// ``Output/idle``. A datagram due at `deadline` exactly is still sent.
    ///
    /// ```swift
    /// let deadline = clock.now.advanced(by: impairment.configuration.drainLimit)
    /// while true {
    ///     switch impairment.drain(now: clock.now, deadline: deadline) {
    ///     case .send(let bytes, _): socket.send(bytes)
    ///     case .wait(until: let instant): clock.sleep(until: instant)
    ///     case .idle: return
    ///     }
    /// }
    /// ```
    public mutating func drain(now: MonotonicInstant, deadline: MonotonicInstant) -> Output {
        let output = poll(now: now)
        if case .wait(let instant) = output, instant > deadline {
            discardPending()
            return .idle
        }
        return output
    }

    /// Drops every datagram still held, counting each copy in
    /// ``Statistics/datagramsDroppedAtEnd`` (a run stopped before its end, or a drain past its
    /// deadline); returns how many.
    @discardableResult
    public mutating func discardPending() -> Int {
        let count = pending.count
        statistics.datagramsDroppedAtEnd += count
        pending.removeAll()
        return count
    }

    /// How many datagram copies wait for their send time.
    var pendingCount: Int {
        pending.count
    }

    /// Parses a probability as typed on the command line: a percentage (`"2%"`, `"0.5 %"`) or a
    /// fraction (`"0.02"`), between 0 and 1 (0 % and 100 %).
    ///
    /// - Throws: ``PlayoutError`` with code ``PlayoutError/Code/invalidImpairment`` when the text
    ///   is not a number, not finite, or outside 0 %...100 %.
    public static func parsePercentage(_ text: String) throws(PlayoutError) -> Double {
        var number = Substring(text)
        while number.first?.isWhitespace == true { number.removeFirst() }
        while number.last?.isWhitespace == true { number.removeLast() }
        let isPercentage = number.last == "%"
        if isPercentage {
            number.removeLast()
            while number.last?.isWhitespace == true { number.removeLast() }
        }
        let digitsOnly = !number.isEmpty && number.allSatisfy { $0.isASCII && ($0.isNumber || $0 == "." || $0 == "-" || $0 == "+") }
        guard digitsOnly, let value = Double(number), value.isFinite else {
            throw PlayoutError(.invalidImpairment, "'\(text)' is not a percentage: write e.g. 2% or 0.02")
        }
        let probability = isPercentage ? value / 100 : value
        guard (0...1).contains(probability) else {
            if !isPercentage, value > 1, value <= 100 {
                throw PlayoutError(.invalidImpairment, "'\(text)' is more than 1: write \(number)% for \(number) percent, or a fraction such as 0.02")
            }
            throw PlayoutError(.invalidImpairment, "'\(text)' is not between 0% and 100%: write e.g. 2% or 0.02")
        }
        return probability
    }
}

// MARK: - Scheduling

extension NetworkImpairment {
    /// A datagram copy waiting for its send time.
    private struct Pending: Sendable {
        var sendTime: MonotonicInstant
        var order: UInt64
        /// The submission index of the datagram (shared by both copies of a duplicate).
        var index: Int
        var bytes: [UInt8]
        /// What the caller tagged the datagram with (e.g. its track and packet number).
        var label: Int

        func precedes(_ other: Pending) -> Bool {
            sendTime < other.sendTime || (sendTime == other.sendTime && order < other.order)
        }
    }

    /// Runs one copy of a datagram through the bandwidth queue, jitter and reordering, and queues
    /// it for its send time (or drops it at the bandwidth queue).
    private mutating func enqueue(_ datagram: [UInt8], label: Int, index: Int, now: MonotonicInstant) {
        var sendTime = now
        if let bandwidth = configuration.bandwidth {
            let start = max(now, linkFreeAt)
            if now.duration(to: start) > configuration.queueLimit {
                statistics.datagramsDroppedByBandwidth += 1
                return
            }
            // Rounded up, so that the link never goes faster than the cap.
            let bits = Int64(datagram.count) * 8
            let (product, overflow) = bits.multipliedReportingOverflow(by: 1_000_000_000)
            let nanoseconds = overflow ? .max : (product + Int64(bandwidth) - 1) / Int64(bandwidth)
            linkFreeAt = start.advanced(by: .nanoseconds(nanoseconds))
            sendTime = linkFreeAt
        }
        if jitterScale > 0 {
            let delay = (jitterRandom.nextHalfNormal() * jitterScale).rounded()
            sendTime = sendTime.advanced(by: .nanoseconds(Int64(delay)))
        }
        sendTime = max(sendTime, fifoHorizon)
        if configuration.reorder > 0, reorderRandom.nextUniform() < configuration.reorder {
            // Held back outside the FIFO: the datagrams after it may leave first.
            sendTime = sendTime.advanced(by: configuration.reorderDelay)
        } else {
            fifoHorizon = sendTime
        }
        push(Pending(sendTime: sendTime, order: nextOrder, index: index, bytes: datagram, label: label))
        nextOrder += 1
    }

    private mutating func push(_ element: Pending) {
        pending.append(element)
        var child = pending.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard pending[child].precedes(pending[parent]) else { break }
            pending.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func popFirst() -> Pending {
        let last = pending.count - 1
        pending.swapAt(0, last)
        let first = pending.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            guard left < pending.count else { break }
            let right = left + 1
            let child = right < pending.count && pending[right].precedes(pending[left]) ? right : left
            guard pending[child].precedes(pending[parent]) else { break }
            pending.swapAt(child, parent)
            parent = child
        }
        return first
    }

    /// Checks every setting of `configuration`, with a message that says what to type.
    private static func validate(_ configuration: Configuration) throws(PlayoutError) {
        // Messages name the setting as the API spells it; the CLI words its own options.
        let prefix = "NetworkImpairment.Configuration."
        func probability(_ value: Double, _ name: String, example: String) throws(PlayoutError) {
            guard (0...1).contains(value) else {
                throw PlayoutError(.invalidImpairment, "\(prefix)\(name) must be from 0 to 1, i.e. 0% to 100% (got \(format(value)), i.e. \(describe(value))), e.g. \(example)")
            }
        }
        func duration(_ value: Duration, _ name: String, example: String) throws(PlayoutError) {
            guard value >= .zero else {
                throw PlayoutError(.invalidImpairment, "\(prefix)\(name) must be 0 or more (got \(value.compactDescription)), e.g. \(example)")
            }
            guard value <= Configuration.maximumDuration else {
                throw PlayoutError(.invalidImpairment, "\(prefix)\(name) must be at most 1h (got \(value.compactDescription)), e.g. \(example)")
            }
        }
        try probability(configuration.loss, "loss", example: "0.02 for 2%")
        try probability(configuration.reorder, "reorder", example: "0.01 for 1%")
        try probability(configuration.duplicate, "duplicate", example: "0.01 for 1%")
        try duration(configuration.jitter, "jitter", example: ".milliseconds(20)")
        try duration(configuration.reorderDelay, "reorderDelay", example: ".milliseconds(10)")
        try duration(configuration.queueLimit, "queueLimit", example: ".milliseconds(200)")
        for outage in configuration.outages {
            try duration(outage.lowerBound, "outages' start", example: "Duration.seconds(2)..<Duration.seconds(3)")
            try duration(outage.upperBound, "outages' end", example: "Duration.seconds(2)..<Duration.seconds(3)")
        }
        if let bandwidth = configuration.bandwidth, bandwidth <= 0 {
            throw PlayoutError(.invalidImpairment, "\(prefix)bandwidth must be more than 0 bits per second (got \(bandwidth)), e.g. 2_000_000 for 2 Mbit/s")
        }
        if let burst = configuration.burstLoss {
            guard burst.rate >= 0, burst.rate < 1 else {
                throw PlayoutError(.invalidImpairment, "\(prefix)burstLoss rate must be at least 0 and below 1, i.e. below 100% (got \(format(burst.rate)), i.e. \(describe(burst.rate))), e.g. 0.1 for 10%")
            }
            guard burst.meanBurstLength >= 1, burst.meanBurstLength.isFinite else {
                throw PlayoutError(.invalidImpairment, "\(prefix)burstLoss meanBurstLength must be 1 packet or more (got \(format(burst.meanBurstLength))), e.g. 8")
            }
            guard burst.enterProbability <= 1 + 1e-9 else {  // at the limit the chain always re-enters
                let shortest = (burst.rate / (1 - burst.rate) * 100 - 1e-6).rounded(.up) / 100  // 2 decimals, up
                let rate = describe(burst.rate)
                throw PlayoutError(
                    .invalidImpairment,
                    "\(prefix)burstLoss: a loss rate of \(rate) needs bursts of at least \(format(shortest)) packets on average (got a mean burst length of \(format(burst.meanBurstLength))): raise the mean burst length or lower the rate"
                )
            }
        }
    }

    /// A probability as a percentage, for messages: `0.02` → `"2%"`.
    private static func describe(_ probability: Double) -> String {
        probability.isFinite ? format(probability * 100) + "%" : "\(probability)"
    }

    /// A number rounded to two decimals, without a trailing `.0`: `4.000000000000001` → `"4"`.
    private static func format(_ value: Double) -> String {
        guard value.isFinite, abs(value) < 1e15 else { return "\(value)" }
        let rounded = (value * 100).rounded() / 100
        return rounded == rounded.rounded() ? "\(Int64(rounded))" : "\(rounded)"
    }
}

// MARK: - Random numbers

/// xoshiro256** (Blackman and Vigna, 2018), seeded by SplitMix64: small, fast, and the same
/// sequence on every platform for a given seed and stream.
private struct Xoshiro256StarStar: Sendable {
    private var s0, s1, s2, s3: UInt64

    /// A generator for `seed`; different `stream`s give independent sequences for one seed.
    init(seed: UInt64, stream: UInt64) {
        var seeder = SeededRandomNumberGenerator(seed: seed ^ (stream &* 0xD1B5_4A32_D192_ED03))
        s0 = seeder.next()
        s1 = seeder.next()
        s2 = seeder.next()
        s3 = seeder.next()
    }

    mutating func next() -> UInt64 {
        let result = ((s1 &* 5) << 7 | (s1 &* 5) >> 57) &* 9
        let t = s1 << 17
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = s3 << 45 | s3 >> 19
        return result
    }

    /// Uniform in [0, 1), with 53 random bits.
    mutating func nextUniform() -> Double {
        Double(next() >> 11) * 0x1p-53
    }

    /// |*Z*| for a standard normal *Z* (Box–Muller).
    mutating func nextHalfNormal() -> Double {
        let u1 = 1 - nextUniform()  // (0, 1]: the logarithm is finite
        let u2 = nextUniform()
        return abs((-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2))
    }
}
