import Logging
import PlayoutCore

/// The engine's sans-IO core: one ``step(now:closing:)`` takes the events the trackers queued and
/// turns them into records, with no thread, lock wait or sleep of its own.
///
/// The pipeline reads as its four types, one job each:
///
/// 1. ``TelemetryTracker`` — emits events into the ring (the caller's thread, O(1));
/// 2. ``TelemetrySessionHub`` — one per tracker: sessions, gap-free `seq`, state rules,
///    `timeSince<Action>`, heartbeats due; this core routes each event to its tracker's hub and
///    adds the tracker's attributes;
/// 3. ``TelemetryMetricCalculator`` — one per session: the KPIs, added to its `viewend`
///    (``measure(_:calculators:)``);
/// 4. delivery — ``TelemetryDeliveryStateMachine``, carried out by a ``TelemetryBackendDriver``
///    per backend.
///
/// ``TelemetryInstrument`` drives it: on its own thread (``TelemetryInstrument/Driver/thread``) or,
/// embedded, from the caller's ``TelemetryInstrument/step()`` on a manual clock.
struct TelemetryEngine {
    /// What one step produced.
    struct Step {
        /// The records built, in order (nil: none).
        var columns: TelemetryColumnsBuilder?
        /// Events taken from the ring.
        var processed = 0
        /// Transitions the hubs refused, and events ignored in the error state.
        var rejected = 0
        var ignored = 0
        /// Trackers whose `endOfService` was processed (the engine forgets them).
        var removed: [Int32] = []

        /// Whether anything happened.
        var worked: Bool { processed > 0 || columns != nil || rejected > 0 || ignored > 0 || !removed.isEmpty }
    }

    /// The most events one step takes from the ring.
    static let eventsPerStep = 4_096

    private let engineId: String
    private let origin: MonotonicInstant
    private let wallOrigin: Int64
    private let hubConfiguration: TelemetrySessionConfiguration
    private let logger: Logger
    private var hubs: [TelemetrySessionHub?] = []  // by tracker index; mutated in place (no copy on write)
    private var valuesPerRecord = 8  // what the next step reserves (from the last step's records)

    init(engineId: String, origin: MonotonicInstant, wallOrigin: Int64, hub: TelemetrySessionConfiguration, logger: Logger) {
        self.engineId = engineId
        self.origin = origin
        self.wallOrigin = wallOrigin
        hubConfiguration = hub
        self.logger = logger
    }

    /// The wall time of a monotonic instant (the wall clock was read once, at the start).
    func wall(_ time: MonotonicInstant) -> Int64 {
        wallOrigin &+ origin.duration(to: time).nanoseconds
    }

    /// The next instant a heartbeat is due (nil: none is).
    func nextWake(now: MonotonicInstant) -> MonotonicInstant? {
        var next: MonotonicInstant?
        for hub in hubs {
            switch hub?.poll(now: now) {
            case .heartbeatDue?: return now
            case .wait(let until)?: next = min(next ?? until, until)
            default: break
            }
        }
        return next
    }

    /// Tracker → hub: turns up to ``eventsPerStep`` events of `ring` into records (each taken
    /// straight from its slot), sends the heartbeats due at `now`, and — when `closing` and the ring
    /// is empty after that — ends every session with `viewend`. `trackers` finds a live tracker by index
    /// (their attribute getters and heartbeat providers are called here, on the caller's thread); it
    /// must find a tracker made during the step too, whose events the step may already take.
    mutating func step(
        now: MonotonicInstant, ring: TelemetryEventRing<TelemetryRingEntry>, trackers: (Int32) -> TelemetryTracker?, closing: Bool
    ) -> Step {
        // The hubs write their records straight into the columns every backend gets (as they are),
        // reserved for a quarter more values a record than the last step's had, so records with
        // many fields (heartbeats, actions with context) fill them without growing and copying.
        var sink = TelemetrySessionHub.Sink(
            columns: .init(reservingCapacity: min(Self.eventsPerStep, ring.approximateCount), valuesPerRecord: valuesPerRecord))
        var result = Step()
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
                if getters[index] == nil { getters[index] = trackers(index)?.registration.withLock { $0.attributes } ?? [] }
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
            let tracker = trackers(index)
            if !sink.rejected.isEmpty {
                result.rejected += sink.rejected.count
                for reason in sink.rejected { logger.notice("telemetry: \(tracker?.name ?? "tracker") rejected \(reason)") }
                sink.rejected.removeAll(keepingCapacity: true)
            }
            if !sink.ignored.isEmpty {
                result.ignored += sink.ignored.count
                for event in sink.ignored {
                    logger.debug("telemetry: \(tracker?.name ?? "tracker") ignored \(event) in the error state (until a new load)")
                }
                sink.ignored.removeAll(keepingCapacity: true)
            }
        }
        // A plain loop, no closure: state a closure captures (the sink, the getters) is checked
        // for exclusive access at run time — five checks an event, 14 % of the instructions.
        while result.processed < Self.eventsPerStep, let entry = ring.pop() {
            result.processed += 1
            let index = hubIndex(entry.tracker, tags: trackers(entry.tracker)?.tags ?? [])
            let first = sink.columns.count
            hubs[index]!.handle(entry.event, now: entry.time, wallTime: wall(entry.time), into: &sink)
            collect(tracker: entry.tracker, from: first)
            if entry.removesTracker {
                hubs[index] = nil
                result.removed.append(entry.tracker)
            }
        }
        for index in hubs.indices where hubs[index]?.poll(now: now) == .heartbeatDue {
            let tracker = Int32(index)
            // No provider: the tracker sends its own heartbeats (no empty ones on a timer).
            guard let provider = trackers(tracker)?.registration.withLock({ $0.heartbeatProvider }) else { continue }
            let first = sink.columns.count
            hubs[index]!.handle(.heartbeat(provider()), now: now, wallTime: wall(now), into: &sink)
            collect(tracker: tracker, from: first)
        }
        if closing && ring.approximateCount == 0 {
            for index in hubs.indices where hubs[index] != nil && hubs[index]!.state != .closed {
                let first = sink.columns.count
                hubs[index]!.handle(.viewEnd, now: now, wallTime: wall(now), into: &sink)
                collect(tracker: Int32(index), from: first)
            }
        }
        let columns = sink.columns
        sink = TelemetrySessionHub.Sink()  // `columns` uniquely referenced while the KPIs are added
        let count = columns.count
        if count > 0 {
            valuesPerRecord = min(64, max(8, (columns.values.count + count - 1) / count * 5 / 4 + 1))  // 8…64
            result.columns = columns
        }
        return result
    }

    /// The hub of `tracker` (made on its first event, its sessions' records tagged `tags`).
    private mutating func hubIndex(_ tracker: Int32, tags: @autoclosure () -> [TelemetryField]) -> Int {
        let index = Int(tracker)
        if index >= hubs.count { hubs.append(contentsOf: repeatElement(nil, count: index + 1 - hubs.count)) }
        if hubs[index] == nil {
            hubs[index] = TelemetrySessionHub(sessionIdPrefix: "\(engineId)-\(tracker)", origin: origin, configuration: hubConfiguration, tags: tags())
        }
        return index
    }
}

extension TelemetryMetricCalculator {
    /// Hub → KPI calculator: feeds each record of `columns` to its session's calculator (created
    /// on its first record) and adds the session's KPIs to its `viewend` record.
    static func measure(_ columns: inout TelemetryColumnsBuilder, calculators: inout [String: TelemetryMetricCalculator]) {
        let count = columns.count
        // A session's records come in runs: one calculator lookup per run, not per record.
        let viewEnds = columns.withViews { records in
            var viewEnds: [(index: Int, kpis: [TelemetryField])] = []
            var start = 0
            while start < count {
                let session = records.entries[start].session
                var end = start + 1
                while end < count, records.entries[end].session == session { end += 1 }
                let id = columns.sessions[Int(session)]
                var calculator = calculators.removeValue(forKey: id) ?? TelemetryMetricCalculator()
                for index in start..<end {
                    let record = records[index]
                    calculator.consume(record)
                    if record.vocabulary == .viewend, record.kind == .event {
                        viewEnds.append((index, calculator.kpis().namedValues.compactMap { name, value in value.map { TelemetryField(name, $0) } }))
                    }
                }
                calculators[id] = calculator
                start = end
            }
            return viewEnds
        }
        for (index, kpis) in viewEnds { columns.append(kpis, toRecord: index) }
    }
}
