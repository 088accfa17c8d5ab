/// A value that changes over time and tells its observers: a behaviour subject.
///
/// An `Observable` always has a current ``value``. ``subscribe(_:)`` delivers that value to the new
/// observer first and then every later change; setting an equal value notifies no one. Everything
/// a subscription exposes (state, effective playout delay, statistics) is an `Observable`, handed
/// out to readers as a ``ReadOnlyObservable``.
///
/// ```swift
/// let delay = Observable(Duration.milliseconds(230))
/// let subscription = delay.subscribe { print("delay is now", $0) }   // prints 230 ms at once
/// delay.value = .seconds(1)                                            // prints 1 s
/// delay.value = .seconds(1)                                            // equal: prints nothing
/// subscription.dispose()                                               // or drop `subscription`
/// ```
///
/// ## Guarantees
/// - **Atomic subscribe.** The first value an observer receives is the value current when it was
///   registered (or a later one); no set can fall between reading the value and registering.
///   When no notification is in progress the initial value is delivered synchronously, before
///   `subscribe` returns. When one is in progress — on another thread, or on this one because
///   `subscribe` was called from inside a callback — the notifying thread delivers it right after
///   the callback that is running, before any newer value.
/// - **Change only.** Observers are called only with values that differ (`!=`) from the last value
///   they were given.
/// - **Order.** Every observer receives values in the order they were set.
/// - **Latest, not every.** Under contention an observer may skip intermediate values, but it is
///   never left stale: once sets stop, every live observer's last delivered value equals
///   ``value`` — also after concurrent sets from many threads and sets from inside callbacks.
/// - **Serial delivery.** Callbacks of one observable never run concurrently with each other.
///   They run on the thread that made the set (or, under contention, on the thread that was already
///   notifying), never under a lock: a callback may read or set this observable, subscribe and
///   dispose, without deadlock. A set from inside a callback returns at once; its value is
///   delivered to everyone after the current round, so no observer sees values out of order.
/// - **Disposal.** After `dispose()` returns — or the last reference to the subscription is
///   dropped — that observer's callback does not start again. If a callback of it is running on
///   another thread at that moment, `dispose()` waits for the current notification round to finish;
///   called from inside a callback of the same observable, it returns at once and the observer is
///   skipped for the rest of the round. (So a callback must not block waiting for a thread that is
///   disposing one of this observable's subscriptions.)
/// - **Cost.** A set allocates nothing in steady state; an unchanged set takes one uncontended
///   lock. The hot path is `@inlinable`, so it is specialized for `Value` in the caller's module.
///
/// A thread that sets while others keep setting may deliver several rounds before its `set`
/// returns; sets from one thread at a time never wait for each other.
public final class Observable<Value: Equatable & Sendable>: @unchecked Sendable {
    @usableFromInline let storage: _ObservableStorage<Value>

    /// Creates an observable holding `initialValue`.
    @inlinable
    public init(_ initialValue: Value) {
        storage = _ObservableStorage(initialValue)
    }

    /// The current value. Reading is synchronous and thread safe; setting a different value
    /// notifies every observer (see ``set(_:)``).
    @inlinable
    public var value: Value {
        get { storage.read() }
        set { storage.set(newValue) }
    }

    /// Sets the value; if it differs from the current one, notifies every observer.
    ///
    /// - Complexity: O(1) when the value is unchanged; O(*n*) callbacks otherwise. No allocation.
    @inlinable
    public func set(_ newValue: Value) {
        storage.set(newValue)
    }

    /// Atomically reads, modifies and writes the value, then notifies observers if it changed.
    ///
    /// `body` runs under the observable's lock: keep it short, and do not touch this observable
    /// from inside it. Concurrent `update`s are applied one after the other, so
    /// `counter.update { $0 += 1 }` from many threads loses no increment.
    @inlinable
    public func update<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try storage.update(body)
    }

    /// Registers `observer`, calls it with the current value, and then with every change.
    ///
    /// Keep the returned subscription: dropping it cancels the subscription.
    ///
    /// - Complexity: amortized O(1); two allocations (the subscription and its slot).
    @inlinable
    public func subscribe(_ observer: @escaping @Sendable (Value) -> Void) -> ObservableSubscription<Value> {
        storage.subscribe(observer)
    }

    /// The number of live observers.
    public var observerCount: Int {
        storage.observerCount
    }

    /// A read-only view to hand out, so that only the owner of this object can set the value.
    @inlinable
    public var readOnly: ReadOnlyObservable<Value> {
        ReadOnlyObservable(self)
    }
}

extension Observable: CustomStringConvertible {
    public var description: String {
        "Observable(\(value))"
    }
}

/// A read-only view of an ``Observable``: readers can read and subscribe, only the owner can set.
public struct ReadOnlyObservable<Value: Equatable & Sendable>: Sendable {
    @usableFromInline let base: Observable<Value>

    /// Creates a read-only view of `base`.
    @inlinable
    public init(_ base: Observable<Value>) {
        self.base = base
    }

    /// A read-only view of a value that never changes.
    public static func constant(_ value: Value) -> Self {
        Self(Observable(value))
    }

    /// The current value (synchronous, thread safe).
    @inlinable
    public var value: Value {
        base.value
    }

    /// Registers `observer`; see ``Observable/subscribe(_:)``.
    @inlinable
    public func subscribe(_ observer: @escaping @Sendable (Value) -> Void) -> ObservableSubscription<Value> {
        base.subscribe(observer)
    }
}

/// A subscription to an ``Observable``. Dropping the last reference cancels it, like
/// ``dispose()``.
public final class ObservableSubscription<Value: Equatable & Sendable>: Disposable, @unchecked Sendable {
    @usableFromInline let storage: _ObservableStorage<Value>
    /// The observer's slot. Owned by the storage; valid while `isDisposed` is false (guarded by
    /// the storage's lock).
    @usableFromInline unowned(unsafe) let box: _ObserverBox<Value>
    @usableFromInline var isDisposed = false

    @inlinable
    init(storage: _ObservableStorage<Value>, box: _ObserverBox<Value>) {
        self.storage = storage
        self.box = box
    }

    /// Cancels the subscription. Idempotent; see ``Observable`` for the exact guarantee.
    @inlinable
    public func dispose() {
        storage.remove(self)
    }

    deinit {
        storage.remove(self)
    }
}
