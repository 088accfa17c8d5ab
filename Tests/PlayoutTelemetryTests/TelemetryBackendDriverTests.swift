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
        driver.enqueue(.records([Self.record]))
        driver.beginFinishing(deadline: MonotonicClock().now.advanced(by: .seconds(5)))
        let final = driver.waitUntilFinished()
        #expect(final.delivered == 1)
        #expect(memory.isClosed)
        driver.enqueue(.records([Self.record, Self.record, Self.record]))
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
        for _ in 0..<10 { driver.enqueue(.records([Self.record])) }
        driver.beginFinishing(deadline: MonotonicClock().now.advanced(by: .seconds(5)))
        _ = driver.waitUntilFinished()
        let threads = backend.threads.withLock { $0 }
        #expect(!threads.isEmpty)
        #expect(threads.allSatisfy { pthread_equal($0, pthread_self()) == 0 })
        #expect(backend.closes.withLock { $0 } == 1)
    }

    /// README's own-backend example, as written there.
    final class EventCounter: TelemetryBackend, @unchecked Sendable {
        let name = "counter"
        private(set) var counts: [String: Int] = [:]   // this backend's thread only
        func deliver(_ batch: [TelemetryRecord]) throws(TelemetryDeliveryError) { try deliver(TelemetryBatch(batch)) }
        func deliver(_ batch: TelemetryBatch) throws(TelemetryDeliveryError) {
            for record in batch where record.kind == .event { counts[record.name, default: 0] += 1 }
        }
    }

    @Test("records reach a backend as the arrays handed in: a batch-taking backend walks them, an array-taking one gets the very array")
    func arraysUncopied() throws {
        final class Arrays: TelemetryBackend {
            let name = "arrays"
            let storages = LockedValue<[UnsafeRawPointer?]>([])
            func deliver(_ batch: [TelemetryRecord]) throws(TelemetryDeliveryError) {
                storages.withLock { $0.append(batch.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }) }
            }
        }
        let counter = EventCounter()
        let arrays = Arrays()
        let records = ["play", "playing", "pause"].enumerated().map {
            TelemetryRecord(sessionId: "s", seq: UInt64($0.offset), monotonic: .zero, wallTimeNanoseconds: 0, kind: .event, name: $0.element)
        }
        for backend in [counter, arrays] as [any TelemetryBackend] {
            let driver = TelemetryBackendDriver(backend: backend, configuration: .init(linger: .zero), seed: 1, clock: MonotonicClock())
            try driver.start()
            driver.enqueue(.records(records))
            driver.beginFinishing(deadline: MonotonicClock().now.advanced(by: .seconds(5)))
            #expect(driver.waitUntilFinished().delivered == 3)
        }
        #expect(counter.counts == ["play": 1, "playing": 1, "pause": 1])
        #expect(arrays.storages.withLock { $0 } == [records.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }])
    }
}
