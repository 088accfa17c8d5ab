import PlayoutCore
@testable import PlayoutSwarm
import Synchronization
import Testing

@Suite("Swarm connector: viewers opened on a fixed pool of threads, side by side")
struct SwarmConnectorTests {
    @Test("Jobs run side by side on its threads (each waits for all to have begun), waitUntilIdle returns once all ran, shutdown ends the threads")
    func sideBySide() throws {
        let connector = try SwarmConnector(threads: 4)
        let begun = Atomic(0)
        let finished = Atomic(0)
        for _ in 0..<4 {
            connector.submit {
                begun.add(1, ordering: .relaxed)
                // Waits until all four began: only four threads side by side get past this (one at a
                // time would give up after 10,000 looks and not count).
                var looks = 0
                while begun.load(ordering: .relaxed) < 4, looks < 10_000 {
                    sleepUntil(MonotonicClock().now.advanced(by: .milliseconds(1)))
                    looks += 1
                }
                if begun.load(ordering: .relaxed) == 4 { finished.add(1, ordering: .relaxed) }
            }
        }
        connector.waitUntilIdle()
        #expect(finished.load(ordering: .relaxed) == 4)
        for _ in 0..<100 { connector.submit { finished.add(1, ordering: .relaxed) } }
        connector.shutdown()  // what was queued runs first
        #expect(finished.load(ordering: .relaxed) == 104)
    }
}
