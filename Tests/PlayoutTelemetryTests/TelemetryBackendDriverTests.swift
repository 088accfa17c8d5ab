import PlayoutCore
@testable import PlayoutTelemetry
import PlayoutTesting
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Telemetry backend driver: one backend's thread")
struct TelemetryBackendDriverTests {
    static let record = TelemetryRecord(sessionId: "s", seq: 0, monotonic: .zero, wallTimeNanoseconds: 0, kind: .event, name: "play")

    @Test("records handed in after the backend's thread ended are counted as undelivered, never kept or lost silently")
    func lateRecords() throws {
        let memory = InMemoryTelemetryBackend()
        let driver = TelemetryBackendDriver(backend: memory, configuration: .init(linger: .zero), seed: 1, clock: MonotonicClock())
        try driver.start()
        driver.enqueue([Self.record])
        driver.beginFinishing(deadline: MonotonicClock().now.advanced(by: .seconds(5)))
        let final = driver.waitUntilFinished()
        #expect(final.delivered == 1)
        #expect(memory.isClosed)
        driver.enqueue([Self.record, Self.record, Self.record])
        let late = driver.statistics
        #expect(late.drops == [.shutdown: 3])
        #expect(late.queueDepth == 0)
        #expect(memory.records.count == 1)
    }

    @Test("the backend is called on the driver's thread, never the enqueuing one, and closed once")
    func ownThread() throws {
        final class ThreadRecorder: TelemetryBackend {
            let name = "threads"
            let threads = LockedValue<[pthread_t]>([])
            let closes = LockedValue(0)
            func deliver(_ batch: [TelemetryRecord]) throws(TelemetryDeliveryError) { threads.withLock { $0.append(pthread_self()) } }
            func close() { closes.withLock { $0 += 1 } }
        }
        let backend = ThreadRecorder()
        let driver = TelemetryBackendDriver(backend: backend, configuration: .init(linger: .zero), seed: 1, clock: MonotonicClock())
        try driver.start()
        for _ in 0..<10 { driver.enqueue([Self.record]) }
        driver.beginFinishing(deadline: MonotonicClock().now.advanced(by: .seconds(5)))
        _ = driver.waitUntilFinished()
        let threads = backend.threads.withLock { $0 }
        #expect(!threads.isEmpty)
        #expect(threads.allSatisfy { pthread_equal($0, pthread_self()) == 0 })
        #expect(backend.closes.withLock { $0 } == 1)
    }
}
