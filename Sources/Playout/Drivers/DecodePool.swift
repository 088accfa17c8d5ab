import PlayoutCore

/// The decode threads of a ``SubscriptionEventLoop``: a fixed number of threads that run the
/// decodes its playout loops hand over (``PlayoutLoop/decode(on:completed:)``), so a worker never
/// waits for a decoder while another track's frame is due. The queue is bounded by the number of
/// playout loops: each has at most one decode under way.
final class DecodePool: @unchecked Sendable {
    private let condition = ConditionLock()
    private var jobs: [@Sendable () -> Void] = []  // condition
    private var stopping = false  // condition
    private var running = 0  // condition

    /// The number of threads.
    let threadCount: Int

    /// Starts `threads` decode threads, named `name0`, `name1` ….
    ///
    /// - Throws: ``PlayoutError`` when a thread cannot start (those started are ended).
    init(threads: Int, named name: String) throws {
        threadCount = threads
        do {
            for index in 0..<threads {
                condition.withLock { running += 1 }
                do {
                    try startThread(named: "\(name)\(index)") { [self] in run() }
                } catch {
                    condition.withLock { running -= 1 }
                    throw error
                }
            }
        } catch {
            shutdown()
            throw error
        }
    }

    /// How many of its threads still run.
    var threadsRunning: Int { condition.withLock { running } }

    /// Runs `job` on one of the threads, after the jobs handed over before it.
    func submit(_ job: @escaping @Sendable () -> Void) {
        condition.withLock {
            jobs.append(job)
            condition.broadcast()
        }
    }

    /// Runs what was handed over, then ends the threads; returns when they have.
    func shutdown() {
        condition.withLock {
            stopping = true
            condition.broadcast()
            while running > 0 { condition.wait(until: nil) }
        }
    }

    private func run() {
        while true {
            let job: (@Sendable () -> Void)? = condition.withLock {
                while jobs.isEmpty, !stopping { condition.wait(until: nil) }
                return jobs.isEmpty ? nil : jobs.removeFirst()
            }
            guard let job else { break }
            job()
        }
        condition.withLock {
            running -= 1
            condition.broadcast()
        }
    }
}
