public import PlayoutCore

/// Builds the RTCP reception report block (RFC 3550 §6.4.1) a receiver sends about one source,
/// from the counts its jitter buffer keeps, sans-IO: fraction lost over the interval since the
/// previous report (Appendix A.3), cumulative lost, extended highest sequence number, interarrival
/// jitter in timestamp units, and LSR/DLSR from the latest sender report (so the sender can
/// compute the round-trip time). The sender's own view: ``roundTripTime(block:arrival:)``.
///
/// ```swift
/// var builder = ReceptionReportBuilder(ssrc: 0x1234, clockRate: 90_000)
/// builder.receivedSenderReport(report, at: now)
/// let block = builder.block(extendedHighestSequenceNumber: 70_123, received: 4_950, firstSequenceNumber: 65_000, jitter: 0.002, now: now)
/// ```
public struct ReceptionReportBuilder: Sendable {
    /// The source reported on.
    public let ssrc: UInt32
    /// Its RTP clock rate (jitter is reported in its units).
    public let clockRate: Int32
    private var expectedPrior: Int64 = 0
    private var receivedPrior: Int64 = 0
    private var lastSenderReport: (middle: UInt32, arrival: MonotonicInstant)?

    /// A builder for source `ssrc` with RTP clock rate `clockRate`.
    public init(ssrc: UInt32, clockRate: Int32) {
        self.ssrc = ssrc
        self.clockRate = clockRate
    }

    /// The source's sender report `report` arrived at `arrival`: the next blocks carry its LSR
    /// (the middle 32 bits of its NTP timestamp) and the delay since.
    public mutating func receivedSenderReport(_ report: RTCPSenderReport, at arrival: MonotonicInstant) {
        lastSenderReport = (UInt32(truncatingIfNeeded: report.ntpTimestamp >> 16), arrival)
    }

    /// The block at `now`: `extendedHighestSequenceNumber` and `firstSequenceNumber` (extended, so
    /// expected = highest − first + 1), `received` packets so far (duplicates excluded), and
    /// `jitter` in seconds (RFC 3550 A.8). Starts a new interval for the fraction lost.
    public mutating func block(extendedHighestSequenceNumber: Int64, received: Int64, firstSequenceNumber: Int64, jitter: Double, now: MonotonicInstant) -> RTCPReportBlock {
        let expected = max(0, extendedHighestSequenceNumber - firstSequenceNumber + 1)
        let lost = expected - received
        // A.3: the fraction over the interval, 0 when the interval gained packets (duplicates).
        let expectedInterval = expected - expectedPrior
        let receivedInterval = received - receivedPrior
        expectedPrior = expected
        receivedPrior = received
        let lostInterval = expectedInterval - receivedInterval
        let fraction: UInt8 = expectedInterval <= 0 || lostInterval <= 0 ? 0 : UInt8(min(255, (lostInterval << 8) / expectedInterval))
        // Cumulative lost is a signed 24-bit field: clamp (duplicates can make it negative).
        let cumulative = Int32(clamping: min(max(lost, -0x80_0000), 0x7F_FFFF))
        let delaySince: UInt32 = lastSenderReport.map { report in
            let delay = report.arrival.duration(to: now)
            return delay <= .zero ? 0 : UInt32(clamping: delay.nanoseconds * 65_536 / 1_000_000_000)
        } ?? 0
        return RTCPReportBlock(
            ssrc: ssrc, fractionLost: fraction, cumulativeLost: cumulative,
            extendedHighestSequenceNumber: UInt32(truncatingIfNeeded: max(0, extendedHighestSequenceNumber)),
            jitter: UInt32(clamping: Int64((max(0, jitter) * Double(clockRate)).rounded(.down))),
            lastSenderReport: lastSenderReport?.middle ?? 0, delaySinceLastSenderReport: delaySince
        )
    }

    /// The round-trip time a sender computes from a report `block` about its stream that arrived
    /// at NTP time `arrival` (RFC 3550 §6.4.1: A − LSR − DLSR, in 1/65536 s); nil when the block
    /// carries no LSR or the result is negative (clocks or a corrupt block).
    public static func roundTripTime(block: RTCPReportBlock, arrival: UInt64) -> Duration? {
        guard block.lastSenderReport != 0 else { return nil }
        let middle = UInt32(truncatingIfNeeded: arrival >> 16)
        let units = Int64(Int32(bitPattern: middle &- block.lastSenderReport &- block.delaySinceLastSenderReport))
        guard units >= 0 else { return nil }
        return .nanoseconds(units * 1_000_000_000 / 65_536)
    }
}
