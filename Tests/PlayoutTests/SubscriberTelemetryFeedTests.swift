import Playout
import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Testing

/// The subscriber's own telemetry (the `--json` stream's source) on a whole subscription advanced
/// by the embedded driver: one manual clock, no thread, so every record is exact.
@Suite("Subscriber telemetry on the embedded driver")
struct SubscriberTelemetryFeedTests {
    /// A 3 s subscription of a simulated stream with an override from 1 s to 2 s, reporting into
    /// `memory`; its final sample.
    static func run(_ memory: InMemoryTelemetryBackend) throws -> SubscriberQoS {
        let clock = ManualClock()
        let instrument = try TelemetryInstrument(
            backends: [memory], configuration: .init(delivery: .init(linger: .zero), engineId: "e"), clock: clock, driver: .embedded)
        let stream = SimulatedStream()
        var options = Subscriber.Options(duration: .seconds(3), overrides: [ScheduledOverride(delay: .seconds(1), at: .seconds(1), hold: .seconds(1))], clock: clock)
        options.seed = 1
        options.telemetry = instrument
        let subscriber = try Subscriber(sessionDescription: stream.sessionDescription, options: options)
        let driver = try EmbeddedDriver(subscriber)
        let final = driver.run(try stream.datagrams(for: .zero..<Duration.seconds(3), origin: clock.now))
        #expect(instrument.flush())
        instrument.shutdown(timeout: .zero)
        return final
    }

    @Test("through the one feed: contract actions before the player's events, a heartbeat per sample, the final one once, over its own window (issue 28)")
    func records() throws {
        let memory = InMemoryTelemetryBackend()
        let final = try Self.run(memory)
        #expect(memory.records.map { "\($0.kind) \($0.name)" } == [
            "event viewinit", "event playoutdelaychange", "event stateChanged", "event playerready", "event play", "event stateChanged",
            "event startup", "event startup", "event startup", "event stateChanged", "event playing", "event overrideApplied", "event playoutdelaychange", "event renditionchange",
            "heartbeat heartbeat", "event overrideReleased", "event playoutdelaychange", "heartbeat heartbeat", "event stateChanged",
            "event ended", "heartbeat heartbeat", "event viewend",
        ])
        // The command line's event lines, timed on the subscription's clock.
        let writer = QoSJSONWriter()
        #expect(memory.records.filter { $0.kind == .event }.compactMap(writer.line(for:)) == [
            writer.event("stateChanged", at: .zero, [("state", "connecting")]),
            writer.event("stateChanged", at: .zero, [("state", "buffering")]),
            // The start-up steps at their own instants: the first packet (and key frame) after the
            // 10 ms transit, the first frame presented a playout delay later.
            writer.event("startup", at: .milliseconds(10), [("step", "first_packet")]),
            writer.event("startup", at: .milliseconds(10), [("step", "first_key_frame")]),
            writer.event("startup", at: .milliseconds(240), [("step", "first_frame")]),
            writer.event("stateChanged", at: .milliseconds(260), [("state", "playing")]),
            writer.event("overrideApplied", at: .seconds(1), numbers: [("playoutDelay", 1)]),
            writer.event("overrideReleased", at: .seconds(2), numbers: [("playoutDelay", 0.23)]),
            writer.event("stateChanged", at: .seconds(3), [("state", "ended")]),
        ])
        let heartbeats = memory.records.filter { $0.kind == .heartbeat }
        #expect(heartbeats.map { $0[field: "elapsed"]?.number } == [1, 2, 3])
        // The last heartbeat: the final sample's counters, its rates over 2 s … 3 s (the final
        // sample's own cover the whole run, for the summary).
        let finalFields = SubscriberTelemetryTranslator.heartbeatFields(final).filter { !$0.name.hasSuffix("framesPerSecond") && !$0.name.hasSuffix("bitrate") }
        let last = try #require(heartbeats.last)
        #expect(finalFields.allSatisfy { last[field: $0.name] == $0.value })
        let rendered = { (record: TelemetryRecord) in record[field: "video.framesRendered"]?.number ?? -1 }
        #expect(last[field: "video.framesPerSecond"]?.number == rendered(last) - rendered(heartbeats[1]))
        #expect(final.tracks[.video]!.framesPerSecond == rendered(last) / 3)
    }
}
