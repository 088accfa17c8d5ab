public import PlayoutCore

/// One backend's delivery decisions, sans-IO: a bounded queue with drop-oldest, batching with a
/// linger time, retry with jittered exponential backoff (one seeded random stream: deterministic
/// in tests), and the drain at shutdown. The backend's thread carries out what
/// ``nextAction(now:)`` returns and reports the outcome.
///
/// ```swift
/// var machine = TelemetryDeliveryStateMachine(configuration: .init(), seed: 1)
/// machine.enqueue(records, now: t0)   // the array, kept as it is
/// if case .deliver(let batch) = machine.nextAction(now: t0 + linger) {
///     do { try backend.deliver(batch); machine.deliverySucceeded(now: t1) }
///     catch { machine.deliveryFailed(error, now: t1) }   // retried after a jittered backoff
/// }
/// ```
///
/// The queue holds at most ``Configuration/capacity`` records besides the batch being delivered
/// (at most ``Configuration/maximumBatchSize``); when full, the oldest queued record is dropped
/// and counted (``TelemetryDropReason/queueFull``). It keeps the arrays it is given (the engine's
/// compact blocks of records) and hands out parts of them (``TelemetryBatch``): no record is
/// copied on its way through.
package struct TelemetryDeliveryStateMachine: Sendable {
    /// Its settings (``TelemetryDeliveryConfiguration``).
    package typealias Configuration = TelemetryDeliveryConfiguration

    /// What the backend's thread does next.
    enum Action: Sendable, Equatable {
        /// Deliver `batch`, then report with ``deliverySucceeded(now:)`` or ``deliveryFailed(_:now:)``.
        case deliver(TelemetryBatch)
        /// Nothing before `instant` (a batch lingers, or a retry backs off), unless a record comes.
        case wait(until: MonotonicInstant)
        /// Nothing queued.
        case idle
    }

    /// The configuration in use.
    let configuration: Configuration
    /// What happened so far (``TelemetryBackendStatistics/name`` left empty).
    private(set) var statistics = TelemetryBackendStatistics(name: "")

    /// Queued arrays, oldest first from `head`; each with the index of its first record not yet
    /// taken and when it was queued.
    private var queue: [(records: TelemetryRecordBlock, start: Int, at: MonotonicInstant)] = []
    private var head = 0
    private var queued = 0  // records in `queue`
    private var pending: TelemetryBatch?
    private var attempts = 0
    private var retryAt: MonotonicInstant?
    private var inFlight = false
    private var draining = false
    private var flushing = false
    private var failedWhileDraining = false  // the last attempt while draining failed
    private var random: SeededRandomNumberGenerator

    /// A machine with `configuration`, its jitter drawn from `seed`.
    init(configuration: Configuration = .init(), seed: UInt64) {
        self.configuration = configuration
        random = SeededRandomNumberGenerator(seed: seed)
    }

    /// Records waiting, the batch in flight or backing off included.
    var depth: Int { queued + (pending?.count ?? 0) }

    /// Queues `record`; when the queue is full the oldest queued record is dropped and counted.
    /// Returns false when it dropped one.
    @discardableResult
    mutating func enqueue(_ record: TelemetryRecord, now: MonotonicInstant) -> Bool {
        enqueue([record], now: now) == 0
    }

    /// Queues `records` as they are (the array is kept, not copied); when the queue is full the
    /// oldest queued records are dropped and counted. Returns how many were dropped.
    @discardableResult
    mutating func enqueue(_ records: [TelemetryRecord], now: MonotonicInstant) -> Int {
        enqueue(.records(records), now: now)
    }

    /// ``enqueue(_:now:)-([TelemetryRecord],_)`` of a block of records (the engine's columns).
    @discardableResult
    mutating func enqueue(_ records: TelemetryRecordBlock, now: MonotonicInstant) -> Int {
        guard records.count > 0 else { return 0 }
        // Of an array larger than the queue, only its newest records fit.
        let start = max(0, records.count - configuration.capacity)
        var dropped = start
        var excess = queued + records.count - start - configuration.capacity
        while excess > 0 {
            let available = queue[head].records.count - queue[head].start
            let taken = min(available, excess)
            queue[head].start += taken
            queued -= taken
            excess -= taken
            dropped += taken
            if taken == available { popHead() }
        }
        if dropped > 0 { statistics.drops[.queueFull, default: 0] += dropped }
        queue.append((records, start, now))
        queued += records.count - start
        statistics.queueDepth = depth
        return dropped
    }

    /// Forgets the head array (every record of it taken or dropped).
    private mutating func popHead() {
        queue[head].records = .records([])
        head += 1
        if head == queue.count {
            queue.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 64, head * 2 > queue.count {
            queue.removeFirst(head)
            head = 0
        }
    }

    /// From now on every queued record is sent without lingering (shutdown), and a retry that
    /// is backing off goes at once: the drain gives each backend one more chance now, not a
    /// backoff that would outlast the deadline.
    mutating func drain() {
        draining = true
        retryAt = nil
    }

    /// What is queued now is sent without lingering (records queued later linger as usual once
    /// the queue has emptied).
    mutating func flushQueued() { flushing = depth > 0 }

    /// Whether everything queued was delivered or dropped.
    var isEmpty: Bool { depth == 0 && !inFlight }

    /// The next thing to do at `now`.
    mutating func nextAction(now: MonotonicInstant) -> Action {
        guard !inFlight else { return .idle }
        if let batch = pending {
            if let retryAt, now < retryAt { return .wait(until: retryAt) }
            inFlight = true
            return .deliver(batch)
        }
        let count = queued
        guard count > 0 else {
            flushing = false
            return .idle
        }
        let due = queue[head].at.advanced(by: configuration.linger)
        guard draining || flushing || count >= configuration.maximumBatchSize || now >= due else { return .wait(until: due) }
        // The oldest records, up to a batch, as parts of the arrays that hold them.
        var remaining = min(count, configuration.maximumBatchSize)
        var parts: [TelemetryBatch.Part] = []
        while remaining > 0 {
            let (records, start, _) = queue[head]
            let end = min(records.count, start + remaining)
            parts.append(TelemetryBatch.Part(block: records, range: start..<end))
            remaining -= end - start
            queued -= end - start
            if end == records.count { popHead() } else { queue[head].start = end }
        }
        let batch = TelemetryBatch(parts: parts)
        pending = batch
        attempts = 0
        retryAt = nil
        inFlight = true
        return .deliver(batch)
    }

    /// The batch handed out by the last ``nextAction(now:)`` was delivered.
    mutating func deliverySucceeded(now: MonotonicInstant) {
        guard inFlight, let batch = pending else { return }
        inFlight = false
        failedWhileDraining = false
        pending = nil
        statistics.delivered += batch.count
        statistics.batchesDelivered += 1
        statistics.lastSuccessfulFlush = now
        statistics.queueDepth = depth
        if depth == 0 { flushing = false }
    }

    /// The batch failed: retried after a jittered backoff when `error` is retryable and attempts
    /// remain, else dropped and counted (``TelemetryDropReason/rejected`` or
    /// ``TelemetryDropReason/retriesExhausted``).
    ///
    /// While draining, only progress keeps a backend alive until the deadline: a failure is
    /// retried once at once (a connection the server closed while idle is opened again), and a
    /// second failure in a row — or a first one from a backend that has delivered nothing at
    /// all — means the backend is unreachable, not slow: everything it holds is dropped at once
    /// (counted as ``TelemetryDropReason/shutdown``) instead of being retried until the deadline,
    /// so a server that went away, early or in the middle of the run, does not hold the end of
    /// it. A backend that keeps delivering batches drains until the deadline.
    mutating func deliveryFailed(_ error: TelemetryDeliveryError, now: MonotonicInstant) {
        guard inFlight, let batch = pending else { return }
        inFlight = false
        attempts += 1
        statistics.failedAttempts += 1
        statistics.lastError = error.reason
        if draining, error.retryable, statistics.delivered == 0 || failedWhileDraining {
            abandon()
        } else if draining, error.retryable, attempts < configuration.maximumAttempts {
            failedWhileDraining = true
            retryAt = nil
        } else if !error.retryable || attempts >= configuration.maximumAttempts {
            statistics.drops[error.retryable ? .retriesExhausted : .rejected, default: 0] += batch.count
            pending = nil
            retryAt = nil
        } else {
            retryAt = now.advanced(by: backoff(afterAttempt: attempts))
        }
        statistics.queueDepth = depth
    }

    /// Drops everything not delivered (the shutdown deadline passed), counted as
    /// ``TelemetryDropReason/shutdown``; returns how many.
    @discardableResult
    mutating func abandon() -> Int {
        let count = depth
        statistics.drops[.shutdown, default: 0] += count
        queue.removeAll()
        head = 0
        queued = 0
        pending = nil
        retryAt = nil
        statistics.queueDepth = 0
        return count
    }

    /// The delay before retry number `attempt` (1 = after the first failure), jittered.
    private mutating func backoff(afterAttempt attempt: Int) -> Duration {
        let base = configuration.initialBackoff.nanoseconds
        let ceiling = configuration.maximumBackoff.nanoseconds
        var delay = base
        for _ in 1..<attempt where delay < ceiling { delay = delay > ceiling / 2 ? ceiling : delay * 2 }
        delay = min(delay, ceiling)
        let unit = Double(random.next() >> 11) / Double(1 << 53)
        let factor = 1 - configuration.jitter + configuration.jitter * unit
        return .nanoseconds(Int64(Double(delay) * factor))
    }
}

/// Why records did not reach a backend.
public enum TelemetryDropReason: String, Sendable, Hashable, CaseIterable, Comparable {
    /// The backend's queue was full: the oldest record was dropped.
    case queueFull
    /// The backend refused the batch for good (e.g. HTTP 400).
    case rejected
    /// Every attempt failed.
    case retriesExhausted
    /// Still queued when the shutdown deadline passed.
    case shutdown

    public static func < (lhs: Self, rhs: Self) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// What one backend's delivery did.
public struct TelemetryBackendStatistics: Sendable, Equatable {
    /// The backend's name.
    public var name: String
    /// Records waiting now (the batch in flight included).
    public var queueDepth = 0
    /// Records delivered.
    public var delivered = 0
    /// Batches delivered.
    public var batchesDelivered = 0
    /// Deliveries that failed (each retry counts).
    public var failedAttempts = 0
    /// Records dropped, by reason.
    public var drops: [TelemetryDropReason: Int] = [:]
    /// When a batch was last delivered.
    public var lastSuccessfulFlush: MonotonicInstant?
    /// The last delivery error, in a user's words.
    public var lastError: String?

    /// Statistics of the backend called `name`, all zero.
    public init(name: String) {
        self.name = name
    }

    /// Records dropped, every reason.
    public var dropped: Int { drops.values.reduce(0, +) }
}

/// Queue, batching and retry settings, with documented defaults.
public struct TelemetryDeliveryConfiguration: Sendable, Equatable {
    /// Default queue bound: 10,000 records.
    public static let defaultCapacity = 10_000
    /// Default largest batch: 500 records.
    public static let defaultMaximumBatchSize = 500
    /// Default time a record may wait for a fuller batch: 200 ms.
    public static let defaultLinger: Duration = .milliseconds(200)
    /// Default first retry delay: 100 ms (doubling up to ``defaultMaximumBackoff``).
    public static let defaultInitialBackoff: Duration = .milliseconds(100)
    /// Default longest retry delay: 10 s.
    public static let defaultMaximumBackoff: Duration = .seconds(10)
    /// Default attempts per batch before it is dropped: 8.
    public static let defaultMaximumAttempts = 8

    /// Records queued at most (besides the batch in flight).
    public var capacity: Int
    /// Records per delivery at most.
    public var maximumBatchSize: Int
    /// How long a record waits for a fuller batch before it is sent anyway.
    public var linger: Duration
    /// The delay before the first retry; each further retry doubles it.
    public var initialBackoff: Duration
    /// The longest delay between retries.
    public var maximumBackoff: Duration
    /// Fraction (0…1) of each delay drawn at random: a delay d waits d × (1 − jitter + jitter × u).
    public var jitter: Double
    /// Attempts per batch (the first included) before it is dropped and counted.
    public var maximumAttempts: Int

    /// Settings with the given values (defaults above; jitter 0.5).
    public init(
        capacity: Int = TelemetryDeliveryConfiguration.defaultCapacity, maximumBatchSize: Int = TelemetryDeliveryConfiguration.defaultMaximumBatchSize,
        linger: Duration = TelemetryDeliveryConfiguration.defaultLinger, initialBackoff: Duration = TelemetryDeliveryConfiguration.defaultInitialBackoff,
        maximumBackoff: Duration = TelemetryDeliveryConfiguration.defaultMaximumBackoff, jitter: Double = 0.5,
        maximumAttempts: Int = TelemetryDeliveryConfiguration.defaultMaximumAttempts
    ) {
        self.capacity = max(1, capacity)
        self.maximumBatchSize = max(1, maximumBatchSize)
        self.linger = max(.zero, linger)
        self.initialBackoff = max(.zero, initialBackoff)
        self.maximumBackoff = max(self.initialBackoff, maximumBackoff)
        self.jitter = min(1, max(0, jitter.isFinite ? jitter : 0))
        self.maximumAttempts = max(1, maximumAttempts)
    }
}
