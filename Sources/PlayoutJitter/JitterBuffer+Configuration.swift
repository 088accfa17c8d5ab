/// The tunables of a ``JitterBuffer``, with their defaults as named constants.
///
/// Every field may be changed at run time through ``JitterBuffer/configuration``; a change applies
/// from the next `insert` or `poll` on. The facade sets ``maximumReorderDelay`` from the playout
/// delay in effect minus a decode margin (the time the depacketizer, decoder and scheduler need
/// before the frame's render time), so that a gap is never waited on longer than the frame it
/// belongs to could still be shown — a 5 s override lets the buffer wait for reordered packets for
/// almost 5 s; a 100 ms delay leaves it a few tens of milliseconds.
public struct JitterBufferConfiguration: Equatable, Sendable {
    /// The default ``maximumReorderDelay``: 100 ms.
    public static let defaultMaximumReorderDelay: Duration = .milliseconds(100)
    /// The default ``restartThreshold``: 3,000 packets (as RFC 3550 Appendix A.1's `MAX_DROPOUT`).
    public static let defaultRestartThreshold = 3_000
    /// The largest buffer the defaults are sized for: 10 s …
    public static let nominalBufferDuration: Duration = .seconds(10)
    /// … at 50 Mbit/s.
    public static let nominalBitrate = 50_000_000
    /// The default ``maximumBytes``: 10 s × 50 Mbit/s = 62.5 MB of payload, plus 25 % margin for
    /// bursts after a stall: 78,125,000 bytes.
    public static let defaultMaximumBytes = 78_125_000
    /// The default ``maximumPackets``: 2^16, so 10 s at 50 Mbit/s (≈ 43,000 packets of 1,450 bytes,
    /// more than 2^15) fits.
    public static let defaultMaximumPackets = 1 << 16
    /// The default ``clockRate``: 90 kHz (video).
    public static let defaultClockRate = 90_000

    /// How long the packet right after a gap waits for the gap to fill before the gap is declared
    /// lost (default ``defaultMaximumReorderDelay``). Set it from the playout delay in effect minus a
    /// decode margin. Zero or negative: gaps are declared lost on the next `poll`.
    public var maximumReorderDelay: Duration
    /// A sequence-number jump larger than this, in either direction, confirmed by the next packet,
    /// is a sender restart rather than loss or reordering (default ``defaultRestartThreshold``).
    /// Forward jumps are recognized up to 16,383 packets; a larger value behaves as that for them.
    public var restartThreshold: Int
    /// The most payload bytes held (the `byteCount`s of queued packets); beyond it the oldest queued
    /// packets are dropped (default ``defaultMaximumBytes``).
    public var maximumBytes: Int
    /// The most packets held; beyond it the oldest queued packets are dropped (default
    /// ``defaultMaximumPackets``). The slot ring grows on demand up to the next power of two.
    public var maximumPackets: Int
    /// The payload's RTP clock rate in Hz, for the interarrival jitter (default
    /// ``defaultClockRate``; e.g. 48,000 for Opus).
    public var clockRate: Int

    /// Creates a configuration; every parameter has a documented default.
    public init(
        maximumReorderDelay: Duration = Self.defaultMaximumReorderDelay,
        restartThreshold: Int = Self.defaultRestartThreshold,
        maximumBytes: Int = Self.defaultMaximumBytes,
        maximumPackets: Int = Self.defaultMaximumPackets,
        clockRate: Int = Self.defaultClockRate
    ) {
        self.maximumReorderDelay = maximumReorderDelay
        self.restartThreshold = restartThreshold
        self.maximumBytes = maximumBytes
        self.maximumPackets = maximumPackets
        self.clockRate = clockRate
    }
}
