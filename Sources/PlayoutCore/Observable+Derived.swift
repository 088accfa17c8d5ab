
extension Observable {
    /// An observable of `transform(value)`, kept up to date with this one.
    ///
    /// The derived observable notifies only when the transformed value changes, so
    /// `state.map(\.isPlaying)` is also the "distinct" operator. It keeps this observable alive;
    /// this observable does not keep it alive (its subscription ends when the derived one is
    /// released).
    ///
    /// - Complexity: one `transform` call per change of this observable.
    public func map<Derived: Equatable & Sendable>(
        _ transform: @escaping @Sendable (Value) -> Derived
    ) -> ReadOnlyObservable<Derived> {
        let derived = Observable<Derived>(transform(value))
        // Weak: subscribers of the derived observable keep its storage (not the wrapper) alive.
        let upstream = subscribe { [weak storage = derived.storage] value in
            storage?.set(transform(value))
        }
        derived.storage.retain(upstream)
        return derived.readOnly
    }

    /// The values of this observable as an `AsyncSequence`: the current value first, then each
    /// change. A slow consumer skips to the newest value (it never sees values out of order and
    /// never ends stale). Iteration ends when the consuming task is cancelled.
    public var values: ObservableValues<Value> {
        ObservableValues(self)
    }
}

extension ReadOnlyObservable {
    /// See ``Observable/map(_:)``.
    public func map<Derived: Equatable & Sendable>(
        _ transform: @escaping @Sendable (Value) -> Derived
    ) -> ReadOnlyObservable<Derived> {
        base.map(transform)
    }

    /// See ``Observable/values``.
    public var values: ObservableValues<Value> {
        base.values
    }
}

/// The values of an ``Observable`` as an `AsyncSequence` (see ``Observable/values``).
public struct ObservableValues<Value: Equatable & Sendable>: AsyncSequence, Sendable {
    public typealias Element = Value
    public typealias Failure = Never

    let base: Observable<Value>

    init(_ base: Observable<Value>) {
        self.base = base
    }

    /// An iterator that holds its own subscription until it is released.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var iterator: AsyncStream<Value>.Iterator

        public mutating func next() async -> Value? {
            await iterator.next()
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> Value? {
            await iterator.next(isolation: actor)
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        let (stream, continuation) = AsyncStream<Value>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let subscription = base.subscribe { continuation.yield($0) }
        continuation.onTermination = { _ in subscription.dispose() }
        return AsyncIterator(iterator: stream.makeAsyncIterator())
    }
}

extension _ObservableStorage {
    /// Keeps `object` alive as long as this storage (used for upstream subscriptions of derived
    /// observables).
    func retain(_ object: any Disposable) {
        keepAlive.withLock { $0.append(object) }
    }
}
