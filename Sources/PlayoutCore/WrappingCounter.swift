/// A counter that wraps around, such as an RTP sequence number (16 bits) or timestamp (32 bits).
///
/// Comparison is serial-number arithmetic (RFC 1982): `a` precedes `b` when `b` is less than half
/// the counter's range ahead of `a`. That is not a total order, so these types are deliberately not
/// `Comparable`; use ``precedes(_:)`` and ``distance(to:)``, or extend values to 64 bits with a
/// ``WrappingCounterUnwrapper`` and compare those.
public protocol WrappingCounter: Hashable, Sendable, CustomStringConvertible {
    /// The raw counter type.
    associatedtype RawValue: FixedWidthInteger & UnsignedInteger & Sendable
    /// The value as sent on the wire.
    var rawValue: RawValue { get }
    /// Creates a counter from its wire value.
    init(rawValue: RawValue)
}

extension WrappingCounter {
    /// The signed distance from `self` to `other` the short way around the wrap: positive when
    /// `other` comes after `self`. Exactly half the range apart counts as behind (negative).
    @inlinable
    public func distance(to other: Self) -> Int64 {
        let difference = other.rawValue &- rawValue
        let half = RawValue(1) << (RawValue.bitWidth - 1)
        return difference < half ? Int64(difference) : Int64(difference) - (Int64(1) << RawValue.bitWidth)
    }

    /// Whether `self` comes before `other` (RFC 1982 serial-number order).
    @inlinable
    public func precedes(_ other: Self) -> Bool {
        distance(to: other) > 0
    }

    /// The counter `n` steps later (or earlier, for negative `n`), wrapping around.
    @inlinable
    public func advanced(by n: Int64) -> Self {
        Self(rawValue: rawValue &+ RawValue(truncatingIfNeeded: n))
    }

    public var description: String {
        String(rawValue)
    }
}

/// An RTP sequence number (RFC 3550 §5.1): 16 bits, wrapping.
public struct SequenceNumber: WrappingCounter, ExpressibleByIntegerLiteral {
    public var rawValue: UInt16

    @inlinable
    public init(rawValue: UInt16) {
        self.rawValue = rawValue
    }

    @inlinable
    public init(integerLiteral value: UInt16) {
        self.rawValue = value
    }
}

/// An RTP media timestamp (RFC 3550 §5.1): 32 bits in the payload's clock rate, wrapping.
public struct RTPTimestamp: WrappingCounter, ExpressibleByIntegerLiteral {
    public var rawValue: UInt32

    @inlinable
    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    @inlinable
    public init(integerLiteral value: UInt32) {
        self.rawValue = value
    }
}

/// Extends a wrapping counter to 64 bits ("unwrapping"), so that values keep increasing across
/// the wrap and can be ordered and subtracted directly.
///
/// Each value is placed at the 64-bit position nearest to the highest value seen so far, so
/// packets reordered across the wrap get the right extended value in either direction: after
/// 65535 → 0 → 1, a late 65534 unwraps to 65534, not 131070. The first value unwraps to itself;
/// one that precedes it (reordered before the first) unwraps below it, possibly below zero.
/// A value more than half the range away from the highest is taken to be the nearer alias —
/// callers that can see long gaps (sender restarts) decide that themselves.
///
/// ```swift
/// var unwrapper = WrappingCounterUnwrapper<SequenceNumber>()
/// unwrapper.unwrap(65535)   // 65535
/// unwrapper.unwrap(0)       // 65536
/// unwrapper.unwrap(65534)   // 65534 (late, reordered)
/// ```
///
/// - Complexity: O(1), no allocation.
public struct WrappingCounterUnwrapper<Counter: WrappingCounter>: Sendable {
    @usableFromInline var storedHighest: Int64?

    /// The highest extended value returned so far, nil before the first.
    public var highest: Int64? {
        storedHighest
    }

    /// Creates an unwrapper that has seen nothing.
    public init() {}

    /// The 64-bit extension of `value`.
    @inlinable
    public mutating func unwrap(_ value: Counter) -> Int64 {
        guard let highest = storedHighest else {
            let extended = Int64(value.rawValue)
            storedHighest = extended
            return extended
        }
        let reference = Counter(rawValue: Counter.RawValue(truncatingIfNeeded: highest))
        let extended = highest + reference.distance(to: value)
        if extended > highest { storedHighest = extended }
        return extended
    }

    /// The extension `value` would get, without recording it.
    @inlinable
    public func peek(_ value: Counter) -> Int64 {
        var copy = self
        return copy.unwrap(value)
    }

    /// Forgets everything, e.g. after a sender restart.
    public mutating func reset() {
        storedHighest = nil
    }
}

/// Unwraps RTP sequence numbers to 64 bits.
public typealias SequenceNumberUnwrapper = WrappingCounterUnwrapper<SequenceNumber>
/// Unwraps RTP timestamps to 64 bits.
public typealias RTPTimestampUnwrapper = WrappingCounterUnwrapper<RTPTimestamp>
