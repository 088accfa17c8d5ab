import PlayoutCore
import PlayoutRTP
import PlayoutTesting
import Testing

/// The bounds on answering NACKs (issue 26, item 2), on a manual clock: a bit-rate budget, a few
/// resends per packet, one round trip apart; and the bit-rate floor under REMB/TMMBR (item 3).
@Suite("Feedback: retransmission bounds and bit-rate requests")
struct RetransmissionLimiterTests {
    /// Sends `count` media packets of `bytes` at the clock's time, numbered from `first`.
    static func sendMedia(_ limiter: inout RetransmissionLimiter, first: UInt16 = 0, count: Int, bytes: Int = 1_200, clock: ManualClock) {
        for offset in 0..<count { limiter.mediaSent(sequenceNumber: first &+ UInt16(offset), bytes: bytes, now: clock.now) }
    }

    @Test("RTX stays within a quarter of the media bytes over the last second; the budget refills as the window moves")
    func budget() {
        let clock = ManualClock(start: .init(nanoseconds: 5_000_000_000))
        var limiter = RetransmissionLimiter()
        Self.sendMedia(&limiter, count: 100, clock: clock)  // 120,000 bytes: 30,000 of budget
        var allowed = 0
        for sequence in 0..<100 where limiter.decide(sequenceNumber: UInt16(sequence), bytes: 1_202, now: clock.now) == .resend { allowed += 1 }
        #expect(allowed == 24, "30,000 / 1,202 bytes")
        #expect(limiter.statistics.refusedOverBudget == 76)
        #expect(limiter.budgetLeft(now: clock.now) < 1_202)
        // A second later the old media and the old RTX left the window: nothing to spend.
        clock.advance(by: .milliseconds(1_001))
        #expect(limiter.budgetLeft(now: clock.now) == 0)
        #expect(limiter.decide(sequenceNumber: 50, bytes: 1_202, now: clock.now) == .overBudget)
        Self.sendMedia(&limiter, first: 100, count: 10, clock: clock)
        #expect(limiter.budgetLeft(now: clock.now) == 3_000)
        #expect(limiter.decide(sequenceNumber: 50, bytes: 1_202, now: clock.now) == .resend)
    }

    @Test("one packet: not twice within the resend interval, at most three times in all")
    func perPacket() {
        let clock = ManualClock()
        var limiter = RetransmissionLimiter()
        Self.sendMedia(&limiter, count: 1_000, clock: clock)
        #expect(limiter.decide(sequenceNumber: 7, bytes: 100, now: clock.now) == .resend)
        clock.advance(by: .milliseconds(9))
        #expect(limiter.decide(sequenceNumber: 7, bytes: 100, now: clock.now) == .resentWithinRoundTrip, "10 ms apart at least with no RTT known")
        clock.advance(by: .milliseconds(1))
        #expect(limiter.decide(sequenceNumber: 7, bytes: 100, now: clock.now) == .resend)
        clock.advance(by: .milliseconds(10))
        #expect(limiter.decide(sequenceNumber: 7, bytes: 100, now: clock.now) == .resend)
        clock.advance(by: .milliseconds(500))
        #expect(limiter.decide(sequenceNumber: 7, bytes: 100, now: clock.now) == .resentTooOften)
        #expect(limiter.statistics.refusedTooOften == 1 && limiter.statistics.refusedWithinRoundTrip == 1 && limiter.statistics.packetsAllowed == 3)
        // The same sequence number sent anew (after a wrap) starts afresh.
        limiter.mediaSent(sequenceNumber: 7, bytes: 1_200, now: clock.now)
        #expect(limiter.decide(sequenceNumber: 7, bytes: 100, now: clock.now) == .resend)
    }

    @Test("the resend interval is the reported round-trip time, within 10 ms … 1 s")
    func roundTrip() {
        let clock = ManualClock()
        var limiter = RetransmissionLimiter()
        Self.sendMedia(&limiter, count: 1_000, clock: clock)
        limiter.roundTripTime = .milliseconds(80)
        #expect(limiter.resendInterval == .milliseconds(80))
        #expect(limiter.decide(sequenceNumber: 1, bytes: 100, now: clock.now) == .resend)
        clock.advance(by: .milliseconds(79))
        #expect(limiter.decide(sequenceNumber: 1, bytes: 100, now: clock.now) == .resentWithinRoundTrip)
        clock.advance(by: .milliseconds(1))
        #expect(limiter.decide(sequenceNumber: 1, bytes: 100, now: clock.now) == .resend)
        limiter.roundTripTime = .seconds(30_000)  // a report cannot stop retransmission for long
        #expect(limiter.resendInterval == .seconds(1))
        limiter.roundTripTime = .microseconds(1)
        #expect(limiter.resendInterval == .milliseconds(10))
    }

    @Test("the issue's attack on the sans-IO path: NACKs naming the last 1,024 packets at 90/s for 3 s resend at most a quarter of the media")
    func nackStorm() throws {
        let clock = ManualClock(start: .init(nanoseconds: 1_000_000_000))
        var sender = try RTPSender(codec: .h264, payloadType: 96, clockRate: 90_000, ssrc: 5, firstSequenceNumber: 0, firstTimestamp: 0)
        sender.enableRetransmission(payloadType: 98, ssrc: 6)
        sender.retransmissionRoundTripTime = .milliseconds(50)
        var media = 0
        var rtx = 0
        var frames = 0
        // 1 Mbit/s at 30 fps: 4,167 bytes a frame; a NACK every 11 ms.
        var nextFrame = clock.now
        let end = clock.now.advanced(by: .seconds(3))
        while clock.now < end {
            if clock.now >= nextFrame {
                let frame = EncodedFrame(
                    track: 0, codec: .h264, mediaTime: MediaTime(ticks: Int64(frames) * 3_000, clockRate: 90_000), firstArrival: .zero, lastArrival: .zero,
                    isKeyframe: frames % 60 == 0, bytes: [0, 0, 0, 1, 0x65] + [UInt8](repeating: 0xAB, count: 4_162)
                )
                try sender.send(frame, captureTime: nil, now: clock.now) { media += $0.count }
                frames += 1
                nextFrame = nextFrame.advanced(by: .nanoseconds(33_333_333))
            }
            let highest = UInt16(truncatingIfNeeded: sender.packetsSent)
            try sender.retransmit((0..<1_024).map { highest &- 1_024 &+ UInt16($0) }, now: clock.now) { rtx += $0.count }
            clock.advance(by: .milliseconds(11))
        }
        #expect(Double(rtx) <= 0.26 * Double(media), "RTX \(rtx) bytes for \(media) of media")
        let limits = try #require(sender.retransmissionLimits)
        #expect(limits.refusedOverBudget > 0 && limits.refusedWithinRoundTrip > 0)
    }

    @Test("a REMB or TMMBR below the floor is raised to it and counted; a saturated one means no limit", arguments: [
        (UInt64(0), UInt64?.some(100_000), 1), (50_000, 100_000, 1), (100_000, 100_000, 0), (3_000_000, 3_000_000, 0), (UInt64.max, nil, 0), (1 << 62, nil, 0),
    ] as [(UInt64, UInt64?, Int)])
    func bitrateFloor(request: UInt64, limit: UInt64?, clamped: Int) {
        for message in [
            RTCPFeedback.Message.receiverEstimatedMaximumBitrate(bitrate: request, ssrcs: [7]),
            .temporaryMaximumBitrateRequest([.init(ssrc: 7, bitrate: request)]),
        ] {
            var feedback = SenderFeedback(ssrc: 7)
            _ = feedback.receive([.feedback(RTCPFeedback(senderSSRC: 1, mediaSSRC: 0, message: message))], now: .zero, arrivalNTP: 0)
            #expect(feedback.statistics.bitrateLimit == limit)
            #expect(feedback.statistics.bitrateRequestsClamped == clamped)
        }
    }

    @Test("a TMMBR with exponent 47…63 and the largest mantissa parses (saturating) and limits nothing", arguments: [47, 50, 63] as [UInt32])
    func tmmbrHugeExponent(exponent: UInt32) throws {
        let word = exponent << 26 | 0x1_FFFF << 9 | 40
        let bytes: [UInt8] = [0x83, 205, 0, 4, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7,
                              UInt8(word >> 24), UInt8(word >> 16 & 0xFF), UInt8(word >> 8 & 0xFF), UInt8(word & 0xFF)]
        let packets = try bytes.withUnsafeBytes { try RTCPPacket.parseCompound($0) }
        var feedback = SenderFeedback(ssrc: 7)
        let actions = feedback.receive(packets, now: .zero, arrivalNTP: 0)
        #expect(feedback.statistics.tmmbrReceived == 1)
        #expect(actions.isEmpty && feedback.statistics.bitrateLimit == nil)
    }
}
