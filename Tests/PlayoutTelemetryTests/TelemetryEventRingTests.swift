@testable import PlayoutTelemetry
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Telemetry event ring: bounded, lock-free, never waits")
struct TelemetryEventRingTests {
    @Test("a full ring refuses a push at once; pops come oldest first")
    func bounded() {
        let ring = TelemetryEventRing<Int>(capacity: 3)
        #expect(ring.slotCount == 4)
        for value in 0..<4 { #expect(ring.push(value)) }
        #expect(!ring.push(4))
        #expect(ring.approximateCount == 4)
        #expect(ring.pop() == 0)
        #expect(ring.push(5))
        var drained: [Int] = []
        while let value = ring.pop() { drained.append(value) }
        #expect(drained == [1, 2, 3, 5])
        #expect(ring.pop() == nil)
        #expect(ring.approximateCount == 0)
    }

    @Test("four producers and one consumer: every accepted value arrives exactly once, each producer's in order")
    func concurrent() async {
        final class Counts: Sendable {
            let finished = Atomic<Int>(0)
            let accepted = Atomic<Int>(0)
        }
        let ring = TelemetryEventRing<Int>(capacity: 256)
        let counts = Counts()
        let perProducer = 20_000
        for producer in 0..<4 {
            Task.detached {
                var count = 0
                for index in 0..<perProducer where ring.push(producer * 1_000_000 + index) { count += 1 }
                counts.accepted.add(count, ordering: .relaxed)
                counts.finished.add(1, ordering: .releasing)
            }
        }
        var received: [Int] = []
        var last = [Int](repeating: -1, count: 4)
        var inOrder = true
        while true {
            let done = counts.finished.load(ordering: .acquiring) == 4
            while let value = ring.pop() {
                received.append(value)
                let producer = value / 1_000_000
                if value % 1_000_000 <= last[producer] { inOrder = false }
                last[producer] = value % 1_000_000
            }
            if done { break }
            await Task.yield()
        }
        #expect(inOrder)
        #expect(Set(received).count == received.count)
        #expect(received.count == counts.accepted.load(ordering: .relaxed))
        #expect(received.count >= 256)
    }
}
