import PlayoutCore

/// Starts viewers off the swarm's control thread, on a fixed number of threads: opening a viewer
/// can block (a WHEP offer's round trip to the server), and the ramp must not wait on it — 20
/// viewers a second against a server that answers in 300 ms take six at once.
final class SwarmConnector: @unchecked Sendable {
    private let condition = ConditionLock()
    private var queue: [@Sendable () -> Void] = []
    private var busy = 0
    private var stopping = false
    private var running = 0

    /// Starts `threads` threads (at least one).
    init(threads: Int, named name: String = "playout-swarm-connect") throws {
        for index in 0..<max(1, threads) {
            condition.withLock { running += 1 }
            do {
                try startThread(named: "\(name)-\(index)") { [self] in work() }
            } catch {
                condition.withLock { running -= 1 }
                shutdown()
                throw error
            }
        }
    }

    /// Runs `job` on one of the threads, in the order submitted.
    func submit(_ job: @escaping @Sendable () -> Void) {
        condition.withLock {
            queue.append(job)
            condition.broadcast()
        }
    }

    /// Returns once every job submitted so far has run.
    func waitUntilIdle() {
        condition.withLock {
            while !queue.isEmpty || busy > 0 { condition.wait(until: nil) }
        }
    }

    /// Runs what is queued, then ends the threads; returns once they ended.
    func shutdown() {
        condition.withLock {
            stopping = true
            condition.broadcast()
            while running > 0 { condition.wait(until: nil) }
        }
    }

    private func work() {
        while true {
            let job: (@Sendable () -> Void)? = condition.withLock {
                while queue.isEmpty && !stopping { condition.wait(until: nil) }
                guard !queue.isEmpty else {
                    running -= 1
                    condition.broadcast()
                    return nil
                }
                busy += 1
                return queue.removeFirst()
            }
            guard let job else { return }
            job()
            condition.withLock {
                busy -= 1
                condition.broadcast()
            }
        }
    }
}
