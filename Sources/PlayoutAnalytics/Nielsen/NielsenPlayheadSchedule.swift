public import PlayoutCore

/// When each playing Nielsen instance's next playhead report is due, sans-IO: once a second
/// while it plays, none while it holds (paused, buffering), and — when asked — a `stop` after it
/// has held too long (the guide: after 30 s of buffering, call `stop`). It reads no clock; a
/// driver (``NielsenPlayheadTicker``) polls it for any number of instances with one thread.
///
/// ```swift
/// var schedule = NielsenPlayheadSchedule()
/// schedule.add(1, mode: .onDemand)
/// schedule.play(1, now: t0)
/// schedule.poll(now: t0)                       // [.playhead(1, .position(0))]
/// schedule.poll(now: t0 + .seconds(1))         // [.playhead(1, .position(1))]
/// schedule.hold(1, now: t0 + .milliseconds(1500), stopAfter: .seconds(30))
/// schedule.poll(now: t0 + .seconds(32))        // [.stop(1)]
/// ```
public struct NielsenPlayheadSchedule: Sendable {
    /// One second between playheads.
    public static let interval: Duration = .seconds(1)

    /// What an instance's playhead measures.
    public enum Mode: Sendable, Hashable {
        /// Live: the Unix time in seconds at the report.
        case live
        /// On demand: the position in seconds, the time played so far.
        case onDemand
    }

    /// The playhead to report.
    public enum Position: Sendable, Hashable {
        /// The Unix time now (live).
        case utcNow
        /// This position in seconds (on demand).
        case seconds(Int64)
    }

    /// What is due.
    public enum Action: Sendable, Hashable {
        /// Report the playhead of instance `id`.
        case playhead(Int, Position)
        /// Call `stop` on instance `id`: it held longer than asked.
        case stop(Int)
    }

    private struct Entry {
        var mode: Mode
        var played: Duration = .zero  // on demand: time played before `playingSince`
        var playingSince: MonotonicInstant?
        var nextTick: MonotonicInstant?
        var stopAt: MonotonicInstant?
    }

    private var entries: [Int: Entry] = [:]

    /// An empty schedule.
    public init() {}

    /// Adds instance `id` (not playing).
    public mutating func add(_ id: Int, mode: Mode) {
        entries[id] = Entry(mode: mode)
    }

    /// Instance `id` plays from `now`: a playhead is due now, then every second.
    public mutating func play(_ id: Int, now: MonotonicInstant) {
        guard var entry = entries[id], entry.playingSince == nil else { return }
        entry.playingSince = now
        entry.nextTick = now
        entry.stopAt = nil
        entries[id] = entry
    }

    /// Instance `id` holds from `now` (paused, buffering): no playhead; with `stopAfter`, a
    /// ``Action/stop(_:)`` is due when it still holds that long after.
    public mutating func hold(_ id: Int, now: MonotonicInstant, stopAfter: Duration? = nil) {
        guard var entry = entries[id] else { return }
        if let since = entry.playingSince { entry.played += since.duration(to: now) }
        entry.playingSince = nil
        entry.nextTick = nil
        entry.stopAt = stopAfter.map { now.advanced(by: $0) }
        entries[id] = entry
    }

    /// Removes instance `id`.
    public mutating func remove(_ id: Int) {
        entries[id] = nil
    }

    /// The next instant something is due (nil: nothing until a `play` or `hold`).
    public var nextDue: MonotonicInstant? {
        entries.values.flatMap { [$0.nextTick, $0.stopAt].compactMap { $0 } }.min()
    }

    /// Everything due at `now`, in instance order. A tick that is late by more than an interval
    /// is reported once and the next is due an interval after `now` (no burst of catch-up
    /// reports, which would break the once-a-second rule).
    public mutating func poll(now: MonotonicInstant) -> [Action] {
        var actions: [Action] = []
        for id in entries.keys.sorted() {
            var entry = entries[id]!
            if let stopAt = entry.stopAt, now >= stopAt {
                entry.stopAt = nil
                actions.append(.stop(id))
            }
            if let next = entry.nextTick, now >= next, let since = entry.playingSince {
                switch entry.mode {
                case .live: actions.append(.playhead(id, .utcNow))
                case .onDemand: actions.append(.playhead(id, .seconds((entry.played + since.duration(to: now)).nanoseconds / 1_000_000_000)))
                }
                var following = next.advanced(by: Self.interval)
                if following <= now { following = now.advanced(by: Self.interval) }
                entry.nextTick = following
            }
            entries[id] = entry
        }
        return actions
    }
}

/// Drives a ``NielsenPlayheadSchedule`` for any number of ``NielsenAppSDK`` instances with one
/// thread: it calls `playheadPosition` (and `stop`) on them when due, never on a media thread.
///
/// With `runsThread: false` nothing runs by itself: call ``step()`` (tests do, on a
/// `ManualClock`).
///
/// ```swift
/// let ticker = try NielsenPlayheadTicker()
/// let id = ticker.add(nielsen, mode: .live)
/// ticker.play(id)          // playheads once a second from now
/// ticker.hold(id)          // none until play again
/// ticker.shutdown()
/// ```
public final class NielsenPlayheadTicker: Sendable {
    /// The clock the schedule runs on.
    public let clock: any PlayoutClock
    private let condition = ConditionLock()
    private let state: LockedValue<State>
    /// The longest the thread waits before it looks at the clock again (a manual clock's jumps
    /// are noticed).
    private static let longestWait: Duration = .milliseconds(50)

    private struct State {
        var schedule = NielsenPlayheadSchedule()
        var instances: [Int: NielsenAppSDK] = [:]
        var nextId = 0
        var running = false
        var stopping = false
    }

    /// A ticker on `clock`, with its thread unless `runsThread` is false.
    ///
    /// - Throws: ``PlayoutError`` when its thread cannot start.
    public init(clock: any PlayoutClock = MonotonicClock(), runsThread: Bool = true) throws {
        self.clock = clock
        state = LockedValue(State(running: runsThread))
        if runsThread { try startThread(named: "nielsen-ticks") { [self] in run() } }
    }

    /// Adds `instance`; returns its id in the schedule.
    public func add(_ instance: NielsenAppSDK, mode: NielsenPlayheadSchedule.Mode) -> Int {
        state.withLock { state in
            let id = state.nextId
            state.nextId += 1
            state.instances[id] = instance
            state.schedule.add(id, mode: mode)
            return id
        }
    }

    /// Instance `id` plays: its playhead is reported now and every second.
    public func play(_ id: Int) {
        let now = clock.now
        state.withLock { $0.schedule.play(id, now: now) }
        wake()
    }

    /// Instance `id` holds (paused, buffering): no playhead; `stop` is called on it when it still
    /// holds `stopAfter` from now (nil: never).
    public func hold(_ id: Int, stopAfter: Duration? = nil) {
        let now = clock.now
        state.withLock { $0.schedule.hold(id, now: now, stopAfter: stopAfter) }
        wake()
    }

    /// Removes instance `id`.
    public func remove(_ id: Int) {
        state.withLock { state in
            state.schedule.remove(id)
            state.instances[id] = nil
        }
    }

    /// Carries out what is due now; returns how long until the next thing is due (nil: nothing
    /// scheduled).
    @discardableResult
    public func step() -> Duration? {
        let now = clock.now
        // The instances are called with the schedule locked, so that once ``hold(_:stopAfter:)``
        // or ``remove(_:)`` returns no report of that instance is still on its way (a playhead
        // after the player's `stop` would resume the session). An instance never calls back.
        return state.withLock { state in
            for action in state.schedule.poll(now: now) {
                switch action {
                case .playhead(let id, .utcNow):
                    if let instance = state.instances[id] { instance.playheadPosition(instance.utcSeconds(at: now)) }
                case .playhead(let id, .seconds(let position)): state.instances[id]?.playheadPosition(position)
                case .stop(let id): state.instances[id]?.stop()
                }
            }
            return state.schedule.nextDue.map { now.duration(to: $0) }
        }
    }

    /// Ends the thread (nothing is reported after it returns).
    public func shutdown() {
        condition.withLock {
            state.withLock { $0.stopping = true }
            condition.broadcast()
            while state.withLock({ $0.running }) { condition.wait(timeout: Self.longestWait) }
        }
    }

    private func wake() {
        condition.withLock { condition.broadcast() }
    }

    private func run() {
        while !state.withLock({ $0.stopping }) {
            let wait = step() ?? Self.longestWait
            condition.withLock {
                if !state.withLock({ $0.stopping }) { condition.wait(timeout: min(max(wait, .zero), Self.longestWait)) }
            }
        }
        condition.withLock {
            state.withLock { $0.running = false }
            condition.broadcast()
        }
    }
}
