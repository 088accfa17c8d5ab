import Playout
import PlayoutAnalytics
import PlayoutTesting
import RealTimeTesting
import Testing

@Suite("Mux adapter fed by a real subscription", .realTime)
struct MuxIntegrationTests {
    @Test("publisher with loss, an override and an outage → subscriber → Mux events → memory and beacons: the guide's story, the subscriber's QoS numbers")
    func realSubscription() throws {
        let memory = InMemoryTelemetryBackend()
        let beacons = MuxBeaconBackend()
        let instrument = try AnalyticsStory.makeInstrument(memory)
        try instrument.addBackend(beacons)
        let mux = MuxCore(instrument: instrument, options: .conformance())
        mux.dispatchGlobalDataEvent(MuxGlobalData(environmentKey: "env-test", viewerUserId: "ci"))
        var bridge: MuxSubscriberBridge?
        let story = try AnalyticsStory.run(.heartbeatMux) { subscriber in
            bridge = MuxSubscriberBridge(subscriber: subscriber, mux: mux, player: "main")
            return nil
        }
        let final = story.final
        let report = instrument.shutdown(timeout: .seconds(2))
        #expect(report.isComplete)
        #expect(mux.conformance?.findings.isEmpty == true)
        #expect(memory.eventNames().filter { $0 != "heartbeat" } == [
            "viewinit", "playerready", "play", "playing", "renditionchange", "pause", "play", "playing", "rebufferstart", "error",
            "rebufferend", "ended", "viewend",
        ])
        let records = memory.records
        #expect(records.allSatisfy { $0[field: "env_key"] == .string("env-test") && $0[field: "player_name"] == .string("main") })
        // The rendition is the subscriber's: its picture, and the video's bitrate of the sample that showed it.
        let rendition = try #require(records.first { $0.name == "renditionchange" })
        #expect(rendition[field: "width"] == .int(320) && rendition[field: "height"] == .int(180))
        let bitrate = try #require(rendition[field: "video_source_advertised_bitrate"]?.number)
        #expect(story.samples.contains { $0.video?.bitrate == bitrate && $0.video?.frameWidth == 320 })
        // The stall is a warning, not a playback failure.
        let error = try #require(records.first { $0.name == "error" })
        #expect(error[field: "severity"] == .string("warning"))
        try memory.expectKPI("playback_failure", 0, within: 0)
        // The dropped frames at the end are the video frames the viewer lost (issue 28: not audio's,
        // not those skipped on purpose on a delay decrease).
        let ended = try #require(records.first { $0.name == "ended" })
        #expect(ended[field: "view_dropped_frame_count"] == .int(Int64(final.videoFramesLost)))
        #expect(final.videoFramesLost == final.video!.framesDropped - final.video!.framesSkipped)
        #expect(ended[field: "player_playhead_time"] == .int(final.elapsed.nanoseconds / 1_000_000))  // ms, as the guide's player data
        #expect(final.total.framesDropped > 0)
        // Every Mux record went out in beacons, in order, none timed before its predecessor.
        let sent = beacons.beacons.flatMap(\.events)
        let sentEvents: [String] = sent.map(\.name).filter { $0 != "heartbeat" }
        #expect(sentEvents == memory.eventNames())  // beacons also carry the measures' heartbeats
        #expect(zip(sent, sent.dropFirst()).allSatisfy { $0.time <= $1.time })
        #expect(beacons.clampedTimestamps == 0)
        withExtendedLifetime(bridge) {}
    }
}
