import PlayoutCore
@testable import PlayoutRTP
import PlayoutTesting
import Testing

/// RTCP feedback messages: RFC 4585 (generic NACK, PLI), RFC 5104 (FIR, TMMBR/TMMBN) and REMB
/// (draft-alvestrand-rmcat-remb), laid out by hand from the RFCs' figures.
@Suite("RTCP feedback messages")
struct RTCPFeedbackTests {
    static func feedback(_ message: RTCPFeedback.Message, media: UInt32 = 0x1234) -> RTCPPacket {
        .feedback(RTCPFeedback(senderSSRC: 1, mediaSSRC: media, message: message))
    }

    @Test("wire layouts from the RFCs' figures parse and write back byte for byte", arguments: [
        // RFC 4585 §6.2.1: RTPFB (205), FMT 1; PID 100 and BLP 0b101 (101 and 103 lost too).
        ("81 CD 00 03 00 00 00 01 00 00 12 34 00 64 00 05", feedback(.nack([100, 101, 103]))),
        // RFC 4585 §6.3.1: PSFB (206), FMT 1, no FCI.
        ("81 CE 00 02 00 00 00 01 00 00 12 34", feedback(.pictureLoss)),
        // RFC 5104 §4.3.1: PSFB, FMT 4, media SSRC 0; FCI: SSRC, seq nr 7, 24 reserved bits.
        ("84 CE 00 04 00 00 00 01 00 00 00 00 00 00 12 34 07 00 00 00", feedback(.fullIntraRequest([(0x1234, 7)]), media: 0)),
        // RFC 5104 §4.2.1.1: RTPFB, FMT 3; 1 Mbit/s = 125,000 << 3 (17-bit mantissa), overhead 40.
        ("83 CD 00 04 00 00 00 01 00 00 00 00 00 00 12 34 0F D0 90 28",
         feedback(.temporaryMaximumBitrateRequest([.init(ssrc: 0x1234, bitrate: 1_000_000, overhead: 40)]), media: 0)),
        // TMMBN: the same entry, FMT 4.
        ("84 CD 00 04 00 00 00 01 00 00 00 00 00 00 12 34 0F D0 90 28",
         feedback(.temporaryMaximumBitrateNotification([.init(ssrc: 0x1234, bitrate: 1_000_000, overhead: 40)]), media: 0)),
        // REMB: PSFB, FMT 15, "REMB", 1 SSRC, 2.5 Mbit/s = 156,250 << 4 (18-bit mantissa).
        ("8F CE 00 05 00 00 00 01 00 00 00 00 52 45 4D 42 01 12 62 5A 00 00 12 34",
         feedback(.receiverEstimatedMaximumBitrate(bitrate: 2_500_000, ssrcs: [0x1234]), media: 0)),
    ])
    func layouts(hex: String, packet: RTCPPacket) throws {
        let bytes = [UInt8](hex: hex)
        #expect(try parseRTCP(bytes) == [packet])
        #expect(packet.serialized == bytes)
    }

    @Test("NACKs pack into PID + bitmask pairs across the sequence wrap, and read back the same")
    func nackPacking() throws {
        let lost: [UInt16] = [65_530, 65_531, 65_535, 0, 9, 30, 46, 47]
        let packet = Self.feedback(.nack(lost))
        let bytes = packet.serialized
        // 65530 + {65531, 65535, 0, 9} in one pair (distances 1, 5, 6, 15); 30 + {46}; 47 alone.
        #expect(bytes.count == 12 + 3 * 4)
        #expect(try parseRTCP(bytes) == [packet])
        // Repeats are written once; at most 255 pairs a message.
        #expect(try parseRTCP(Self.feedback(.nack([5, 5, 5])).serialized) == [Self.feedback(.nack([5]))])
        let many = (0..<2_000).map { UInt16($0 * 20) }
        guard case .feedback(let parsed)? = try parseRTCP(Self.feedback(.nack(many)).serialized).first, case .nack(let read) = parsed.message else {
            Issue.record("not a NACK")
            return
        }
        #expect(read == Array(many.prefix(RTCPFeedback.maximumItems)))
    }

    @Test("bit rates round down to what the mantissa holds, and huge exponents saturate", arguments: [
        (UInt64(0), UInt64(0)), (131_071, 131_071), (131_073, 131_072), (1_000_001, 1_000_000), (UInt64.max, UInt64(0x1_FFFF) << 47),
    ])
    func bitrateRounding(requested: UInt64, written: UInt64) throws {
        let packet = Self.feedback(.temporaryMaximumBitrateRequest([.init(ssrc: 9, bitrate: requested)]), media: 0)
        let read = try parseRTCP(packet.serialized)
        #expect(read == [Self.feedback(.temporaryMaximumBitrateRequest([.init(ssrc: 9, bitrate: written)]), media: 0)])
    }

    @Test("a feedback message in a compound packet after a receiver report, as a receiver sends it")
    func compound() throws {
        let packets: [RTCPPacket] = [
            .receiverReport(RTCPReceiverReport(ssrc: 1, reports: [RTCPReportBlock(ssrc: 0x1234, fractionLost: 3, cumulativeLost: 12)])),
            .sourceDescription([RTCPSourceDescriptionChunk(ssrc: 1, items: [(1, Array("playout@host".utf8))])]),
            Self.feedback(.nack([7])), Self.feedback(.pictureLoss),
            Self.feedback(.receiverEstimatedMaximumBitrate(bitrate: 300_000, ssrcs: [0x1234, 0x5678]), media: 0),
        ]
        #expect(try parseRTCP(RTCPPacket.serializeCompound(packets)) == packets)
    }

    @Test("malformed feedback is a clear error naming the packet type", arguments: [
        ("81 CD 00 01 00 00 00 01", "8 bytes of SSRCs"),  // SSRCs cut
        ("81 CD 00 03 00 00 00 01 00 00 12 34 00 64 00", "not a whole"),  // FCI of 3 bytes (length says 4 words, 15 given)
        ("84 CE 00 03 00 00 00 01 00 00 00 00 00 00 12 34", "FIR information of 4 bytes"),
        ("8F CE 00 04 00 00 00 01 00 00 00 00 52 45 4D 42 05 12 62 5A", "REMB names 5 SSRCs"),
    ])
    func malformed(hex: String, words: String) {
        do {
            _ = try parseRTCP([UInt8](hex: hex))
            Issue.record("parsed \(hex)")
        } catch {
            #expect("\(error)".contains(words) || "\(error)".contains("truncated") || "\(error)".contains("needed"), "\(error)")
        }
    }

    @Test("random bodies of every length under both feedback types and every format never crash")
    func hostile() {
        var random = SeededRandomNumberGenerator(seed: 4585)
        for type in [RTCPFeedback.transportLayerType, RTCPFeedback.payloadSpecificType] {
            for format in UInt8(0)...31 {
                for words in 0..<24 {
                    let body = (0..<(4 * words)).map { _ in UInt8.random(in: 0...255, using: &random) }
                    var bytes: [UInt8] = [0x80 | format, type, 0, UInt8(words)] + body
                    if words % 5 == 0, !body.isEmpty, words > 2 { bytes[12] = 0x52; bytes[13] = 0x45; bytes[14] = 0x4D; bytes[15] = 0x42 }  // "REMB"
                    _ = try? parseRTCP(bytes)
                    _ = try? parseRTCP(Array(bytes.dropLast(3)))
                }
            }
        }
    }
}
