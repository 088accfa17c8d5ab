import Playout
import PlayoutAnalytics
import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import RealTimeTesting
import Testing

@Suite("Nielsen DCR adapter fed by a real subscription", .realTime)
struct NielsenIntegrationTests {
    @Test("loss, an override and a stall: the calls and events are the guide's story, and the QoS numbers are the subscriber's")
    func story() throws {
        let memory = InMemoryTelemetryBackend()
        let instrument = try TelemetryInstrument(
            backends: [memory], configuration: .init(hub: .init(heartbeatInterval: .seconds(1)), delivery: .init(linger: .zero)))
        let log = ConformanceLog<NielsenRule>()
        let nielsen = NielsenAppSDK(appInfo: ["appid": "PE4D5C2A1-0B1C-4D2E-8F3A-5B6C7D8E9F00"], instrument: instrument, options: .init(conformance: log))
        let ticker = try NielsenPlayheadTicker()
        var bridge: NielsenSubscriberBridge?
        // A network loss is an interruption: stop at once, resume with loadMetadata and playheads.
        let story = try AnalyticsStory.run(.nielsenOpenAVT) { subscriber in
            let made = NielsenSubscriberBridge(
                subscriber: subscriber, sdk: nielsen, ticker: ticker,
                options: .init(
                    channelInfo: ["channelName": "playout-news"],
                    metadata: ["type": "content", "assetid": "EP-001", "program": "Playout News", "title": "Playout News S1E1", "length": "0",
                               "airdate": "2026-01-01T12:00:00Z", "isfullepisode": "y", "adloadtype": "2"],
                    stopAfterBuffering: .zero))
            bridge = made
            return nil  // the bridge finishes by itself when the subscription ends
        }
        ticker.shutdown()
        instrument.shutdown(timeout: .seconds(5))
        _ = bridge

        // The SDK's calls: the guide's sequence for a live stream interrupted once.
        #expect(log.calls.map(\.name).collapsingRuns(of: ["playheadPosition"]) == [
            "initialize", "play", "loadMetadata", "playheadPosition…", "stop", "loadMetadata", "playheadPosition…", "end",
        ])
        #expect(log.findings.isEmpty, "\(log.findings)")
        // Playheads: the Unix time, one a second while playing (the stall's gap is ≈ 2 s or more).
        let playheads = log.calls.filter { $0.name == "playheadPosition" }
        let gaps = zip(playheads, playheads.dropFirst()).map { $0.0.time.duration(to: $0.1.time) }
        #expect(gaps.filter { $0 > .milliseconds(1_500) }.count == 1, "\(gaps)")
        #expect(gaps.allSatisfy { $0 >= .milliseconds(500) })
        #expect(playheads.count >= 4)

        // The engine's view of it: the same story in its vocabulary.
        try memory.expectEvents(["viewinit", "play", "loadmetadata", "playing", "pause", "loadmetadata", "playing", "ended", "viewend"])
        let heartbeats = memory.records.filter { $0.kind == .heartbeat }
        #expect(heartbeats.count >= 3)
        for heartbeat in heartbeats { #expect(story.isSubscriberQoS(heartbeat.fields.filter { Self.isQoS($0.name) })) }
        let last = try #require(heartbeats.last)
        #expect(last.fields.filter { Self.isQoS($0.name) } == SubscriberTelemetryTranslator.heartbeatFields(story.final))
        #expect(story.final.total.packetsLost > 0, "the loss and the outage were real")
    }

    /// The heartbeat fields that are QoS (not session attributes or `timeSince…`).
    static func isQoS(_ name: String) -> Bool {
        !name.hasPrefix("timeSince") && !["type", "assetid", "program", "title", "length"].contains(name)
    }
}
