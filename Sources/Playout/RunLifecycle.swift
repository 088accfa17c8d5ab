import PlayoutCore

/// The start-once, stop, finish and wait of something that runs on threads of its own (the
/// ``Subscriber`` and the ``Publisher`` share it): ``begin(_:)`` may succeed once,
/// ``requestStop()`` asks the threads to end, ``finish(_:)`` publishes the result and wakes
/// every ``wait()``.
final class RunLifecycle<Result: Sendable>: @unchecked Sendable {
    private let condition = ConditionLock()
    private var started = false
    private var stopRequested = false
    private var result: Result?

    init() {}

    /// Marks the start; throws when `what` was started before.
    func begin(_ what: String) throws(PlayoutError) {
        let first = condition.withLock {
            defer { started = true }
            return !started
        }
        guard first else { throw PlayoutError(.invalidState, "\(what) starts once") }
    }

    /// Whether ``begin(_:)`` succeeded.
    var hasStarted: Bool { condition.withLock { started } }

    /// Asks the threads to end (they look at ``isStopRequested`` or sleep in ``sleep(until:)``).
    func requestStop() {
        condition.withLock {
            stopRequested = true
            condition.broadcast()
        }
    }

    var isStopRequested: Bool { condition.withLock { stopRequested } }

    /// Whether ``finish(_:)`` was called.
    var isFinished: Bool { condition.withLock { result != nil } }

    /// Sleeps until `instant` unless a stop is requested first; false when stopping.
    @discardableResult
    func sleep(until instant: MonotonicInstant) -> Bool {
        condition.withLock {
            if !stopRequested { condition.wait(until: instant) }
            return !stopRequested
        }
    }

    /// Publishes the result (once) and wakes every waiter.
    func finish(_ value: Result) {
        condition.withLock {
            guard result == nil else { return }
            result = value
            condition.broadcast()
        }
    }

    /// Blocks until ``finish(_:)``; returns its result.
    func wait() -> Result {
        condition.withLock {
            while result == nil { condition.wait(until: nil) }
            return result!
        }
    }
}
