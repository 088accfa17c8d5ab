import PlayoutCore

/// A backend that keeps every record in memory, with the assertions an analytics test makes:
/// "expect events [play, playing, …] in order", "expect KPI x within ε".
///
/// ```swift
/// let memory = InMemoryTelemetryBackend()
/// // … run a subscriber or a player with an instrument delivering to `memory` …
/// instrument.shutdown(timeout: .seconds(2))
/// try memory.expectEvents(["viewinit", "play", "playing", "viewend"], match: .inOrder)
/// try memory.expectKPI("rebuffer_count", 0, within: 0)
/// try memory.expectKPI("playing_time", atLeast: 5, session: memory.session(player: "web"))
/// ```
///
/// It can also play a failing backend: ``setFailure(_:)`` makes every delivery throw.
public final class InMemoryTelemetryBackend: TelemetryBackend {
    /// How ``expectEvents(_:session:match:)`` compares.
    public enum Match: Sendable {
        /// The session's event records are exactly these names.
        case exactly
        /// These names occur in this order, other events between them allowed.
        case inOrder
    }

    public let name: String
    private let state = LockedValue(State())

    private struct State {
        /// Records read so far as one array, then the batches delivered since (kept as the
        /// engine built them, compact: a delivery builds and copies no record; reading does).
        var records: [TelemetryRecord] = []
        var batches: [TelemetryBatch] = []
        var failure: TelemetryDeliveryError?
        var deliveries = 0
        var closed = false
    }

    /// An empty store called `name`.
    public init(name: String = "memory") {
        self.name = name
    }

    public func deliver(_ batch: [TelemetryRecord]) throws(TelemetryDeliveryError) {
        try deliver(TelemetryBatch(batch))
    }

    public func deliver(_ batch: TelemetryBatch) throws(TelemetryDeliveryError) {
        let failure = state.withLock { state -> TelemetryDeliveryError? in
            state.deliveries += 1
            if let failure = state.failure { return failure }
            state.batches.append(batch)
            return nil
        }
        if let failure { throw failure }
    }

    public func close() { state.withLock { $0.closed = true } }

    /// Makes every later delivery throw `failure` (nil: deliver again).
    public func setFailure(_ failure: TelemetryDeliveryError?) { state.withLock { $0.failure = failure } }

    /// Every record received, in delivery order.
    public var records: [TelemetryRecord] {
        state.withLock { state in
            if !state.batches.isEmpty {
                if state.records.isEmpty, state.batches.count == 1 {
                    state.records = state.batches[0].records
                } else {
                    state.records.reserveCapacity(state.records.count + state.batches.reduce(0) { $0 + $1.count })
                    for batch in state.batches { state.records.append(contentsOf: batch) }
                }
                state.batches.removeAll()
            }
            return state.records
        }
    }
    /// Calls of ``deliver(_:)`` so far (failed ones included).
    public var deliveries: Int { state.withLock { $0.deliveries } }
    /// Whether the engine closed the backend.
    public var isClosed: Bool { state.withLock { $0.closed } }
    /// The session ids, in the order their first record arrived.
    public var sessionIds: [String] {
        var seen: Set<String> = []
        return records.compactMap { seen.insert($0.sessionId).inserted ? $0.sessionId : nil }
    }

    /// The names of the event records (not heartbeats or metrics) of `session` (default: the
    /// first session).
    public func eventNames(session: String? = nil) -> [String] {
        let records = self.records
        guard let id = session ?? records.first?.sessionId else { return [] }
        return records.filter { $0.sessionId == id && $0.kind == .event }.map(\.name)
    }

    /// Every session's KPIs recomputed from the records, by session id.
    public func kpis() -> [String: TelemetryKPIs] { TelemetryKPIs.compute(from: records) }

    /// Throws unless `session`'s (default: the first session's) events match `expected`.
    public func expectEvents(_ expected: [String], session: String? = nil, match: Match = .exactly) throws(TelemetryExpectationFailure) {
        let actual = eventNames(session: session)
        let which = session.map { "session \($0)" } ?? "the first session"
        switch match {
        case .exactly:
            guard actual != expected else { return }
            let index = zip(actual, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(actual.count, expected.count)
            let wanted = index < expected.count ? expected[index] : "nothing more"
            let got = index < actual.count ? actual[index] : "nothing more"
            throw TelemetryExpectationFailure(
                "expected events \(expected) in \(which), got \(actual): at \(index) expected \(wanted), got \(got)")
        case .inOrder:
            var next = expected.startIndex
            for name in actual where next < expected.endIndex && name == expected[next] { next += 1 }
            guard next < expected.endIndex else { return }
            throw TelemetryExpectationFailure(
                "expected events \(expected) in this order in \(which); \(expected[next]) (number \(next + 1)) is missing after \(expected[..<next].last ?? "the start"), got \(actual)")
        }
    }

    /// Throws unless KPI `name` (a ``TelemetryKPIs/namedValues`` name; seconds for durations) of
    /// `session` (default: the first) is within `epsilon` of `expected`.
    public func expectKPI(_ name: String, _ expected: Double, within epsilon: Double, session: String? = nil) throws(TelemetryExpectationFailure) {
        try expectKPI(name, "= \(expected) ± \(epsilon)", session: session) { value in
            abs(value - expected) <= epsilon ? nil : "got \(value) (off by \(value - expected))"
        }
    }

    /// Throws unless KPI `name` of `session` (default: the first) is at least `minimum`:
    /// `try memory.expectKPI("playing_time", atLeast: 5)`.
    public func expectKPI(_ name: String, atLeast minimum: Double, session: String? = nil) throws(TelemetryExpectationFailure) {
        try expectKPI(name, "≥ \(minimum)", session: session) { value in value >= minimum ? nil : "got \(value) (\(minimum - value) short)" }
    }

    /// Throws unless KPI `name` of `session` (default: the first) is at most `maximum`:
    /// `try memory.expectKPI("rebuffer_percentage", atMost: 1)`.
    public func expectKPI(_ name: String, atMost maximum: Double, session: String? = nil) throws(TelemetryExpectationFailure) {
        try expectKPI(name, "≤ \(maximum)", session: session) { value in value <= maximum ? nil : "got \(value) (\(value - maximum) over)" }
    }

    /// Throws unless KPI `name` of `session` (default: the first) is in `range`:
    /// `try memory.expectKPI("video_startup_time", in: 0.1...2)`.
    public func expectKPI(_ name: String, in range: ClosedRange<Double>, session: String? = nil) throws(TelemetryExpectationFailure) {
        try expectKPI(name, "in \(range.lowerBound)…\(range.upperBound)", session: session) { value in range.contains(value) ? nil : "got \(value)" }
    }

    /// Throws unless KPI `name` of `session` is defined and `check` (nil: it holds; else what
    /// came instead) passes; the message says `expectation` and what came.
    private func expectKPI(
        _ name: String, _ expectation: String, session: String?, _ check: (Double) -> String?
    ) throws(TelemetryExpectationFailure) {
        let all = kpis()
        guard let id = session ?? sessionIds.first, let kpis = all[id] else {
            throw TelemetryExpectationFailure("expected KPI \(name) \(expectation), but there is no session \(session ?? "at all")")
        }
        guard kpis.namedValues.contains(where: { $0.name == name }) else {
            throw TelemetryExpectationFailure("no KPI called \(name); the KPIs are \(kpis.namedValues.map(\.name).joined(separator: ", "))")
        }
        guard let value = kpis[name]?.number else {
            throw TelemetryExpectationFailure("expected KPI \(name) \(expectation) in session \(id), but it is undefined (null)")
        }
        if let came = check(value) { throw TelemetryExpectationFailure("expected KPI \(name) \(expectation) in session \(id), \(came)") }
    }

    /// The sessions whose records carry `value` under `key`, as a tag or as a text field (an
    /// analytics shape's `player_name`, your `--tag player=…`), in the order they began.
    public func sessionIds(where key: String, is value: String) -> [String] {
        let matching = Set(records.filter { record in
            record.tags.contains { $0.name == key && $0.value == .string(value) } || record[field: key] == .string(value)
        }.map(\.sessionId))
        return sessionIds.filter(matching.contains)
    }

    /// The one session of the player called `player` (its records' `player_name` or `player`,
    /// a tag or a field): what `session:` of the assertions takes when several players report to
    /// one store.
    ///
    /// ```swift
    /// try memory.expectKPI("playing_time", atLeast: 5, session: memory.session(player: "web"))
    /// ```
    ///
    /// - Throws: ``TelemetryExpectationFailure`` when no session, or more than one, is that player's.
    public func session(player: String) throws(TelemetryExpectationFailure) -> String {
        var found: [String] = []
        for key in ["player_name", "player"] {
            for id in sessionIds(where: key, is: player) where !found.contains(id) { found.append(id) }
        }
        guard found.count == 1 else {
            throw TelemetryExpectationFailure(found.isEmpty
                ? "no session of player \(player) (no record carries player_name or player = \(player))"
                : "\(found.count) sessions of player \(player): \(found.joined(separator: ", ")); pick one by id")
        }
        return found[0]
    }

    /// Throws unless KPI `name` of `session` is undefined (null).
    public func expectUndefinedKPI(_ name: String, session: String? = nil) throws(TelemetryExpectationFailure) {
        guard let id = session ?? sessionIds.first, let kpis = kpis()[id] else {
            throw TelemetryExpectationFailure("expected KPI \(name) undefined, but there is no session \(session ?? "at all")")
        }
        if let value = kpis[name] { throw TelemetryExpectationFailure("expected KPI \(name) undefined (null) in session \(id), got \(value)") }
    }

    /// Removes every record.
    public func removeAll() {
        state.withLock { state in
            state.records.removeAll()
            state.batches.removeAll()
        }
    }
}

/// An analytics test's expectation that did not hold, saying what was expected and what came.
public struct TelemetryExpectationFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was expected and what came instead.
    public var message: String
    /// A failure saying `message`.
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
