import PlayoutAnalytics
import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Testing

/// The one options type every adapter takes: conformance log, logger, quiet mode.
@Suite("Adapter options: one shape for every adapter; quiet mode checks calls and sends nothing")
struct AdapterOptionsTests {
    static func engine(_ memory: InMemoryTelemetryBackend) throws -> TelemetryInstrument {
        try TelemetryInstrument(backends: [memory], configuration: .init(delivery: .init(linger: .zero), engineId: "q"), clock: ManualClock(), driver: .embedded)
    }

    @Test("Mux, quiet: the calls are recorded, no record reaches the backend")
    func muxQuiet() throws {
        let memory = InMemoryTelemetryBackend()
        let instrument = try Self.engine(memory)
        let mux = MuxCore(instrument: instrument, options: .conformance(quiet: true))
        mux.dispatchGlobalDataEvent(MuxGlobalData(environmentKey: "env"))
        mux.dispatch(.viewInit, player: "main")
        mux.dispatch(.play, player: "main")
        #expect(instrument.flush())
        #expect(memory.records.isEmpty)
        #expect(mux.conformance?.calls.map(\.name).count == 3)
    }

    @Test("OpenAVT, quiet: actions are checked by the hub, nothing is sent; a shared log is the caller's")
    func openAVTQuiet() throws {
        let memory = InMemoryTelemetryBackend()
        let engine = try Self.engine(InMemoryTelemetryBackend(name: "engine"))
        let log = ConformanceLog<OpenAVTRule>()
        let instrument = try OpenAVTInstrument(engine: engine, backend: memory, options: .init(conformance: log, quiet: true))
        let tracker = instrument.addTracker()
        instrument.ready()
        instrument.emit(action: .streamLoad, trackerId: tracker)
        instrument.emit(action: .start, trackerId: tracker)
        #expect(engine.flush())
        #expect(memory.records.isEmpty)
        #expect(instrument.conformance === log)
    }

    @Test("Nielsen, quiet: a session's calls change the SDK's state, no event is sent")
    func nielsenQuiet() throws {
        let memory = InMemoryTelemetryBackend()
        let instrument = try Self.engine(memory)
        let nielsen = NielsenAppSDK(
            appInfo: ["appid": "PE4D5C2A1-0B1C-4D2E-8F3A-5B6C7D8E9F00"], instrument: instrument, options: .init(quiet: true),
            clock: instrument.clock)
        nielsen.play(["channelName": "news"])
        #expect(instrument.flush())
        #expect(memory.records.isEmpty)
        #expect(nielsen.conformance == nil)
    }
}
