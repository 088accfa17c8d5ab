public import Logging
public import PlayoutCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The telemetry engine: trackers → per-session hubs → metric calculator → backends.
///
/// Trackers (``makeTracker(name:)``) emit events into a preallocated ring without blocking; the
/// engine's own thread turns them into ``TelemetryRecord``s (one ``TelemetrySessionHub`` per
/// tracker: sessions, gap-free `seq`, state rules, `timeSince<Action>`, attributes, tags),
/// computes each session's ``TelemetryKPIs`` (added to its `viewend` record) and hands the
/// records to every backend. Each backend has its own thread, bounded queue, batching, retry
/// with jittered backoff and drop-oldest with a counted drop, so a dead or slow backend costs only
/// its own queue.
///
/// ```swift
/// let memory = InMemoryTelemetryBackend()
/// let instrument = try TelemetryInstrument(backends: [memory], configuration: .init(tags: [.init("run", .string("r1"))]))
/// let tracker = instrument.makeTracker(name: "player")
/// tracker.ready(); tracker.emit(.play); tracker.emit(.playing)
/// let report = instrument.shutdown(timeout: .seconds(2))   // viewend, drained, what was lost
/// try memory.expectEvents(["viewinit", "play", "playing", "viewend"])
/// ```
///
/// Records carry the monotonic time since the engine started and a wall time derived from it
/// (the wall clock is read once, at the start), so durations never depend on the wall clock.
/// Call ``shutdown(timeout:)`` when done: the engine's threads run until then.
///
/// The engine itself is sans-IO (one step takes the queued events through the hubs, the KPI
/// calculators and every backend's delivery); ``Driver`` says who steps it. A test runs it
/// embedded, on a manual clock with no thread at all:
///
/// ```swift
/// let clock = ManualClock()
/// let instrument = try TelemetryInstrument(backends: [memory], clock: clock, driver: .embedded)
/// tracker.emit(.playing)
/// clock.advance(by: .seconds(10))
/// instrument.step()                         // records, the heartbeat due, delivered to `memory`
/// ```
public final class TelemetryInstrument: Sendable {
    /// Who steps the engine.
    public enum Driver: Sendable, Equatable {
        /// The engine's own thread, and one thread per backend (the default).
        case thread
        /// No thread: the caller steps the engine (``step()``, ``flush(timeout:)``,
        /// ``shutdown(timeout:)``) and backends are called on the caller's thread — for tests on
        /// a manual clock.
        case embedded
    }

    /// The engine's settings, with documented defaults.
    public struct Configuration: Sendable {
        /// Default ring size: 8,192 events.
        public static let defaultRingCapacity = 8_192
        /// Default time the engine's thread first sleeps when the ring is empty: 10 ms.
        public static let defaultIdleInterval: Duration = .milliseconds(10)
        /// Default longest sleep of an idle engine: 100 ms.
        public static let defaultMaximumIdleInterval: Duration = .milliseconds(100)

        /// Events the ring holds before emits are dropped (rounded up to a power of two).
        public var ringCapacity: Int
        /// Heartbeat interval and inactivity split of every session.
        public var hub: TelemetrySessionConfiguration
        /// Queue, batching and retry of every backend.
        public var delivery: TelemetryDeliveryConfiguration
        /// Tags added to every record (`run`, `host`, `viewer` …).
        public var tags: [TelemetryField]
        /// The first part of every session id (default: 16 random hex digits, so ids from many
        /// machines do not collide).
        public var engineId: String?
        /// Seed of the backends' retry jitter.
        public var seed: UInt64
        /// How long the engine's thread first sleeps when it has nothing to do; each idle step
        /// doubles it, up to ``maximumIdleInterval`` and never past a heartbeat that is due. An
        /// emit never waits for the engine: one emit in every quarter of the ring wakes it (a
        /// burst cannot fill the ring while it sleeps), flushing and shutting down wake it too.
        public var idleInterval: Duration
        /// The longest an idle engine sleeps: the most a record waits before it reaches the
        /// backends when nothing else happens (an idle engine costs ≈ 10 wake-ups a second).
        public var maximumIdleInterval: Duration

        /// Settings with the given values.
        public init(
            ringCapacity: Int = Configuration.defaultRingCapacity, hub: TelemetrySessionConfiguration = .init(),
            delivery: TelemetryDeliveryConfiguration = .init(), tags: [TelemetryField] = [],
            engineId: String? = nil, seed: UInt64 = 1, idleInterval: Duration = Configuration.defaultIdleInterval,
            maximumIdleInterval: Duration = Configuration.defaultMaximumIdleInterval
        ) {
            self.ringCapacity = ringCapacity
            self.hub = hub
            self.delivery = delivery
            self.tags = tags
            self.engineId = engineId
            self.seed = seed
            self.idleInterval = idleInterval
            self.maximumIdleInterval = max(idleInterval, maximumIdleInterval)
        }
    }

    /// The engine's statistics, updated by its thread (observers run there).
    public var statistics: ReadOnlyObservable<TelemetryStatistics> { statisticsSubject.readOnly }

    /// The tags added to every record.
    public let tags: [TelemetryField]

    /// The monotonic clock every record is timed on (adapters time their own measurements on it).
    public var clock: any PlayoutClock { core.clock }

    let core: TelemetryEngineCore
    /// Who steps the engine.
    public let driver: Driver
    private let engine: TelemetryEngineBox
    /// Signalled by the engine after every step and when it stopped (what ``flush(timeout:)`` and
    /// ``shutdown(deadline:)`` wait on).
    private let progress = ConditionLock()
    private let configuration: Configuration
    private let engineId: String
    private let origin: MonotonicInstant
    private let wallOrigin: Int64
    private let logger: Logger
    private let statisticsSubject = Observable(TelemetryStatistics())
    private var condition: ConditionLock { core.condition }
    private let shared: LockedValue<Shared>

    /// What the engine's thread and the API share (under `shared`'s lock).
    private struct Shared {
        var trackers: [Int32: TelemetryTracker] = [:]
        var nextTracker: Int32 = 0
        var drivers: [TelemetryBackendDriver] = []
        var retired: [TelemetryBackendDriver] = []  // removed or shut down; read live (late records count)
        var calculators: [String: TelemetryMetricCalculator] = [:]
        var steps = 0
        var stopping = false
        var stopped = false
        var counts = TelemetryStatistics()
        var seedCounter: UInt64 = 0
        var handOffs: [(pushed: Int, callback: @Sendable () -> Void)] = []  // waiting for the engine's thread
    }

    /// Starts an engine (its thread and one thread per backend) delivering to `backends`.
    ///
    /// - Parameters:
    ///   - clock: the monotonic clock of every record (a `ManualClock` in tests).
    ///   - wallClockNanoseconds: the wall time at the start, ns since 1970 (default: the system's).
    ///   - driver: the engine's own threads (the default), or ``Driver/embedded``: none, the
    ///     caller steps it.
    /// - Throws: ``TelemetryEngineError`` when a thread cannot be started.
    public init(
        backends: [any TelemetryBackend] = [], configuration: Configuration = .init(), clock: any PlayoutClock = MonotonicClock(),
        wallClockNanoseconds: Int64? = nil, logger: Logger = Logger(label: "playout.telemetry"), driver: Driver = .thread
    ) throws(TelemetryEngineError) {
        self.configuration = configuration
        self.driver = driver
        self.logger = logger
        tags = configuration.tags
        core = TelemetryEngineCore(capacity: configuration.ringCapacity, clock: clock)
        origin = clock.now
        wallOrigin = wallClockNanoseconds ?? Self.systemWallClock()
        var random = SystemRandomNumberGenerator()
        engineId = configuration.engineId ?? Self.hex(random.next())
        shared = LockedValue(Shared())
        engine = TelemetryEngineBox(
            TelemetryEngine(engineId: engineId, origin: origin, wallOrigin: wallOrigin, hub: configuration.hub, logger: logger))
        for backend in backends { try addBackend(backend) }
        if driver == .thread { try startTelemetryThread(named: "telemetry") { [self] in run() } }
    }

    // MARK: - Components

    /// A new tracker (a player, a subscriber, the user's code); see ``TelemetryTracker``. Its
    /// records carry `tags` after the instrument's (one viewer's `viewer` among many trackers).
    public func makeTracker(name: String, tags: [TelemetryField] = []) -> TelemetryTracker {
        shared.withLock { shared in
            let tracker = TelemetryTracker(name: name, tags: tags, index: shared.nextTracker, core: core)
            shared.trackers[shared.nextTracker] = tracker
            shared.nextTracker += 1
            return tracker
        }
    }

    /// Adds a backend while running; it receives the records built from now on.
    ///
    /// - Throws: ``TelemetryEngineError`` after shutdown began (the backend is closed), or when
    ///   its thread cannot start.
    public func addBackend(_ backend: any TelemetryBackend) throws(TelemetryEngineError) {
        try addBackend(backend, delivery: configuration.delivery)
    }

    /// ``addBackend(_:)`` with this backend's own queue, batching and retry settings (a live
    /// stream on standard output wants no lingering, a database bigger batches).
    public func addBackend(_ backend: any TelemetryBackend, delivery: TelemetryDeliveryConfiguration) throws(TelemetryEngineError) {
        let driver = try startDriver(for: backend, delivery: delivery)
        let added = shared.withLock { shared -> Bool in
            guard !shared.stopping else { return false }
            shared.drivers.append(driver)
            return true
        }
        if !added { try refuse(driver) }
    }

    /// Replaces the backend called `name` with `backend` in one step while running: every record
    /// built before goes to the old one (which delivers what it has queued, until `timeout`, and
    /// is closed), every record built after to the new one — none to both, none to neither.
    /// Returns the old one's final statistics (nil when there was no such backend: `backend` is
    /// then simply added).
    ///
    /// - Throws: ``TelemetryEngineError`` after shutdown began (`backend` is closed, the old one
    ///   stays), or when the new one's thread cannot start.
    @discardableResult
    public func replaceBackend(
        named name: String, with backend: any TelemetryBackend, timeout: Duration = .seconds(5)
    ) throws(TelemetryEngineError) -> TelemetryBackendStatistics? {
        let driver = try startDriver(for: backend, delivery: configuration.delivery)
        let (added, old) = shared.withLock { shared -> (Bool, TelemetryBackendDriver?) in
            guard !shared.stopping else { return (false, nil) }
            guard let index = shared.drivers.firstIndex(where: { $0.backend.name == name }) else {
                shared.drivers.append(driver)
                return (true, nil)
            }
            defer { shared.drivers[index] = driver }
            return (true, shared.drivers[index])
        }
        if !added { try refuse(driver) }
        guard let old else { return nil }
        return retire(old, timeout: timeout)
    }

    /// A backend started while the engine began shutting down (which no longer sees it): its
    /// thread ends and it is closed at once, and the caller learns it was not added.
    private func refuse(_ driver: TelemetryBackendDriver) throws(TelemetryEngineError) {
        driver.beginFinishing(deadline: core.clock.now)
        _ = driver.waitUntilFinished()
        throw TelemetryEngineError("telemetry: cannot add backend \(driver.backend.name) after shutdown")
    }

    private func startDriver(
        for backend: any TelemetryBackend, delivery: TelemetryDeliveryConfiguration
    ) throws(TelemetryEngineError) -> TelemetryBackendDriver {
        let seed = shared.withLock { shared -> UInt64? in
            guard !shared.stopping else { return nil }
            shared.seedCounter += 1
            return configuration.seed &+ shared.seedCounter
        }
        guard let seed else {
            backend.close()  // every backend handed in is closed, added or refused
            throw TelemetryEngineError("telemetry: cannot add backend \(backend.name) after shutdown")
        }
        let driver = TelemetryBackendDriver(backend: backend, configuration: delivery, seed: seed, clock: core.clock)
        if self.driver == .thread { try driver.start() }
        return driver
    }

    /// Removes the backend called `name` while running: what it has queued is delivered (until
    /// `timeout`), then it is closed. Returns its final statistics (nil when no such backend).
    @discardableResult
    public func removeBackend(named name: String, timeout: Duration = .seconds(5)) -> TelemetryBackendStatistics? {
        let driver = shared.withLock { shared -> TelemetryBackendDriver? in
            guard let index = shared.drivers.firstIndex(where: { $0.backend.name == name }) else { return nil }
            return shared.drivers.remove(at: index)
        }
        guard let driver else { return nil }
        return retire(driver, timeout: timeout)
    }

    /// Delivers what `driver` has queued (until `timeout`), closes its backend, and keeps it
    /// among the retired (its statistics stay readable); returns its final statistics.
    private func retire(_ driver: TelemetryBackendDriver, timeout: Duration) -> TelemetryBackendStatistics {
        driver.beginFinishing(deadline: core.clock.now.advanced(by: timeout))
        let statistics = driver.waitUntilFinished()
        shared.withLock { $0.retired.append(driver) }
        return statistics
    }

    // MARK: - Reading

    /// A fresh snapshot of the statistics (the observable may lag by one step of the engine).
    public func currentStatistics() -> TelemetryStatistics {
        let (counts, drivers, retired) = shared.withLock { ($0.counts, $0.drivers, $0.retired) }
        var statistics = counts
        statistics.eventsDropped = core.dropped
        statistics.ringDepth = core.ring.approximateCount
        statistics.backends = (retired + drivers).map(\.statistics)
        return statistics
    }

    /// Every session's KPIs so far (open intervals closed at the last record), by session id.
    public func kpis() -> [String: TelemetryKPIs] {
        shared.withLock { $0.calculators }.mapValues { $0.kpis() }
    }

    /// Waits until every event emitted before the call is processed and delivered (or dropped)
    /// by every backend, up to `timeout` of real time; false when the time ran out. It waits on
    /// the engine's and the backends' signals, never polls. Embedded, it steps the engine and
    /// delivers on the caller's thread instead (false: a backend still has records, e.g. a
    /// retry waiting for the clock).
    @discardableResult
    public func flush(timeout: Duration = .seconds(5)) -> Bool {
        if driver == .embedded {
            step()
            let (drivers, now) = (shared.withLock { $0.drivers }, core.clock.now)
            for driver in drivers {
                driver.flush()
                driver.pump(now: now)
            }
            publishStatistics()
            return drivers.allSatisfy(\.isIdle)
        }
        let deadline = MonotonicClock().now.advanced(by: timeout)
        /// Waits on the engine's signal until `done` (or the engine stopped, or the deadline).
        func waitForEngine(_ done: () -> Bool) -> Bool {
            progress.withLock {
                while !done() {
                    if shared.withLock({ $0.stopped }) { return true }
                    guard MonotonicClock().now < deadline else { return false }
                    wakeEngine()
                    progress.wait(until: deadline)
                }
                return true
            }
        }
        // Every event pushed before this call popped, then the step that popped the last of
        // them finished (records handed to the backends), and one more (heartbeats due now).
        let pushed = core.ring.pushedCount
        guard waitForEngine({ core.ring.poppedCount >= pushed }) else { return false }
        let steps = shared.withLock { $0.steps } + 2
        guard waitForEngine({ shared.withLock { $0.steps } >= steps }) else { return false }
        let drivers = shared.withLock { $0.drivers }
        for driver in drivers { driver.flush() }
        for driver in drivers where !driver.waitUntilIdle(deadline: deadline) { return false }
        publishStatistics()
        return true
    }

    /// Wakes the engine's thread now (a flush or shutdown waits for it).
    private func wakeEngine() {
        condition.withLock {
            core.wakeRequested.store(true, ordering: .relaxed)
            condition.broadcast()
        }
    }

    /// Calls `callback` once every event emitted before this call has been handed to every
    /// backend — delivered, or dropped and counted (Adobe's `onVideoUnloaded` promise). Never
    /// blocks: the engine's thread passes the request on with the records, and the last backend's
    /// thread calls back (keep the callback short), right away when there is no backend. What
    /// those backends have queued is sent without lingering.
    public func whenHandedOff(_ callback: @escaping @Sendable () -> Void) {
        let pushed = core.ring.pushedCount
        let drivers = shared.withLock { shared -> [TelemetryBackendDriver]? in
            guard shared.stopped else {
                shared.handOffs.append((pushed, callback))
                return nil
            }
            return shared.drivers  // the engine's thread has ended: every record is with the backends
        }
        if let drivers { _ = TelemetryHandOff(drivers: drivers, callback: callback) }
        if driver == .embedded { step() } else { wakeEngine() }
    }

    /// Passes on the hand-off requests whose events the engine's thread has handed to the
    /// backends (every one when `all`).
    private func passOnHandOffs(all: Bool) {
        let popped = core.ring.poppedCount
        let (due, drivers) = shared.withLock { shared -> ([@Sendable () -> Void], [TelemetryBackendDriver]) in
            let due = shared.handOffs.filter { all || $0.pushed <= popped }.map(\.callback)
            shared.handOffs.removeAll { all || $0.pushed <= popped }
            return (due, shared.drivers)
        }
        for callback in due { _ = TelemetryHandOff(drivers: drivers, callback: callback) }
    }

    // MARK: - Shutdown

    /// Ends every open session with `viewend`, drains every backend for up to `timeout`, closes
    /// them, and reports what could not be delivered. Later emits are dropped and counted.
    @discardableResult
    public func shutdown(timeout: Duration) -> TelemetryShutdownReport {
        shutdown(deadline: core.clock.now.advanced(by: timeout))
    }

    /// ``shutdown(timeout:)`` with an instant on the instrument's clock.
    @discardableResult
    public func shutdown(deadline: MonotonicInstant) -> TelemetryShutdownReport {
        let first = shared.withLock { shared -> Bool in
            defer { shared.stopping = true }
            return !shared.stopping
        }
        if first {
            core.close()
            if driver == .embedded {
                step()  // every event left, then `viewend` for every open session
                shared.withLock { $0.stopped = true }
                passOnHandOffs(all: true)
            } else {
                // Waits on the engine's signal (it ends its thread once the ring is empty).
                progress.withLock {
                    while !shared.withLock({ $0.stopped }) {
                        wakeEngine()
                        progress.wait(until: nil)
                    }
                }
            }
            let drivers = shared.withLock { $0.drivers }
            for driver in drivers { driver.beginFinishing(deadline: deadline) }
            for driver in drivers { _ = driver.waitUntilFinished() }
            shared.withLock { shared in
                shared.drivers.removeAll()
                shared.retired += drivers
            }
        }
        publishStatistics()
        return TelemetryShutdownReport(statistics: currentStatistics(), kpis: kpis())
    }

    // MARK: - Driving the engine

    /// Embedded mode (``Driver/embedded``): does what is due at the clock's instant, on the
    /// caller's thread — every event emitted so far becomes records (through the hubs, the KPI
    /// calculators and every backend's delivery), heartbeats due are sent, and each backend is
    /// handed what its delivery state machine says is due (retries wait for the clock to pass
    /// their backoff). Returns whether anything happened. With the thread driver it does nothing
    /// (the engine's thread steps) and returns false.
    @discardableResult
    public func step() -> Bool {
        guard driver == .embedded else { return false }
        let stopping = shared.withLock { $0.stopping }
        var worked = false
        while true {
            let stepped = step(now: core.clock.now, stopping: stopping)
            worked = worked || stepped
            if !stepped || core.ring.approximateCount == 0 { break }
        }
        passOnHandOffs(all: false)  // before the deliveries: a hand-off sends what lingers
        let now = core.clock.now
        for driver in shared.withLock({ $0.drivers }) { driver.pump(now: now) }
        publishStatistics()
        return worked
    }

    /// The next instant the engine has something due on its own (a heartbeat), nil when none:
    /// what a test advancing a manual clock in embedded mode moves to.
    public var nextWake: MonotonicInstant? {
        engine.withEngine { $0.nextWake(now: core.clock.now) } ?? nil
    }

    /// The thread driver: steps, then sleeps until woken (an emit burst, a flush, shutdown) or
    /// until the next heartbeat, backing off while idle.
    private func run() {
        var lastPublished = core.clock.now
        var idle = configuration.idleInterval
        while true {
            let stopping = shared.withLock { $0.stopping }
            let worked = step(now: core.clock.now, stopping: stopping)
            passOnHandOffs(all: false)
            let now = core.clock.now
            if worked || lastPublished.duration(to: now) >= .milliseconds(250) {
                publishStatistics()
                lastPublished = now
            }
            if stopping && core.ring.approximateCount == 0 {
                shared.withLock { $0.stopped = true }
                passOnHandOffs(all: true)  // later requests find `stopped` and go to the backends themselves
                progress.withLock { progress.broadcast() }
                return
            }
            if worked {
                idle = configuration.idleInterval
            } else {
                // Back off while idle, but wake for the next heartbeat due.
                var sleep = idle
                if let next = engine.withEngine({ $0.nextWake(now: now) }) ?? nil { sleep = min(sleep, max(.zero, now.duration(to: next))) }
                // Checked again under the lock the waking emit takes: no wake-up is lost.
                condition.withLock {
                    if core.ring.approximateCount == 0 && !core.wakeRequested.load(ordering: .relaxed) { condition.wait(timeout: sleep) }
                    core.wakeRequested.store(false, ordering: .relaxed)
                }
                idle = min(idle * 2, configuration.maximumIdleInterval)
            }
        }
    }

    /// One step of the pipeline at `now`: tracker → hub (``TelemetryEngine``), hub → KPI
    /// calculator (``TelemetryMetricCalculator/measure(_:calculators:)``), then the records to
    /// every backend's delivery. Returns whether anything happened; tells waiting flushes.
    private func step(now: MonotonicInstant, stopping: Bool) -> Bool {
        // A tracker made after this copy (a viewer joining during the step) is looked up again.
        let trackers = shared.withLock { $0.trackers }
        let lookUp = { (index: Int32) in trackers[index] ?? self.shared.withLock { $0.trackers[index] } }
        guard let step = engine.withEngine({ $0.step(now: now, ring: core.ring, trackers: lookUp, closing: stopping) }) else { return false }
        var columns = step.columns
        let drivers = shared.withLock { shared -> [TelemetryBackendDriver] in
            for index in step.removed { shared.trackers[index] = nil }
            if columns != nil { TelemetryMetricCalculator.measure(&columns!, calculators: &shared.calculators) }
            shared.counts.eventsProcessed += step.processed
            shared.counts.records += columns?.count ?? 0
            shared.counts.rejectedTransitions += step.rejected
            shared.counts.ignoredInErrorState += step.ignored
            shared.steps += 1
            return shared.drivers
        }
        if let columns {
            let block = TelemetryRecordBlock.columns(TelemetryRecordColumns(columns, tags: tags))
            for driver in drivers { driver.enqueue(block) }
        }
        progress.withLock { progress.broadcast() }
        return step.worked
    }

    private func publishStatistics() {
        statisticsSubject.value = currentStatistics()
    }

    private static func systemWallClock() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

/// What trackers share with the engine: the ring, the clock, the drop count.
final class TelemetryEngineCore: Sendable {
    let ring: TelemetryEventRing<TelemetryRingEntry>
    let clock: any PlayoutClock
    /// The engine thread's sleep, signalled by one push in every quarter of the ring.
    let condition = ConditionLock()
    /// Set (under `condition`) by a flush or shutdown that wants the engine's thread to step
    /// now; the thread clears it before it sleeps again.
    let wakeRequested = Atomic<Bool>(false)
    private let wakeMask: Int
    private let droppedCount = Atomic<Int>(0)
    private let closed = Atomic<Bool>(false)

    init(capacity: Int, clock: any PlayoutClock) {
        ring = TelemetryEventRing(capacity: capacity)
        self.clock = clock
        wakeMask = max(1, ring.slotCount / 4) - 1
    }

    /// Queues `entry` for the engine's thread, or counts it dropped (ring full, or shut down).
    @inline(__always)
    func push(_ entry: consuming TelemetryRingEntry) {
        guard !closed.load(ordering: .relaxed) else {
            droppedCount.add(1, ordering: .relaxed)
            return
        }
        guard ring.push(entry) else {
            droppedCount.add(1, ordering: .relaxed)
            return
        }
        // Rarely (once per quarter ring; the lock is held only for the engine's check before it
        // sleeps): an engine in a long idle sleep wakes before a burst can fill the ring.
        if ring.pushedCount & wakeMask == 0 { condition.withLock { condition.broadcast() } }
    }

    var dropped: Int { droppedCount.load(ordering: .relaxed) }

    func close() { closed.store(true, ordering: .relaxed) }
}

/// The engine's core, stepped by one caller at a time: the engine's thread, or (embedded) the
/// test that steps it. A second caller arriving during a step does not wait (it would hold a
/// lock across the trackers' getters): it skips, and the step under way does the work.
final class TelemetryEngineBox: @unchecked Sendable {
    private var engine: TelemetryEngine  // only inside `withEngine`, which `busy` makes exclusive
    private let busy = Atomic<Bool>(false)

    init(_ engine: TelemetryEngine) { self.engine = engine }

    /// Runs `body` on the engine; nil when another caller is stepping it.
    func withEngine<Result>(_ body: (inout TelemetryEngine) -> Result) -> Result? {
        guard busy.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else { return nil }
        defer { busy.store(false, ordering: .releasing) }
        return body(&engine)
    }
}
