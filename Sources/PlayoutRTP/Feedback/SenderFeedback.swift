public import PlayoutCore

/// What a sender does with the RTCP its receivers send back, sans-IO — the built-in publisher's
/// half of the feedback loop. It takes the parsed compound packets that arrived (with the time,
/// and the sender's wall clock as NTP for the round-trip time) and returns what to do: resend
/// packets a NACK asks for, encode a key frame for a PLI or a new FIR, follow the bit rate
/// REMB and TMMBR allow. It keeps what the receiver reports (loss, jitter, round-trip time) as
/// ``Statistics``, and answers in the next sender report's compound: RFC 3611 receiver reference
/// times with DLRR blocks (so receivers measure their round-trip time too), a TMMBR with its
/// TMMBN (RFC 5104 §4.2.2).
///
/// ```swift
/// var feedback = SenderFeedback(ssrc: sender.ssrc)
/// for action in feedback.receive(packets, now: now, arrivalNTP: NTPTime.ntp(unixNanoseconds: wall)) {
///     switch action { case .retransmit(let lost): … case .keyFrame: … case .bitrateLimit(let limit): … }
/// }
/// let extras = feedback.senderReportExtras(now: now)   // DLRR, TMMBN: in the sender report's compound
/// ```
public struct SenderFeedback: Sendable {
    /// What to do.
    public enum Action: Equatable, Sendable {
        /// Resend these packets (RTX).
        case retransmit([UInt16])
        /// Encode the next frame as a key frame (a PLI, or a FIR with a new command number).
        case keyFrame
        /// The bit rate allowed changed (nil: no limit): the lower of the latest REMB and TMMBR.
        case bitrateLimit(UInt64?)
    }

    /// What the receivers sent and reported.
    public struct Statistics: Equatable, Sendable {
        /// Receiver reports about this sender's stream.
        public var receiverReportsReceived = 0
        /// NACK messages, and the packets they asked for.
        public var nacksReceived = 0
        public var packetsRequested = 0
        /// PLIs, and FIRs (repeats of a FIR command counted, but answered once).
        public var pliReceived = 0
        public var firReceived = 0
        /// REMB and TMMBR messages about this stream.
        public var rembReceived = 0
        public var tmmbrReceived = 0
        /// Feedback about other streams, or RTCP this sender does not act on.
        public var packetsIgnored = 0
        /// The latest report's loss fraction (0…1) and cumulative loss, and its jitter (RTP units).
        public var fractionLost: Double?
        public var cumulativeLost = 0
        public var jitter: UInt32 = 0
        /// The latest round-trip time (RFC 3550 §6.4.1, from LSR and DLSR).
        public var roundTripTime: Duration?
        /// The bit rate allowed now (nil: no limit).
        public var bitrateLimit: UInt64?
        /// REMB and TMMBR requests below ``SenderFeedback/minimumBitrateLimit``, raised to it.
        public var bitrateRequestsClamped = 0

        public init() {}
    }

    /// The sender's SSRC (feedback about other sources is ignored).
    public let ssrc: UInt32
    /// What the receivers sent and reported.
    public private(set) var statistics = Statistics()
    private var remb: UInt64?
    private var tmmbr: UInt64?
    /// The FIR command number last answered per requester.
    private var firNumbers: [UInt32: UInt8] = [:]
    /// The TMMBR entry in effect (its requester as the entry's SSRC), and whether the sender
    /// has yet to notify it (TMMBN, RFC 5104 §4.2.2).
    private var tmmbrOwner: RTCPFeedback.BitrateEntry?
    private var tmmbnPending = false
    /// The latest receiver reference time per receiver (middle 32 bits), and when it arrived.
    private var referenceTimes: [UInt32: (middle: UInt32, arrival: MonotonicInstant)] = [:]
    /// Receivers remembered at most (FIR numbers, reference times): bounded whatever arrives.
    public static let maximumReceivers = 64
    /// The lowest bit rate a REMB or TMMBR can ask for (100 kbit/s): a lower request (a spoofed
    /// or broken REMB 0) is raised to it and counted in ``Statistics/bitrateRequestsClamped``.
    public static let minimumBitrateLimit: UInt64 = 100_000
    /// Requests at or above this (2^62 bit/s, the saturated value of an exponent that does not
    /// fit) mean no limit.
    public static let unlimitedBitrate: UInt64 = 1 << 62

    /// A requested bit rate as a limit: nil (none) at or above ``unlimitedBitrate``, else at
    /// least ``minimumBitrateLimit``; `clamped` tells whether it was raised.
    public static func limit(forRequest bitrate: UInt64) -> (limit: UInt64?, clamped: Bool) {
        if bitrate >= unlimitedBitrate { return (nil, false) }
        if bitrate < minimumBitrateLimit { return (minimumBitrateLimit, true) }
        return (bitrate, false)
    }

    /// The feedback state of sender `ssrc`.
    public init(ssrc: UInt32) {
        self.ssrc = ssrc
    }

    /// Takes the compound packet `packets` that arrived at `now`, when the sender's wall clock
    /// read `arrivalNTP`; returns what to do, in order.
    public mutating func receive(_ packets: [RTCPPacket], now: MonotonicInstant, arrivalNTP: UInt64) -> [Action] {
        var actions: [Action] = []
        var resend: [UInt16] = []
        for packet in packets {
            switch packet {
            case .receiverReport(let report):
                for block in report.reports where block.ssrc == ssrc {
                    statistics.receiverReportsReceived += 1
                    statistics.fractionLost = Double(block.fractionLost) / 256
                    statistics.cumulativeLost = Int(block.cumulativeLost)
                    statistics.jitter = block.jitter
                    if let rtt = ReceptionReportBuilder.roundTripTime(block: block, arrival: arrivalNTP) { statistics.roundTripTime = rtt }
                }
            case .extendedReport(let report):
                for case .receiverReferenceTime(let ntp) in report.blocks {
                    guard referenceTimes[report.ssrc] != nil || referenceTimes.count < Self.maximumReceivers else { continue }
                    referenceTimes[report.ssrc] = (UInt32(truncatingIfNeeded: ntp >> 16), now)
                }
            case .feedback(let feedback):
                switch feedback.message {
                case .nack(let lost) where feedback.mediaSSRC == ssrc:
                    statistics.nacksReceived += 1
                    statistics.packetsRequested += lost.count
                    resend += lost
                case .pictureLoss where feedback.mediaSSRC == ssrc:
                    statistics.pliReceived += 1
                    if !actions.contains(.keyFrame) { actions.append(.keyFrame) }
                case .fullIntraRequest(let entries):
                    for entry in entries where entry.ssrc == ssrc {
                        statistics.firReceived += 1
                        // RFC 5104 §4.3.1.2: a repeated command number asks for the same key frame.
                        guard firNumbers[feedback.senderSSRC] != entry.sequenceNumber else { continue }
                        if firNumbers[feedback.senderSSRC] != nil || firNumbers.count < Self.maximumReceivers {
                            firNumbers[feedback.senderSSRC] = entry.sequenceNumber
                        }
                        if !actions.contains(.keyFrame) { actions.append(.keyFrame) }
                    }
                case .receiverEstimatedMaximumBitrate(let bitrate, let ssrcs) where ssrcs.contains(ssrc):
                    statistics.rembReceived += 1
                    let request = Self.limit(forRequest: bitrate)
                    if request.clamped { statistics.bitrateRequestsClamped += 1 }
                    remb = request.limit
                case .temporaryMaximumBitrateRequest(let entries):
                    statistics.tmmbrReceived += 1
                    // An empty request (or none for this stream) releases the limit (RFC 5104 §4.2.1.2).
                    let entry = entries.first { $0.ssrc == ssrc }
                    let request = entry.map { Self.limit(forRequest: $0.bitrate) }
                    if request?.clamped == true { statistics.bitrateRequestsClamped += 1 }
                    tmmbr = request?.limit
                    // The bounding set the notification carries names the requester.
                    tmmbrOwner = entry.map { RTCPFeedback.BitrateEntry(ssrc: feedback.senderSSRC, bitrate: $0.bitrate, overhead: $0.overhead) }
                    tmmbnPending = true
                default:
                    statistics.packetsIgnored += 1
                }
            default:
                break
            }
        }
        if !resend.isEmpty { actions.insert(.retransmit(resend), at: 0) }
        let limit = [remb, tmmbr].compactMap { $0 }.min()
        if limit != statistics.bitrateLimit {
            statistics.bitrateLimit = limit
            actions.append(.bitrateLimit(limit))
        }
        return actions
    }

    /// What the next sender report's compound carries besides the report: a DLRR block for each
    /// receiver that sent a reference time (RFC 3611 §4.5), and the TMMBN that answers a TMMBR
    /// taken since the last one (RFC 5104 §4.2.2: the bounding set, empty when released).
    public mutating func senderReportExtras(now: MonotonicInstant) -> [RTCPPacket] {
        var extras: [RTCPPacket] = []
        if let dlrr = delaySinceLastReceiverReports(now: now) { extras.append(dlrr) }
        if tmmbnPending {
            tmmbnPending = false
            extras.append(.feedback(RTCPFeedback(senderSSRC: ssrc, mediaSSRC: 0, message: .temporaryMaximumBitrateNotification(tmmbrOwner.map { [$0] } ?? []))))
        }
        return extras
    }

    private func delaySinceLastReceiverReports(now: MonotonicInstant) -> RTCPPacket? {
        guard !referenceTimes.isEmpty else { return nil }
        let items = referenceTimes.sorted { $0.key < $1.key }.map { receiver, reference in
            let delay = reference.arrival.duration(to: now)
            return RTCPExtendedReport.DelaySinceLastReceiverReport(
                ssrc: receiver, lastReceiverReport: reference.middle,
                delay: delay <= .zero ? 0 : UInt32(clamping: delay.nanoseconds * 65_536 / 1_000_000_000)
            )
        }
        return .extendedReport(RTCPExtendedReport(ssrc: ssrc, blocks: [.delaySinceLastReceiverReport(items)]))
    }
}
