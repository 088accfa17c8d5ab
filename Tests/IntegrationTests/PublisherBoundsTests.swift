import Foundation
import Playout
import PlayoutSender
import RealTimeTesting
import Testing

/// `--duration` bounds every publisher run, whatever the simulated network holds at the end
/// (issue 14, item 7): the drain after the end lasts at most 2 s, and what is still held then is
/// dropped and counted.
@Suite("Publisher: a run ends on time whatever the jitter", .realTime, .serialized)
struct PublisherBoundsTests {
    @Test("`playout publish testsrc --jitter 10s --duration 2s` ends within a few seconds with exit 0 (it ran past 40 s before)", .realTime(timeLimit: .seconds(60)))
    func binaryEndsOnTime() throws {
        let port = try SocketAddress.freeLoopbackPorts(count: 4).lowerBound
        let started = ContinuousClock.now
        let result = try runPlayout(["publish", "testsrc", "--to", "127.0.0.1:\(port)", "--jitter", "10s", "--duration", "2s", "--json"])
        let elapsed = ContinuousClock.now - started
        #expect(result.status == 0, "\(result.stderr)")
        // 2 s of sending + at most 2 s of drain + start-up: a bound for a hang, not a speed.
        #expect(elapsed < .seconds(10), "ran \(elapsed)")
        #expect(result.stdout.hasPrefix("{\"type\":\"publisher\""), "\(result.stdout)")
        #expect(result.stderr.contains("datagrams would have left the simulated network more than 2s after the end: dropped"), "\(result.stderr)")
    }

    @Test("in the library: what the network still holds at the end is counted as dropped, and the counts add up", .realTime(timeLimit: .seconds(60)))
    func statisticsCountTheDrop() throws {
        let publisher = try Publisher(options: .init(
            destination: try Publisher.freeLoopbackDestination(),
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

    @Test("a publisher with an hour of jitter and no duration, stopped right after its start, ends at once and counts what it held", .realTime(timeLimit: .seconds(60)))
    func stopEndsTheDrain() throws {
        let publisher = try Publisher(options: .init(
            destination: try Publisher.freeLoopbackDestination(),
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
