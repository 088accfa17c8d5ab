import Playout
import PlayoutAnalytics
import PlayoutCore
import PlayoutSender
import PlayoutTelemetry
import PlayoutTesting
import Testing

/// The adapters' bridges on a whole subscription advanced by the embedded driver, reporting into an
/// embedded engine: one manual clock, no thread, no socket, no sleep (the real-time runs over
/// loopback are in IntegrationTests/Analytics).
@Suite("Subscriber bridges on the embedded driver and the engine's embedded step")
struct SubscriberBridgeTests {
    /// A 3 s subscription of a simulated stream, with a bridge made by `attach`, run to its end.
    static func run<Bridge>(
        _ memory: InMemoryTelemetryBackend, attach: (Subscriber, TelemetryInstrument) throws -> Bridge
    ) throws -> (final: SubscriberQoS, bridge: Bridge, instrument: TelemetryInstrument) {
        let clock = ManualClock()
        let instrument = try TelemetryInstrument(
            backends: [memory], configuration: .init(delivery: .init(linger: .zero), engineId: "e"), clock: clock, driver: .embedded)
        let stream = SimulatedStream()
        var options = Subscriber.Options(duration: .seconds(3), clock: clock)
        options.seed = 1
        let subscriber = try Subscriber(sessionDescription: stream.sessionDescription, options: options)
        let bridge = try attach(subscriber, instrument)
        let driver = try EmbeddedDriver(subscriber)
        let final = driver.run(try stream.datagrams(for: .zero..<Duration.seconds(3), origin: clock.now))
        return (final, bridge, instrument)
    }

    @Test("Mux: the subscription's story becomes Mux's events, and the bridge ends the view by itself")
    func mux() throws {
        let memory = InMemoryTelemetryBackend()
        let (final, _, instrument) = try Self.run(memory) { subscriber, instrument in
            let mux = MuxCore(instrument: instrument)
            mux.dispatchGlobalDataEvent(MuxGlobalData(environmentKey: "env-test"))
            return MuxSubscriberBridge(subscriber: subscriber, mux: mux, player: "main")
        }
        #expect(final.state == .ended)
        #expect(instrument.flush())  // the engine's embedded step: delivered on this thread
        try memory.expectEvents(["viewinit", "playerready", "play", "playing", "ended", "viewend"], match: .inOrder)
        instrument.shutdown(timeout: .zero)
    }

    @Test("OpenAVT: actions from the one feed, a last Ping with the final sample without a call to finish")
    func openAVT() throws {
        let memory = InMemoryTelemetryBackend()
        let (final, bridge, engine) = try Self.run(memory) { subscriber, engine in
            let instrument = try OpenAVTInstrument(engine: engine, backend: InMemoryTelemetryBackend(name: "openavt"))
            let tracker = instrument.addTracker(name: "subscriber")
            instrument.ready()
            return OpenAVTSubscriberBridge(subscriber: subscriber, instrument: instrument, trackerId: tracker)
        }
        #expect(final.state == .ended)
        #expect(engine.flush())
        try memory.expectEvents(["viewinit", "play", "playing", "ended"], match: .inOrder)
        let qos = SubscriberTelemetryTranslator.heartbeatFields(final)
        let lastPing = memory.records.last { $0.kind == .heartbeat }
        #expect(lastPing.map { record in qos.allSatisfy(record.fields.contains) } == true)
        _ = bridge
        engine.shutdown(timeout: .zero)
    }

    @Test("Mux: the playing after a delay pause carries the instant rendering resumed, not the next QoS sample's")
    func muxDelayPauseEndsWhenRenderingResumes() throws {
        let clock = ManualClock()
        let origin = clock.now
        let memory = InMemoryTelemetryBackend()
        let instrument = try TelemetryInstrument(
            backends: [memory], configuration: .init(delivery: .init(linger: .zero), engineId: "e"), clock: clock, driver: .embedded)
        let stream = SimulatedStream()
        var options = Subscriber.Options(duration: .seconds(5), clock: clock)
        options.seed = 1
        options.frameLogCapacity = 1_000
        options.overrides = [ScheduledOverride(delay: .seconds(2), at: .milliseconds(1_500))]
        let subscriber = try Subscriber(sessionDescription: stream.sessionDescription, options: options)
        let mux = MuxCore(instrument: instrument)
        mux.dispatchGlobalDataEvent(MuxGlobalData(environmentKey: "env-test"))
        let bridge = MuxSubscriberBridge(subscriber: subscriber, mux: mux, player: "main")
        let driver = try EmbeddedDriver(subscriber)
        let final = driver.run(try stream.datagrams(for: .zero..<Duration.seconds(5), origin: origin))
        #expect(final.total.delayPauseCount == 1)
        #expect(instrument.flush())

        // The frame log says when rendering resumed: the first frame shown after the pause.
        let frames = try #require(subscriber.frameLog).snapshot().frames.filter { !$0.skipped }
        let gap = try #require(zip(frames, frames.dropFirst()).first { $0.0.shown.duration(to: $0.1.shown) > .seconds(1) })
        let resumed = gap.1.shown
        #expect(subscriber.delayPauseEnded.value == resumed)
        let events = memory.records.filter { $0.kind == .event }
        let pause = try #require(events.firstIndex { $0.name == "pause" })
        let playing = try #require(events[pause...].first { $0.name == "playing" })
        #expect(playing.monotonic == origin.duration(to: resumed))
        _ = bridge
        instrument.shutdown(timeout: .zero)
    }

    @Test("One session per subscriber: a bridge on the instrument the subscriber reports into tells its one view; two only when asked", arguments: [false, true])
    func oneSessionPerSubscriber(beside: Bool) throws {
        let clock = ManualClock()
        let memory = InMemoryTelemetryBackend()
        let instrument = try TelemetryInstrument(
            backends: [memory], configuration: .init(delivery: .init(linger: .zero), engineId: "e"), clock: clock, driver: .embedded)
        let stream = SimulatedStream()
        var options = Subscriber.Options(duration: .seconds(2), telemetry: instrument, clock: clock)
        options.seed = 1
        options.telemetrySessionBesideAnalytics = beside
        let subscriber = try Subscriber(sessionDescription: stream.sessionDescription, options: options)
        let mux = MuxCore(instrument: instrument)
        mux.dispatchGlobalDataEvent(MuxGlobalData(environmentKey: "env-test"))
        let bridge = MuxSubscriberBridge(subscriber: subscriber, mux: mux, player: "main")
        let driver = try EmbeddedDriver(subscriber)
        _ = driver.run(try stream.datagrams(for: .zero..<Duration.seconds(2), origin: clock.now))
        #expect(instrument.flush())
        #expect(memory.sessionIds.count == (beside ? 2 : 1), "\(memory.sessionIds)")
        let session = try memory.session(player: "main")
        if !beside { #expect(memory.sessionIds == [session]) }
        try memory.expectKPI("playing_time", in: 1.5...2, session: session)
        _ = bridge
        instrument.shutdown(timeout: .zero)
    }

    /// Issue 28's newcomer: a Mux-shaped view of a stream with 2 % loss and a 2 s override held
    /// for 5 s. The numbers must be the player's: the playing time is the run less startup and
    /// the delay pause, the bitrate the video's over the view, the dropped frames the video's
    /// unintended drops (not the skips of the release).
    @Test("Mux: 2 % loss and a 2 s override for 5 s — playing time, bitrate, fps and dropped frames are what the viewer saw")
    func muxNewcomerScenario() throws {
        let clock = ManualClock()
        let origin = clock.now
        let memory = InMemoryTelemetryBackend()
        let instrument = try TelemetryInstrument(
            backends: [memory], configuration: .init(delivery: .init(linger: .zero), engineId: "e"), clock: clock, driver: .embedded)
        let stream = SimulatedStream(.init(impairment: .init(loss: 0.02, seed: 7)))
        let run = Duration.seconds(12)
        var options = Subscriber.Options(duration: run, clock: clock)
        options.seed = 1
        options.overrides = [ScheduledOverride(delay: .seconds(2), at: .seconds(3), hold: .seconds(5))]
        let subscriber = try Subscriber(sessionDescription: stream.sessionDescription, options: options)
        let mux = MuxCore(instrument: instrument)
        mux.dispatchGlobalDataEvent(MuxGlobalData(environmentKey: "env-test"))
        let bridge = MuxSubscriberBridge(subscriber: subscriber, mux: mux, player: "main")
        let driver = try EmbeddedDriver(subscriber)
        let final = driver.run(try stream.datagrams(for: .zero..<run, origin: origin))
        #expect(instrument.flush())
        let video = try #require(final.video)
        #expect(video.packetsLost > 0)
        #expect(final.total.delayPauseCount == 1)
        #expect(video.framesSkipped > 0)  // the release skipped what was late

        let session = try memory.session(player: "main")
        let kpis = try #require(memory.kpis()[session])
        let frameInterval = 1.0 / 30
        let startup = try #require(kpis.videoStartupTime)
        // The delay pause the viewer saw: from the override to the first frame shown after it.
        // The scheduler counts less as the pause (video.totalDelayPausesDuration): frames lost
        // just before the override froze the picture first, and that part of the gap is a freeze,
        // which a Mux player plays through.
        let resumed = try #require(subscriber.delayPauseEnded.value)
        let paused = origin.advanced(by: .seconds(3)).duration(to: resumed)
        #expect(video.totalDelayPausesDuration <= paused && paused <= .seconds(2) + .milliseconds(500))
        let expectedPlaying = final.elapsed - startup - paused
        let playing = try #require(kpis.playingTime)
        #expect(abs((playing - expectedPlaying).seconds) <= frameInterval, "playing \(playing), expected \(expectedPlaying)")
        // No stall while the override holds the picture, though loss keeps frames in the jitter buffer.
        #expect(!memory.records.contains { $0.kind == .event && $0.name == "error" })

        let videoAverage = Double(video.bytesReceived) * 8 / final.elapsed.seconds
        let bitrate = try #require(kpis.weightedAverageBitrate)
        #expect(abs(bitrate - videoAverage) <= 0.05 * videoAverage, "weighted_average_bitrate \(bitrate), video average \(videoAverage)")

        let records = memory.records.filter { $0.sessionId == session }
        let fps = records.compactMap { record in record.fields.first { $0.name == "framesPerSecond" }?.value.number }
        #expect(fps.count >= 10 && fps.last == video.framesPerSecond)  // one per sample, the last the final window's
        let dropped = records.compactMap { record in record.tags.first { $0.name == "view_dropped_frame_count" }?.value.number
            ?? record.fields.first { $0.name == "view_dropped_frame_count" }?.value.number }
        #expect(dropped.last == Double(video.framesDropped - video.framesSkipped))
        #expect(dropped.last.map { $0 > 0 && $0 < Double(video.framesDropped) } == true)
        _ = bridge
        instrument.shutdown(timeout: .zero)
    }
}
