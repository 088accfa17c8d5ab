import PlayoutCore
import PlayoutRTP
import PlayoutTesting
import Testing

/// RFC 3611 extended reports and the sender's half of feedback, sans-IO: every decision on
/// explicit instants.
@Suite("Feedback: XR round-trip time, the sender's decisions")
struct SenderFeedbackTests {
    static let t0 = FeedbackStateTests.t0

    @Test("RRTR and DLRR blocks: RFC 3611 §4.4/§4.5 layouts parse and write back byte for byte")
    func extendedReportLayout() throws {
        // RRTR (block type 4, length 2 words, NTP) then DLRR (type 5, one sub-block of 3 words).
        let bytes: [UInt8] = [
            0x80, 207, 0, 8, 0, 0, 0, 7,
            4, 0, 0, 2, 0xE1, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF,
            5, 0, 0, 3, 0, 0, 0x12, 0x34, 0x45, 0x67, 0x89, 0xAB, 0, 0, 0x19, 0x9A,
        ]
        let report = RTCPExtendedReport(ssrc: 7, blocks: [
            .receiverReferenceTime(ntp: 0xE123_4567_89AB_CDEF),
            .delaySinceLastReceiverReport([.init(ssrc: 0x1234, lastReceiverReport: 0x4567_89AB, delay: 0x199A)]),
        ])
        #expect(try parseRTCP(bytes) == [.extendedReport(report)])
        #expect(RTCPPacket.extendedReport(report).serialized == bytes)
    }

    @Test("malformed XR is a clear error: a block past the end, an RRTR of the wrong size, a DLRR not in 12-byte sub-blocks", arguments: [
        [0x80, 207, 0, 2, 0, 0, 0, 7, 4, 0, 0, 2] as [UInt8],
        [0x80, 207, 0, 3, 0, 0, 0, 7, 4, 0, 0, 1, 0, 0, 0, 0],
        [0x80, 207, 0, 3, 0, 0, 0, 7, 5, 0, 0, 1, 0, 0, 0, 0],
        [0x80, 207, 0, 0],
    ])
    func malformedExtendedReport(bytes: [UInt8]) {
        #expect(throws: RTCPParseError.self) { try parseRTCP(bytes) }
    }

    @Test("the receiver measures its RTT from the sender's DLRR: time since its RRTR less the sender's delay")
    func receiverRoundTrip() throws {
        let configuration = ReceiverFeedback.Configuration(ssrc: 7, cname: "c", clockRate: 90_000, sendsReceiverReferenceTime: true)
        var feedback = ReceiverFeedback(configuration: configuration, now: Self.t0)
        let reception = ReceiverFeedback.Reception(ssrc: 0x1234, firstSequenceNumber: 1, highestSequenceNumber: 1, received: 1, jitter: 0)
        var now = Self.t0
        var rrtr: (ntp: UInt64, at: MonotonicInstant)?
        while rrtr == nil {
            let (packets, next) = feedback.poll(now: now, reception: reception, waitingForKeyFrame: false)
            for compound in packets {
                for case .extendedReport(let report) in compound {
                    for case .receiverReferenceTime(let ntp) in report.blocks { rrtr = (ntp, now) }
                }
            }
            now = next
        }
        let sent = try #require(rrtr)
        // The sender held it 30 ms (1,966 units of 1/65536 s); it arrives back 80 ms after it left.
        let dlrr = RTCPExtendedReport(ssrc: 0x1234, blocks: [.delaySinceLastReceiverReport([
            .init(ssrc: 99, lastReceiverReport: UInt32(truncatingIfNeeded: sent.ntp >> 16), delay: 1_966),
            .init(ssrc: 7, lastReceiverReport: UInt32(truncatingIfNeeded: sent.ntp >> 16), delay: 1_966),
        ])])
        feedback.receivedExtendedReport(dlrr, at: sent.at.advanced(by: .milliseconds(80)))
        let rtt = try #require(feedback.roundTripTime)
        #expect(abs((rtt - .milliseconds(50)).seconds) < 0.000_1, "\(rtt)")
        // A DLRR naming an RRTR never sent changes nothing.
        feedback.receivedExtendedReport(RTCPExtendedReport(ssrc: 0x1234, blocks: [.delaySinceLastReceiverReport([.init(ssrc: 7, lastReceiverReport: 1, delay: 0)])]), at: now)
        #expect(feedback.roundTripTime == rtt)
        // Without rcvr-rtt in the SDP, no RRTR goes out.
        var plain = ReceiverFeedback(configuration: .init(ssrc: 7, cname: "c", clockRate: 90_000), now: Self.t0)
        let (packets, _) = plain.poll(now: Self.t0.advanced(by: .seconds(10)), reception: reception, waitingForKeyFrame: false)
        #expect(!packets.isEmpty && packets.allSatisfy { $0.allSatisfy { if case .extendedReport = $0 { false } else { true } } })
    }

    @Test("without NACK, a loss that outlived the reorder wait asks for a key frame at once; with NACK, only once repair ran out of time")
    func keyFrameForUnrepairableLoss() {
        let reception = ReceiverFeedback.Reception(ssrc: 0x1234, firstSequenceNumber: 1_000, highestSequenceNumber: 1_005, received: 5, jitter: 0)
        func requests(sendsNACK: Bool, at offsets: [Int]) -> [Int] {
            var feedback = ReceiverFeedback(
                configuration: .init(ssrc: 7, cname: "c", clockRate: 90_000, sendsNACK: sendsNACK, keyFrameRequests: .pictureLoss), now: Self.t0
            )
            feedback.setUsefulFor(.milliseconds(200))
            feedback.received(sequenceNumber: 1_000, now: Self.t0)
            feedback.received(sequenceNumber: 1_005, now: Self.t0)  // 1001…1004 missing
            return offsets.filter { offset in
                let (packets, _) = feedback.poll(now: Self.t0.advanced(by: .milliseconds(offset)), reception: reception, waitingForKeyFrame: false)
                return packets.contains { $0.contains(.feedback(RTCPFeedback(senderSSRC: 7, mediaSSRC: 0x1234, message: .pictureLoss))) }
            }
        }
        // No NACK: the reorder wait (10 ms), then a PLI — before decoding finds the hole.
        #expect(requests(sendsNACK: false, at: [5, 10, 20, 150, 300]) == [10])
        // NACK: asked for first; the key frame only when a retransmission could no longer help.
        #expect(requests(sendsNACK: true, at: [5, 10, 20, 150, 199, 200, 300]) == [200])
    }

    @Test("the sender acts on NACK, PLI, a new FIR, and the lower of REMB and TMMBR; feedback about other streams is ignored")
    func senderDecisions() {
        var sender = SenderFeedback(ssrc: 0x1234)
        func feedback(_ message: RTCPFeedback.Message, media: UInt32 = 0x1234) -> RTCPPacket {
            .feedback(RTCPFeedback(senderSSRC: 7, mediaSSRC: media, message: message))
        }
        let ntp = NTPTime.ntp(unixNanoseconds: 1_700_000_000_000_000_000)
        var actions = sender.receive([.receiverReport(RTCPReceiverReport(ssrc: 7)), feedback(.nack([10, 11])), feedback(.pictureLoss), feedback(.pictureLoss)], now: Self.t0, arrivalNTP: ntp)
        #expect(actions == [.retransmit([10, 11]), .keyFrame])
        #expect(sender.receive([feedback(.nack([12]), media: 99), feedback(.pictureLoss, media: 99)], now: Self.t0, arrivalNTP: ntp).isEmpty)
        // FIR: a new command number is a new request; its repeat is not.
        actions = sender.receive([feedback(.fullIntraRequest([(0x1234, 1)]), media: 0)], now: Self.t0, arrivalNTP: ntp)
        #expect(actions == [.keyFrame])
        #expect(sender.receive([feedback(.fullIntraRequest([(0x1234, 1)]), media: 0)], now: Self.t0, arrivalNTP: ntp).isEmpty)
        #expect(sender.receive([feedback(.fullIntraRequest([(0x1234, 2)]), media: 0)], now: Self.t0, arrivalNTP: ntp) == [.keyFrame])
        // Bandwidth: the lower of the two; REMB's "as much as you like" and an empty TMMBR release.
        #expect(sender.receive([feedback(.receiverEstimatedMaximumBitrate(bitrate: 900_000, ssrcs: [0x1234]), media: 0)], now: Self.t0, arrivalNTP: ntp) == [.bitrateLimit(900_000)])
        #expect(sender.receive([feedback(.temporaryMaximumBitrateRequest([.init(ssrc: 0x1234, bitrate: 700_000)]), media: 0)], now: Self.t0, arrivalNTP: ntp) == [.bitrateLimit(700_000)])
        #expect(sender.receive([feedback(.temporaryMaximumBitrateRequest([]), media: 0)], now: Self.t0, arrivalNTP: ntp) == [.bitrateLimit(900_000)])
        #expect(sender.receive([feedback(.receiverEstimatedMaximumBitrate(bitrate: 1 << 62, ssrcs: [0x1234]), media: 0)], now: Self.t0, arrivalNTP: ntp) == [.bitrateLimit(nil)])
        #expect(sender.receive([feedback(.receiverEstimatedMaximumBitrate(bitrate: 1, ssrcs: [99]), media: 0)], now: Self.t0, arrivalNTP: ntp).isEmpty)
        // Each TMMBR is answered once, in the next sender report's compound, by a TMMBN naming its requester.
        let notification = RTCPPacket.feedback(RTCPFeedback(senderSSRC: 0x1234, mediaSSRC: 0, message: .temporaryMaximumBitrateNotification([])))
        #expect(sender.senderReportExtras(now: Self.t0) == [notification], "the last TMMBR released the limit: an empty bounding set")
        #expect(sender.senderReportExtras(now: Self.t0).isEmpty)
        _ = sender.receive([feedback(.temporaryMaximumBitrateRequest([.init(ssrc: 0x1234, bitrate: 700_000, overhead: 40)]), media: 0)], now: Self.t0, arrivalNTP: ntp)
        #expect(sender.senderReportExtras(now: Self.t0) == [.feedback(RTCPFeedback(
            senderSSRC: 0x1234, mediaSSRC: 0, message: .temporaryMaximumBitrateNotification([.init(ssrc: 7, bitrate: 700_000, overhead: 40)])
        ))])
        let statistics = sender.statistics
        #expect(statistics.nacksReceived == 1 && statistics.packetsRequested == 2 && statistics.pliReceived == 2 && statistics.firReceived == 3)
        #expect(statistics.rembReceived == 2 && statistics.tmmbrReceived == 3 && statistics.packetsIgnored == 3 && statistics.bitrateLimit == 700_000)
    }

    @Test("the sender reads loss, jitter and RTT from a report block, and answers an RRTR with a DLRR holding its delay")
    func senderReports() throws {
        var sender = SenderFeedback(ssrc: 0x1234)
        #expect(sender.senderReportExtras(now: Self.t0).isEmpty)
        // Its sender report left at NTP A; the receiver held it 100 ms; it came back at A + 150 ms.
        let sentAt = NTPTime.ntp(unixNanoseconds: 1_700_000_000_000_000_000)
        let block = RTCPReportBlock(
            ssrc: 0x1234, fractionLost: 64, cumulativeLost: 12, extendedHighestSequenceNumber: 5_000, jitter: 90,
            lastSenderReport: UInt32(truncatingIfNeeded: sentAt >> 16), delaySinceLastSenderReport: 6_554
        )
        let arrival = NTPTime.ntp(unixNanoseconds: 1_700_000_000_150_000_000)
        _ = sender.receive([.receiverReport(RTCPReceiverReport(ssrc: 7, reports: [block])), .extendedReport(RTCPExtendedReport(ssrc: 7, blocks: [.receiverReferenceTime(ntp: 0xAAAA_BBBB_CCCC_DDDD)]))], now: Self.t0, arrivalNTP: arrival)
        let statistics = sender.statistics
        #expect(statistics.fractionLost == 0.25 && statistics.cumulativeLost == 12 && statistics.jitter == 90 && statistics.receiverReportsReceived == 1)
        let rtt = try #require(statistics.roundTripTime)
        #expect(abs((rtt - .milliseconds(50)).seconds) < 0.000_1, "\(rtt)")
        let extras = sender.senderReportExtras(now: Self.t0.advanced(by: .milliseconds(250)))
        #expect(extras == [.extendedReport(RTCPExtendedReport(ssrc: 0x1234, blocks: [.delaySinceLastReceiverReport([.init(ssrc: 7, lastReceiverReport: 0xBBBB_CCCC, delay: 16_384)])]))])
    }

    @Test("memory is bounded whatever receivers send: at most maximumReceivers remembered")
    func bounded() {
        var sender = SenderFeedback(ssrc: 0x1234)
        for receiver in 0..<1_000 {
            _ = sender.receive(
                [.extendedReport(RTCPExtendedReport(ssrc: UInt32(receiver), blocks: [.receiverReferenceTime(ntp: 1)])),
                 .feedback(RTCPFeedback(senderSSRC: UInt32(receiver), mediaSSRC: 0, message: .fullIntraRequest([(0x1234, 1)])))],
                now: Self.t0, arrivalNTP: 0
            )
        }
        guard case .extendedReport(let report)? = sender.senderReportExtras(now: Self.t0).first, case .delaySinceLastReceiverReport(let items) = report.blocks.first else {
            Issue.record("no DLRR")
            return
        }
        #expect(items.count == SenderFeedback.maximumReceivers)
    }
}
