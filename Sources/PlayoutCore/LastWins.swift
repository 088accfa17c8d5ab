/// The rule behind every "override until released" API of Playout (`overridePlayoutDelay`,
/// `limitBandwidth`): while several are held only the most recent is in effect; releasing an
/// earlier one changes nothing; releasing the one in effect returns to none (the configured value),
/// not to an earlier one; releasing twice is harmless. Sans-IO: a value type the owner keeps
/// under its lock.
///
/// ```swift
/// var limits = LastWins<Int>()
/// let a = limits.set(2_000_000)      // in effect: 2 Mbit/s
/// let b = limits.set(500_000)        // in effect: 500 kbit/s
/// limits.release(a)                  // false: b is still in effect
/// limits.release(b)                  // true: none in effect
/// ```
package struct LastWins<Value> {
    /// The value in effect and the identity of the hold that set it.
    public private(set) var current: (id: UInt64, value: Value)?
    private var nextID: UInt64 = 1

    /// Nothing held.
    public init() {}

    /// The value in effect, if any.
    public var value: Value? { current?.value }

    /// Holds `value`, in effect from now on; returns the hold's identity for ``release(_:)``.
    public mutating func set(_ value: Value) -> UInt64 {
        defer { nextID += 1 }
        current = (nextID, value)
        return nextID
    }

    /// Releases hold `id`; returns the value it had when it was the one in effect (now none is),
    /// nil when it was not (nothing changes).
    @discardableResult
    public mutating func release(_ id: UInt64) -> Value? {
        guard let current, current.id == id else { return nil }
        self.current = nil
        return current.value
    }
}

extension LastWins: Sendable where Value: Sendable {}
