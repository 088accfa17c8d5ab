import Foundation
import Playout
import PlayoutSender
import PlayoutTesting
import RealTimeTesting
import Testing

/// The subscriber as a telemetry tracker, against the built-in publisher on loopback: what an
/// analytics test asserts on.
@Suite("Subscriber → telemetry engine → in-memory backend", .realTime, .serialized)
struct SubscriberTelemetryTests {
    @Test("a run with an override: the event sequence, heartbeats and KPIs an analytics test expects")
    func analytics() throws {
        let memory = InMemoryTelemetryBackend()
        let instrument = try TelemetryInstrument(
            backends: [memory],
            configuration: .init(hub: .init(heartbeatInterval: .seconds(1)), delivery: .init(linger: .milliseconds(20)),
                                 tags: [TelemetryField("run", .string("integration"))]))
        let publisher = try Publisher(options: .init(
            destination: try Publisher.freeLoopbackDestination(),
            video: .init(codec: .h264, width: 320, height: 180, frameRate: 30, bitrate: 300_000, keyframeInterval: 30),
            keyingMaterial: .random(for: .aesCM128HMACSHA1_80), duration: .seconds(4)))
        let subscriber = try Subscriber(
            sessionDescription: publisher.sessionDescription,
            options: .init(duration: .seconds(5), overrides: [ScheduledOverride(delay: .seconds(1), at: .seconds(2), hold: .seconds(1))],
                           telemetry: instrument))
        try subscriber.start()
        try publisher.start()
        _ = try publisher.waitUntilEnded()
        let final = subscriber.waitUntilEnded()
        let report = instrument.shutdown(timeout: .seconds(5))
        #expect(report.isComplete, "\(report)")
        #expect(report.statistics.rejectedTransitions == 0, "\(memory.records.map(\.name))")
        try memory.expectEvents(["viewinit", "playoutdelaychange", "playerready", "play", "playing", "playoutdelaychange", "playoutdelaychange", "ended", "viewend"], match: .inOrder)
        let delays = memory.records.filter { $0.name == "playoutdelaychange" }.compactMap { $0[field: "delay"]?.number }
        #expect(delays == [0.23, 1, 0.23])
        #expect(memory.records.allSatisfy { $0[field: "run"] == nil && $0.tags == [TelemetryField("run", .string("integration"))] })
        let heartbeats = memory.records.filter { $0.kind == .heartbeat }
        #expect(heartbeats.count >= 3)
        #expect(heartbeats.last?[field: "framesRendered"] == .int(Int64(final.total.framesRendered)))
        // KPIs: the delay increase stalls nobody (the state stays playing): no rebuffer.
        try memory.expectKPI("rebuffer_count", 0, within: 0)
        try memory.expectKPI("playback_failure", 0, within: 0)
        try memory.expectKPI("exits_before_video_start", 0, within: 0)
        let kpis = try #require(memory.kpis().values.first)
        let startup = try #require(kpis.videoStartupTime)
        #expect(startup > .zero && startup < .seconds(2))
        let playing = try #require(kpis.playingTime)
        #expect(playing > .seconds(2) && playing < .seconds(5))
        #expect(kpis.playoutDelay?.max == .seconds(1))
        #expect(kpis.playoutDelay?.p50 == .milliseconds(230))
        #expect(kpis.droppedFramePercentage != nil)
        #expect(kpis.endToEndLatency != nil)
        // The viewend record carries the same KPIs for the backends.
        let viewEnd = try #require(memory.records.last { $0.name == "viewend" })
        #expect(viewEnd[field: "playing_time"] == .double(playing.seconds))
    }
}

/// A backend that never answers until released: a server that accepted and stalled.
final class StalledTelemetryBackend: TelemetryBackend {
    let name = "stalled"
    private let open = LockedValue(false)
    func deliver(_ batch: [TelemetryRecord]) throws(TelemetryDeliveryError) {
        while !open.withLock({ $0 }) { Thread.sleep(forTimeInterval: 0.001) }
    }
    func release() { open.withLock { $0 = true } }
}

// Weight 2: a publisher and a subscriber in this process; at weight 1, beside the rest of the suite,
// 11 of 90 frames came late once.
@Suite("Subscriber with a stalled telemetry backend", .realTime(weight: 2), .serialized)
struct SubscriberStalledTelemetryTests {
    @Test("a stalled backend costs the media nothing: every frame renders, its queue stays bounded, its drops are reported")
    func stalled() throws {
        let stalled = StalledTelemetryBackend()
        let memory = InMemoryTelemetryBackend()
        let instrument = try TelemetryInstrument(
            backends: [stalled],
            configuration: .init(hub: .init(heartbeatInterval: .milliseconds(100)), delivery: .init(capacity: 5, maximumBatchSize: 2, linger: .zero)))
        try instrument.addBackend(memory, delivery: .init())  // its own queue, of the default size
        let publisher = try Publisher(options: .init(
            destination: try Publisher.freeLoopbackDestination(),
            video: .init(codec: .h264, width: 320, height: 180, frameRate: 30, bitrate: 300_000, keyframeInterval: 30),
            keyingMaterial: .random(for: .aesCM128HMACSHA1_80), duration: .seconds(3)))
        let subscriber = try Subscriber(
            sessionDescription: publisher.sessionDescription, options: .init(duration: .seconds(4), telemetry: instrument))
        try subscriber.start()
        try publisher.start()
        let sent = try publisher.waitUntilEnded()
        let final = subscriber.waitUntilEnded()
        let depth = instrument.currentStatistics().backends.first { $0.name == "stalled" }?.queueDepth ?? -1
        #expect(depth >= 0 && depth <= 5 + 2)
        stalled.release()
        let report = instrument.shutdown(timeout: .seconds(5))
        #expect(final.total.packetsLost == 0)
        let video = try #require(final.video)
        #expect(video.framesRendered + video.framesDropped + video.bufferedFrames == video.framesReceived, "\(video)")
        // A backend that held up the media would cost nearly every frame after its queue filled;
        // a busy machine makes a few late (11 of 90 beside the suite, once).
        #expect(video.framesDropped <= video.framesReceived / 5, "\(video)")
        #expect(video.framesReceived >= (sent.tracks[.video]?.framesSent ?? 0) * 9 / 10, "\(sent)")
        let drops = report.undelivered["stalled"]?[.queueFull] ?? 0
        #expect(drops > 0, "\(report)")
        #expect(report.undelivered["memory"] == nil, "\(report)")
        try memory.expectEvents(["play", "playing", "ended", "viewend"], match: .inOrder)
    }
}
