import PlayoutCore

/// The start-once, stop, finish and wait of something that runs on threads of its own (the
/// ``Subscriber`` and the ``Publisher`` share it): ``begin(_:)`` may succeed once,
/// ``requestStop()`` asks the threads to end, ``finish(_:)`` publishes the result and wakes
/// every ``wait()``.
package final class RunLifecycle<Result: Sendable>: @unchecked Sendable {
    private let condition = ConditionLock()
    private var started = false
    private var stopRequested = false
    private var result: Result?

    package init() {}

    /// Marks the start; throws when `what` was started before.
    package func begin(_ what: String) throws(PlayoutError) {
        let first = condition.withLock {
            defer { started = true }
            return !started
        }
        guard first else { throw PlayoutError(.invalidState, "\(what) starts once") }
    }

    /// Whether ``begin(_:)`` succeeded.
    package var hasStarted: Bool { condition.withLock { started } }

    /// Asks the threads to end (they look at ``isStopRequested`` or sleep in ``sleep(until:)``).
    package func requestStop() {
        condition.withLock {
            stopRequested = true
            condition.broadcast()
        }
    }

    package var isStopRequested: Bool { condition.withLock { stopRequested } }

    /// Whether ``finish(_:)`` was called.
    package var isFinished: Bool { condition.withLock { result != nil } }

    /// Sleeps until `instant` unless a stop is requested first; false when stopping.
    @discardableResult
    package func sleep(until instant: MonotonicInstant) -> Bool {
        condition.withLock {
            if !stopRequested { condition.wait(until: instant) }
            return !stopRequested
        }
    }

    /// Publishes the result (once) and wakes every waiter.
    package func finish(_ value: Result) {
        condition.withLock {
            guard result == nil else { return }
            result = value
            condition.broadcast()
        }
    }

    /// Blocks until ``finish(_:)``; returns its result.
    package func wait() -> Result {
        condition.withLock {
            while result == nil { condition.wait(until: nil) }
            return result!
        }
    }
}
