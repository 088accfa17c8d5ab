import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Testing

@Suite("Telemetry instrument: replacing a backend while running")
struct TelemetryReplaceBackendTests {
    @Test("records built before the swap go to the old backend (drained, closed), after it to the new one: none to both, none lost")
    func replace() throws {
        let clock = ManualClock()
        let old = InMemoryTelemetryBackend(name: "memory")
        let other = InMemoryTelemetryBackend(name: "other")
        let instrument = try TelemetryInstrument(
            backends: [old, other], configuration: .init(delivery: .init(linger: .zero), engineId: "e"), clock: clock, driver: .embedded)
        let tracker = instrument.makeTracker(name: "player")
        tracker.ready()
        tracker.emit(.play)
        #expect(instrument.flush())
        let new = InMemoryTelemetryBackend(name: "memory")
        let statistics = try instrument.replaceBackend(named: "memory", with: new)
        #expect(statistics?.delivered == 2)
        #expect(old.isClosed)
        tracker.emit(.playing)
        instrument.shutdown(timeout: .seconds(2))
        #expect(old.eventNames() == ["viewinit", "play"])
        #expect(new.eventNames(session: "e-0-1") == ["playing", "viewend"])
        #expect(other.eventNames() == ["viewinit", "play", "playing", "viewend"])
        #expect(instrument.currentStatistics().backends.map(\.name).sorted() == ["memory", "memory", "other"])
    }

    @Test("replacing a backend that is not there adds the new one; after shutdown it throws")
    func missingAndAfterShutdown() throws {
        let instrument = try TelemetryInstrument(configuration: .init(delivery: .init(linger: .zero)), clock: ManualClock(), driver: .embedded)
        let added = InMemoryTelemetryBackend(name: "added")
        #expect(try instrument.replaceBackend(named: "absent", with: added) == nil)
        instrument.makeTracker(name: "t").ready()
        instrument.shutdown(timeout: .seconds(2))
        #expect(added.eventNames() == ["viewinit", "viewend"])
        #expect(throws: TelemetryEngineError.self) { try instrument.replaceBackend(named: "added", with: InMemoryTelemetryBackend()) }
    }
}
