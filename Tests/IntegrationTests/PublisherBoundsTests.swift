import Foundation
import Playout
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `--duration` bounds every publisher run, whatever the simulated network holds at the end
/// (issue 14, item 7): the drain after the end lasts at most 2 s, and what is still held then is
/// dropped and counted.
@Suite("Publisher: a run ends on time whatever the jitter", .serialized)
struct PublisherBoundsTests {
    /// A port P such that P … P+3 (video, its RTCP, audio, its RTCP) are free on loopback UDP
    /// now, so the publisher's datagrams reach no other test's receiver.
    static func freePorts() throws -> UInt16 {
        for _ in 0..<50 {
            let base = UInt16.random(in: 20_000...60_000) & ~1
            let free = (base..<base + 4).allSatisfy { port in
                let socket = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
                defer { close(socket) }
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = port.bigEndian
                address.sin_addr.s_addr = inet_addr("127.0.0.1")
                return withUnsafePointer(to: &address) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
                }
            }
            if free { return base }
        }
        throw CLIError("no four free UDP ports on loopback")
    }

    @Test("`playout publish testsrc --jitter 10s --duration 2s` ends within a few seconds with exit 0 (it ran past 40 s before)", .timeLimit(.minutes(1)))
    func binaryEndsOnTime() throws {
        let port = try Self.freePorts()
        let started = ContinuousClock.now
        let result = try runPlayout(["publish", "testsrc", "--to", "127.0.0.1:\(port)", "--jitter", "10s", "--duration", "2s", "--json"])
        let elapsed = ContinuousClock.now - started
        #expect(result.status == 0, "\(result.stderr)")
        // 2 s of sending + at most 2 s of drain + start-up: a bound for a hang, not a speed.
        #expect(elapsed < .seconds(10), "ran \(elapsed)")
        #expect(result.stdout.hasPrefix("{\"type\":\"publisher\""), "\(result.stdout)")
        #expect(result.stderr.contains("datagrams would have left the simulated network more than 2s after the end: dropped"), "\(result.stderr)")
    }

    @Test("in the library: what the network still holds at the end is counted as dropped, and the counts add up", .timeLimit(.minutes(1)))
    func statisticsCountTheDrop() throws {
        let port = try Self.freePorts()
        let publisher = try Publisher(options: .init(
            destination: try SocketAddress(host: "127.0.0.1", port: port),
            video: .init(codec: .h264, width: 320, height: 240, frameRate: 30, bitrate: 300_000, keyframeInterval: 30), sendsAudio: false,
            impairment: .init(jitter: .seconds(10), seed: 4), duration: .seconds(1)
        ))
        let started = ContinuousClock.now
        try publisher.start()
        let statistics = try publisher.waitUntilEnded()
        #expect(ContinuousClock.now - started < .seconds(8), "1 s of sending, at most 2 s of drain")
        let network = statistics.network
        let packets = statistics.tracks.values.reduce(0) { $0 + $1.packetsSent }
        #expect(network.datagramsSubmitted == packets && packets > 0)
        #expect(network.datagramsDroppedAtEnd > 0)
        #expect(network.datagramsSubmitted - network.datagramsLost - network.datagramsDroppedByBandwidth - network.datagramsDroppedAtEnd + network.datagramsDuplicated == network.datagramsSent)
        #expect(statistics.tracks[.video]?.packetsDelivered == network.datagramsSent)
    }

    @Test("a publisher with an hour of jitter and no duration, stopped right after its start, ends at once and counts what it held", .timeLimit(.minutes(1)))
    func stopEndsTheDrain() throws {
        let port = try Self.freePorts()
        let publisher = try Publisher(options: .init(
            destination: try SocketAddress(host: "127.0.0.1", port: port),
            video: .init(codec: .h264, width: 320, height: 240, frameRate: 30, bitrate: 300_000, keyframeInterval: 30),
            impairment: .init(jitter: .seconds(3_600))
        ))
        try publisher.start()
        publisher.stop()
        let statistics = try publisher.waitUntilEnded()
        let network = statistics.network
        #expect(network.datagramsSent + network.datagramsDroppedAtEnd == network.datagramsSubmitted)
    }
}
