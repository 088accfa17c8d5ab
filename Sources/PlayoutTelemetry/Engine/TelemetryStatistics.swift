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

    /// One line: `"telemetry: 120 records, 0 dropped at emit, 1 rejected; memory: 120 delivered; jsonl: 118 delivered, 2 dropped (queueFull 2)"`.
    public var description: String {
        var parts = ["telemetry: \(records) records, \(eventsDropped) dropped at emit, \(rejectedTransitions) rejected"]
        for backend in backends {
            var part = "\(backend.name): \(backend.delivered) delivered"
            if backend.dropped > 0 {
                let reasons = backend.drops.sorted { $0.key < $1.key }.map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", ")
                part += ", \(backend.dropped) dropped (\(reasons))"
            }
            if backend.queueDepth > 0 { part += ", \(backend.queueDepth) queued" }
            parts.append(part)
        }
        return parts.joined(separator: "; ")
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

    /// Undelivered records by backend name and reason (only backends that lost some).
    public var undelivered: [String: [TelemetryDropReason: Int]] {
        var result: [String: [TelemetryDropReason: Int]] = [:]
        for backend in statistics.backends where backend.dropped > 0 { result[backend.name] = backend.drops }
        return result
    }

    public var description: String { statistics.description }
}
