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

    @Test("a slot that only reads ahead counts as due the read-ahead slack after its wake; ties in slot order")
    func readingAheadLater() {
        var order: [Int] = []
        let slack = SubscriptionEventLoop.readAheadSlack.nanoseconds
        // Slot 1 read ahead from 100: it goes after the turns due before 100 + slack (slots 2, 5
        // and 0), before those due after (slot 6); slot 3, from 200, after slot 6; slot 4 is not due.
        let wakes: [Int64] = [500, 100, 300, 200, slack * 3, 400, 100 + slack + 1]
        let readingAhead = [false, true, false, true, true, false, false]
        SubscriptionEventLoop.dueOrder(wakes, readingAhead: readingAhead, by: slack * 2, into: &order)
        #expect(order == [2, 5, 0, 1, 6, 3])
        // Without the flags (or with none set): by wake alone.
        SubscriptionEventLoop.dueOrder(wakes, by: slack * 2, into: &order)
        #expect(order == [1, 3, 2, 5, 0, 6])
        SubscriptionEventLoop.dueOrder(wakes, readingAhead: wakes.map { _ in false }, by: slack * 2, into: &order)
        #expect(order == [1, 3, 2, 5, 0, 6])
    }

    @Test("a sweep of many slots due in reverse slot order is taken from the last slot to the first")
    func reverse() {
        var order: [Int] = []
        let wakes = (0..<250).map { Int64(10_000 - $0) }
        SubscriptionEventLoop.dueOrder(wakes, by: 10_000, into: &order)
        #expect(order == Array((0..<250).reversed()))
    }
}
