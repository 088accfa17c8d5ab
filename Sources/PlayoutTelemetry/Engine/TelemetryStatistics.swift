/// Telemetry about telemetry: what the engine took in, refused and could not deliver, as one
/// snapshot (``TelemetryInstrument/statistics`` is an observable of it, and the shutdown report
/// ends with it).
public struct TelemetryStatistics: Sendable, Equatable, CustomStringConvertible {
    /// Events the engine's thread has processed.
    public var eventsProcessed = 0
    /// Events dropped at emit because the engine's ring was full (the engine fell behind).
    public var eventsDropped = 0
    /// Events waiting in the ring when the snapshot was taken.
    public var ringDepth = 0
    /// Records built (every session, every kind).
    public var records = 0
    /// Events the sessions' state machines rejected (pause while paused …).
    public var rejectedTransitions = 0
    /// Events ignored because their session was in the error state.
    public var ignoredInErrorState = 0
    /// Each backend's delivery, in the order they were added.
    public var backends: [TelemetryBackendStatistics] = []

    /// A snapshot with every count zero.
    public init() {}

    /// Records that some backend did not receive (every backend and reason), plus events dropped
    /// at emit.
    public var undelivered: Int { eventsDropped + backends.reduce(0) { $0 + $1.dropped } }

    /// One line: `"telemetry: 120 records, 0 dropped at emit, 1 rejected; memory: 120 delivered; influx 127.0.0.1:8086: 0 delivered, 16 dropped (rejected 16), last error: HTTP 404 from influx 127.0.0.1:8086: database not found: \"nope\""`
    /// (each backend as ``TelemetryBackendStatistics/description`` writes it).
    public var description: String {
        (["telemetry: \(records) records, \(eventsDropped) dropped at emit, \(rejectedTransitions) rejected"] + backends.map(\.description))
            .joined(separator: "; ")
    }
}

extension TelemetryBackendStatistics: CustomStringConvertible {
    /// One part of the summary: `"influx 127.0.0.1:8086: 0 delivered, 16 dropped (rejected 16), last error: HTTP 404 from …: database not found"`.
    /// The last error is named whenever the backend dropped records or had to retry.
    public var description: String {
        var part = "\(name): \(delivered) delivered"
        if dropped > 0 {
            let reasons = drops.sorted { $0.key < $1.key }.map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", ")
            part += ", \(dropped) dropped (\(reasons))"
        }
        if queueDepth > 0 { part += ", \(queueDepth) queued" }
        if dropped > 0 || failedAttempts > 0, let lastError {
            if dropped == 0 { part += ", \(failedAttempts) failed attempts retried" }
            part += ", last error: \(lastError)"
        }
        return part
    }
}

/// Strict delivery: records that did not reach every backend, as an error
/// (``TelemetryShutdownReport/requireComplete()``) — for a CI job that must fail when telemetry
/// was lost, whatever the stream did.
public struct TelemetryUndeliveredError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The final statistics: each backend's drops by reason and its last error.
    public var statistics: TelemetryStatistics

    /// The error for `statistics` (what ``TelemetryShutdownReport/requireComplete()`` throws).
    public init(statistics: TelemetryStatistics) {
        self.statistics = statistics
    }

    /// `"telemetry: 16 records undelivered (influx 127.0.0.1:8086: 0 delivered, 16 dropped (rejected 16), last error: HTTP 404 …)"`:
    /// the count, then every backend that lost records and why.
    public var description: String {
        var parts: [String] = []
        if statistics.eventsDropped > 0 { parts.append("\(statistics.eventsDropped) events dropped at emit (the engine fell behind)") }
        parts += statistics.backends.filter { $0.dropped > 0 }.map(\.description)
        return "telemetry: \(statistics.undelivered) records undelivered (\(parts.joined(separator: "; ")))"
    }
}

/// What ``TelemetryInstrument/shutdown(deadline:)`` could and could not deliver.
public struct TelemetryShutdownReport: Sendable, Equatable, CustomStringConvertible {
    /// The final statistics.
    public var statistics: TelemetryStatistics
    /// Every session's KPIs, by session id.
    public var kpis: [String: TelemetryKPIs]

    /// True when every record reached every backend.
    public var isComplete: Bool { statistics.undelivered == 0 }

    /// Strict delivery: the report when every record reached every backend, else an error naming
    /// what was lost, where, and each backend's last error.
    ///
    /// ```swift
    /// try instrument.shutdown(timeout: .seconds(5)).requireComplete()   // a CI test fails on lost telemetry
    /// ```
    ///
    /// - Throws: ``TelemetryUndeliveredError``.
    @discardableResult
    public func requireComplete() throws(TelemetryUndeliveredError) -> TelemetryShutdownReport {
        guard isComplete else { throw TelemetryUndeliveredError(statistics: statistics) }
        return self
    }

    /// Undelivered records by backend name and reason (only backends that lost some).
    public var undelivered: [String: [TelemetryDropReason: Int]] {
        var result: [String: [TelemetryDropReason: Int]] = [:]
        for backend in statistics.backends where backend.dropped > 0 { result[backend.name] = backend.drops }
        return result
    }

    public var description: String { statistics.description }
}
