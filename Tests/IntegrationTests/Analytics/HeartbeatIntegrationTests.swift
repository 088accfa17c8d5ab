import Dispatch
import Playout
import PlayoutAnalytics
import PlayoutTesting
import RealTimeTesting
import Testing

@Suite("Adobe video heartbeat adapter fed by a real subscription", .realTime)
struct HeartbeatIntegrationTests {
    @Test("publisher with loss, an override and an outage → subscriber → heartbeat calls → memory: the guide's story, the subscriber's QoS numbers")
    func realSubscription() throws {
        let memory = InMemoryTelemetryBackend()
        let instrument = try AnalyticsStory.makeInstrument(memory)
        let unloaded = DispatchSemaphore(value: 0)
        var bridge: HeartbeatSubscriberBridge?
        let final = try AnalyticsStory.run(.heartbeatMux) { subscriber in
            bridge = HeartbeatSubscriberBridge(
                subscriber: subscriber, instrument: instrument, options: .conformance(), onVideoUnloaded: { unloaded.signal() })
            return nil
        }.final
        #expect(unloaded.wait(timeout: .now() + 10) == .success)
        let heartbeat = try #require(bridge?.heartbeat)
        // What the adapter was told, and what the engine's backend got.
        #expect(heartbeat.conformance?.calls.map(\.name) == [
            "trackVideoLoad", "trackSessionStart", "trackPlay", "trackBitrateChange", "trackPause", "trackPlay", "trackBufferStart",
            "trackApplicationError", "trackBufferComplete", "trackComplete", "trackVideoUnload",
        ])
        #expect(memory.eventNames().filter { $0 != "heartbeat" } == [
            "viewinit", "playerready", "play", "playing", "renditionchange", "pause", "play", "playing", "rebufferstart", "error",
            "rebufferend", "ended", "viewend",
        ])
        #expect(heartbeat.conformance?.findings.isEmpty == true)
        let records = memory.records
        let rendition = try #require(records.first { $0.name == "renditionchange" })
        #expect(rendition[field: "width"] == .int(320) && rendition[field: "height"] == .int(180))
        // The QoS numbers at the end are the subscriber's final sample's.
        let ended = try #require(records.first { $0.name == "ended" })
        // (The video's: its bitrate and the frames the viewer lost, not audio's or the skips of a delay decrease.)
        #expect(ended[field: "bitrate"] == .double(final.renditionBitrate))
        #expect(ended[field: "fps"] == .double((final.video?.framesPerSecond ?? -1).rounded(.towardZero)))  // the guide: truncated
        #expect(ended[field: "droppedFrames"] == .int(Int64(final.videoFramesLost)))
        #expect(final.videoFramesLost > 0 && final.total.packetsLost > 0)
        // The startup time is the engine's video_startup_time (the same two instants).
        let startup = try #require(ended[field: "startupTime"]?.number)
        try memory.expectKPI("video_startup_time", startup, within: 0)
        try memory.expectKPI("rebuffer_count", 1, within: 0)
        #expect(instrument.shutdown(timeout: .seconds(2)).isComplete)
        withExtendedLifetime(bridge) {}
    }
}
