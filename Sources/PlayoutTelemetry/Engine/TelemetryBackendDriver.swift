import PlayoutCore
import Synchronization

/// One backend's delivery: carries out its ``TelemetryDeliveryStateMachine``'s actions, calling
/// the backend never under the lock — on its own thread once ``start()`` ran, or (embedded, never
/// started) on the caller's thread in ``pump(now:)``. The engine hands records in with
/// ``enqueue(_:)``, which only appends under the lock and wakes the thread.
final class TelemetryBackendDriver: @unchecked Sendable {
    let backend: any TelemetryBackend
    private let clock: any PlayoutClock
    private let condition = ConditionLock()
    private var machine: TelemetryDeliveryStateMachine  // condition
    private var finishing = false  // condition
    private var deadline: MonotonicInstant?  // condition
    private var running = false  // condition
    private var started = false  // condition: a thread runs the delivery (else: embedded, `pump`)
    private var ended = false  // condition: the thread has ended; later records are counted, not kept
    private var enqueued = 0  // condition: records handed in so far
    private var handOffs: [(mark: Int, handOff: TelemetryHandOff)] = []  // condition: waiting for `mark` settled records
    /// The longest a wait lasts before the thread looks at the clock again (so a manual clock's
    /// jumps are noticed).
    private static let longestWait: Duration = .milliseconds(50)

    init(backend: any TelemetryBackend, configuration: TelemetryDeliveryConfiguration, seed: UInt64, clock: any PlayoutClock) {
        self.backend = backend
        self.clock = clock
        machine = TelemetryDeliveryStateMachine(configuration: configuration, seed: seed)
    }

    func start() throws(TelemetryEngineError) {
        condition.withLock {
            running = true
            started = true
        }
        do {
            try startTelemetryThread(named: "telemetry-out") { [self] in run() }
        } catch {
            condition.withLock { running = false }
            throw error
        }
    }

    /// Queues `records` (the block itself, drop-oldest when full) and wakes the thread.
    func enqueue(_ records: TelemetryRecordBlock) {
        guard records.count > 0 else { return }
        let now = clock.now
        condition.withLock {
            machine.enqueue(records, now: now)
            enqueued += records.count
            // Handed in after the backend was removed or shut down: undelivered, and counted.
            if ended { machine.abandon() }
            condition.broadcast()
        }
    }

    /// What the delivery did so far.
    var statistics: TelemetryBackendStatistics {
        var statistics = condition.withLock { machine.statistics }
        statistics.name = backend.name
        return statistics
    }

    /// Tells `handOff` once every record handed in so far is settled here (delivered, or dropped
    /// and counted); what is queued is sent without lingering.
    func notify(_ handOff: TelemetryHandOff) {
        let settled = condition.withLock { () -> Bool in
            guard !ended, settledCount < enqueued else { return true }
            handOffs.append((enqueued, handOff))
            machine.flushQueued()
            condition.broadcast()
            return false
        }
        if settled { handOff.arrive() }
    }

    /// Records delivered or dropped (condition).
    private var settledCount: Int { machine.statistics.delivered + machine.statistics.dropped }

    /// Takes the hand-offs whose records are all settled (all of them once the thread ended).
    private func settledHandOffs() -> [TelemetryHandOff] {
        condition.withLock {
            let settled = settledCount
            let ready = handOffs.filter { ended || $0.mark <= settled }.map(\.handOff)
            handOffs.removeAll { ended || $0.mark <= settled }
            return ready
        }
    }

    /// Whether nothing is queued or in flight.
    var isIdle: Bool { condition.withLock { machine.isEmpty } }

    /// Sends what is queued now without lingering.
    func flush() {
        condition.withLock {
            machine.flushQueued()
            condition.broadcast()
        }
    }

    /// Starts sending everything queued without lingering, until `deadline`; what is left then is
    /// dropped and counted. The thread ends after that (and the backend's `close()`).
    func beginFinishing(deadline: MonotonicInstant) {
        condition.withLock {
            finishing = true
            self.deadline = deadline
            machine.drain()
            condition.broadcast()
        }
    }

    /// Waits until the thread has ended; returns the final statistics. Embedded (no thread), it
    /// delivers what is left now, on the caller's thread, and closes the backend.
    func waitUntilFinished() -> TelemetryBackendStatistics {
        let embedded = condition.withLock { () -> Bool in
            while running { condition.wait(timeout: Self.longestWait) }
            return !started && !ended
        }
        if embedded {
            while let batch = next(waiting: false) { deliver(batch) }
            backend.close()
            condition.withLock {
                ended = true
                condition.broadcast()
            }
            for handOff in settledHandOffs() { handOff.arrive() }
        }
        return statistics
    }

    /// Embedded (no thread): delivers, on the caller's thread, every batch due at `now`.
    func pump(now: MonotonicInstant) {
        while let batch = condition.withLock({ () -> TelemetryBatch? in
            guard !started, !ended, case .deliver(let batch) = machine.nextAction(now: now) else { return nil }
            return batch
        }) {
            deliver(batch)
        }
        for handOff in settledHandOffs() { handOff.arrive() }
    }

    /// Waits (on this delivery's signal) until nothing is queued or in flight, or `deadline`
    /// passes on the real monotonic clock; whether it is idle.
    func waitUntilIdle(deadline: MonotonicInstant) -> Bool {
        condition.withLock {
            while !machine.isEmpty && !ended {
                guard MonotonicClock().now < deadline else { return false }
                condition.wait(until: deadline)
            }
            return true
        }
    }

    /// Calls the backend with `batch` (never under the lock) and tells the state machine.
    private func deliver(_ batch: TelemetryBatch) {
        var failure: TelemetryDeliveryError?
        do throws(TelemetryDeliveryError) {
            try backend.deliver(batch)
        } catch {
            failure = error
        }
        let now = clock.now
        condition.withLock {
            if let failure { machine.deliveryFailed(failure, now: now) } else { machine.deliverySucceeded(now: now) }
            condition.broadcast()  // a flush waits for the queue to empty
        }
    }

    private func run() {
        while let batch = next(waiting: true) {
            deliver(batch)
            for handOff in settledHandOffs() { handOff.arrive() }
        }
        backend.close()
        condition.withLock {
            running = false
            ended = true
            condition.broadcast()
        }
        for handOff in settledHandOffs() { handOff.arrive() }
    }

    /// The next batch to deliver; nil when finishing and nothing is left (or the deadline passed).
    /// Not `waiting` (embedded, finishing on the caller's thread): what is due goes, what cannot go
    /// now is dropped and counted instead of waited for.
    private func next(waiting: Bool) -> TelemetryBatch? {
        condition.withLock {
            while true {
                let now = clock.now
                if !waiting {
                    // Embedded: the clock does not move while the caller drains, so the deadline
                    // cannot pass; what is due goes now, the rest (a retry's backoff) is dropped.
                    if case .deliver(let batch) = machine.nextAction(now: now) { return batch }
                    if !machine.isEmpty { machine.abandon() }
                    return nil
                }
                if finishing, let deadline, now >= deadline {
                    machine.abandon()
                    return nil
                }
                switch machine.nextAction(now: now) {
                case .deliver(let batch): return batch
                case .wait(let until):
                    var timeout = now.duration(to: until)
                    if finishing, let deadline { timeout = min(timeout, now.duration(to: deadline)) }
                    condition.wait(timeout: min(timeout, Self.longestWait))
                case .idle:
                    if finishing, machine.isEmpty { return nil }
                    condition.wait(timeout: finishing ? Self.longestWait : .seconds(1))  // enqueue wakes it
                }
            }
        }
    }
}

/// One ``TelemetryInstrument/whenHandedOff(_:)`` request: its callback runs once every backend
/// it waits for has settled the records handed in before it.
final class TelemetryHandOff: Sendable {
    private let remaining: Atomic<Int>
    private let callback: @Sendable () -> Void

    /// Waits for `drivers` (none: calls back at once).
    init(drivers: [TelemetryBackendDriver], callback: @escaping @Sendable () -> Void) {
        remaining = Atomic(drivers.count)
        self.callback = callback
        if drivers.isEmpty { callback() }
        for driver in drivers { driver.notify(self) }
    }

    /// One backend has settled them; the last calls back.
    func arrive() {
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { callback() }
    }
}
