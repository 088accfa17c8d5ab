import PlayoutCore

/// When a receiver sends its next RTCP compound packet: RFC 3550 §6.3 and Appendix A.7
/// (`rtcp_interval`), sans-IO. The caller passes the session's numbers and a random fraction in
/// [0, 1) (seeded in tests); it gets the interval to wait.
///
/// ```swift
/// let interval = RTCPReportInterval(sessionBandwidth: 4_000_000)
///     .next(members: 2, senders: 1, averagePacketSize: 90, initial: false, random: .random(in: 0..<1))
/// ```
public struct RTCPReportInterval: Equatable, Sendable {
    /// The fraction of the session bandwidth RTCP may use (RFC 3550 §6.2: 5 %).
    public static let rtcpFraction = 0.05
    /// The minimum interval between reports (§6.2: 5 s; half of it before the first report).
    public static let minimumInterval: Duration = .seconds(5)
    /// The longest deterministic interval (an hour): numbers that ask for more are not a session.
    public static let maximumInterval: Duration = .seconds(3_600)
    /// e − 3/2: compensates for the timer reconsideration's bias towards short intervals (A.7).
    static let compensation = 2.718_281_828_459_045 - 1.5

    /// The session bandwidth in bits per second (from the SDP's `b=AS`, or the stream's bitrate).
    public var sessionBandwidth: Double
    /// The minimum interval (RFC 3550 allows a smaller one scaled by 360 / session kbit/s; RFC 4585
    /// feedback profiles send early feedback apart from this schedule).
    public var minimumInterval: Duration

    /// The schedule of a session of `sessionBandwidth` bits per second.
    public init(sessionBandwidth: Double, minimumInterval: Duration = RTCPReportInterval.minimumInterval) {
        self.sessionBandwidth = sessionBandwidth
        self.minimumInterval = minimumInterval
    }

    /// The interval until the next report of a receiver (it does not send RTP): `members` in the
    /// session (this receiver included), `senders` among them, the average compound RTCP packet
    /// size in bytes (with UDP and IP headers), whether no report was sent yet, and `random` in
    /// [0, 1) for the randomization to [0.5, 1.5] × the deterministic interval (A.7).
    public func next(members: Int, senders: Int, averagePacketSize: Double, initial: Bool, random: Double) -> Duration {
        let rtcpBandwidth = sessionBandwidth.isFinite ? max(sessionBandwidth, 0) * Self.rtcpFraction / 8 : 0  // bytes per second
        var minimum = minimumInterval.seconds
        if initial { minimum /= 2 }
        var n = Double(max(members, 1))
        var bandwidth = rtcpBandwidth
        let senders = min(max(senders, 0), max(members, 1))
        // Senders get a quarter of the RTCP bandwidth when they are at most a quarter of the
        // members; a receiver then shares the other three quarters with the other receivers.
        if senders > 0, Double(senders) <= n * 0.25 {
            bandwidth *= 0.75
            n -= Double(senders)
        }
        let size = averagePacketSize.isFinite ? max(averagePacketSize, 1) : 1
        var interval = bandwidth > 0 ? size * n / bandwidth : minimum
        if interval < minimum || !interval.isFinite { interval = minimum }
        interval = min(interval, Self.maximumInterval.seconds)
        let fraction = random.isFinite ? min(max(random, 0), 0.999_999_999) : 0.5
        interval *= fraction + 0.5
        interval /= Self.compensation
        return .nanoseconds(Int64((interval * 1e9).rounded()))
    }
}
