import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A backend that notes whether each delivery ran on the thread that created it.
final class ThreadNotingBackend: TelemetryBackend, Sendable {
    let name = "noting"
    let memory = InMemoryTelemetryBackend(name: "inner")
    private let creator = pthread_self()
    private let elsewhere = Atomic<Int>(0)
    func deliver(_ batch: [TelemetryRecord]) throws(TelemetryDeliveryError) {
        if pthread_equal(pthread_self(), creator) == 0 { elsewhere.add(1, ordering: .relaxed) }
        try memory.deliver(batch)
    }
    var deliveriesElsewhere: Int { elsewhere.load(ordering: .relaxed) }
}

@Suite("Telemetry engine, embedded: the sans-IO step on a manual clock, no thread")
struct TelemetryEmbeddedTests {
    @Test("step() does what is due at the clock's instant on the caller's thread; nextWake says when the next heartbeat is due")
    func stepsOnTheCallersThread() throws {
        let clock = ManualClock()
        let backend = ThreadNotingBackend()
        let instrument = try TelemetryInstrument(
            backends: [backend], configuration: .init(hub: .init(heartbeatInterval: .seconds(10)), delivery: .init(linger: .zero), engineId: "e"),
            clock: clock, driver: .embedded)
        let tracker = instrument.makeTracker(name: "player")
        tracker.setHeartbeatProvider { [TelemetryField("bitrate", .double(3e6))] }
        tracker.ready()
        tracker.emit(.play)
        tracker.emit(.playing)
        #expect(backend.memory.records.isEmpty)  // nothing happens until the caller steps
        #expect(instrument.step())
        #expect(backend.memory.eventNames() == ["viewinit", "play", "playing"])
        #expect(instrument.nextWake == MonotonicInstant.zero.advanced(by: .seconds(10)))
        clock.advance(by: .seconds(10))
        #expect(instrument.step())
        #expect(backend.memory.records.last?.kind == .heartbeat)
        #expect(instrument.step() == false)  // nothing more is due
        let report = instrument.shutdown(timeout: .zero)  // the clock does not move: nothing is cut off
        #expect(backend.memory.eventNames() == ["viewinit", "play", "playing", "viewend"])
        #expect(report.isComplete)
        #expect(backend.deliveriesElsewhere == 0)
    }

    @Test("with the thread driver step() does nothing: the engine's thread steps")
    func threadDriverIgnoresStep() throws {
        let memory = InMemoryTelemetryBackend()
        let instrument = try TelemetryInstrument(backends: [memory], configuration: .init(delivery: .init(linger: .zero)), clock: ManualClock())
        instrument.makeTracker(name: "player").ready()
        #expect(instrument.step() == false)
        #expect(instrument.flush())  // waits on the engine's signal
        #expect(memory.eventNames() == ["viewinit"])
        instrument.shutdown(timeout: .seconds(5))
    }
}
