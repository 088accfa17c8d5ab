// The publisher's RTCP handling, as `Publisher` runs it for each datagram a receiver sends:
// parse → `SenderFeedback.receive` → act (RTX through the `RTPSender`'s retransmission bounds,
// the encoder's target from a REMB/TMMBR limit with `Publisher.videoTarget`), then the next
// sender report's extras (DLRR, TMMBN). The input is read twice: as raw bytes, and as a script
// of well-formed feedback messages of every type with every field taken from the input (so
// REMB and TMMBR exponents up to 63, any RTT, any NACK list reach the arithmetic).
import Playout
import PlayoutCore
import PlayoutRTP
import PlayoutSender

/// A cursor over the fuzz input: each read takes the next bytes (zeros past the end).
private struct FuzzBytes {
    let bytes: UnsafeRawBufferPointer
    var offset = 0
    var isAtEnd: Bool { offset >= bytes.count }
    mutating func byte() -> UInt8 {
        defer { offset += 1 }
        return offset < bytes.count ? bytes[offset] : 0
    }
    mutating func integer<T: FixedWidthInteger & UnsignedInteger>(_: T.Type) -> T {
        var value: T = 0
        for _ in 0..<MemoryLayout<T>.size { value = value << 8 | T(byte()) }
        return value
    }
}

/// The publisher's feedback path over one input (see the file's comment): nothing traps, the
/// encoder target stays within 0.8 × the floor … the configured rate, and RTX never passes its
/// bit-rate budget.
public func fuzzPublisherFeedback(_ bytes: UnsafeRawBufferPointer) {
    let ssrc: UInt32 = 0x1234_5678
    let configured = 2_500_000
    guard var sender = try? RTPSender(codec: .h264, payloadType: 96, clockRate: 90_000, ssrc: ssrc, firstSequenceNumber: 65_500, firstTimestamp: 0) else {
        preconditionFailure("an H.264 sender opens")
    }
    // A small ring (64 packets) keeps each run cheap; the limiter and the NACK paths are the same.
    sender.enableRetransmission(payloadType: 98, ssrc: 0x4321, buffer: RetransmissionBuffer(capacity: 64))
    var feedback = SenderFeedback(ssrc: ssrc)
    var now = MonotonicInstant(nanoseconds: 1_000_000_000)
    var mediaBytes = 0
    // 8 packets of media to resend from (the sequence numbers wrap at 65,535).
    let frame = EncodedFrame(
        track: 0, codec: .h264, mediaTime: MediaTime(ticks: 0, clockRate: 90_000), firstArrival: .zero, lastArrival: .zero, isKeyframe: true,
        bytes: [0, 0, 0, 1, 0x65] + [UInt8](repeating: 0xAB, count: 1_100 * 8)
    )
    try? sender.send(frame, captureTime: nil, now: now) { mediaBytes += $0.count }

    func act(on packets: [RTCPPacket]) {
        now = now.advanced(by: .milliseconds(3))
        for action in feedback.receive(packets, now: now, arrivalNTP: NTPTime.ntp(unixNanoseconds: 1_700_000_000_000_000_000 + now.nanoseconds)) {
            switch action {
            case .retransmit(let lost):
                sender.retransmissionRoundTripTime = feedback.statistics.roundTripTime
                _ = try? sender.retransmit(lost, now: now) { _ in }
            case .keyFrame:
                break
            case .bitrateLimit(let limit):
                let target = Publisher.videoTarget(configured: configured, limit: limit)
                precondition(target <= configured, "the target never passes the configured rate")
                precondition(limit == nil || target >= Int(SenderFeedback.minimumBitrateLimit) * 4 / 5, "a limit is at least the floor")
            }
        }
        _ = feedback.senderReportExtras(now: now)
        let limits = sender.retransmissionLimits ?? .init()
        precondition(Double(limits.bytesAllowed) <= 0.25 * Double(mediaBytes) + 1, "RTX stays within its budget")
    }

    // The raw bytes as one datagram.
    if let packets = try? RTCPPacket.parseCompound(bytes) { act(on: packets) }

    // The bytes as a script of well-formed feedback, each serialized and parsed back as it
    // would arrive.
    var input = FuzzBytes(bytes: bytes)
    while !input.isAtEnd {
        let kind = input.byte()
        let aboutUs = kind & 0x80 == 0
        let media = aboutUs ? ssrc : input.integer(UInt32.self)
        let message: RTCPPacket
        switch kind & 0x0F {
        case 0:
            let count = Int(input.byte())
            let first = input.integer(UInt16.self)
            let lost = (0..<count).map { first &+ UInt16($0) &* UInt16(input.byte() % 4 + 1) }
            message = .feedback(RTCPFeedback(senderSSRC: 1, mediaSSRC: media, message: .nack(lost)))
        case 1:
            message = .feedback(RTCPFeedback(senderSSRC: 1, mediaSSRC: media, message: .pictureLoss))
        case 2:
            message = .feedback(RTCPFeedback(senderSSRC: input.integer(UInt32.self), mediaSSRC: 0, message: .fullIntraRequest([(media, input.byte())])))
        case 3:
            message = .feedback(RTCPFeedback(senderSSRC: 1, mediaSSRC: 0, message: .receiverEstimatedMaximumBitrate(bitrate: input.integer(UInt64.self), ssrcs: [media])))
        case 4:
            let entry = RTCPFeedback.BitrateEntry(ssrc: media, bitrate: input.integer(UInt64.self), overhead: input.integer(UInt16.self))
            message = .feedback(RTCPFeedback(senderSSRC: input.integer(UInt32.self), mediaSSRC: 0, message: .temporaryMaximumBitrateRequest(input.byte() & 1 == 0 ? [entry] : [])))
        case 5:
            let entry = RTCPFeedback.BitrateEntry(ssrc: media, bitrate: input.integer(UInt64.self), overhead: input.integer(UInt16.self))
            message = .feedback(RTCPFeedback(senderSSRC: 1, mediaSSRC: 0, message: .temporaryMaximumBitrateNotification([entry])))
        case 6:
            message = .receiverReport(RTCPReceiverReport(ssrc: 1, reports: [RTCPReportBlock(
                ssrc: media, fractionLost: input.byte(), cumulativeLost: Int32(bitPattern: input.integer(UInt32.self)),
                extendedHighestSequenceNumber: input.integer(UInt32.self), jitter: input.integer(UInt32.self),
                lastSenderReport: input.integer(UInt32.self), delaySinceLastSenderReport: input.integer(UInt32.self)
            )]))
        case 7:
            message = .extendedReport(RTCPExtendedReport(ssrc: input.integer(UInt32.self), blocks: [.receiverReferenceTime(ntp: input.integer(UInt64.self))]))
        case 8:
            message = .extendedReport(RTCPExtendedReport(ssrc: 1, blocks: [.delaySinceLastReceiverReport([
                .init(ssrc: media, lastReceiverReport: input.integer(UInt32.self), delay: input.integer(UInt32.self)),
            ])]))
        case 9:
            message = .goodbye(RTCPGoodbye(ssrcs: [media]))
        case 10:
            // Time passes: the budget's window moves on (0…2.55 s).
            now = now.advanced(by: .milliseconds(Int(input.byte()) * 10))
            try? sender.send(frame, captureTime: nil, now: now) { mediaBytes += $0.count }
            continue
        default:
            message = .feedback(RTCPFeedback(senderSSRC: 1, mediaSSRC: media, message: .other(packetType: 205, format: kind & 0x1F, informationLength: 0)))
        }
        let wire = RTCPPacket.serializeCompound([message])
        guard let packets = wire.withUnsafeBytes({ try? RTCPPacket.parseCompound($0) }) else { continue }
        act(on: packets)
    }
}
