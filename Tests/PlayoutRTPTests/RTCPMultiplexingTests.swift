import PlayoutCore
import PlayoutRTP
import PlayoutTesting
import Testing

@Suite("RTP and RTCP on one port (RFC 5761 §4)")
struct RTCPMultiplexingTests {
    static func classify(_ bytes: [UInt8]) -> MultiplexedPacketKind {
        bytes.withUnsafeBytes { MultiplexedPacketKind(classifying: $0) }
    }

    @Test("every RTCP packet type Playout reads or writes is RTCP", arguments: [
        // RFC 3550: SR (200) with its RTP timestamp and counts, RR (201), SDES (202), BYE (203), APP (204).
        "80 C8 00 06 00 00 BE EF  E9 0D 2D 40 00 00 00 00  00 00 00 00 00 00 00 00 00 00 00 00",
        "81 C9 00 07 00 00 00 01  00 00 BE EF 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00",
        "81 CA 00 02 00 00 BE EF 00 00 00 00",
        "81 CB 00 01 00 00 BE EF",
        "80 CC 00 02 00 00 BE EF 6E 61 6D 65",
        // RFC 4585 feedback: RTPFB (205) generic NACK, PSFB (206) PLI; RFC 3611 XR (207).
        "81 CD 00 03 00 00 00 01 00 00 BE EF 00 05 00 00",
        "81 CE 00 02 00 00 00 01 00 00 BE EF",
        "80 CF 00 01 00 00 00 01",
    ])
    func rtcpTypes(hex: String) {
        #expect(Self.classify([UInt8](hex: hex)) == .rtcp)
    }

    @Test("RTP payload types are RTP, with and without the marker, outside 64–95 with the marker")
    func rtpTypes() {
        for payloadType in UInt8(0)...127 {
            for marker in [false, true] {
                let second = (marker ? 0x80 : 0) | payloadType
                var packet = [UInt8](repeating: 0, count: 12)
                packet[0] = 0x80
                packet[1] = second
                // RFC 5761 §4: with rtcp-mux, payload types 64–95 are not used, because with the
                // marker set they read as RTCP packet types 192–223.
                let expected: MultiplexedPacketKind = marker && (64...95).contains(payloadType) ? .rtcp : .rtp
                #expect(Self.classify(packet) == expected, "PT \(payloadType), M \(marker)")
            }
        }
    }

    @Test("the RTCP range is exactly 192–223, the boundaries included")
    func boundaries() {
        func second(_ value: UInt8) -> MultiplexedPacketKind { Self.classify([0x80, value] + [UInt8](repeating: 0, count: 10)) }
        #expect(second(191) == .rtp)
        #expect(second(192) == .rtcp)
        #expect(second(223) == .rtcp)
        #expect(second(224) == .rtp)
        #expect(MultiplexedPacketKind.rtcpSecondOctets == 192...223)
    }

    @Test("an SRTP packet and an SRTCP packet from real sessions classify as sent")
    func protectedPackets() throws {
        let key = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
        let outbound = try SRTPSession(keyingMaterial: key, direction: .outbound)
        var header = RTPPacketBuilder(payloadType: 96, ssrc: 0xBEEF)
        header.marker = true
        let rtp = try outbound.protectRTP(try header.serialized(payload: Array(repeating: 1, count: 100)))
        let report = RTCPPacket.serializeCompound([.senderReport(RTCPSenderReport(ssrc: 0xBEEF, ntpTimestamp: 1, rtpTimestamp: 2, packetCount: 3, octetCount: 4))])
        let rtcp = try outbound.protectRTCP(report)
        #expect(Self.classify(rtp) == .rtp)
        #expect(Self.classify(rtcp) == .rtcp)
    }

    @Test("hostile input: short, wrong-version and random datagrams are never RTP unless they could be", arguments: [
        "", "80", "80 C8", "80 C8 00", "80 60 00 01 00 00 00 00 00 00 00",
        "00 C8 00 01 00 00 00 01", "40 60 00 01 00 00 00 00 00 00 00 01", "C0 C9 00 01 00 00 00 01",
        // STUN (first octet 0–3) and DTLS (20–63), as RFC 7983 §7 places them.
        "00 01 00 00 21 12 A4 42 00 00 00 00 00 00 00 00 00 00 00 00", "16 FE FD 00 00 00 00 00 00 00 00 00 00",
    ])
    func hostile(hex: String) {
        #expect(Self.classify([UInt8](hex: hex)) == .unknown)
    }

    @Test("random bytes: the classification follows the rule for every first two octets and length")
    func randomBytes() {
        var random = SeededRandomNumberGenerator(seed: 5761)
        for _ in 0..<50_000 {
            let bytes = (0..<Int.random(in: 0...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            let kind = Self.classify(bytes)
            let versionTwo = bytes.first.map { $0 >> 6 == 2 } ?? false
            if !versionTwo || bytes.count < 4 {
                #expect(kind == .unknown)
            } else if (192...223).contains(bytes[1]) {
                #expect(kind == .rtcp)
            } else {
                #expect(kind == (bytes.count >= 12 ? .rtp : .unknown))
            }
        }
    }
}
