#if canImport(Glibc)
import Glibc
import SwiftOverlayShims
#elseif canImport(Darwin)
import Darwin
#endif

/// A point on the local monotonic timeline: nanoseconds since an arbitrary origin (for the real
/// clock, the system's `CLOCK_MONOTONIC` origin; for a manual clock, ``zero``).
///
/// Every timestamp inside Playout — packet arrival, render time, telemetry durations — is a
/// `MonotonicInstant`, so sans-IO components take `now:` as a plain value and tests drive them
/// with exact instants.
public struct MonotonicInstant: InstantProtocol, Hashable, Sendable, CustomStringConvertible {
    /// Nanoseconds since the origin of the timeline.
    public var nanoseconds: Int64

    /// Creates the instant `nanoseconds` after the origin.
    @inlinable
    public init(nanoseconds: Int64) {
        self.nanoseconds = nanoseconds
    }

    /// The origin of the timeline (where a ``MonotonicInstant``-based manual clock starts).
    public static let zero = MonotonicInstant(nanoseconds: 0)

    @inlinable
    public func advanced(by duration: Duration) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: nanoseconds &+ duration.nanoseconds)
    }

    @inlinable
    public func duration(to other: MonotonicInstant) -> Duration {
        .nanoseconds(other.nanoseconds &- nanoseconds)
    }

    @inlinable
    public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    public var description: String {
        "t+" + Duration.nanoseconds(nanoseconds).compactDescription
    }
}

/// The clock abstraction every time-based part of Playout takes: a `Clock` on the monotonic
/// timeline, and the wall time that goes with it. ``MonotonicClock`` is the real one;
/// `ManualClock` (PlayoutTesting) is advanced by hand in tests, its wall time moving with it.
/// A component is handed its clock and reads no other: durations come from `now`, and only
/// what is compared with another machine's clock (end-to-end latency against a sender's
/// capture times, wall-time stamps) from ``wallClockNanoseconds``.
public protocol PlayoutClock: Clock, Sendable where Instant == MonotonicInstant {
    /// The wall time now, in nanoseconds since 1970 (UTC).
    var wallClockNanoseconds: Int64 { get }
}

/// The real clock: `CLOCK_MONOTONIC`, which never jumps with wall-clock changes.
public struct MonotonicClock: PlayoutClock {
    /// Creates the (stateless) monotonic clock.
    public init() {}

    public var now: MonotonicInstant {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return MonotonicInstant(nanoseconds: Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec))
    }

    /// The system's wall clock (`CLOCK_REALTIME`).
    public var wallClockNanoseconds: Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    public var minimumResolution: Duration {
        .nanoseconds(1)
    }

    public func sleep(until deadline: MonotonicInstant, tolerance: Duration?) async throws {
        // Task.sleep measures on its own clock; loop until this clock agrees the deadline passed.
        var remaining = now.duration(to: deadline)
        while remaining > .zero {
            try await Task.sleep(for: remaining, tolerance: tolerance, clock: .continuous)
            remaining = now.duration(to: deadline)
        }
    }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating at the bounds of `Int64`).
    @inlinable
    public var nanoseconds: Int64 {
        // Under ±9.2 s the attoseconds fit an Int64: 64-bit arithmetic only, ≈ 3× faster than
        // `components` (a 128-bit division), on every instant of the media path.
        if let small = Int64(exactly: attoseconds) { return small / 1_000_000_000 }
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return seconds < 0 ? .min : .max }
        return sum
    }

    /// The duration in seconds, as a `Double` (for JSON, telemetry and display).
    @inlinable
    public var seconds: Double {
        if let small = Int64(exactly: attoseconds) {  // as below, in 64-bit arithmetic
            return Double(small / 1_000_000_000_000_000_000) + Double(small % 1_000_000_000_000_000_000) / 1e18
        }
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The duration closest to `seconds`, or nil when `seconds` is not finite or out of range.
    @inlinable
    public init?(exactlySeconds seconds: Double) {
        guard seconds.isFinite, abs(seconds) < 9.2e9 else { return nil }
        self = .nanoseconds(Int64((seconds * 1e9).rounded()))
    }
}
