
/// A handle on something that can be cancelled: a subscription, a playout-delay override, a timer.
///
/// Dropping the last reference to a disposable returned by Playout cancels it, exactly as calling
/// ``dispose()`` does. `dispose()` is idempotent: calling it again, or after the handle was
/// released elsewhere, is harmless.
///
/// ```swift
/// let subscription = renderer.playoutDelay.subscribe { print($0) }
/// // …
/// subscription.dispose()   // or just let `subscription` go out of scope
/// ```
public protocol Disposable: AnyObject, Sendable {
    /// Cancels what this handle stands for. Idempotent and thread safe.
    func dispose()
}

extension Disposable {
    /// Keeps this disposable alive in `bag` until the bag is disposed or released.
    public func disposed(by bag: DisposeBag) {
        bag.insert(self)
    }
}

/// A disposable that runs a closure once, on the first ``dispose()`` or when it is released.
public final class ClosureDisposable: Disposable {
    private let action: LockedValue<(@Sendable () -> Void)?>

    /// Creates a disposable that runs `action` exactly once.
    public init(_ action: @escaping @Sendable () -> Void) {
        self.action = LockedValue(action)
    }

    /// Whether ``dispose()`` has run (or the action has otherwise been consumed).
    public var isDisposed: Bool {
        action.withLock { $0 == nil }
    }

    public func dispose() {
        let pending = action.withLock { action -> (@Sendable () -> Void)? in
            defer { action = nil }
            return action
        }
        pending?()
    }

    deinit {
        dispose()
    }
}

/// Owns a set of disposables and disposes all of them when it is disposed or released.
///
/// Inserting into a bag that has already been disposed disposes the new item at once, so nothing
/// outlives its bag.
///
/// ```swift
/// let bag = DisposeBag()
/// stats.subscribe { print($0) }.disposed(by: bag)
/// ```
public final class DisposeBag: Disposable {
    private let items = LockedValue<[any Disposable]?>([])

    /// Creates an empty bag.
    public init() {}

    /// The number of disposables held (0 once disposed).
    public var count: Int {
        items.withLock { $0?.count ?? 0 }
    }

    /// Keeps `disposable` until the bag is disposed. Disposes it at once if the bag already is.
    public func insert(_ disposable: any Disposable) {
        let rejected = items.withLock { items -> Bool in
            guard items != nil else { return true }
            items!.append(disposable)
            return false
        }
        if rejected { disposable.dispose() }
    }

    /// Disposes everything in the bag, in insertion order, outside the bag's lock.
    public func dispose() {
        let taken = items.withLock { items -> [any Disposable] in
            defer { items = nil }
            return items ?? []
        }
        for item in taken { item.dispose() }
    }

    deinit {
        dispose()
    }
}
