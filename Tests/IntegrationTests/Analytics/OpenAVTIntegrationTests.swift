import Playout
import PlayoutAnalytics
import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import RealTimeTesting
import Testing

@Suite("OpenAVT adapter fed by a real subscription", .realTime)
struct OpenAVTIntegrationTests {
    @Test("loss, an override and a stall: the actions and events are OpenAVT's story, and the QoS numbers are the subscriber's")
    func story() throws {
        let memory = InMemoryTelemetryBackend()
        let log = ConformanceLog<OpenAVTRule>()
        let engine = try TelemetryInstrument(configuration: .init(hub: .init(heartbeatInterval: .seconds(1)), delivery: .init(linger: .zero)))
        let instrument = try OpenAVTInstrument(engine: engine, backend: memory, options: .init(conformance: log))
        let tracker = instrument.addTracker(name: "subscriber")
        instrument.ready()
        var bridge: OpenAVTSubscriberBridge?
        let story = try AnalyticsStory.run(.nielsenOpenAVT) { subscriber in
            let made = OpenAVTSubscriberBridge(subscriber: subscriber, instrument: instrument, trackerId: tracker)
            bridge = made
            return nil  // the bridge finishes by itself when the subscription ends
        }
        instrument.shutdown(timeout: .seconds(5))
        _ = bridge

        // The tracker's actions: load, start, a quality change, the override set and released, one
        // buffering, the end, a last ping.
        #expect(log.calls.map { $0.arguments[0] } == [
            "PlayoutDelayChange", "PlayerReady", "MediaRequest", "StreamLoad", "Start", "QualityChangeUp", "PlayoutDelayChange",
            "PlayoutDelayChange", "BufferBegin", "BufferFinish", "End", "Ping",
        ])
        #expect(log.findings.isEmpty, "\(log.findings)")
        #expect(instrument.rejectedActions == 0)

        // The engine's view of it, and OpenAVT's metrics.
        try memory.expectEvents([
            "viewinit", "PlayoutDelayChange", "playerready", "MediaRequest", "play", "playing", "renditionchange", "PlayoutDelayChange",
            "PlayoutDelayChange", "rebufferstart", "rebufferend", "ended", "viewend",
        ])
        let records = memory.records
        let delays = records.filter { $0.name == "PlayoutDelayChange" }.map { $0[field: "playoutDelay"] }
        #expect(delays == [.int(230), .int(1_000), .int(230)])  // OpenAVT reports times in integer milliseconds
        let rendition = try #require(records.first { $0.name == "renditionchange" })
        #expect(rendition[field: "width"] == .int(320) && rendition[field: "height"] == .int(180))
        let metric = { (name: String) in records.filter { $0.kind == .metric && $0.name == name }.compactMap { $0[field: "value"]?.number } }
        #expect(metric("NumRebuffers") == [1])
        let rebuffer = try #require(metric("RebufferTime").first)
        #expect(rebuffer >= 500 && rebuffer <= 3_000, "the outage is 2 s; the stall is seen after 1 s without a frame")
        #expect(metric("StartTime").count == 1)

        // QoS: every ping carries a sample the subscriber published; the last one its final sample.
        let pings = records.filter { $0.kind == .heartbeat }
        #expect(pings.count >= 3)
        for ping in pings { #expect(story.isSubscriberQoS(ping.fields.filter { Self.isQoS($0.name) })) }
        #expect(pings.last.map { $0.fields.filter { Self.isQoS($0.name) } } == SubscriberTelemetryTranslator.heartbeatFields(story.final))
        #expect(story.final.total.packetsLost > 0, "the loss and the outage were real")
    }

    /// The ping fields that are QoS (not the stream id or `timeSince…`).
    static func isQoS(_ name: String) -> Bool {
        !name.hasPrefix("timeSince") && name != "streamId"
    }
}
