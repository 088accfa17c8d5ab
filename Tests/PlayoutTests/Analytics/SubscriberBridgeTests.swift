import Playout
import PlayoutAnalytics
import PlayoutCore
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
}
