#if canImport(Glibc)
import Glibc
#endif
import PlayoutCore
import Synchronization
package import Testing

/// A test that waits on real time — a stream on loopback, a child process, a server — runs off
/// Swift Testing's cooperative pool, a few at a time.
///
/// Swift Testing runs every test on the cooperative pool: one thread per core. A synchronous
/// test that waits for a 3 s stream holds one of those threads for 3 s, so on two cores the
/// real-time tests ran two at a time, a CPU's worth of unit tests queued behind them, and the
/// suite took about the sum of the real-time tests over two. With this trait a test body runs on
/// a thread of its own (a task executor preference: the same task, so `#expect` records into the
/// test as usual), and at most ``RealTimeRuns/capacity`` units of real-time work run at once.
///
/// A test that keeps a core busy (720p encoding, a 200-viewer loop) asks for more units with
/// `weight`, so that it shares the machine with fewer others; a weight of `capacity` runs alone.
///
/// ```swift
/// @Suite("Publisher → subscriber on loopback", .serialized, .realTime)
/// struct PublishSubscribeTests { … }
///
/// @Test("200 viewers", .realTime(weight: 4))     // the test's own weight wins over its suite's
/// func manyViewers() throws { … }
/// ```
package struct RealTimeTrait: TestTrait, SuiteTrait, TestScoping {
    /// Units of ``RealTimeRuns/capacity`` each test case holds while it runs.
    package let weight: Int
    /// A bound for a hang, counted from when the test holds its units (Swift Testing's
    /// `.timeLimit` would count the wait for them too): past it, an issue is recorded.
    package var timeLimit: Duration?

    package var isRecursive: Bool { true }

    package func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        // One scope per running test case; none around a suite or a parameterized function as
        // a whole, which would hold units while its cases wait for theirs. A test's own trait
        // wins over its suite's: the last one in its traits gives the weight.
        guard testCase != nil else { return nil }
        return test.traits.lazy.compactMap { $0 as? RealTimeTrait }.reversed().first ?? self
    }

    package func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // The suite's trait and the test's own both provide a scope: the outer one holds the
        // units, the inner one runs the test inside it.
        guard !RealTimeRuns.inScope else { return try await function() }
        let units = min(max(1, weight), RealTimeRuns.capacity)
        // Everything from the wait for units to their release runs on real-time threads: a step
        // back on Swift Testing's cooperative pool between the test's end and the release would
        // hold the units until a pool thread is free — while synchronous unit tests kept both
        // busy, tests of a second held theirs for a minute.
        _ = RealTimeRuns.origin
        try await withTaskExecutorPreference(RealTimeRuns.executor) {
            await RealTimeRuns.permits.acquire(units)
            let began = MonotonicClock().now
            defer {
                RealTimeRuns.permits.release(units)
                RealTimeRuns.log(test, units: units, seconds: began.duration(to: MonotonicClock().now).seconds)
            }
            try await RealTimeRuns.$inScope.withValue(true) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    if let timeLimit {
                        group.addTask {
                            try? await Task.sleep(for: timeLimit)  // cancelled when the test ends first
                            if !Task.isCancelled { Issue.record("Time limit was exceeded: \(timeLimit) of real time") }
                        }
                    }
                    defer { group.cancelAll() }
                    try await function()
                }
            }
        }
    }
}

extension Trait where Self == RealTimeTrait {
    /// The test (every test of the suite) waits on real time and uses a small share of a core.
    package static var realTime: Self { RealTimeTrait(weight: 1) }

    /// The test (every test of the suite) waits on real time and keeps about `weight` /
    /// ``RealTimeRuns/capacity`` of the machine busy while it runs; with `timeLimit`, running
    /// longer than that once it started (not counting the wait for its turn) is an issue.
    package static func realTime(weight: Int = 1, timeLimit: Duration? = nil) -> Self {
        RealTimeTrait(weight: weight, timeLimit: timeLimit)
    }
}

/// The limit and the threads behind ``RealTimeTrait``.
package enum RealTimeRuns {
    /// Units of real-time work that may run at once: `PLAYOUT_REAL_TIME_RUNS`, else 5 per 2 cores.
    ///
    /// Most real-time tests use a few percent of a core (a 320×180 stream, a child process, a
    /// server being queried); what they need is wall-clock time, so several share a core. (3 per
    /// core overloaded two cores once the units were held only while the tests ran: beside the
    /// unit tests on the cooperative pool, a publisher delivered a fifth of its frames late.)
    package static let capacity: Int = {
        if let text = getenv("PLAYOUT_REAL_TIME_RUNS").map({ String(cString: $0) }), let value = Int(text), value > 0 {
            return value
        }
        return max(1, 5 * max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN))) / 2)
    }()

    /// Whether the running task is inside a real-time scope already.
    @TaskLocal static var inScope = false

    static let permits = AsyncPermits(capacity)
    /// When the first real-time test began (the log's time origin).
    static let origin = MonotonicClock().now
    static let executor = ThreadPerJobExecutor()

    /// `PLAYOUT_REAL_TIME_LOG`: a file each real-time test case appends a line to as it ends —
    /// its units, the seconds it held them (not counting the wait for them), when it began
    /// (seconds after the first real-time test asked for units), its name — to see
    /// what fills the suite's real-time capacity (units × seconds, summed, over the capacity is
    /// the least time the real-time tests take).
    nonisolated(unsafe) static let logFile: UnsafeMutablePointer<FILE>? = getenv("PLAYOUT_REAL_TIME_LOG").flatMap { fopen($0, "a") }
    private static let logLock = Mutex(())

    static func log(_ test: Test, units: Int, seconds: Double) {
        guard let logFile else { return }
        let name = test.displayName ?? test.name
        logLock.withLock { _ in
            let line = name.split(separator: "\n").joined(separator: " ")
            let began = origin.duration(to: MonotonicClock().now).seconds - seconds
            fputs("\(units)\t\((seconds * 1_000).rounded() / 1_000)\t\((began * 10).rounded() / 10)\t\(line)\n", logFile)
            fflush(logFile)
        }
    }
}

/// Counting permits that a task awaits (it never blocks a thread), granted first come, first
/// served: a heavy run waiting for many units is not overtaken forever by light ones.
final class AsyncPermits: Sendable {
    private struct State {
        var available: Int
        var waiters: [(units: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state: Mutex<State>

    init(_ capacity: Int) {
        state = Mutex(State(available: capacity))
    }

    func acquire(_ units: Int) async {
        await withCheckedContinuation { continuation in
            let granted = state.withLock { state -> Bool in
                guard state.waiters.isEmpty, state.available >= units else {
                    state.waiters.append((units, continuation))
                    return false
                }
                state.available -= units
                return true
            }
            if granted { continuation.resume() }
        }
    }

    func release(_ units: Int) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.available += units
            var ready: [CheckedContinuation<Void, Never>] = []
            while let first = state.waiters.first, first.units <= state.available {
                state.available -= first.units
                ready.append(first.continuation)
                state.waiters.removeFirst()
            }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }
}

/// A task executor that runs each job on a thread of its own: a real-time test blocks its
/// thread for seconds, so threads are never shared, and a thread ends with its job.
final class ThreadPerJobExecutor: TaskExecutor {
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        do {
            try startThread(named: "test-real-time") {
                job.runSynchronously(on: executor)
            }
        } catch {
            fatalError("real-time test: \(error)")
        }
    }
}
