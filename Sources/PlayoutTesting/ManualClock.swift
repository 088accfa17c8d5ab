public import PlayoutCore

/// A clock that moves only when a test tells it to: deterministic timing without sleeps.
///
/// `now` starts at ``MonotonicInstant/zero``. `sleep(until:)` suspends until ``advance(by:)`` or
/// ``advance(to:)`` moves the clock to or past the deadline; sleepers are resumed in deadline
/// order. Tests that need a task to be parked first await ``waitForSleepers(count:)`` instead of
/// sleeping.
///
/// ```swift
/// let clock = ManualClock()
/// let task = Task { try await clock.sleep(for: .milliseconds(33)) }
/// await clock.waitForSleepers(count: 1)
/// clock.advance(by: .milliseconds(33))   // resumes the task
/// ```
public final class ManualClock: PlayoutClock, @unchecked Sendable {
    private struct Sleeper {
        var deadline: MonotonicInstant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: MonotonicInstant
        var nextID = 0
        var sleepers: [Int: Sleeper] = [:]
        /// Sleepers cancelled before they were registered.
        var cancelled: Set<Int> = []
        var sleeperWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state: LockedValue<State>

    /// The wall time (ns since 1970) at ``MonotonicInstant/zero``: the wall clock moves with the
    /// manual one.
    public let wallClockOrigin: Int64

    /// 2026-01-01T00:00:00Z in nanoseconds since 1970: the default ``wallClockOrigin``.
    public static let defaultWallClockOrigin: Int64 = 1_767_225_600_000_000_000

    /// Creates a clock reading `start`, whose wall time at ``MonotonicInstant/zero`` is
    /// `wallClockOrigin`.
    public init(start: MonotonicInstant = .zero, wallClockOrigin: Int64 = ManualClock.defaultWallClockOrigin) {
        state = LockedValue(State(now: start))
        self.wallClockOrigin = wallClockOrigin
    }

    public var now: MonotonicInstant {
        state.withLock { $0.now }
    }

    /// ``wallClockOrigin`` plus the time read now.
    public var wallClockNanoseconds: Int64 {
        wallClockOrigin &+ now.nanoseconds
    }

    public var minimumResolution: Duration {
        .nanoseconds(1)
    }

    /// The number of tasks currently suspended in `sleep(until:)`.
    public var sleeperCount: Int {
        state.withLock { $0.sleepers.count }
    }

    /// Moves the clock forward by `duration` and resumes every sleeper whose deadline passed.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "a manual clock only moves forward")
        advance(to: now.advanced(by: duration))
    }

    /// Moves the clock to `instant` (if later than now) and resumes every sleeper whose deadline
    /// passed, earliest deadline first.
    public func advance(to instant: MonotonicInstant) {
        let due = state.withLock { state -> [Sleeper] in
            if instant > state.now { state.now = instant }
            let now = state.now
            let dueIDs = state.sleepers.filter { $0.value.deadline <= now }.keys
            return dueIDs.compactMap { state.sleepers.removeValue(forKey: $0) }
                .sorted { $0.deadline < $1.deadline }
        }
        for sleeper in due {
            sleeper.continuation.resume()
        }
    }

    public func sleep(until deadline: MonotonicInstant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let id = state.withLock { state -> Int in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (resume, readyWaiters) = state.withLock { state -> ((any Error)??, [CheckedContinuation<Void, Never>]) in
                    if state.cancelled.remove(id) != nil { return (.some(CancellationError()), []) }
                    if deadline <= state.now { return (.some(nil), []) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    let count = state.sleepers.count
                    let ready = state.sleeperWaiters.filter { $0.count <= count }.map(\.continuation)
                    state.sleeperWaiters.removeAll { $0.count <= count }
                    return (nil, ready)
                }
                switch resume {
                case .some(.some(let error)): continuation.resume(throwing: error)
                case .some(.none): continuation.resume()
                case .none: break
                }
                for waiter in readyWaiters { waiter.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let sleeper = state.sleepers.removeValue(forKey: id) else {
                    state.cancelled.insert(id)
                    return nil
                }
                return sleeper
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Suspends until at least `count` tasks are sleeping on this clock.
    public func waitForSleepers(count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if state.sleepers.count >= count { return true }
                state.sleeperWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }
}
