package import PlayoutCore

/// Maps a track's RTP timestamps to the sender's wall clock using RTCP sender reports
/// (RFC 3550 §6.4.1), so that the tracks of one stream — audio at 48 kHz, video at 90 kHz, each
/// with its own random timestamp base — share one playout timeline and stay in sync.
///
/// Feed each track's sender reports to its own `SenderClock`; then pass
/// ``mediaTime(for:)`` (the sender's wall-clock time of that RTP timestamp) as the media time to
/// one shared ``PlayoutTimeline``. Without sender reports a track keeps its own timeline.
///
/// - Complexity: O(1).
package struct SenderClock: Sendable {
    /// The RTP clock rate of the track (e.g. 90,000 or 48,000).
    public let clockRate: Int32
    private var reference: (ntp: Int64, rtp: Int64)?
    private var unwrapper = RTPTimestampUnwrapper()

    /// A sender clock for a stream with RTP clock rate `clockRate` (Hz).
    public init(clockRate: Int32) {
        precondition(clockRate > 0, "a clock rate is positive")
        self.clockRate = clockRate
    }

    /// Whether a sender report has been seen.
    public var isSynchronized: Bool {
        reference != nil
    }

    /// Records a sender report: `ntpTimestamp` (UQ32.32 seconds since 1900) corresponds to
    /// `rtpTimestamp`. The latest report wins (it follows the sender's drift).
    public mutating func update(ntpTimestamp: UInt64, rtpTimestamp: RTPTimestamp) {
        reference = (Self.nanoseconds(ntp: ntpTimestamp), unwrapper.unwrap(rtpTimestamp))
    }

    /// The sender's wall-clock time (nanoseconds since 1900, as a `Duration`) of `rtpTimestamp`,
    /// or nil before the first sender report. Timestamps on either side of the report work,
    /// across the 32-bit wrap.
    public mutating func mediaTime(for rtpTimestamp: RTPTimestamp) -> Duration? {
        guard let reference else { return nil }
        let ticks = unwrapper.unwrap(rtpTimestamp) - reference.rtp
        let offset = ticks * 1_000_000_000 / Int64(clockRate)
        return .nanoseconds(reference.ntp + offset)
    }

    /// Nanoseconds of a UQ32.32 NTP timestamp (exact to the nanosecond).
    static func nanoseconds(ntp: UInt64) -> Int64 {
        let seconds = Int64(ntp >> 32)
        let fraction = Int64((UInt64(ntp & 0xFFFF_FFFF) * 1_000_000_000) >> 32)
        return seconds * 1_000_000_000 + fraction
    }
}
