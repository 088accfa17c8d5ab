import PlayoutCore
import PlayoutRTP
import PlayoutTesting
import Testing

/// The receiver-side pieces of RTCP feedback, sans-IO: report intervals (RFC 3550 A.7),
/// reception report blocks (§6.4.1, A.3), NACK decisions (RFC 4585) and RTX (RFC 4588).
@Suite("Feedback: report interval, report blocks, NACK decisions, RTX")
struct FeedbackStateTests {
    static let t0 = MonotonicInstant(nanoseconds: 10_000_000_000)

    // MARK: RTCP report interval

    @Test("a receiver of one sender reports every 5 s on average, randomized to [0.5, 1.5] and compensated by e − 3/2")
    func reportInterval() {
        let schedule = RTCPReportInterval(sessionBandwidth: 4_000_000)
        let compensation = 2.718_281_828_459_045 - 1.5
        for (random, factor) in [(0.0, 0.5), (0.5, 1.0), (0.999_999, 1.499_999)] {
            let interval = schedule.next(members: 2, senders: 1, averagePacketSize: 90, initial: false, random: random)
            #expect(abs(interval.seconds - 5 * factor / compensation) < 1e-6, "\(interval)")
        }
        // Before the first report: half the minimum.
        let initial = schedule.next(members: 2, senders: 1, averagePacketSize: 90, initial: true, random: 0.5)
        #expect(abs(initial.seconds - 2.5 / compensation) < 1e-6)
    }

    @Test("a large audience on a thin session shares three quarters of 5 % of its bandwidth")
    func largeAudience() {
        // 10 kbit/s: RTCP 62.5 B/s; 1 sender of 100 members: receivers share 46.875 B/s, 99 of them.
        let interval = RTCPReportInterval(sessionBandwidth: 10_000).next(members: 100, senders: 1, averagePacketSize: 90, initial: false, random: 0.5)
        #expect(abs(interval.seconds - 90 * 99 / 46.875 / (2.718_281_828_459_045 - 1.5)) < 1e-6, "\(interval)")
    }

    @Test("hostile numbers give the minimum interval, never a trap", arguments: [
        (0.0, 0, 0, 0.0), (-5.0, -3, 7, -1.0), (Double.nan, 2, 1, Double.nan), (Double.infinity, 2, 1, 90), (1e300, Int.max, Int.max, 1e300),
    ])
    func hostileInterval(bandwidth: Double, members: Int, senders: Int, size: Double) {
        let interval = RTCPReportInterval(sessionBandwidth: bandwidth).next(members: members, senders: senders, averagePacketSize: size, initial: false, random: .nan)
        #expect(interval >= .zero && interval <= .seconds(1_000_000), "\(interval)")
    }

    // MARK: Reception report blocks

    @Test("fraction lost per interval, cumulative lost, extended highest, jitter in clock units, LSR and DLSR")
    func reportBlock() {
        var builder = ReceptionReportBuilder(ssrc: 0x1234, clockRate: 90_000)
        builder.receivedSenderReport(RTCPSenderReport(ssrc: 0x1234, ntpTimestamp: 0x0000_1234_5678_0000, rtpTimestamp: 0, packetCount: 0, octetCount: 0), at: Self.t0)
        // 100 expected, 95 received: 5 lost, 5 × 256 / 100 = 12.8 → 12.
        let first = builder.block(extendedHighestSequenceNumber: 65_635, received: 95, firstSequenceNumber: 65_536, jitter: 0.002, now: Self.t0.advanced(by: .milliseconds(1_500)))
        #expect(first == RTCPReportBlock(
            ssrc: 0x1234, fractionLost: 12, cumulativeLost: 5, extendedHighestSequenceNumber: 65_635, jitter: 180,
            lastSenderReport: 0x1234_5678, delaySinceLastSenderReport: 98_304
        ))
        // The next 100 all arrived: fraction 0, cumulative still 5.
        let second = builder.block(extendedHighestSequenceNumber: 65_735, received: 195, firstSequenceNumber: 65_536, jitter: 0.001, now: Self.t0.advanced(by: .seconds(3)))
        #expect(second.fractionLost == 0 && second.cumulativeLost == 5)
        // Duplicates counted as received: negative loss, fraction 0, clamped to 24 bits.
        let third = builder.block(extendedHighestSequenceNumber: 65_735, received: 20_000_000, firstSequenceNumber: 65_536, jitter: 0, now: Self.t0.advanced(by: .seconds(4)))
        #expect(third.fractionLost == 0 && third.cumulativeLost == -0x80_0000)
    }

    @Test("the sender's round-trip time from a block: arrival − LSR − DLSR")
    func roundTrip() {
        let block = RTCPReportBlock(ssrc: 1, lastSenderReport: 0x1234_5678, delaySinceLastSenderReport: 98_304)
        // Arrival 1.5 s + 125 ms (8,192 units) after the report's NTP time.
        let arrival: UInt64 = 0x0000_1234_5678_0000 &+ (UInt64(98_304 + 8_192) << 16)
        #expect(ReceptionReportBuilder.roundTripTime(block: block, arrival: arrival) == .milliseconds(125))
        #expect(ReceptionReportBuilder.roundTripTime(block: RTCPReportBlock(ssrc: 1), arrival: arrival) == nil, "no LSR, no RTT")
        #expect(ReceptionReportBuilder.roundTripTime(block: block, arrival: 0x0000_1234_5678_0000) == nil, "negative: nil")
    }

    // MARK: NACK decisions

    @Test("a gap is asked for after the reorder wait, again after a round trip, and recovered packets are counted")
    func nackTiming() {
        var tracker = NACKTracker()
        tracker.received(sequenceNumber: 1_000, now: Self.t0)
        let t1 = Self.t0.advanced(by: .milliseconds(1))
        tracker.received(sequenceNumber: 1_003, now: t1)
        #expect(tracker.missingSequenceNumbers == [1_001, 1_002])
        var answer = tracker.poll(now: t1.advanced(by: .milliseconds(5)), roundTripTime: .milliseconds(30))
        #expect(answer.nack.isEmpty && answer.next == t1.advanced(by: .milliseconds(10)))
        answer = tracker.poll(now: t1.advanced(by: .milliseconds(10)), roundTripTime: .milliseconds(30))
        #expect(answer.nack == [1_001, 1_002] && answer.next == t1.advanced(by: .milliseconds(40)))
        tracker.received(sequenceNumber: 1_001, now: t1.advanced(by: .milliseconds(35)))
        answer = tracker.poll(now: t1.advanced(by: .milliseconds(40)), roundTripTime: .milliseconds(30))
        #expect(answer.nack == [1_002])
        let statistics = tracker.statistics
        #expect(statistics.nackCount == 2 && statistics.packetsRequested == 3 && statistics.packetsRecovered == 1)
        #expect(statistics.packetsReordered == 0 && statistics.packetsAbandoned == 0)
    }

    @Test("reordering within the wait is no loss; a packet too late to help is given up, not asked for")
    func nackReorderingAndUsefulness() {
        var tracker = NACKTracker()
        tracker.received(sequenceNumber: 10, now: Self.t0)
        tracker.received(sequenceNumber: 12, now: Self.t0)
        tracker.received(sequenceNumber: 11, now: Self.t0.advanced(by: .milliseconds(3)))
        #expect(tracker.poll(now: Self.t0.advanced(by: .milliseconds(20)), roundTripTime: nil).nack.isEmpty)
        #expect(tracker.statistics.packetsReordered == 1)

        // usefulFor 200 ms with a 50 ms round trip: asked at 10 ms, 60, 110, 160 (then 210 + 50 > 200).
        tracker.received(sequenceNumber: 14, now: Self.t0)
        var asked: [Int64] = []
        var now = Self.t0
        while let next = tracker.poll(now: now, roundTripTime: .milliseconds(50)).next {
            now = next
            if !tracker.poll(now: now, roundTripTime: .milliseconds(50)).nack.isEmpty { asked.append(Self.t0.duration(to: now).nanoseconds / 1_000_000) }
        }
        #expect(asked == [10, 60, 110], "\(asked)")
        #expect(tracker.missingSequenceNumbers.isEmpty && tracker.statistics.packetsAbandoned == 1)
    }

    @Test("memory is bounded: a flood of gaps keeps at most maximumMissing, a huge jump is a new stream")
    func nackBounded() {
        var tracker = NACKTracker()
        tracker.received(sequenceNumber: 0, now: Self.t0)
        tracker.received(sequenceNumber: 901, now: Self.t0)
        tracker.received(sequenceNumber: 1_802, now: Self.t0)
        #expect(tracker.missingSequenceNumbers.count == 1_000)
        #expect(tracker.missingSequenceNumbers.first == 801)  // 1…900 and 902…1,801 were missing: the oldest 800 went
        #expect(tracker.statistics.packetsAbandoned == 800)
        tracker.received(sequenceNumber: 1_000_000, now: Self.t0)
        #expect(tracker.missingSequenceNumbers.isEmpty)
        tracker.received(sequenceNumber: 999_999, now: Self.t0)  // older than the highest, not missing: ignored
        #expect(tracker.statistics.packetsRecovered == 0 && tracker.statistics.packetsReordered == 0)
    }

    // MARK: RTX

    @Test("an RTX packet restores, in place, to the original packet byte for byte (CSRCs and extensions kept)")
    func rtxRoundTrip() throws {
        let builder = RTPPacketBuilder(
            marker: true, payloadType: 96, sequenceNumber: 65_534, timestamp: 4_294_967_000, ssrc: 0xCAFE,
            csrcs: [7, 8], extensions: [.init(id: 1, bytes: [1, 2, 3])]
        )
        let payload: [UInt8] = (0..<300).map { UInt8($0 & 0xFF) }
        var original = [UInt8](repeating: 0, count: 2_000)
        let originalLength = try payload.withUnsafeBytes { source in try original.withUnsafeMutableBytes { try builder.write(payload: source, into: $0) } }
        var rtx = [UInt8](repeating: 0, count: 2_000)
        let rtxLength = try #require(original.withUnsafeBytes { source in
            rtx.withUnsafeMutableBytes { RTPRetransmission.packetize(UnsafeRawBufferPointer(rebasing: source[0..<originalLength]), into: $0, payloadType: 97, ssrc: 0xBEEF, sequenceNumber: 5) }
        })
        #expect(rtxLength == originalLength + 2)
        let parsedRTX = try rtx.withUnsafeBytes { try RTPPacket(parsing: UnsafeRawBufferPointer(rebasing: $0[0..<rtxLength])).header }
        #expect(parsedRTX.payloadType == 97 && parsedRTX.ssrc == 0xBEEF && parsedRTX.sequenceNumber == 5 && parsedRTX.marker && parsedRTX.timestamp == 4_294_967_000)
        let restored = try #require(rtx.withUnsafeMutableBytes { RTPRetransmission.restore($0, length: rtxLength, payloadType: 96, ssrc: 0xCAFE) })
        #expect(restored.start == 2 && restored.length == originalLength)
        #expect(Array(rtx[2..<2 + originalLength]) == Array(original[0..<originalLength]))
    }

    @Test("RTX of padding only, too short, not RTP, or into too small a buffer: nil, no crash")
    func rtxHostile() {
        var bytes: [UInt8] = [0x80, 97, 0, 5, 0, 0, 0, 1, 0, 0, 0xBE, 0xEF, 0x01]  // 1-byte payload: no OSN
        #expect(bytes.withUnsafeMutableBytes { RTPRetransmission.restore($0, length: 13, payloadType: 96, ssrc: 1) } == nil)
        #expect(bytes.withUnsafeMutableBytes { RTPRetransmission.restore($0, length: 5, payloadType: 96, ssrc: 1) } == nil)
        #expect(bytes.withUnsafeMutableBytes { RTPRetransmission.restore($0, length: -3, payloadType: 96, ssrc: 1) } == nil)
        var small = [UInt8](repeating: 0, count: 10)
        #expect(bytes.withUnsafeBytes { source in small.withUnsafeMutableBytes { RTPRetransmission.packetize(source, into: $0, payloadType: 97, ssrc: 2, sequenceNumber: 1) } } == nil)
        var random = SeededRandomNumberGenerator(seed: 4588)
        for length in 0..<400 {
            var datagram = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            if length > 0 { datagram[0] = 0x80 | (datagram[0] & 0x3F) }
            _ = datagram.withUnsafeMutableBytes { RTPRetransmission.restore($0, length: length, payloadType: 96, ssrc: 3) }
        }
    }
}

/// Key-frame requests and the sender's retransmission buffer.
@Suite("Feedback: key-frame requests, retransmission buffer")
struct KeyFrameAndRetransmissionTests {
    static let t0 = FeedbackStateTests.t0

    @Test("PLIs at most one per max(RTT, 100 ms) while decoding waits; none when it does not, or when the sender accepts none")
    func pictureLoss() {
        var requester = KeyFrameRequester(mode: .pictureLoss)
        #expect(requester.poll(waitingForKeyFrame: true, now: Self.t0, roundTripTime: nil) == .pictureLoss)
        #expect(requester.poll(waitingForKeyFrame: true, now: Self.t0.advanced(by: .milliseconds(99)), roundTripTime: nil) == nil)
        #expect(requester.poll(waitingForKeyFrame: true, now: Self.t0.advanced(by: .milliseconds(100)), roundTripTime: nil) == .pictureLoss)
        // A 250 ms round trip spaces them by 250 ms.
        #expect(requester.poll(waitingForKeyFrame: true, now: Self.t0.advanced(by: .milliseconds(300)), roundTripTime: .milliseconds(250)) == nil)
        #expect(requester.nextAllowed(roundTripTime: .milliseconds(250)) == Self.t0.advanced(by: .milliseconds(350)))
        #expect(requester.poll(waitingForKeyFrame: false, now: Self.t0.advanced(by: .seconds(5)), roundTripTime: nil) == nil)
        #expect(requester.pliCount == 2 && requester.firCount == 0)
        var silent = KeyFrameRequester(mode: .none)
        #expect(silent.poll(waitingForKeyFrame: true, now: Self.t0, roundTripTime: nil) == nil)
    }

    @Test("a FIR repeat keeps its command number; a new need for a key frame takes the next, wrapping at 255")
    func fullIntraRequest() {
        var requester = KeyFrameRequester(mode: .fullIntraRequest)
        var now = Self.t0
        #expect(requester.poll(waitingForKeyFrame: true, now: now, roundTripTime: nil) == .fullIntraRequest(sequenceNumber: 1))
        now = now.advanced(by: .milliseconds(100))
        #expect(requester.poll(waitingForKeyFrame: true, now: now, roundTripTime: nil) == .fullIntraRequest(sequenceNumber: 1), "a repeat")
        _ = requester.poll(waitingForKeyFrame: false, now: now, roundTripTime: nil)  // the key frame came
        var last: KeyFrameRequester.Request?
        for _ in 0..<255 {
            now = now.advanced(by: .milliseconds(100))
            last = requester.poll(waitingForKeyFrame: true, now: now, roundTripTime: nil)
            _ = requester.poll(waitingForKeyFrame: false, now: now, roundTripTime: nil)
        }
        #expect(last == .fullIntraRequest(sequenceNumber: 0), "1 + 255 wraps to 0")
        #expect(requester.firCount == 257)
    }

    @Test("the mode follows the SDP: PLI preferred, FIR otherwise, nothing for a sender that announces neither")
    func modeFromSDP() throws {
        func media(_ lines: String) throws -> MediaDescription {
            try SessionDescription(parsing: "v=0\no=- 0 0 IN IP4 127.0.0.1\ns=x\nc=IN IP4 127.0.0.1\nt=0 0\nm=video 5004 RTP/AVPF 96\na=rtpmap:96 H264/90000\n\(lines)").media[0]
        }
        #expect(KeyFrameRequester.mode(for: try media("a=rtcp-fb:96 ccm fir\na=rtcp-fb:96 nack pli\n"), payloadType: 96) == .pictureLoss)
        #expect(KeyFrameRequester.mode(for: try media("a=rtcp-fb:* ccm fir\n"), payloadType: 96) == .fullIntraRequest)
        #expect(KeyFrameRequester.mode(for: try media(""), payloadType: 96) == .none)
    }

    @Test("resends what it kept, once per resend interval, never what is too old or overwritten")
    func retransmissionBuffer() {
        var buffer = RetransmissionBuffer(capacity: 100, maximumAge: .seconds(1))
        #expect(buffer.capacity == 128)
        for sequence in 0..<300 {
            let bytes = [UInt8](repeating: UInt8(sequence & 0xFF), count: 100 + sequence)
            bytes.withUnsafeBytes { buffer.store($0, sequenceNumber: UInt16(truncatingIfNeeded: 65_436 + sequence), now: Self.t0.advanced(by: .milliseconds(sequence))) }
        }
        let now = Self.t0.advanced(by: .milliseconds(300))
        var resent: [UInt8] = []
        // The newest (sequence 65,436 + 299 = 199 after the wrap) is kept, whole.
        #expect(buffer.withPacket(199, now: now) { resent = Array($0) })
        #expect(resent == [UInt8](repeating: UInt8(299 & 0xFF), count: 399))
        #expect(!buffer.withPacket(199, now: now.advanced(by: .milliseconds(5))) { _ in }, "on its way already")
        #expect(buffer.withPacket(199, now: now.advanced(by: .milliseconds(10))) { _ in })
        #expect(!buffer.withPacket(65_436, now: now) { _ in }, "overwritten by a later packet in its slot")
        #expect(!buffer.withPacket(199, now: Self.t0.advanced(by: .milliseconds(1_299))) { _ in }, "a second old")
        let statistics = buffer.statistics
        #expect(statistics.packetsRequested == 5 && statistics.packetsResent == 2 && statistics.packetsUnavailable == 2 && statistics.packetsResentRecently == 1)
    }
}

/// One source's receiver feedback as a whole: reports at RFC 3550 intervals, and only the
/// feedback kinds the SDP announces.
@Suite("Feedback: a receiver's RTCP, sans-IO")
struct ReceiverFeedbackTests {
    static let t0 = FeedbackStateTests.t0
    static func reception(highest: Int64, received: Int64) -> ReceiverFeedback.Reception {
        .init(ssrc: 0x1234, firstSequenceNumber: 1_000, highestSequenceNumber: highest, received: received, jitter: 0.001)
    }

    @Test("a sender that announces nothing (ffmpeg) gets receiver reports with SDES only, every ≈ 5 s, randomized and repeatable")
    func reportsOnly() {
        var feedback = ReceiverFeedback(configuration: .init(ssrc: 7, cname: "playout@test", clockRate: 90_000), now: Self.t0)
        var now = Self.t0
        var sent: [(at: MonotonicInstant, compound: [RTCPPacket])] = []
        for step in 0..<60_000 {  // 60 s in 1 ms steps, a gap at 1,050 and the decoder waiting
            now = Self.t0.advanced(by: .milliseconds(step))
            feedback.received(sequenceNumber: 1_000 + Int64(step / 3), now: now)
            let (packets, _) = feedback.poll(now: now, reception: Self.reception(highest: 1_000 + Int64(step / 3), received: 1 + Int64(step / 3)), waitingForKeyFrame: step < 500)
            sent += packets.map { (now, $0) }
        }
        #expect(sent.allSatisfy { $0.compound.count == 2 }, "a report and SDES, no feedback")
        let gaps = zip(sent, sent.dropFirst()).map { $0.at.duration(to: $1.at).seconds }
        // Randomized in [0.5, 1.5] × 5 s / (e − 3/2): 2.05 s … 6.16 s.
        #expect(gaps.allSatisfy { $0 >= 2.05 && $0 <= 6.16 }, "\(gaps)")
        #expect(sent.count >= 9 && sent.count <= 26, "\(sent.count)")
        #expect(feedback.nacks.statistics.nackCount == 0 && feedback.keyFrames.pliCount == 0)
        guard case .receiverReport(let report) = sent[0].compound[0] else { Issue.record("no report first"); return }
        #expect(report.ssrc == 7 && report.reports.first?.ssrc == 0x1234)
    }

    @Test("with nack, nack pli and goog-remb announced: a NACK for a gap, PLIs while decoding waits, REMB when a limit is set and released")
    func everyKind() {
        let configuration = ReceiverFeedback.Configuration(ssrc: 7, cname: "c", clockRate: 90_000, sendsNACK: true, keyFrameRequests: .pictureLoss, sendsREMB: true)
        var feedback = ReceiverFeedback(configuration: configuration, now: Self.t0)
        feedback.received(sequenceNumber: 1_000, now: Self.t0)
        feedback.received(sequenceNumber: 1_005, now: Self.t0)
        var now = Self.t0.advanced(by: .milliseconds(10))
        var packets = feedback.poll(now: now, reception: Self.reception(highest: 1_005, received: 2), waitingForKeyFrame: true).packets
        #expect(packets.count == 1)
        let kinds = packets.first?.compactMap { packet -> String? in
            guard case .feedback(let message) = packet else { return nil }
            switch message.message {
            case .nack(let lost): return "nack \(lost)"
            case .pictureLoss: return "pli"
            default: return "other"
            }
        }
        #expect(kinds == ["nack [1001, 1002, 1003, 1004]", "pli"])
        feedback.setBandwidthLimit(500_000)
        now = now.advanced(by: .milliseconds(1))
        packets = feedback.poll(now: now, reception: Self.reception(highest: 1_005, received: 2), waitingForKeyFrame: false).packets
        #expect(packets.first?.contains(.feedback(RTCPFeedback(senderSSRC: 7, mediaSSRC: 0, message: .receiverEstimatedMaximumBitrate(bitrate: 500_000, ssrcs: [0x1234])))) == true)
        feedback.setBandwidthLimit(nil)
        now = now.advanced(by: .milliseconds(1))
        packets = feedback.poll(now: now, reception: Self.reception(highest: 1_005, received: 2), waitingForKeyFrame: false).packets
        let released = packets.first?.contains { packet in
            if case .feedback(let message) = packet, case .receiverEstimatedMaximumBitrate(let bitrate, _) = message.message { return bitrate >= 1 << 62 }
            return false
        }
        #expect(released == true, "no limit: as much as you like")
        #expect(feedback.keyFrames.pliCount == 1 && feedback.nacks.statistics.nackCount == 1)
    }

    @Test("it wants a poll before the instant it named only when that instant no longer holds: a gap opened, a limit to tell")
    func wantsPoll() {
        let configuration = ReceiverFeedback.Configuration(ssrc: 7, cname: "c", clockRate: 90_000, sendsNACK: true, keyFrameRequests: .pictureLoss, sendsREMB: true)
        var feedback = ReceiverFeedback(configuration: configuration, now: Self.t0)
        var now = Self.t0
        func poll(highest: Int64) -> MonotonicInstant {
            feedback.poll(now: now, reception: Self.reception(highest: highest, received: highest - 999), waitingForKeyFrame: false).next
        }
        var tracker = NACKTracker()
        let opened = [1, 2, 4, 3, 4, 4 + 1_002].map { tracker.received(sequenceNumber: $0, now: now) }
        #expect(opened == [false, false, true, false, false, false], "only 4 after 2 opens a gap; 1,002 ahead is a new stream")
        for sequence: Int64 in [1_000, 1_001, 1_002] { feedback.received(sequenceNumber: sequence, now: now) }
        #expect(!feedback.wantsPoll(receptionKnown: true))
        _ = poll(highest: 1_002)
        now = now.advanced(by: .milliseconds(3))
        feedback.received(sequenceNumber: 1_005, now: now)
        #expect(feedback.wantsPoll(receptionKnown: true), "a gap opened")
        #expect(poll(highest: 1_005) == now.advanced(by: .milliseconds(10)), "the NACK falls due after the reorder wait")
        #expect(!feedback.wantsPoll(receptionKnown: true), "the poll saw it")
        feedback.received(sequenceNumber: 1_004, now: now)
        feedback.received(sequenceNumber: 1_004, now: now)
        #expect(!feedback.wantsPoll(receptionKnown: true), "a late packet closes a gap: the instant named is early at worst")
        // A jump too large to be a gap is a new stream: nothing to ask for.
        feedback.received(sequenceNumber: 1_005 + 5_000, now: now)
        #expect(!feedback.wantsPoll(receptionKnown: true))
        // A limit is told once the played source is known, then not again until it changes.
        feedback.setBandwidthLimit(500_000)
        #expect(!feedback.wantsPoll(receptionKnown: false) && feedback.wantsPoll(receptionKnown: true))
        _ = poll(highest: 6_005)
        #expect(!feedback.wantsPoll(receptionKnown: true))
        feedback.setBandwidthLimit(500_000)
        #expect(!feedback.wantsPoll(receptionKnown: true), "the same limit again: nothing new to tell")
        // A sender that takes neither REMB nor TMMBR is never told a limit.
        var silent = ReceiverFeedback(configuration: .init(ssrc: 7, cname: "c", clockRate: 90_000, sendsNACK: true), now: Self.t0)
        silent.setBandwidthLimit(500_000)
        #expect(!silent.wantsPoll(receptionKnown: true))
    }

    @Test("the SDP decides: ffmpeg's section allows nothing, the publisher's everything it announces")
    func fromSDP() throws {
        let plain = try SessionDescription(parsing: "v=0\no=- 0 0 IN IP4 127.0.0.1\ns=x\nc=IN IP4 127.0.0.1\nt=0 0\nm=video 5004 RTP/AVP 96\na=rtpmap:96 H264/90000\n").media[0]
        let none = ReceiverFeedback.Configuration(media: plain, payloadType: 96, clockRate: 90_000, ssrc: 1, cname: "c")
        #expect(!none.sendsNACK && none.keyFrameRequests == .none && !none.sendsREMB && !none.sendsTMMBR && none.sessionBandwidth == 4_000_000)
        let rich = try SessionDescription(parsing: SDPFeedbackTests.sdp).media[0]
        let all = ReceiverFeedback.Configuration(media: rich, payloadType: 96, clockRate: 90_000, ssrc: 1, cname: "c")
        #expect(all.sendsNACK && all.keyFrameRequests == .pictureLoss && all.sendsREMB && all.sendsTMMBR)
    }
}

extension ReceiverFeedbackTests {
    @Test("report times repeat for a seed and differ between seeds")
    func repeatable() {
        func times(seed: UInt64) -> [MonotonicInstant] {
            var feedback = ReceiverFeedback(configuration: .init(ssrc: 7, cname: "c", clockRate: 90_000), now: Self.t0, seed: seed)
            var instants: [MonotonicInstant] = []
            var now = Self.t0
            for _ in 0..<10 {
                let (packets, next) = feedback.poll(now: now, reception: Self.reception(highest: 1_000, received: 1), waitingForKeyFrame: false)
                if !packets.isEmpty { instants.append(now) }
                now = next
            }
            return instants
        }
        #expect(times(seed: 1) == times(seed: 1))
        #expect(times(seed: 1) != times(seed: 2))
        #expect(times(seed: 1).count == 9, "the first poll is before the first report; each later poll lands on one")
    }
}
