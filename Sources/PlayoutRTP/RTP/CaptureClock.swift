/// A point that maps a track's RTP time to the sender's wall clock: where capture times — and so
/// end-to-end latency — come from.
///
/// Two sources give one: the `abs-capture-time` header extension (a frame's own capture instant,
/// preferred) and RTCP sender reports (the sender's clock at the report's RTP time).
public struct CaptureClock: Equatable, Sendable {
    /// What the point came from.
    public enum Source: Equatable, Sendable {
        /// The `abs-capture-time` header extension of a frame's packet.
        case absoluteCaptureTime
        /// An RTCP sender report.
        case senderReport
    }

    public var source: Source
    /// The RTP timestamp …
    public var rtpTimestamp: UInt32
    /// … and its time, in nanoseconds since 1970.
    public var unixNanoseconds: Int64

    /// A point from its parts.
    public init(source: Source, rtpTimestamp: UInt32, unixNanoseconds: Int64) {
        self.source = source
        self.rtpTimestamp = rtpTimestamp
        self.unixNanoseconds = unixNanoseconds
    }

    /// The capture time of the frame with `rtpTimestamp`, moved onto the sender's clock by the
    /// estimated capture-clock offset when the extension has one.
    public init(absoluteCaptureTime capture: AbsoluteCaptureTime, rtpTimestamp: UInt32) {
        source = .absoluteCaptureTime
        self.rtpTimestamp = rtpTimestamp
        // The offset is Q32.32 seconds: at most ±2^31 s, so its nanoseconds fit (and wrap, never
        // trap, on a hostile value).
        let offset = capture.estimatedCaptureClockOffset.map { Int64(Double($0) / 4_294_967_296 * 1e9) } ?? 0
        unixNanoseconds = NTPTime.unixNanoseconds(ntp: capture.captureTimestamp) &+ offset
    }

    /// The sender's clock at the report's RTP time.
    public init(senderReport report: RTCPSenderReport) {
        source = .senderReport
        rtpTimestamp = report.rtpTimestamp
        unixNanoseconds = NTPTime.unixNanoseconds(ntp: report.ntpTimestamp)
    }

    /// When the frame with RTP timestamp `rtpTimestamp` (within 2^31 ticks of this point, either
    /// way) was captured, in nanoseconds since 1970, for a clock rate of `clockRate` Hz; nil for a
    /// clock rate that is not positive.
    public func unixNanoseconds(rtpTimestamp timestamp: UInt32, clockRate: Int32) -> Int64? {
        guard clockRate > 0 else { return nil }
        let ticks = Int64(Int32(bitPattern: timestamp &- rtpTimestamp))
        return unixNanoseconds &+ ticks * 1_000_000_000 / Int64(clockRate)
    }
}
