public import PlayoutCore

/// One broken rule of an analytics SDK, found by an adapter's conformance mode.
///
/// `Rule` is the SDK's own rule vocabulary (an enum per adapter: ``Rule`` names the rule as the
/// SDK's integration guide states it); `call` is the adapter call that broke it, and `detail`
/// says what was wrong in a user's words. The session goes on: a finding is recorded, never thrown.
public struct ConformanceFinding<Rule: Hashable & Sendable>: Sendable, Hashable, CustomStringConvertible {
    /// The rule that was broken.
    public var rule: Rule
    /// The adapter call that broke it (`"trackPlay"`, `"emit(play)"` …).
    public var call: String
    /// What was wrong.
    public var detail: String
    /// When the call was made (the adapter's clock).
    public var time: MonotonicInstant

    /// A finding.
    public init(rule: Rule, call: String, detail: String, time: MonotonicInstant) {
        self.rule = rule
        self.call = call
        self.detail = detail
        self.time = time
    }

    /// `rule: call — detail`.
    public var description: String { "\(rule): \(call) — \(detail)" }
}

/// One call an adapter received, recorded in conformance mode.
public struct RecordedCall: Sendable, Hashable {
    /// The call's name as the SDK spells it (`"trackVideoLoad"`, `"playheadPosition"` …).
    public var name: String
    /// Its arguments, rendered for reading.
    public var arguments: [String]
    /// When it was made (the adapter's clock).
    public var time: MonotonicInstant

    /// A recorded call.
    public init(name: String, arguments: [String] = [], time: MonotonicInstant) {
        self.name = name
        self.arguments = arguments
        self.time = time
    }
}

/// An adapter's conformance record: every call it received and every rule broken, in order.
///
/// Thread-safe; adapters append from the caller's thread (a few hundred bytes a call — this is a
/// test mode, off by default). Bounded: after ``capacity`` calls the oldest are dropped and counted
/// in ``droppedCalls`` (findings are never dropped: there is one per broken rule).
public final class ConformanceLog<Rule: Hashable & Sendable>: Sendable {
    /// Default number of calls kept.
    public static var defaultCapacity: Int { 100_000 }

    private struct State {
        var ring: [RecordedCall] = []  // oldest at `head` once full
        var head = 0
        var findings: [ConformanceFinding<Rule>] = []
        var droppedCalls = 0
        var recordedCalls = 0
        var origin: MonotonicInstant?  // the first call's or finding's time
    }

    /// Calls kept before the oldest are dropped.
    public let capacity: Int
    private let state = LockedValue(State())

    /// An empty log keeping at most `capacity` calls.
    public init(capacity: Int = ConformanceLog.defaultCapacity) {
        self.capacity = max(1, capacity)
    }

    /// Every call recorded, oldest first.
    public var calls: [RecordedCall] { state.withLock { Array($0.ring[$0.head...] + $0.ring[..<$0.head]) } }
    /// Every rule broken, in the order found.
    public var findings: [ConformanceFinding<Rule>] { state.withLock { $0.findings } }
    /// Calls dropped because more than ``capacity`` were recorded.
    public var droppedCalls: Int { state.withLock { $0.droppedCalls } }
    /// How many rules were broken so far (``findings``' count, without copying them).
    public var findingCount: Int { state.withLock { $0.findings.count } }
    /// Every call recorded, kept or dropped.
    public var recordedCalls: Int { state.withLock { $0.recordedCalls } }
    /// When the first call or finding was recorded (the origin of an export's times), or nil.
    public var origin: MonotonicInstant? { state.withLock { $0.origin } }

    /// Records a call.
    public func record(_ call: RecordedCall) {
        state.withLock { state in
            state.origin = state.origin ?? call.time
            state.recordedCalls += 1
            if state.ring.count < capacity {
                state.ring.append(call)
            } else {
                state.ring[state.head] = call
                state.head = (state.head + 1) % capacity
                state.droppedCalls += 1
            }
        }
    }

    /// Records a broken rule.
    public func report(_ finding: ConformanceFinding<Rule>) {
        state.withLock { state in
            state.origin = state.origin ?? finding.time
            state.findings.append(finding)
        }
    }
}
