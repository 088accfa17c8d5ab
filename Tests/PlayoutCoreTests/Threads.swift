import Foundation
import PlayoutCore
import PlayoutTesting
import Synchronization

/// Runs `body(i)` for i in 0..<count on `count` dedicated threads released together, and returns
/// when all have finished. Real threads (not a pool capped at the core count), so contention is real.
func runOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let ready = Atomic<Int>(0)
    let finished = DispatchGroup()
    for index in 0..<count {
        finished.enter()
        let thread = Thread {
            ready.add(1, ordering: .relaxed)
            while ready.load(ordering: .relaxed) < count { sched_yield() }
            body(index)
            finished.leave()
        }
        thread.start()
    }
    finished.wait()
}

/// A thread-safe list of values delivered to one observer.
final class Recorder<Value: Sendable>: Sendable {
    private let storage = LockedValue<[Value]>([])

    func append(_ value: Value) {
        storage.withLock { $0.append(value) }
    }

    var values: [Value] {
        storage.withLock { $0 }
    }

    var last: Value? {
        storage.withLock { $0.last }
    }

    var count: Int {
        storage.withLock { $0.count }
    }
}

extension Array where Element: Comparable {
    var isStrictlyIncreasing: Bool {
        zip(self, dropFirst()).allSatisfy { $0 < $1 }
    }
}
