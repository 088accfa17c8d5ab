import PlayoutCore

/// The decode threads of a ``SubscriptionEventLoop``: a fixed number of threads that run the
/// decodes its playout loops hand over (``PlayoutLoop/decode(on:completed:)``), so a worker never
/// waits for a decoder while another track's frame is due.
///
/// Each playout loop is given one thread (a lane, handed out in turn) and all its decodes run
/// there: a decoder's reference pictures and tables stay in that core's caches, as they do
/// when one thread decodes a track back to back (moving a 720p H.264 decoder between two cores
/// for every frame cost ≈ 7 % more CPU per frame, `Benchmarks/live-subscribe.sh`). The queues
/// are bounded by the number of playout loops: each has at most one decode under way.
final class DecodePool: @unchecked Sendable {
    /// One thread's queue.
    private final class Lane: @unchecked Sendable {
        let condition = ConditionLock()
        var jobs: [@Sendable () -> Void] = []  // condition
        var stopping = false  // condition
        var running = false  // condition
    }

    private let lanes: [Lane]
    private let nextLane = LockedValue(0)

    /// The number of threads.
    var threadCount: Int { lanes.count }

    /// Starts `threads` decode threads, named `name0`, `name1` ….
    ///
    /// - Throws: ``PlayoutError`` when a thread cannot start (those started are ended).
    init(threads: Int, named name: String) throws {
        lanes = (0..<threads).map { _ in Lane() }
        for (index, lane) in lanes.enumerated() {
            lane.condition.withLock { lane.running = true }
            do {
                try startThread(named: "\(name)\(index)") { Self.run(lane) }
            } catch {
                lane.condition.withLock { lane.running = false }
                shutdown()
                throw error
            }
        }
    }

    /// How many of its threads still run.
    var threadsRunning: Int { lanes.count { lane in lane.condition.withLock { lane.running } } }

    /// A lane for one more playout loop: the threads in turn.
    func assignLane() -> Int {
        nextLane.withLock { next in
            defer { next = (next + 1) % lanes.count }
            return next
        }
    }

    /// Runs `job` on `lane`'s thread, after the jobs handed to it before.
    func submit(_ job: @escaping @Sendable () -> Void, on lane: Int) {
        let lane = lanes[lane]
        lane.condition.withLock {
            lane.jobs.append(job)
            lane.condition.broadcast()
        }
    }

    /// Runs what was handed over, then ends the threads; returns when they have.
    func shutdown() {
        for lane in lanes {
            lane.condition.withLock {
                lane.stopping = true
                lane.condition.broadcast()
                while lane.running { lane.condition.wait(until: nil) }
            }
        }
    }

    private static func run(_ lane: Lane) {
        while true {
            let job: (@Sendable () -> Void)? = lane.condition.withLock {
                while lane.jobs.isEmpty, !lane.stopping { lane.condition.wait(until: nil) }
                return lane.jobs.isEmpty ? nil : lane.jobs.removeFirst()
            }
            guard let job else { break }
            job()
        }
        lane.condition.withLock {
            lane.running = false
            lane.condition.broadcast()
        }
    }
}
