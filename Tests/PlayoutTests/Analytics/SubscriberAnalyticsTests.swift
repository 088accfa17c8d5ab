import Foundation
import Playout
import PlayoutAnalytics
import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Testing

/// `--analytics`' library side: each adapter run over a whole subscription advanced by the
/// embedded driver, its engine stepped on the same manual clock — no thread, no socket, no sleep.
@Suite("SubscriberAnalytics: an adapter over a subscription, its tally, JSON lines and summary")
struct SubscriberAnalyticsTests {
    /// A 3 s subscription of a simulated stream with `adapter` over it; its summary and what a
    /// backend beside the tally received.
    static func run(_ adapter: SubscriberAnalytics.Adapter) throws -> (summary: SubscriberAnalytics.Summary, records: [TelemetryRecord]) {
        let clock = ManualClock()
        let stream = SimulatedStream()
        var options = Subscriber.Options(duration: .seconds(3), clock: clock)
        options.seed = 1
        let subscriber = try Subscriber(sessionDescription: stream.sessionDescription, options: options)
        let memory = InMemoryTelemetryBackend()
        let analytics = try SubscriberAnalytics(adapter, subscriber: subscriber, backends: [(memory, .init(linger: .zero))], clock: clock, driver: .embedded)
        let driver = try EmbeddedDriver(subscriber)
        let final = driver.run(try stream.datagrams(for: .zero..<Duration.seconds(3), origin: clock.now))
        #expect(final.state == .ended)
        return (analytics.finish(timeout: .seconds(1)), memory.records)
    }

    @Test("each adapter over a clean subscription: its view from viewinit to viewend, counted as delivered, no finding", arguments: SubscriberAnalytics.Adapter.allCases)
    func clean(adapter: SubscriberAnalytics.Adapter) throws {
        let (summary, records) = try Self.run(adapter)
        let counts = summary.snapshot.counts
        #expect(summary.conformance.passed, "\(summary.conformance.findings)")
        #expect(summary.conformance.rules.count > 0 && summary.undelivered == 0)
        #expect(counts.records == records.count && counts.records > 0)
        #expect(counts.events.first?.name == "viewinit" && counts.lastEvent == "viewend")
        #expect(counts.events.reduce(0) { $0 + $1.count } + counts.heartbeats + counts.metrics == counts.records)
        #expect(counts.heartbeats == records.count { $0.kind == .heartbeat })
        #expect(summary.snapshot.adapter == adapter && summary.snapshot.findings == 0)
        // The view's KPIs are the engine's for the last record's session. Nielsen's view plays
        // with its playheads, which an embedded run does not tick.
        #expect(summary.snapshot.kpis != nil && (summary.snapshot.kpis?.playingTime == nil) == (adapter == .nielsen))
        #expect(counts.lastSession == records.last?.sessionId)
    }

    @Test("Mux: the view's KPIs are the subscription's (startup, playing time), the JSON summary object carries them by Mux name, null where undefined")
    func muxSummary() throws {
        let (summary, _) = try Self.run(.mux)
        let kpis = try #require(summary.snapshot.kpis)
        #expect(try #require(kpis.videoStartupTime) > .zero && kpis.playbackFailure == false)
        let object = try #require(JSONSerialization.jsonObject(with: Data(summary.json.utf8)) as? [String: Any])
        #expect(object["adapter"] as? String == "mux" && object["passed"] as? Bool == true && object["findings"] as? Int == 0)
        #expect(object["records"] as? Int == summary.snapshot.counts.records && object["rulesChecked"] as? Int == MuxRule.allCases.count)
        let kpiObject = try #require(object["kpis"] as? [String: Any])
        #expect(Set(kpiObject.keys) == Set(TelemetryKPIs().namedValues.map(\.name)))
        #expect(kpiObject["video_startup_time"] as? Double == kpis.videoStartupTime?.seconds)
        #expect(kpiObject["end_to_end_latency_p50"] is NSNull)
        let events = try #require(object["events"] as? [String: Int])
        #expect(events["viewinit"] == 1 && events["viewend"] == 1)
    }

    @Test("a JSON line is the record as --telemetry jsonl: writes it, with type analytics, the adapter and t first — replayable")
    func jsonLines() throws {
        let (_, records) = try Self.run(.adobe)
        for record in records {
            let line = SubscriberAnalytics.jsonLine(for: record, adapter: .adobe)
            #expect(line.hasPrefix("{\"type\":\"analytics\",\"adapter\":\"adobe\",\"t\":"))
            let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["t"] as? Double == record.monotonic.seconds && object["name"] as? String == record.name)
            // The rest is the replayable record.
            let replayable = "{\"type\":\"telemetry\"," + line.drop { $0 != "," }.dropFirst().drop { $0 != "," }.dropFirst().drop { $0 != "," }.dropFirst()
            #expect(try TelemetryJSONLines.record(from: Substring(replayable)) == record)
        }
    }

    @Test("the tally is bounded: 64 event names told apart, the rest counted as other")
    func tallyBounded() throws {
        let tally = SubscriberAnalytics.Tally()
        let records = (0..<100).map { index in
            TelemetryRecord(
                sessionId: "s", seq: UInt64(index), monotonic: .zero, wallTimeNanoseconds: 0, schemaVersion: 1, kind: .event, name: "action\(index % 80)",
                fields: [], tags: [])
        }
        try tally.deliver(records)
        let counts = tally.counts
        #expect(counts.records == 100 && counts.events.count == SubscriberAnalytics.Tally.maximumNames + 1)
        #expect(counts.events.last?.name == "other" && counts.events.last?.count == 16)
        #expect(counts.events.first { $0.name == "action0" }?.count == 2)
        #expect(counts.lastEvent == "action19")
    }
}
