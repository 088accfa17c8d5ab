import PlayoutAnalytics
import PlayoutCore
import PlayoutTelemetry
import Testing

@Suite struct ConformanceLogTests {
    enum Rule: Hashable, Sendable { case order }

    @Test func keepsTheNewestCallsAndCountsTheDropped() {
        let log = ConformanceLog<Rule>(capacity: 3)
        for index in 0..<5 { log.record(RecordedCall(name: "call\(index)", time: MonotonicInstant(nanoseconds: Int64(index)))) }
        #expect(log.calls.map(\.name) == ["call2", "call3", "call4"])
        #expect(log.droppedCalls == 2)
    }

    @Test func findingsAreKeptInOrder() {
        let log = ConformanceLog<Rule>()
        log.report(ConformanceFinding(rule: .order, call: "play", detail: "before load", time: MonotonicInstant(nanoseconds: 0)))
        #expect(log.findings.map(\.description) == ["order: play — before load"])
    }
}
