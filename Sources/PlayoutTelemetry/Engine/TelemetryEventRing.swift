import Synchronization

/// A bounded multi-producer, single-consumer ring of preallocated slots (Dmitry Vyukov's bounded
/// queue): trackers on any thread push without a lock and without allocating, the engine's thread
/// pops. When the ring is full a push fails at once (the caller counts the drop): a producer never
/// waits for the consumer.
///
/// - Complexity: push and pop O(1); one compare-and-swap per push when uncontended.
final class TelemetryEventRing<Element>: @unchecked Sendable {
    private let capacity: Int
    private let mask: Int
    private let sequences: UnsafeMutablePointer<Atomic<Int>>
    private let slots: UnsafeMutablePointer<Element>
    private let enqueuePosition = Atomic<Int>(0)
    private var dequeuePosition = 0  // consumer only

    /// A ring of at least `capacity` slots (rounded up to a power of two, at least 2).
    init(capacity: Int) {
        var size = 2
        while size < capacity { size <<= 1 }
        self.capacity = size
        mask = size - 1
        sequences = .allocate(capacity: size)
        for index in 0..<size { (sequences + index).initialize(to: Atomic(index)) }
        slots = .allocate(capacity: size)
    }

    deinit {
        while pop() != nil {}
        sequences.deinitialize(count: capacity)
        sequences.deallocate()
        slots.deallocate()
    }

    /// The number of slots.
    var slotCount: Int { capacity }

    /// Appends `element`; false (and `element` not stored) when the ring is full.
    func push(_ element: consuming Element) -> Bool {
        var position = enqueuePosition.load(ordering: .relaxed)
        while true {
            let index = position & mask
            let sequence = sequences[index].load(ordering: .acquiring)
            let difference = sequence &- position
            if difference == 0 {
                let (exchanged, original) = enqueuePosition.weakCompareExchange(
                    expected: position, desired: position &+ 1, ordering: .relaxed)
                if exchanged {
                    (slots + index).initialize(to: element)
                    sequences[index].store(position &+ 1, ordering: .releasing)
                    return true
                }
                position = original
            } else if difference < 0 {
                return false
            } else {
                position = enqueuePosition.load(ordering: .relaxed)
            }
        }
    }

    /// Removes the oldest element (consumer thread only); nil when empty.
    func pop() -> Element? {
        let index = dequeuePosition & mask
        let sequence = sequences[index].load(ordering: .acquiring)
        guard sequence &- (dequeuePosition &+ 1) == 0 else { return nil }
        let element = (slots + index).move()
        sequences[index].store(dequeuePosition &+ capacity, ordering: .releasing)
        dequeuePosition &+= 1
        consumedCount.store(dequeuePosition, ordering: .releasing)
        return element
    }

    /// Elements pushed so far (refused pushes not counted).
    var pushedCount: Int { enqueuePosition.load(ordering: .acquiring) }

    /// Elements popped so far.
    var poppedCount: Int { consumedCount.load(ordering: .acquiring) }

    /// About how many elements are queued (exact when no push is in progress).
    var approximateCount: Int {
        max(0, enqueuePosition.load(ordering: .relaxed) &- consumedCount.load(ordering: .relaxed))
    }

    private let consumedCount = Atomic<Int>(0)
}
