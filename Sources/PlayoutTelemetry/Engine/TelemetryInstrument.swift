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
public final class TelemetryInstrument: Sendable {
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
        public var hub: TelemetrySessionHub.Configuration
        /// Queue, batching and retry of every backend.
        public var delivery: TelemetryDeliveryStateMachine.Configuration
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
            ringCapacity: Int = Configuration.defaultRingCapacity, hub: TelemetrySessionHub.Configuration = .init(),
            delivery: TelemetryDeliveryStateMachine.Configuration = .init(), tags: [TelemetryField] = [],
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
    /// - Throws: ``TelemetryEngineError`` when a thread cannot be started.
    public init(
        backends: [any TelemetryBackend] = [], configuration: Configuration = .init(), clock: any PlayoutClock = MonotonicClock(),
        wallClockNanoseconds: Int64? = nil, logger: Logger = Logger(label: "playout.telemetry")
    ) throws(TelemetryEngineError) {
        self.configuration = configuration
        self.logger = logger
        tags = configuration.tags
        core = TelemetryEngineCore(capacity: configuration.ringCapacity, clock: clock)
        origin = clock.now
        wallOrigin = wallClockNanoseconds ?? Self.systemWallClock()
        var random = SystemRandomNumberGenerator()
        engineId = configuration.engineId ?? Self.hex(random.next())
        shared = LockedValue(Shared())
        for backend in backends { try addBackend(backend) }
        try startTelemetryThread(named: "telemetry") { [self] in run() }
    }

    // MARK: - Components

    /// A new tracker (a player, a subscriber, the user's code); see ``TelemetryTracker``.
    public func makeTracker(name: String) -> TelemetryTracker {
        shared.withLock { shared in
            let tracker = TelemetryTracker(name: name, index: shared.nextTracker, core: core)
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
    public func addBackend(_ backend: any TelemetryBackend, delivery: TelemetryDeliveryStateMachine.Configuration) throws(TelemetryEngineError) {
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
        for backend: any TelemetryBackend, delivery: TelemetryDeliveryStateMachine.Configuration
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
        try driver.start()
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
    /// by every backend, up to `timeout` of real time; false when the time ran out.
    @discardableResult
    public func flush(timeout: Duration = .seconds(5)) -> Bool {
        let started = MonotonicClock().now
        func waitUntil(_ done: () -> Bool) -> Bool {
            while !done() {
                guard !shared.withLock({ $0.stopped }) else { return true }
                guard started.duration(to: MonotonicClock().now) < timeout else { return false }
                condition.withLock {
                    condition.broadcast()
                    condition.wait(timeout: .milliseconds(1))
                }
            }
            return true
        }
        // Every event pushed before this call popped, then the step that popped the last of
        // them finished (records handed to the backends), and one more (heartbeats due now).
        let pushed = core.ring.pushedCount
        guard waitUntil({ core.ring.poppedCount >= pushed }) else { return false }
        let steps = shared.withLock { $0.steps } + 2
        guard waitUntil({ shared.withLock { $0.steps } >= steps }) else { return false }
        let drivers = shared.withLock { $0.drivers }
        for driver in drivers { driver.flush() }
        while !drivers.allSatisfy(\.isIdle) {
            guard started.duration(to: MonotonicClock().now) < timeout else { return false }
            var pause = timespec(tv_sec: 0, tv_nsec: 1_000_000)
            nanosleep(&pause, nil)
        }
        publishStatistics()
        return true
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
        condition.withLock { condition.broadcast() }
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
            condition.withLock { condition.broadcast() }
            while !shared.withLock({ $0.stopped }) {
                condition.withLock {
                    condition.broadcast()
                    condition.wait(timeout: .milliseconds(2))
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

    // MARK: - The engine's thread

    private func run() {
        var hubs: [TelemetrySessionHub?] = []  // by tracker index; mutated in place (no copy on write)
        var valuesPerRecord = 8  // what the next step reserves (from the last step's records)
        var lastPublished = core.clock.now
        var idle = configuration.idleInterval
        while true {
            let stopping = shared.withLock { $0.stopping }
            let worked = step(hubs: &hubs, valuesPerRecord: &valuesPerRecord, stopping: stopping)
            shared.withLock { $0.steps += 1 }
            passOnHandOffs(all: false)
            let now = core.clock.now
            if worked || lastPublished.duration(to: now) >= .milliseconds(250) {
                publishStatistics()
                lastPublished = now
            }
            if stopping && core.ring.approximateCount == 0 {
                shared.withLock { $0.stopped = true }
                passOnHandOffs(all: true)  // later requests find `stopped` and go to the backends themselves
                condition.withLock { condition.broadcast() }
                return
            }
            if worked {
                idle = configuration.idleInterval
            } else {
                // Back off while idle, but wake for the next heartbeat due.
                var sleep = idle
                for hub in hubs {
                    if case .wait(let until)? = hub?.poll(now: now) { sleep = min(sleep, max(.zero, now.duration(to: until))) }
                }
                // Checked again under the lock the waking emit takes: no wake-up is lost.
                condition.withLock { if core.ring.approximateCount == 0 { condition.wait(timeout: sleep) } }
                idle = min(idle * 2, configuration.maximumIdleInterval)
            }
        }
    }

    /// Turns up to 4,096 events of the ring into records (each taken straight from its slot),
    /// sends due heartbeats, and (when `stopping` and the ring is empty) ends every
    /// session; hands the records to every backend. Returns whether anything happened.
    private func step(hubs: inout [TelemetrySessionHub?], valuesPerRecord: inout Int, stopping: Bool) -> Bool {
        // The hubs write their records straight into the columns every backend gets (as they are),
        // reserved for a quarter more values a record than the last step's had, so records with
        // many fields (heartbeats, actions with context) fill them without growing and copying.
        var sink = TelemetrySessionHub.Sink(
            columns: .init(reservingCapacity: min(4_096, core.ring.approximateCount), valuesPerRecord: valuesPerRecord))
        var rejected = 0
        var ignored = 0
        var removed: [Int32] = []
        let trackers = shared.withLock { $0.trackers }
        // Each tracker's attribute getters, read once a step (called after unlocking).
        var getters: [Int32: [(name: String, filter: TelemetryEventFilter, getter: @Sendable () -> TelemetryValue?)]] = [:]
        // The tracker of the last run of events, its getters (one lookup per run of a tracker's
        // events, and nothing copied for an event of the same run).
        var currentIndex: Int32 = -1
        var currentAttributes: [(name: String, filter: TelemetryEventFilter, getter: @Sendable () -> TelemetryValue?)] = []
        /// Completes the records a tracker's hub appended from `first` on (its attribute getters)
        /// and logs what it refused.
        func collect(tracker index: Int32, from first: Int) {
            if currentIndex != index {
                if getters[index] == nil { getters[index] = trackers[index]?.registration.withLock { $0.attributes } ?? [] }
                currentIndex = index
                currentAttributes = getters[index]!
            }
            if !currentAttributes.isEmpty {
                for position in first..<sink.columns.count {
                    let name = sink.columns.name(ofRecord: position)
                    var added: [TelemetryField] = []
                    for attribute in currentAttributes where attribute.filter.includes(name) {
                        if let value = attribute.getter() { added.append(TelemetryField(attribute.name, value)) }
                    }
                    sink.columns.append(added, toRecord: position)
                }
            }
            guard !sink.rejected.isEmpty || !sink.ignored.isEmpty else { return }
            let tracker = trackers[index]
            if !sink.rejected.isEmpty {
                rejected += sink.rejected.count
                for reason in sink.rejected { logger.notice("telemetry: \(tracker?.name ?? "tracker") rejected \(reason)") }
                sink.rejected.removeAll(keepingCapacity: true)
            }
            if !sink.ignored.isEmpty {
                ignored += sink.ignored.count
                for event in sink.ignored {
                    logger.debug("telemetry: \(tracker?.name ?? "tracker") ignored \(event) in the error state (until a new load)")
                }
                sink.ignored.removeAll(keepingCapacity: true)
            }
        }
        func hubIndex(_ tracker: Int32) -> Int {
            let index = Int(tracker)
            if index >= hubs.count { hubs.append(contentsOf: repeatElement(nil, count: index + 1 - hubs.count)) }
            if hubs[index] == nil {
                hubs[index] = TelemetrySessionHub(sessionIdPrefix: "\(engineId)-\(tracker)", origin: origin, configuration: configuration.hub)
            }
            return index
        }
        var processed = 0
        // A plain loop, no closure: state a closure captures (the sink, the getters) is checked
        // for exclusive access at run time — five checks an event, 14 % of the instructions.
        let ring = core.ring
        while processed < 4_096, let entry = ring.pop() {
            processed += 1
            let index = hubIndex(entry.tracker)
            let first = sink.columns.count
            hubs[index]!.handle(entry.event, now: entry.time, wallTime: wall(entry.time), into: &sink)
            collect(tracker: entry.tracker, from: first)
            if entry.removesTracker {
                hubs[index] = nil
                removed.append(entry.tracker)
            }
        }
        let closing = stopping && core.ring.approximateCount == 0
        let now = core.clock.now
        for index in hubs.indices where hubs[index]?.poll(now: now) == .heartbeatDue {
            let tracker = Int32(index)
            // No provider: the tracker sends its own heartbeats (no empty ones on a timer).
            guard let provider = trackers[tracker]?.registration.withLock({ $0.heartbeatProvider }) else { continue }
            let first = sink.columns.count
            hubs[index]!.handle(.heartbeat(provider()), now: now, wallTime: wall(now), into: &sink)
            collect(tracker: tracker, from: first)
        }
        if closing {
            for index in hubs.indices where hubs[index] != nil && hubs[index]!.state != .closed {
                let first = sink.columns.count
                hubs[index]!.handle(.viewEnd, now: now, wallTime: wall(now), into: &sink)
                collect(tracker: Int32(index), from: first)
            }
        }
        var columns = sink.columns
        sink = TelemetrySessionHub.Sink()  // `columns` uniquely referenced while the KPIs are added
        let count = columns.count
        if count > 0 { valuesPerRecord = min(64, max(8, (columns.values.count + count - 1) / count * 5 / 4 + 1)) }  // 8…64
        guard count > 0 || rejected > 0 || ignored > 0 || !removed.isEmpty else { return processed > 0 }
        let drivers = shared.withLock { shared -> [TelemetryBackendDriver] in
            for index in removed { shared.trackers[index] = nil }
            // A session's records come in runs: one calculator lookup per run, not per record.
            let viewEnds = columns.withViews { records in
                var viewEnds: [(index: Int, kpis: [TelemetryField])] = []
                var start = 0
                while start < count {
                    let session = records.entries[start].session
                    var end = start + 1
                    while end < count, records.entries[end].session == session { end += 1 }
                    let id = columns.sessions[Int(session)]
                    var calculator = shared.calculators.removeValue(forKey: id) ?? TelemetryMetricCalculator()
                    for index in start..<end {
                        let record = records[index]
                        calculator.consume(record)
                        if record.vocabulary == .viewend, record.kind == .event {
                            viewEnds.append((index, calculator.kpis().namedValues.compactMap { name, value in value.map { TelemetryField(name, $0) } }))
                        }
                    }
                    shared.calculators[id] = calculator
                    start = end
                }
                return viewEnds
            }
            for (index, kpis) in viewEnds { columns.append(kpis, toRecord: index) }
            shared.counts.eventsProcessed += processed
            shared.counts.records += count
            shared.counts.rejectedTransitions += rejected
            shared.counts.ignoredInErrorState += ignored
            return shared.drivers
        }
        if count > 0 {
            let block = TelemetryRecordBlock.columns(TelemetryRecordColumns(columns, tags: tags))
            for driver in drivers { driver.enqueue(block) }
        }
        return true
    }

    private func publishStatistics() {
        statisticsSubject.value = currentStatistics()
    }

    private func wall(_ time: MonotonicInstant) -> Int64 {
        wallOrigin &+ origin.duration(to: time).nanoseconds
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
