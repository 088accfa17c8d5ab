@testable import Playout
import Testing

@Suite("Event loop: the order a worker takes its due turns in")
struct DueOrderTests {
    @Test("the earliest wake first, ties in slot order; turns not due yet and empty slots (.max) left out; the list reused")
    func earliestFirst() {
        var order = [99, 98]
        // Slot 0: a turn asked for at once (0); slots 2 and 5 due at the same instant; slot 4 empty.
        let wakes: [Int64] = [0, 1_300, 1_200, 2_001, .max, 1_200, 900]
        SubscriptionEventLoop.dueOrder(wakes, by: 2_000, into: &order)
        #expect(order == [0, 6, 2, 5, 1])
        SubscriptionEventLoop.dueOrder(wakes, by: -1, into: &order)
        #expect(order.isEmpty)
        SubscriptionEventLoop.dueOrder([], by: 2_000, into: &order)
        #expect(order.isEmpty)
    }

    @Test("a sweep of many slots due in reverse slot order is taken from the last slot to the first")
    func reverse() {
        var order: [Int] = []
        let wakes = (0..<250).map { Int64(10_000 - $0) }
        SubscriptionEventLoop.dueOrder(wakes, by: 10_000, into: &order)
        #expect(order == Array((0..<250).reversed()))
    }
}
