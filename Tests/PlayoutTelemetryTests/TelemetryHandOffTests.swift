import Dispatch
import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Testing

@Suite("Telemetry hand-off: a callback once earlier events reached every backend")
struct TelemetryHandOffTests {
    func makeInstrument(_ backends: [any TelemetryBackend], clock: ManualClock, linger: Duration = .zero) throws -> TelemetryInstrument {
        try TelemetryInstrument(
            backends: backends, configuration: .init(delivery: .init(linger: linger, maximumAttempts: 1), engineId: "e"), clock: clock,
            wallClockNanoseconds: 0, driver: .embedded)
    }

    /// Waits (real time, bounded) for the callback; returns what it captured.
    func handedOff<T: Sendable>(_ instrument: TelemetryInstrument, capture: @escaping @Sendable () -> T) -> T? {
        let done = DispatchSemaphore(value: 0)
        let captured = LockedValue<T?>(nil)
        instrument.whenHandedOff {
            captured.withLock { $0 = capture() }
            done.signal()
        }
        guard done.wait(timeout: .now() + 10) == .success else { return nil }
        return captured.withLock { $0 }
    }

    @Test("the callback runs after the events emitted before it are in every backend, though batches linger for an hour")
    func afterEveryBackend() throws {
        let clock = ManualClock()
        let first = InMemoryTelemetryBackend(name: "a")
        let second = InMemoryTelemetryBackend(name: "b")
        let instrument = try makeInstrument([first, second], clock: clock, linger: .seconds(3_600))
        let tracker = instrument.makeTracker(name: "player")
        tracker.ready()
        tracker.emit(.play)
        tracker.emit(.viewEnd)
        let seen = handedOff(instrument) { (first.eventNames(), second.eventNames()) }
        #expect(seen?.0 == ["viewinit", "play", "viewend"])
        #expect(seen?.1 == ["viewinit", "play", "viewend"])
        instrument.shutdown(timeout: .seconds(1))
    }

    @Test("a backend that refuses the records settles them as dropped: the callback still comes, and the drop is counted")
    func droppedCounts() throws {
        let clock = ManualClock()
        let refusing = InMemoryTelemetryBackend(name: "refusing")
        refusing.setFailure(TelemetryDeliveryError("HTTP 400", retryable: false))
        let instrument = try makeInstrument([refusing], clock: clock)
        instrument.makeTracker(name: "player").ready()
        let dropped = handedOff(instrument) { instrument.currentStatistics().backends.first?.dropped }
        #expect(dropped == 1)
        instrument.shutdown(timeout: .seconds(1))
    }

    @Test("with no backend, or after shutdown, the callback comes at once")
    func noBackendAndAfterShutdown() throws {
        let instrument = try makeInstrument([], clock: ManualClock())
        instrument.makeTracker(name: "player").ready()
        #expect(handedOff(instrument) { true } == true)
        let memory = InMemoryTelemetryBackend()
        let stopped = try makeInstrument([memory], clock: ManualClock())
        stopped.makeTracker(name: "player").ready()
        stopped.shutdown(timeout: .seconds(1))
        #expect(handedOff(stopped) { memory.eventNames() } == ["viewinit", "viewend"])
    }
}
