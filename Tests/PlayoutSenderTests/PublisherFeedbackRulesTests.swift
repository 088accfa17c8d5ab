import Playout
import PlayoutSender
import PlayoutRTP
import Testing

/// The publisher's rules for what its receivers send (issue 26, items 1–3): the encoder target
/// under any limit a REMB/TMMBR can carry, and whose RTCP it takes.
@Suite("Publisher: bit-rate target and feedback sources")
struct PublisherFeedbackRulesTests {
    @Test("the target is 0.8 × the limit, never above the configured rate, for every limit a TMMBR can carry (up to 2^64 − 1)", arguments: [
        (UInt64?.none, 2_500_000), (100_000, 80_000), (1_000_000, 800_000), (3_125_000, 2_500_000), (4_000_000_000, 2_500_000),
        (UInt64(0x1_FFFF) << 47, 2_500_000), (UInt64.max, 2_500_000), (UInt64(Int.max), 2_500_000), (7, 5),
    ] as [(UInt64?, Int)])
    func target(limit: UInt64?, expected: Int) {
        #expect(Publisher.videoTarget(configured: 2_500_000, limit: limit) == expected)
    }

    @Test("RTCP is taken only from the stream's RTP or RTCP destination; other ports and hosts are refused")
    func sources() throws {
        let destinations: Set<SocketAddress> = [try SocketAddress(host: "127.0.0.1", port: 5_004), try SocketAddress(host: "127.0.0.1", port: 5_005)]
        #expect(Publisher.acceptsFeedback(from: try SocketAddress(host: "127.0.0.1", port: 5_005), destinations: destinations))
        #expect(Publisher.acceptsFeedback(from: try SocketAddress(host: "127.0.0.1", port: 5_004), destinations: destinations))
        #expect(!Publisher.acceptsFeedback(from: try SocketAddress(host: "127.0.0.1", port: 40_000), destinations: destinations))
        #expect(!Publisher.acceptsFeedback(from: try SocketAddress(host: "127.0.0.2", port: 5_005), destinations: destinations))
        #expect(!Publisher.acceptsFeedback(from: nil, destinations: destinations))
        let six: Set<SocketAddress> = [try SocketAddress(host: "::1", port: 5_005).normalized]
        #expect(Publisher.acceptsFeedback(from: try SocketAddress(host: "0:0::0001", port: 5_005), destinations: six), "IPv6 text forms compare as addresses")
    }
}
