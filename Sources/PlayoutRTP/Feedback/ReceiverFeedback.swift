public import PlayoutCore

/// Everything one played source's receiver says back to its sender, decided sans-IO: RTCP
/// receiver reports at RFC 3550 intervals (with SDES CNAME), generic NACKs while a retransmission
/// can still arrive in time, PLI/FIR while decoding waits for a key frame, and REMB/TMMBR for the
/// bandwidth limit in effect — each only of the kinds the sender's SDP announces (`a=rtcp-fb`).
/// The caller feeds what happened and polls; each poll returns the compound RTCP packets to send
/// now (reports first, as RFC 3550 §6.1 wants) and when to poll again.
///
/// ```swift
/// var feedback = ReceiverFeedback(configuration: .init(media: section, payloadType: 96, cname: "playout@host"), now: start)
/// feedback.received(sequenceNumber: extended, now: arrival)
/// let (packets, next) = feedback.poll(now: now, reception: snapshot, waitingForKeyFrame: waiting)
/// ```
public struct ReceiverFeedback: Sendable {
    /// What the receiver may send, and its identity.
    public struct Configuration: Sendable, Equatable {
        /// The receiver's own SSRC (RTCP packets name their sender).
        public var ssrc: UInt32
        /// Its SDES CNAME.
        public var cname: String
        /// The source's RTP clock rate.
        public var clockRate: Int32
        /// The session bandwidth for the report interval (bits per second).
        public var sessionBandwidth: Double
        /// Generic NACKs (`a=rtcp-fb:PT nack`).
        public var sendsNACK: Bool
        /// Key-frame requests (`nack pli`, else `ccm fir`).
        public var keyFrameRequests: KeyFrameRequester.Mode
        /// REMB (`goog-remb`).
        public var sendsREMB: Bool
        /// TMMBR (`ccm tmmbr`).
        public var sendsTMMBR: Bool
        /// RFC 3611 receiver reference times (`a=rtcp-xr:rcvr-rtt=all`), so that a sender that
        /// answers with DLRR lets this receiver measure its round-trip time.
        public var sendsReceiverReferenceTime: Bool

        /// Everything explicit.
        public init(
            ssrc: UInt32, cname: String, clockRate: Int32, sessionBandwidth: Double = 4_000_000, sendsNACK: Bool = false,
            keyFrameRequests: KeyFrameRequester.Mode = .none, sendsREMB: Bool = false, sendsTMMBR: Bool = false,
            sendsReceiverReferenceTime: Bool = false
        ) {
            self.ssrc = ssrc
            self.cname = cname
            self.clockRate = clockRate
            self.sessionBandwidth = sessionBandwidth
            self.sendsNACK = sendsNACK
            self.keyFrameRequests = keyFrameRequests
            self.sendsREMB = sendsREMB
            self.sendsTMMBR = sendsTMMBR
            self.sendsReceiverReferenceTime = sendsReceiverReferenceTime
        }

        /// What `media`'s `a=rtcp-fb` lines allow for `payloadType` (its `b=AS` or 4 Mbit/s as
        /// the session bandwidth).
        public init(media: MediaDescription, payloadType: UInt8, clockRate: Int32, ssrc: UInt32, cname: String) {
            let bandwidth = media.bandwidths.first { $0.type.uppercased() == "AS" }.map { Double($0.value) * 1_000 } ?? 4_000_000
            self.init(
                ssrc: ssrc, cname: cname, clockRate: clockRate, sessionBandwidth: bandwidth,
                sendsNACK: media.acceptsFeedback(.nack(nil), payloadType: payloadType),
                keyFrameRequests: KeyFrameRequester.mode(for: media, payloadType: payloadType),
                sendsREMB: media.acceptsFeedback(.receiverEstimatedMaximumBitrate(nil), payloadType: payloadType),
                sendsTMMBR: media.acceptsFeedback(.temporaryMaximumBitrate(nil), payloadType: payloadType),
                sendsReceiverReferenceTime: media.acceptsReceiverReferenceTime
            )
        }
    }

    /// What the jitter buffer counted for the played source, as a report needs it.
    public struct Reception: Sendable, Equatable {
        /// The source's SSRC.
        public var ssrc: UInt32
        /// Extended sequence numbers: the first and the highest received.
        public var firstSequenceNumber: Int64
        public var highestSequenceNumber: Int64
        /// Packets received (duplicates excluded).
        public var received: Int64
        /// RFC 3550 A.8 interarrival jitter, seconds.
        public var jitter: Double

        public init(ssrc: UInt32, firstSequenceNumber: Int64, highestSequenceNumber: Int64, received: Int64, jitter: Double) {
            self.ssrc = ssrc
            self.firstSequenceNumber = firstSequenceNumber
            self.highestSequenceNumber = highestSequenceNumber
            self.received = received
            self.jitter = jitter
        }
    }

    /// The settings it was made with.
    public let configuration: Configuration
    /// The NACK decisions (its statistics give W3C `nackCount`).
    public private(set) var nacks: NACKTracker
    /// The key-frame requests (`pliCount`, `firCount`).
    public private(set) var keyFrames: KeyFrameRequester
    /// Compound RTCP packets sent (reports, and feedback sent early).
    public private(set) var compoundPacketsSent = 0
    /// The latest round-trip time measured (RFC 3611 RRTR answered by DLRR; nil before one).
    public private(set) var roundTripTime: Duration?
    /// The receiver reference times sent lately (the middle 32 bits, and when), to match DLRRs.
    private var referenceTimes: [(middle: UInt32, sent: MonotonicInstant)] = []
    private var reports: ReceptionReportBuilder?
    private let interval: RTCPReportInterval
    private var nextReport: MonotonicInstant
    private var averagePacketSize = 100.0
    private var random: SeededRandomNumberGenerator
    /// Whether losses are tracked: to NACK them, or to ask for a key frame when one cannot be repaired.
    private var tracksLosses: Bool { configuration.sendsNACK || configuration.keyFrameRequests != .none }
    /// A loss could not be repaired: the next poll asks for a key frame (rate-limited).
    private var keyFrameNeeded = false
    /// The bandwidth limit in effect (nil: none), and whether the sender has been told.
    private var limit: UInt64?
    private var limitAnnounced = true
    private var firstLimitSent = false
    /// A gap opened since the last poll: its NACK falls due after the reorder wait.
    private var gapOpened = false

    /// A receiver that starts at `now`; `seed` makes the report times' randomization repeatable.
    public init(configuration: Configuration, now: MonotonicInstant, seed: UInt64 = 0x5EED) {
        self.configuration = configuration
        var tracker = NACKTracker()
        // Without NACK the losses are still tracked: one that waited out reordering cannot be
        // repaired, and asks for a key frame at once instead of when decoding finds the hole.
        if !configuration.sendsNACK { tracker.configuration.maximumRetries = 0 }
        nacks = tracker
        keyFrames = KeyFrameRequester(mode: configuration.keyFrameRequests)
        interval = RTCPReportInterval(sessionBandwidth: configuration.sessionBandwidth)
        random = SeededRandomNumberGenerator(seed: seed)
        // The first report comes after half the minimum interval (RFC 3550 §6.2).
        nextReport = now.advanced(by: interval.next(members: 2, senders: 1, averagePacketSize: averagePacketSize, initial: true, random: random.nextFraction()))
    }

    /// Packet `sequenceNumber` (extended) of the played source arrived at `now`.
    public mutating func received(sequenceNumber: Int64, now: MonotonicInstant) {
        guard tracksLosses else { return }
        if nacks.received(sequenceNumber: sequenceNumber, now: now) { gapOpened = true }
    }

    /// Whether something changed since the last poll that its `next` could not foresee, so that
    /// the receiver polls now rather than then: a gap opened (its NACK falls due after the reorder
    /// wait), or a new bandwidth limit is to be told (`receptionKnown`: the played source's counts
    /// exist, what a poll's `reception` would be). Between such changes (and a key frame to ask
    /// for, which the caller knows: decoding's side) a poll's `next` is exact, so a driver that
    /// asks this after each packet polls only when a decision falls due.
    public func wantsPoll(receptionKnown: Bool) -> Bool {
        gapOpened || (!limitAnnounced && receptionKnown && (configuration.sendsREMB || configuration.sendsTMMBR))
    }

    /// A sender report of the played source arrived at `now` (its LSR goes into the next reports).
    public mutating func receivedSenderReport(_ report: RTCPSenderReport, at now: MonotonicInstant) {
        if reports?.ssrc != report.ssrc { reports = ReceptionReportBuilder(ssrc: report.ssrc, clockRate: configuration.clockRate) }
        reports?.receivedSenderReport(report, at: now)
    }

    /// The played source changed (or restarted): reports and NACKs start over for it.
    public mutating func restart() {
        reports = nil
        nacks.reset()
    }

    /// A retransmission is useful for this long after a gap is seen: the delay in effect less the
    /// decode margin.
    public mutating func setUsefulFor(_ duration: Duration) {
        nacks.configuration.usefulFor = max(.zero, duration)
    }

    /// The bandwidth limit in effect changed (nil: none): told at the next poll, and with every
    /// report after.
    public mutating func setBandwidthLimit(_ bitsPerSecond: UInt64?) {
        guard bitsPerSecond != limit || !firstLimitSent else { return }
        limit = bitsPerSecond
        limitAnnounced = false
    }

    /// A DLRR block of the played source's extended report arrived at `now`: the round-trip time
    /// is the time since the RRTR it names less the sender's delay (RFC 3611 §4.5). DLRRs about
    /// other receivers, or naming an RRTR not sent lately, are ignored.
    public mutating func receivedExtendedReport(_ report: RTCPExtendedReport, at now: MonotonicInstant) {
        for case .delaySinceLastReceiverReport(let items) in report.blocks {
            for item in items where item.ssrc == configuration.ssrc {
                guard let sent = referenceTimes.last(where: { $0.middle == item.lastReceiverReport })?.sent else { continue }
                let delay = Duration.nanoseconds(Int64(item.delay) * 1_000_000_000 / 65_536)
                let measured = sent.duration(to: now) - delay
                if measured >= .zero { roundTripTime = measured }
            }
        }
    }

    /// What to send at `now`: `reception` is the played source's counts (nil before one is
    /// played), `waitingForKeyFrame` whether decoding waits for one. Requests are spaced by the
    /// round-trip time measured (``roundTripTime``), or `roundTripTime` when given. Returns
    /// compound packets (each one datagram, a report and SDES first) and when to poll again.
    public mutating func poll(
        now: MonotonicInstant, reception: Reception?, waitingForKeyFrame: Bool, roundTripTime: Duration? = nil
    ) -> (packets: [[RTCPPacket]], next: MonotonicInstant) {
        let roundTripTime = roundTripTime ?? self.roundTripTime
        gapOpened = false
        var feedback: [RTCPPacket] = []
        var nackAgain: MonotonicInstant?
        let media = reception?.ssrc ?? 0
        if tracksLosses, reception != nil {
            let unrepairable = nacks.statistics.packetsUnrepairable
            let (lost, again) = nacks.poll(now: now, roundTripTime: roundTripTime)
            if !lost.isEmpty { feedback.append(.feedback(RTCPFeedback(senderSSRC: configuration.ssrc, mediaSSRC: media, message: .nack(lost)))) }
            if nacks.statistics.packetsUnrepairable > unrepairable { keyFrameNeeded = true }
            nackAgain = again
        }
        if reception != nil, let request = keyFrames.poll(waitingForKeyFrame: waitingForKeyFrame || keyFrameNeeded, now: now, roundTripTime: roundTripTime) {
            keyFrameNeeded = false
            switch request {
            case .pictureLoss:
                feedback.append(.feedback(RTCPFeedback(senderSSRC: configuration.ssrc, mediaSSRC: media, message: .pictureLoss)))
            case .fullIntraRequest(let number):
                feedback.append(.feedback(RTCPFeedback(senderSSRC: configuration.ssrc, mediaSSRC: 0, message: .fullIntraRequest([(media, number)]))))
            }
        }
        let reportDue = now >= nextReport
        if let reception, !limitAnnounced || (reportDue && limit != nil) {
            feedback += limitMessages(for: reception.ssrc)
            limitAnnounced = true
            firstLimitSent = true
        }
        var packets: [[RTCPPacket]] = []
        if reportDue || !feedback.isEmpty {
            // RFC 3550 §6.1 / RFC 4585 §3.1: every compound packet starts with a report and
            // carries SDES CNAME; feedback sent early rides in a compound of its own.
            var compound: [RTCPPacket] = [.receiverReport(RTCPReceiverReport(ssrc: configuration.ssrc, reports: reportBlocks(reception, now: now, advance: reportDue)))]
            compound.append(.sourceDescription([RTCPSourceDescriptionChunk(ssrc: configuration.ssrc, items: [(RTCPSourceDescriptionChunk.ItemType.cname.rawValue, Array(configuration.cname.utf8))])]))
            if reportDue, configuration.sendsReceiverReferenceTime {
                // The receiver's own clock in NTP form: the sender only echoes its middle bits.
                let ntp = NTPTime.ntp(unixNanoseconds: now.nanoseconds)
                if referenceTimes.count >= 4 { referenceTimes.removeFirst() }
                referenceTimes.append((UInt32(truncatingIfNeeded: ntp >> 16), now))
                compound.append(.extendedReport(RTCPExtendedReport(ssrc: configuration.ssrc, blocks: [.receiverReferenceTime(ntp: ntp)])))
            }
            compound += feedback
            let size = Double(RTCPPacket.serializeCompound(compound).count + 28)  // with UDP and IPv4 headers
            averagePacketSize = averagePacketSize * 15 / 16 + size / 16  // RFC 3550 A.7's avg_rtcp_size
            packets.append(compound)
            compoundPacketsSent += 1
        }
        if reportDue {
            nextReport = now.advanced(by: interval.next(members: 2, senders: 1, averagePacketSize: averagePacketSize, initial: false, random: random.nextFraction()))
        }
        var next = nextReport
        if let nackAgain { next = min(next, nackAgain) }
        if waitingForKeyFrame || keyFrameNeeded, let again = keyFrames.nextAllowed(roundTripTime: roundTripTime) { next = min(next, max(again, now)) }
        return (packets, max(next, now))
    }

    private mutating func reportBlocks(_ reception: Reception?, now: MonotonicInstant, advance: Bool) -> [RTCPReportBlock] {
        guard let reception else { return [] }
        if reports?.ssrc != reception.ssrc { reports = ReceptionReportBuilder(ssrc: reception.ssrc, clockRate: configuration.clockRate) }
        guard var builder = reports else { return [] }
        let block = builder.block(
            extendedHighestSequenceNumber: reception.highestSequenceNumber, received: reception.received,
            firstSequenceNumber: reception.firstSequenceNumber, jitter: reception.jitter, now: now
        )
        if advance { reports = builder }  // early feedback does not start a new loss interval
        return [block]
    }

    private func limitMessages(for ssrc: UInt32) -> [RTCPPacket] {
        var messages: [RTCPPacket] = []
        // No limit: REMB says "as much as you like"; TMMBR with 0 entries releases the limit.
        if configuration.sendsREMB {
            messages.append(.feedback(RTCPFeedback(senderSSRC: configuration.ssrc, mediaSSRC: 0, message: .receiverEstimatedMaximumBitrate(bitrate: limit ?? UInt64(1) << 62, ssrcs: [ssrc]))))
        }
        if configuration.sendsTMMBR {
            let entries = limit.map { [RTCPFeedback.BitrateEntry(ssrc: ssrc, bitrate: $0, overhead: 40)] } ?? []
            messages.append(.feedback(RTCPFeedback(senderSSRC: configuration.ssrc, mediaSSRC: 0, message: .temporaryMaximumBitrateRequest(entries))))
        }
        return messages
    }
}

