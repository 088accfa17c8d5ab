import PlayoutCore
import PlayoutRTP
import Testing

@Suite("RTP sender: frames to (S)RTP datagrams, sender reports")
struct RTPSenderTests {
    static func frame(ticks: Int64, size: Int) -> EncodedFrame {
        EncodedFrame(
            track: 0, codec: .h264, mediaTime: MediaTime(ticks: ticks, clockRate: 90_000), firstArrival: .zero, lastArrival: .zero,
            isKeyframe: true, bytes: [0, 0, 0, 1, 0x65] + Array(repeating: 0xAA, count: size)
        )
    }

    @Test("a frame becomes numbered packets; abs-capture-time rides on its first packet only")
    func packets() throws {
        var sender = try RTPSender(
            codec: .h264, payloadType: 96, clockRate: 90_000, ssrc: 0xBEEF, firstSequenceNumber: 65_535, firstTimestamp: 10,
            absoluteCaptureTimeID: 3
        )
        var datagrams: [[UInt8]] = []
        try sender.send(Self.frame(ticks: 3_000, size: 3_000), captureTime: 1_700_000_000_000_000_000) { datagrams.append($0) }
        #expect(datagrams.count == 3)
        #expect(sender.packetsSent == 3 && sender.framesSent == 1)
        for (index, datagram) in datagrams.enumerated() {
            try datagram.withUnsafeBytes { bytes in
                let packet = try RTPPacket(parsing: bytes)
                #expect(packet.ssrc == 0xBEEF && packet.payloadType == 96)
                #expect(packet.sequenceNumber.rawValue == UInt16(truncatingIfNeeded: 65_535 + index))
                #expect(packet.timestamp.rawValue == 3_010)
                #expect(packet.marker == (index == 2))
                let capture = packet.absoluteCaptureTime(id: 3)
                #expect((capture != nil) == (index == 0))
                if let capture { #expect(abs(NTPTime.unixNanoseconds(ntp: capture.captureTimestamp) - 1_700_000_000_000_000_000) <= 1) }
            }
        }
    }

    @Test("codecs without a packetizer are a typed error", arguments: [Codec.pcmu, .pcma, .aac, .av1])
    func noPacketizer(codec: Codec) {
        #expect(throws: RTPSenderError.noPacketizer(codec)) { try RTPSender(codec: codec, payloadType: 0, clockRate: 8_000) }
        #expect(throws: RTPSenderError.noPacketizer(codec)) { try RTPSender.makePacketizer(for: codec) }
    }

    @Test("a sender report carries the counts, and SRTCP protects it when keyed")
    func senderReport() throws {
        let key = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
        var sender = try RTPSender(codec: .h264, payloadType: 96, clockRate: 90_000, keyingMaterial: key, ssrc: 7, firstTimestamp: 100)
        try sender.send(Self.frame(ticks: 0, size: 100), captureTime: nil) { _ in }
        let protected = try sender.senderReport(wallClock: 1_000_000_000, ticks: 90_000)
        let plain = try SRTPSession(keyingMaterial: key, direction: .inbound).unprotectRTCP(protected)
        let packets = try plain.withUnsafeBytes { try RTCPPacket.parseCompound($0) }
        guard case .senderReport(let report)? = packets.first else {
            Issue.record("not a sender report: \(packets)")
            return
        }
        #expect(report.ssrc == 7 && report.rtpTimestamp == 90_100 && report.packetCount == 1 && report.octetCount == UInt32(sender.payloadBytesSent))
        #expect(NTPTime.unixNanoseconds(ntp: report.ntpTimestamp) == 1_000_000_000)
    }
}
