import PlayoutCore
import PlayoutWebRTC
import Testing

@Suite("RFC 7983 demultiplexer")
struct DemultiplexTests {
    static let firstBytes: [(UInt8, DatagramKind)] = [
        (0, .stun), (3, .stun), (4, .unknown), (16, .unknown), (19, .unknown),
        (20, .dtls), (22, .dtls), (63, .dtls), (64, .unknown), (79, .unknown), (127, .unknown),
        (128, .rtp), (0x81, .rtp), (191, .rtp), (192, .unknown), (255, .unknown),
    ]

    @Test("each first-byte range goes to its protocol", arguments: firstBytes)
    func firstByte(first: UInt8, kind: DatagramKind) {
        let datagram = [first, 96] + [UInt8](repeating: 0, count: 30)
        #expect(datagram.withUnsafeBytes { DatagramDemultiplexer.kind(of: $0) } == kind)
    }

    @Test("RTCP by its packet type in the second byte (RFC 5761 §4)", arguments: Array(UInt8(190)...UInt8(225)))
    func rtcpByPayloadType(second: UInt8) {
        let datagram = [0x81, second] + [UInt8](repeating: 0, count: 30)
        let expected: DatagramKind = (192...223).contains(second) ? .rtcp : .rtp
        #expect(datagram.withUnsafeBytes { DatagramDemultiplexer.kind(of: $0) } == expected)
    }

    @Test("real packets classify: STUN binding request, DTLS ClientHello, RTP with marker, RTCP RR")
    func realPackets() throws {
        var demux = DatagramDemultiplexer()
        // RFC 5769 §2.1 sample request, first bytes (type 0x0001, length, magic cookie).
        #expect(demux.classify([0x00, 0x01, 0x00, 0x58, 0x21, 0x12, 0xA4, 0x42] + [UInt8](repeating: 0, count: 88)) == .stun)
        let (client, _, _, _) = try makeEndpoints(roleA: .client)
        client.start(now: .zero)
        guard case .send(let hello) = client.poll(now: .zero) else { Issue.record("no ClientHello"); return }
        #expect(demux.classify(hello) == .dtls)
        #expect(demux.classify(rtpPacket(sequence: 1, payloadType: 96 | 0x80, payload: [1, 2, 3])) == .rtp)
        #expect(demux.classify(rtpPacket(sequence: 1, payloadType: 111, payload: [1, 2, 3])) == .rtp)
        #expect(demux.classify(rtcpReceiverReport()) == .rtcp)
        let statistics = demux.statistics
        #expect(statistics.stun == 1 && statistics.dtls == 1 && statistics.rtp == 2 && statistics.rtcp == 1)
        #expect(statistics.unknown == 0 && statistics.truncated == 0)
    }

    @Test("empty and too-short RTP/RTCP datagrams are counted as truncated and dropped")
    func truncated() {
        var demux = DatagramDemultiplexer()
        #expect(demux.classify([]) == .unknown)
        #expect(demux.classify([0x80]) == .unknown)
        #expect(demux.classify([0x80, 96, 0, 1]) == .unknown)  // under 12 bytes of RTP header
        #expect(demux.classify([0x80, 200, 0, 1]) == .unknown)  // under 8 bytes of RTCP
        #expect(demux.classify([0x80, 200, 0, 1, 0, 0, 0, 1]) == .rtcp)
        #expect(demux.classify([0x40, 0, 0, 4, 1, 2, 3, 4]) == .unknown)  // a TURN channel: not supported
        #expect(demux.statistics.unknown == 5 && demux.statistics.truncated == 4 && demux.statistics.rtcp == 1)
        #expect(demux.statistics.total == 6)
    }

    @Test("random datagrams: every one counted exactly once, no crash")
    func random() {
        var demux = DatagramDemultiplexer()
        var random = SeededRandom(seed: 7983)
        for _ in 0..<20_000 {
            let bytes = random.bytes(Int.random(in: 0...64, using: &random))
            let kind = demux.classify(bytes)
            if let first = bytes.first {
                switch kind {
                case .stun: #expect(first <= 3)
                case .dtls: #expect((20...63).contains(first))
                case .rtp, .rtcp: #expect((128...191).contains(first))
                case .unknown: break
                }
            } else {
                #expect(kind == .unknown)
            }
        }
        #expect(demux.statistics.total == 20_000)
    }
}
