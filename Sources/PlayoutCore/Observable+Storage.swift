#if canImport(Glibc)
public import Glibc
#elseif canImport(Darwin)
public import Darwin
#endif
public import Synchronization

// The machinery behind `Observable`. Public only as `@usableFromInline` so that the hot path
// (set, read, notify) is specialized for `Value` in the caller's module; not API.
//
// Model: one lock guards the value, its version and the bookkeeping; a *delivery token* (a flag
// under the lock) makes notification serial. Whoever takes the token notifies observers outside
// the lock, then re-checks under the lock whether anything changed meanwhile and, if so, delivers
// the newest value in another round. A set that finds the token taken only stores the value: the
// holder will deliver it. That gives in-order, never-stale delivery without holding a lock across
// callbacks.
//
// Observers live in `slots`, an array of unretained-at-call-time boxes read by the token holder
// without the lock. Only the token holder (or a lock holder while nobody has the token) touches
// `slots`; changes requested while a round is running (subscribe, dispose from another thread)
// are queued on intrusive lists and applied by the token holder between rounds.

/// The mutable state of an observable, kept behind a pointer so that accesses pay no runtime
/// exclusivity checks.
@usableFromInline
struct _ObservableState<Value> {
    @usableFromInline var value: Value
    /// Incremented by every effective set.
    @usableFromInline var version: UInt64 = 0
    /// The delivery token.
    @usableFromInline var isDelivering = false
    /// The thread holding the delivery token; meaningful while `isDelivering`.
    @usableFromInline var deliverer: pthread_t
    /// Incremented at the end of every round that applied deferred changes; waited on by
    /// disposals from other threads.
    @usableFromInline var roundCount: UInt64 = 0
    /// Observer slots `0..<count`. A slot is nil only transiently, while a disposed observer
    /// waits to be compacted away at the end of a round.
    @usableFromInline var slots: UnsafeMutablePointer<Unmanaged<_ObserverBox<Value>>?>
    @usableFromInline var count = 0
    @usableFromInline var capacity: Int
    /// Observers registered while a round was running (intrusive list through `next`).
    @usableFromInline var pendingAdds: _ObserverBox<Value>?
    /// Observers disposed while a round was running (intrusive list through `next`).
    @usableFromInline var pendingRemovals: _ObserverBox<Value>?

    @inlinable
    var hasDeferredWork: Bool {
        pendingAdds != nil || pendingRemovals != nil
    }

    @inlinable
    init(value: Value, capacity: Int) {
        self.value = value
        self.capacity = capacity
        self.slots = .allocate(capacity: capacity)
        self.deliverer = pthread_self()
    }
}

/// One observer: its callback, retained by the observable while registered.
@usableFromInline
final class _ObserverBox<Value>: @unchecked Sendable {
    @usableFromInline let callback: @Sendable (Value) -> Void
    /// Slot index while in `slots`, -1 otherwise. Guarded by the lock / token.
    @usableFromInline var index = -1
    /// Link in `pendingAdds` or `pendingRemovals`.
    @usableFromInline var next: _ObserverBox<Value>?

    @inlinable
    init(_ callback: @escaping @Sendable (Value) -> Void) {
        self.callback = callback
    }
}

@usableFromInline
final class _ObservableStorage<Value: Equatable & Sendable>: @unchecked Sendable {
    @usableFromInline let state: UnsafeMutablePointer<_ObservableState<Value>>
    /// The lock: 0 free, 1 held. A spin lock that yields the processor when it has to wait: the
    /// critical sections are a few loads and stores, and releasing it is a plain store, which
    /// halves the cost of a lock round trip against a pthread mutex (measured ≈ 10 ns per
    /// uncontended lock/unlock pair in a multi-threaded process).
    @usableFromInline let lockWord = Atomic<UInt32>(0)
    /// Objects that live as long as this storage (see `retain(_:)`).
    let keepAlive = LockedValue<[any Disposable]>([])

    @inlinable
    init(_ value: Value) {
        state = .allocate(capacity: 1)
        state.initialize(to: _ObservableState(value: value, capacity: 4))
    }

    deinit {
        // Every registered observer's subscription retains this storage, so no slot is left.
        precondition(state.pointee.count == 0 && !state.pointee.hasDeferredWork)
        state.pointee.slots.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
    }

    @inlinable @inline(__always)
    func lock() {
        if !lockWord.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged {
            lockContended()
        }
    }

    @usableFromInline @inline(never)
    func lockContended() {
        var spins = 0
        while true {
            if lockWord.load(ordering: .relaxed) == 0,
               lockWord.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged {
                return
            }
            spins += 1
            // Spin briefly (the holder is a few instructions from releasing), then let it run.
            if spins > 64 { sched_yield() }
        }
    }

    @inlinable @inline(__always)
    func unlock() {
        lockWord.store(0, ordering: .releasing)
    }

    @inlinable @inline(__always)
    var holdsTokenOnThisThread: Bool {
        state.pointee.isDelivering && pthread_equal(state.pointee.deliverer, pthread_self()) != 0
    }

    // MARK: Reading and setting

    @inlinable
    func read() -> Value {
        lock()
        let value = state.pointee.value
        unlock()
        return value
    }

    @inlinable
    func set(_ newValue: Value) {
        lock()
        if state.pointee.value == newValue {
            unlock()
            return
        }
        var previous = newValue
        swap(&state.pointee.value, &previous)
        publish(newValue)
        withExtendedLifetime(previous) {}  // released here, outside the lock
    }

    @inlinable
    func update<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock()
        var candidate = state.pointee.value
        let result: Result
        do {
            result = try body(&candidate)
        } catch {
            unlock()
            throw error
        }
        if candidate == state.pointee.value {
            unlock()
            return result
        }
        swap(&state.pointee.value, &candidate)
        publish(state.pointee.value)
        withExtendedLifetime(candidate) {}  // the previous value, released outside the lock
        return result
    }

    /// Called with the lock held right after the value changed to `newValue`; returns unlocked.
    @inlinable @inline(__always)
    func publish(_ newValue: Value) {
        state.pointee.version &+= 1
        if state.pointee.isDelivering {
            unlock()  // the token holder delivers it
            return
        }
        state.pointee.isDelivering = true
        state.pointee.deliverer = pthread_self()
        // Changes are queued only while a round runs and applied before the token is released,
        // so with the token free there is nothing queued: deliver straight away.
        let version = state.pointee.version
        let slots = state.pointee.slots
        let count = state.pointee.count
        unlock()
        deliver(newValue, slots: slots, range: 0..<count)
        lock()
        if state.pointee.version == version && !state.pointee.hasDeferredWork {
            state.pointee.isDelivering = false
            unlock()
            return
        }
        drain(delivered: newValue, deliveredVersion: version)
    }

    /// Calls the observers in `range` with `value`. Token held, lock not held.
    @inlinable @inline(__always)
    func deliver(_ value: Value, slots: UnsafeMutablePointer<Unmanaged<_ObserverBox<Value>>?>, range: Range<Int>) {
        for index in range {
            // A slot becomes nil when its observer is disposed from inside a callback of this
            // round; the box itself stays alive (held by `pendingRemovals`) until the round ends.
            if let box = slots[index] {
                box._withUnsafeGuaranteedRef { $0.callback(value) }
            }
        }
    }

    /// The general delivery loop. Called with the lock and the token held; returns with both
    /// released. `delivered` is the value every observer in `slots` has been given, as of
    /// version `deliveredVersion`.
    @inlinable
    func drain(delivered: Value, deliveredVersion: UInt64) {
        var delivered = delivered
        var deliveredVersion = deliveredVersion
        while true {
            // Lock held. Apply what was queued during the last round.
            let released = state.pointee.pendingRemovals
            state.pointee.pendingRemovals = nil
            applyRemovals(released)
            let firstNew = state.pointee.count
            applyAdds()
            state.pointee.roundCount &+= 1

            // Decide the next round.
            let current = state.pointee.value
            var range = 0..<0
            if state.pointee.version != deliveredVersion && current != delivered {
                range = 0..<state.pointee.count
            } else if firstNew < state.pointee.count {
                range = firstNew..<state.pointee.count
            }
            deliveredVersion = state.pointee.version
            guard !range.isEmpty else {
                state.pointee.isDelivering = false
                unlock()
                _releaseChain(released)
                return
            }
            let slots = state.pointee.slots
            unlock()
            delivered = current
            _releaseChain(released)
            deliver(current, slots: slots, range: range)
            lock()
        }
    }

    /// Takes disposed observers out of `slots`, keeping the order of the others. Lock and token
    /// held. The boxes stay alive through the list until `_releaseChain`, outside the lock.
    @inlinable
    func applyRemovals(_ list: _ObserverBox<Value>?) {
        guard list != nil else { return }
        var node = list
        while let box = node {
            if let slot = state.pointee.slots[box.index] {
                slot.release()
                state.pointee.slots[box.index] = nil
            }
            box.index = -1
            node = box.next
        }
        let slots = state.pointee.slots
        var kept = 0
        for index in 0..<state.pointee.count {
            guard let slot = slots[index] else { continue }
            slot._withUnsafeGuaranteedRef { $0.index = kept }
            slots[kept] = slot
            kept += 1
        }
        state.pointee.count = kept
    }

    /// Moves observers registered during the last round into `slots`. Lock and token held.
    @inlinable
    func applyAdds() {
        var node = state.pointee.pendingAdds
        state.pointee.pendingAdds = nil
        // The list is newest first; reverse it so observers are notified in registration order.
        var reversed: _ObserverBox<Value>?
        while let box = node {
            node = box.next
            box.next = reversed
            reversed = box
        }
        node = reversed
        while let box = node {
            node = box.next
            box.next = nil
            append(box)
        }
    }

    @inlinable
    func append(_ box: _ObserverBox<Value>) {
        if state.pointee.count == state.pointee.capacity {
            let capacity = state.pointee.capacity * 2
            let slots = UnsafeMutablePointer<Unmanaged<_ObserverBox<Value>>?>.allocate(capacity: capacity)
            slots.moveInitialize(from: state.pointee.slots, count: state.pointee.count)
            state.pointee.slots.deallocate()
            state.pointee.slots = slots
            state.pointee.capacity = capacity
        }
        box.index = state.pointee.count
        (state.pointee.slots + state.pointee.count).initialize(to: .passRetained(box))
        state.pointee.count += 1
    }

    // MARK: Subscribing and disposing

    @inlinable
    func subscribe(_ observer: @escaping @Sendable (Value) -> Void) -> ObservableSubscription<Value> {
        let box = _ObserverBox(observer)
        let subscription = ObservableSubscription(storage: self, box: box)
        lock()
        if state.pointee.isDelivering {
            // A round is running (here or on another thread): its holder delivers the initial
            // value right after the current callback, before any newer value.
            box.next = state.pointee.pendingAdds
            state.pointee.pendingAdds = box
            unlock()
            return subscription
        }
        append(box)
        state.pointee.isDelivering = true
        state.pointee.deliverer = pthread_self()
        let value = state.pointee.value
        let version = state.pointee.version
        unlock()
        box.callback(value)
        lock()
        if state.pointee.version == version && !state.pointee.hasDeferredWork {
            state.pointee.isDelivering = false
            unlock()
        } else {
            // Every observer, the new one included, has `value`.
            drain(delivered: value, deliveredVersion: version)
        }
        return subscription
    }

    @inlinable
    func remove(_ subscription: ObservableSubscription<Value>) {
        lock()
        if subscription.isDisposed {
            unlock()
            return
        }
        subscription.isDisposed = true
        let box = subscription.box
        if box.index < 0 {
            // Still queued for registration: unlink it; it was never called.
            unlinkPendingAdd(box)
            unlock()
            return
        }
        if !state.pointee.isDelivering {
            // Nobody is iterating: move the last observer into the hole.
            let index = box.index
            let last = state.pointee.count - 1
            let removed = state.pointee.slots[index]
            if index != last {
                let moved = state.pointee.slots[last]!
                moved._withUnsafeGuaranteedRef { $0.index = index }
                state.pointee.slots[index] = moved
            }
            state.pointee.count = last
            box.index = -1
            unlock()
            removed?.release()
            return
        }
        // A round is running: queue the removal for its end.
        box.next = state.pointee.pendingRemovals
        state.pointee.pendingRemovals = box
        if holdsTokenOnThisThread {
            // Called from a callback on the delivering thread: skip it for the rest of the round.
            state.pointee.slots[box.index]?.release()  // the removal list keeps it alive
            state.pointee.slots[box.index] = nil
            unlock()
            return
        }
        // Another thread may be calling this observer right now: wait until its round is over.
        let round = state.pointee.roundCount
        unlock()
        while true {
            sched_yield()
            lock()
            let done = !state.pointee.isDelivering || state.pointee.roundCount != round
            unlock()
            if done { return }
        }
    }

    @inlinable
    func unlinkPendingAdd(_ box: _ObserverBox<Value>) {
        if state.pointee.pendingAdds === box {
            state.pointee.pendingAdds = box.next
        } else {
            var node = state.pointee.pendingAdds
            while let current = node, current.next !== box {
                node = current.next
            }
            node?.next = box.next
        }
        box.next = nil
    }

    @usableFromInline
    var observerCount: Int {
        lock()
        defer { unlock() }
        var count = 0
        for index in 0..<state.pointee.count where state.pointee.slots[index] != nil {
            count += 1
        }
        var node = state.pointee.pendingAdds
        while let box = node {
            count += 1
            node = box.next
        }
        return count
    }
}

/// Drops a chain of boxes linked through `next` without recursing (a long chain released
/// recursively could overflow the stack).
@inlinable
func _releaseChain<Value>(_ head: _ObserverBox<Value>?) {
    var node = head
    while let box = node {
        node = box.next
        box.next = nil
    }
}
