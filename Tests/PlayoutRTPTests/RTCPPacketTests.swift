import PlayoutRTP
import PlayoutTesting
import Testing

func parseRTCP(_ bytes: [UInt8]) throws(RTCPParseError) -> [RTCPPacket] {
    let result: Result<[RTCPPacket], RTCPParseError> = bytes.withUnsafeBytes { buffer in
        Result { () throws(RTCPParseError) -> [RTCPPacket] in try RTCPPacket.parseCompound(buffer) }
    }
    return try result.get()
}

@Suite("RTCP compound packets (RFC 3550 §6)")
struct RTCPPacketTests {
    @Test("a sender report with a report block, then SDES with a CNAME (as ffmpeg sends them)")
    func senderReportAndSDES() throws {
        let bytes = [UInt8](hex: """
            81 C8 00 0C  DE AD BE EF  E7 A1 2B 3C 80 00 00 00  00 01 5F 90  00 00 00 64  00 01 86 A0
            00 00 00 01  05 FF FF FE  00 00 FF FF  00 00 00 20  11 22 33 44  00 00 80 00
            81 CA 00 04  DE AD BE EF  01 06 66 66 6D 70 65 67 00 00 00 00
            """)
        let packets = try parseRTCP(bytes)
        #expect(packets.count == 2)
        guard case .senderReport(let report) = packets[0], case .sourceDescription(let chunks) = packets[1] else {
            Issue.record("unexpected packets \(packets)")
            return
        }
        #expect(report.ssrc == 0xDEAD_BEEF)
        #expect(report.ntpTimestamp == 0xE7A1_2B3C_8000_0000)
        #expect(report.rtpTimestamp == 90_000)
        #expect(report.packetCount == 100)
        #expect(report.octetCount == 100_000)
        #expect(report.reports == [RTCPReportBlock(
            ssrc: 1, fractionLost: 5, cumulativeLost: -2, extendedHighestSequenceNumber: 0xFFFF, jitter: 32,
            lastSenderReport: 0x1122_3344, delaySinceLastSenderReport: 0x8000
        )])
        #expect(chunks.count == 1)
        #expect(chunks[0].ssrc == 0xDEAD_BEEF)
        #expect(chunks[0].cname == "ffmpeg")
    }

    @Test("receiver report, goodbye with a reason, and an APP packet that is skipped")
    func receiverReportByeApp() throws {
        let packets: [RTCPPacket] = [
            .receiverReport(RTCPReceiverReport(ssrc: 9, reports: [RTCPReportBlock(ssrc: 10, fractionLost: 255, cumulativeLost: 8_388_607)])),
            .other(packetType: 204, count: 1, length: 12),
            .goodbye(RTCPGoodbye(ssrcs: [9, 11], reason: "end of test")),
        ]
        let parsed = try parseRTCP(RTCPPacket.serializeCompound(packets))
        #expect(parsed == packets)
    }

    @Test("every packet kind survives serialize then parse", arguments: [
        RTCPPacket.senderReport(RTCPSenderReport(ssrc: 1, ntpTimestamp: 42, rtpTimestamp: 3, packetCount: 4, octetCount: 5)),
        .senderReport(RTCPSenderReport(ssrc: 1, ntpTimestamp: .max, rtpTimestamp: .max, packetCount: 0, octetCount: 0,
                                       reports: (0..<31).map { RTCPReportBlock(ssrc: UInt32($0), cumulativeLost: -8_388_608) })),
        .receiverReport(RTCPReceiverReport(ssrc: 7)),
        .sourceDescription([
            RTCPSourceDescriptionChunk(ssrc: 1, items: [(1, Array("a@b".utf8)), (6, Array("playout".utf8))]),
            RTCPSourceDescriptionChunk(ssrc: 2, items: []),
            RTCPSourceDescriptionChunk(ssrc: 3, items: [(1, Array(repeating: 65, count: 255))]),
        ]),
        .goodbye(RTCPGoodbye(ssrcs: [])),
        .goodbye(RTCPGoodbye(ssrcs: [1, 2, 3], reason: "")),
        .other(packetType: 204, count: 1, length: 16),  // APP (XR, 207, is parsed: RTCPExtendedReport)
    ])
    func roundTrip(packet: RTCPPacket) throws {
        let bytes = packet.serialized
        #expect(bytes.count % 4 == 0)
        #expect(try parseRTCP(bytes) == [packet])
    }

    @Test("padding on the last packet is removed")
    func padding() throws {
        // BYE for SSRC 5 with P set: 4 bytes of padding (00 00 00 04).
        let packets = try parseRTCP([UInt8](hex: "A1 CB 00 02 00 00 00 05 00 00 00 04"))
        #expect(packets == [.goodbye(RTCPGoodbye(ssrcs: [5]))])
    }

    @Test("bad packets are clear errors", arguments: [
        ("", RTCPParseError.empty),
        ("81 C8 00", .truncated(offset: 0, needed: 4, available: 3)),
        ("41 C8 00 00", .unsupportedVersion(1, offset: 0)),
        ("81 C8 00 06 00 00 00 01", .truncated(offset: 0, needed: 28, available: 8)),
        ("80 C9 00 01 00 00 00 01  81 C9 00 01 00 00 00 02", .malformed(packetType: 201, offset: 8, reason: "1 report blocks do not fit 4 bytes")),
        ("80 C8 00 01 00 00 00 01", .malformed(packetType: 200, offset: 0, reason: "a sender report needs 24 bytes, has 4")),
        ("81 CA 00 01 00 00 00 01", .malformed(packetType: 202, offset: 0, reason: "SDES chunk 0 has no end marker")),
        ("81 CA 00 02 00 00 00 01 01 09 41 41", .malformed(packetType: 202, offset: 0, reason: "SDES item of type 1 runs past the packet")),
        ("82 CB 00 01 00 00 00 01", .malformed(packetType: 203, offset: 0, reason: "2 SSRCs do not fit 4 bytes")),
        ("81 CB 00 02 00 00 00 01 09 41 41 41", .malformed(packetType: 203, offset: 0, reason: "the reason runs past the packet")),
        ("A0 CB 00 01 00 00 00 09", .malformed(packetType: 203, offset: 0, reason: "padding of 9 bytes in a 4-byte body")),
    ])
    func rejects(text: String, expected: RTCPParseError) {
        #expect(throws: expected) { try parseRTCP([UInt8](hex: text)) }
    }

    @Test("hostile input: every truncation and random bytes never crash")
    func hostile() throws {
        let valid = RTCPPacket.serializeCompound([
            .senderReport(RTCPSenderReport(ssrc: 1, ntpTimestamp: 2, rtpTimestamp: 3, packetCount: 4, octetCount: 5, reports: [RTCPReportBlock(ssrc: 6)])),
            .sourceDescription([RTCPSourceDescriptionChunk(ssrc: 1, items: [(1, Array("cname".utf8))])]),
            .goodbye(RTCPGoodbye(ssrcs: [1], reason: "bye")),
        ])
        for length in 0...valid.count {
            _ = try? parseRTCP(Array(valid[0..<length]))
        }
        var random = SeededRandomNumberGenerator(seed: 7)
        for _ in 0..<20_000 {
            var bytes = (0..<Int.random(in: 0...200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            if bytes.count > 1 {
                bytes[0] = 0x80 | (bytes[0] & 0x3F)
                bytes[1] = UInt8.random(in: 200...204, using: &random)
            }
            _ = try? parseRTCP(bytes)
        }
    }
}
