import Foundation
import PlayoutTesting
import RealTimeTesting
import Testing

/// `playout swarm` against real WHEP servers: every viewer its own session (offer, ICE, DTLS,
/// SRTP), every session deleted at the end.
@Suite("playout swarm over WHEP: aiortc and the built-in publisher", .realTime(weight: 2), .serialized)
struct SwarmWHEPTests {
    static var binary: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/debug/playout").path
    }

    static func summary(_ stdout: String) throws -> [String: Any] {
        try #require(SwarmBinaryTests.lines(stdout).last { $0["type"] as? String == "summary" }, "\(stdout.suffix(2_000))")
    }

    /// The summary's `name` percentiles.
    static func spread(_ summary: [String: Any], _ name: String) -> [String: Double] {
        (summary[name] as? [String: Any] ?? [:]).compactMapValues { ($0 as? NSNumber)?.doubleValue }
    }

    @Test("10 viewers against aiortc: each its own session, every one connected and rendering, every session deleted")
    func aiortc() throws {
        let (peer, url) = try WHEPSubscribeTests.peer("aiortc_whep.py")
        defer { peer.stop() }
        let result = try runPlayout(["swarm", url, "--viewers", "10", "--ramp", "10/s", "--duration", "6s", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try Self.summary(result.stdout)
        #expect(summary["failed"] as? Int == 0 && summary["sessions"] as? Int == 10)
        #expect(Self.spread(summary, "startupTime")["count"] == 10, "every viewer rendered a first frame")
        // Rendered on time: ≥ 99 % when aiortc's ten Python encoders have the CPU they need (the issue's
        // note has the numbers); beside the rest of the suite aiortc sends late — the server is the
        // bottleneck, and the swarm says so — so here every viewer rendering is what is checked.
        #expect(Self.spread(summary, "renderedRatio")["min"] ?? 0 > 0, "\(Self.spread(summary, "renderedRatio"))")
        // The WHEP steps are part of each viewer's start-up.
        #expect(Self.spread(summary, "startup.dtls_connected")["count"] == 10)
        // Every session deleted: aiortc saw ten DELETEs, one per session it created.
        let deadline = ContinuousClock.now + .seconds(5)
        while peer.objects(where: { $0["event"] as? String == "deleted" }).count < 10, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.05) }
        let created = Set(peer.objects { $0["event"] as? String == "created" }.compactMap { $0["id"] as? String })
        let deleted = Set(peer.objects { $0["event"] as? String == "deleted" }.compactMap { $0["id"] as? String })
        #expect(created.count == 10 && deleted == created)
    }

    @Test("50 viewers against the built-in publisher's WHEP endpoint: every one connected and rendering, 50 sessions opened, 50 DELETEs")
    func builtInPublisher() throws {
        let publisher = try WHEPPeerProcess(executable: Self.binary, arguments: [
            "publish", "testsrc", "--whep-listen", "127.0.0.1:0", "--json", "--size", "320x240", "--bitrate", "300k", "--no-audio", "--duration", "13s",
        ])
        defer { publisher.stop() }
        let url = try #require(publisher.object { $0["type"] as? String == "whep" }?["url"] as? String)
        let result = try runPlayout(["swarm", url, "--viewers", "50", "--ramp", "25/s", "--duration", "8s", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try Self.summary(result.stdout)
        #expect(summary["failed"] as? Int == 0 && summary["sessions"] as? Int == 50)
        #expect(Self.spread(summary, "startupTime")["count"] == 50, "every viewer rendered a first frame")
        #expect(Self.spread(summary, "renderedRatio")["p50"] ?? 0 >= 0.8, "\(Self.spread(summary, "renderedRatio"))")
        #expect(publisher.waitUntilEnded(timeout: .seconds(15)))
        let statistics = try #require(publisher.object(timeout: .seconds(2)) { $0["whep"] != nil }?["whep"] as? [String: Any])
        #expect(statistics["sessionsOpened"] as? Int == 50)
        // Each session's POST and its DELETE; a session whose DTLS close_notify came first ended
        // as closed, and its DELETE found it so.
        #expect(statistics["requests"] as? Int == 100, "\(statistics.filter { $0.key != "sessions" })")
        let ended = statistics["sessionsEnded"] as? [String: Int] ?? [:]
        #expect((ended["deleted"] ?? 0) + (ended["closed"] ?? 0) == 50, "\(ended)")
    }
}
