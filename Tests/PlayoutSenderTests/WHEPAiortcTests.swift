import Foundation
#if canImport(Glibc)
import Glibc
#endif
import PlayoutCodec
import PlayoutCore
import PlayoutRTP
import PlayoutSender
import PlayoutTesting
import RealTimeTesting
import Testing

extension WHEPPeerProcess {
    /// `Tests/WebRTCPeers/aiortc_whep_client.py` subscribing to `url`.
    static func aiortcClient(url: String, arguments: [String]) throws -> WHEPPeerProcess {
        try WHEPPeerProcess(script: "aiortc_whep_client.py", arguments: [url, "--loopback"] + arguments)
    }

    /// The client's first line whose `event` is `name`, within 60 s; nil when it printed an error
    /// line (recorded as an issue) or ended without it.
    func clientEvent(_ name: String) -> [String: Any]? {
        guard let object = object(timeout: .seconds(60), where: { ["error", name].contains($0["event"] as? String) }) else { return nil }
        guard object["event"] as? String != "error" else {
            Issue.record("aiortc client: \(object["reason"] ?? "?")")
            return nil
        }
        return object
    }
}

/// The built-in publisher as an ICE-lite WHEP endpoint, subscribed to by an independent WebRTC
/// stack (aiortc: full ICE, DTLS client, SRTP, its own H.264 and Opus decoders).
@Suite("WHEP publisher against aiortc", .serialized, .realTime(weight: 2))
struct WHEPAiortcTests {
    static let frameRate = 30
    static let seconds = 6.0

    /// The publisher with its defaults (the test pattern, 720p30 H.264 at 2.5 Mbit/s, and Opus),
    /// or `video`.
    static func publisher(loss: Double = 0, seed: UInt64? = nil, video: FFmpegEncoder.VideoSettings = .init()) throws -> Publisher {
        let options = Publisher.Options(
            destination: try SocketAddress(host: "127.0.0.1", port: 9), video: video,
            impairment: seed.map { .init(loss: loss, seed: $0) } ?? .init(loss: loss), duration: .seconds(40),
            whep: .init(listen: try SocketAddress(host: "127.0.0.1", port: 0))
        )
        let publisher = try Publisher(options: options)
        try publisher.start()
        return publisher
    }

    /// What one client decoded and received. Frames are checked against their media-time
    /// span (no frame missing between the first and the last decoded), not against wall time:
    /// on a loaded machine aiortc decodes late, but it must decode every frame.
    struct Outcome {
        var video: Int
        var audio: Int
        var videoSpan: Double
        var audioSpan: Double
        var rtpReceived: Int
        var rtpLost: Int
        var packetsAfterDelete: Int
        var deleteStatus: Int

        /// Video frames due in the span at 30 fps.
        var expectedVideo: Double { videoSpan * Double(WHEPAiortcTests.frameRate) + 1 }
        /// Opus frames due in the span (20 ms each).
        var expectedAudio: Double { audioSpan * 50 + 1 }
        /// Packets a second while subscribed.
        var packetRate: Double { Double(rtpReceived) / max(videoSpan, 0.1) }
    }

    static func outcome(of client: WHEPPeerProcess, audio: Bool = true) throws -> Outcome {
        let answered = try #require(client.clientEvent("answered"))
        #expect(answered["status"] as? Int == 201)
        let codecs = answered["codecs"] as? [String: Any]
        #expect(codecs?["video"] as? String == "video/H264")
        if audio { #expect(codecs?["audio"] as? String == "audio/opus") }
        let result = try #require(client.clientEvent("result"))
        let frames = try #require(result["frames"] as? [String: Int])
        let span = try #require(result["span"] as? [String: Double])
        let rtp = result["rtp"] as? [String: [String: Int]] ?? [:]
        return Outcome(
            video: frames["video"] ?? 0, audio: frames["audio"] ?? 0, videoSpan: span["video"] ?? 0, audioSpan: span["audio"] ?? 0,
            rtpReceived: rtp.values.reduce(0) { $0 + ($1["packetsReceived"] ?? 0) }, rtpLost: rtp.values.reduce(0) { $0 + ($1["packetsLost"] ?? 0) },
            packetsAfterDelete: result["packetsAfterDelete"] as? Int ?? 0, deleteStatus: result["deleteStatus"] as? Int ?? 0
        )
    }

    /// What every subscriber must show: (nearly) the whole session received, no frame missing,
    /// the DELETE answered and the media stopped after it.
    static func check(_ outcome: Outcome, duration: Double = seconds, audio: Bool = true, lossless: Bool = true) {
        // Half at least: on a loaded machine aiortc connects and decodes late (what it decodes, it
        // decodes whole: the frame count below).
        #expect(outcome.videoSpan >= duration / 2, "decoded \(outcome.videoSpan) s of \(duration)")
        #expect(Double(outcome.video) >= 0.97 * outcome.expectedVideo, "video \(outcome.video) of \(outcome.expectedVideo)")
        #expect(Double(outcome.video) <= outcome.expectedVideo + 1)
        if audio { #expect(Double(outcome.audio) >= 0.9 * outcome.expectedAudio, "audio \(outcome.audio) of \(outcome.expectedAudio)") }
        if lossless { #expect(Double(outcome.rtpLost) <= 0.01 * Double(outcome.rtpReceived), "\(outcome.rtpLost) of \(outcome.rtpReceived) RTP packets lost") }
        #expect(outcome.deleteStatus == 200)
        // A stream that went on would bring about packetRate packets in the second after the DELETE;
        // what was in flight (RTX under loss, the media thread's next turn, a late getStats on a
        // busy machine) stays well under half of that.
        #expect(Double(outcome.packetsAfterDelete) < 0.5 * outcome.packetRate, "\(outcome.packetsAfterDelete) packets after the DELETE")
    }

    /// Waits until the endpoint has counted `count` sessions ended by `reason`.
    static func waitForEnds(_ publisher: Publisher, _ reason: WHEPSessionEnd, count: Int) -> WHEPEndpoint.Statistics {
        let deadline = MonotonicClock().now.advanced(by: .seconds(3))
        while MonotonicClock().now < deadline, (publisher.whepEndpoint?.statistics.sessionsEnded[reason] ?? 0) < count {
            sleepUntil(MonotonicClock().now.advanced(by: .milliseconds(50)))
        }
        return publisher.whepEndpoint!.statistics
    }

    @Test("aiortc subscribes over WHEP: it decodes the video and audio sent while subscribed; DELETE ends the session and its media")
    func one() throws {
        let publisher = try Self.publisher()
        defer {
            publisher.stop()
            _ = try? publisher.waitUntilEnded()
        }
        let url = try #require(publisher.whepEndpoint?.url)
        let client = try WHEPPeerProcess.aiortcClient(url: url, arguments: ["--duration", String(Self.seconds)])
        defer { client.stop() }
        Self.check(try Self.outcome(of: client))
        let statistics = Self.waitForEnds(publisher, .deleted, count: 1)
        #expect(statistics.sessionsOpened == 1)
        #expect(statistics.sessionsEnded == [.deleted: 1])
        let session = try #require(statistics.sessions.first)
        #expect(session.end == .deleted)
        #expect((session.tracks[.video]?.packetsSent ?? 0) > 0)
        #expect((session.tracks[.video]?.feedback.receiverReportsReceived ?? 0) > 0)
        #expect((session.tracks[.audio]?.packetsSent ?? 0) > 0)
        #expect(session.checksAnswered > 0)
    }

    @Test("two concurrent aiortc subscribers: two sessions on the one socket, each decodes the whole stream")
    func two() throws {
        let publisher = try Self.publisher()
        defer {
            publisher.stop()
            _ = try? publisher.waitUntilEnded()
        }
        let url = try #require(publisher.whepEndpoint?.url)
        let clients = try (0..<2).map { _ in try WHEPPeerProcess.aiortcClient(url: url, arguments: ["--duration", String(Self.seconds)]) }
        defer { for client in clients { client.stop() } }
        for client in clients {
            Self.check(try Self.outcome(of: client))
        }
        let statistics = Self.waitForEnds(publisher, .deleted, count: 2)
        #expect(statistics.sessionsOpened == 2)
        #expect(statistics.sessionsEnded[.deleted] == 2)
        #expect(Set(statistics.sessions.map(\.id)).count == 2)
        #expect(statistics.sessions.allSatisfy { ($0.tracks[.video]?.packetsSent ?? 0) > 0 })
    }

    // 320×240: what is checked is consent, and aiortc decoding 720p in Python for 36 s kept a
    // core busy.
    @Test("a 36 s session outlives the 30 s consent timeout: aiortc's consent checks (RFC 7675) are answered", .realTime(weight: 1))
    func consent() throws {
        let publisher = try Self.publisher(video: .init(codec: .h264, width: 320, height: 240, frameRate: 30, bitrate: 300_000, keyframeInterval: 60))
        defer {
            publisher.stop()
            _ = try? publisher.waitUntilEnded()
        }
        let url = try #require(publisher.whepEndpoint?.url)
        let client = try WHEPPeerProcess.aiortcClient(url: url, arguments: ["--duration", "36", "--no-audio"])
        defer { client.stop() }
        Self.check(try Self.outcome(of: client, audio: false), duration: 36, audio: false)
        let statistics = Self.waitForEnds(publisher, .deleted, count: 1)
        #expect(statistics.sessionsEnded == [.deleted: 1])  // not consentExpired
        #expect((statistics.sessions.first?.checksAnswered ?? 0) >= 6)
    }

    @Test("garbage on the media socket (STUN, DTLS, SRTCP-shaped, random) is counted and dropped; the session plays on")
    func garbage() throws {
        let publisher = try Self.publisher()
        defer {
            publisher.stop()
            _ = try? publisher.waitUntilEnded()
        }
        let endpoint = try #require(publisher.whepEndpoint)
        let client = try WHEPPeerProcess.aiortcClient(url: endpoint.url, arguments: ["--duration", String(Self.seconds)])
        defer { client.stop() }
        _ = try #require(client.clientEvent("answered"))
        let attacker = try UDPSender(to: endpoint.mediaAddress)
        var random = SeededRandomNumberGenerator(seed: 29)
        let deadline = MonotonicClock().now.advanced(by: .seconds(4))
        var sent = 0
        while MonotonicClock().now < deadline {
            // A STUN request for no session, a DTLS record, an SRTCP-looking packet, random bytes.
            let kinds: [[UInt8]] = [
                [0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xA4, 0x42] + (0..<12).map { _ in UInt8.random(in: 0...255, using: &random) },
                [0x16, 0xFE, 0xFD] + (0..<40).map { _ in UInt8.random(in: 0...255, using: &random) },
                [0x81, 0xC9, 0x00, 0x07] + (0..<28).map { _ in UInt8.random(in: 0...255, using: &random) },
                (0..<Int.random(in: 1...1_400, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) },
            ]
            for datagram in kinds { try attacker.send(datagram) }
            sent += kinds.count
            sleepUntil(MonotonicClock().now.advanced(by: .milliseconds(5)))
        }
        Self.check(try Self.outcome(of: client))
        let statistics = Self.waitForEnds(publisher, .deleted, count: 1)
        // Each datagram was dropped, counted (random ones of a STUN-looking first byte reach a
        // session's responder only by its ufrag, which they do not have).
        #expect(statistics.datagramsWithoutSession + statistics.datagramsDropped >= sent * 3 / 4)
        #expect(statistics.sessionsEnded == [.deleted: 1])
    }

    @Test("the playout binary: publish --whep-listen 127.0.0.1:0 --json prints the URL at once, and its summary has the session")
    func binary() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let binary = root.appendingPathComponent(".build/debug/playout").path
        let publisher = try WHEPPeerProcess(executable: binary, arguments: ["publish", "testsrc", "--whep-listen", "127.0.0.1:0", "--duration", "8s", "--json", "--loss", "1%"])
        defer { publisher.stop() }
        let announced = try #require(publisher.object(timeout: .seconds(10)) { $0["type"] as? String == "whep" })
        let url = try #require(announced["url"] as? String)
        #expect(url.hasPrefix("http://127.0.0.1:") && url.hasSuffix("/whep"))
        let client = try WHEPPeerProcess.aiortcClient(url: url, arguments: ["--duration", "3"])
        defer { client.stop() }
        let result = try #require(client.clientEvent("result"))
        #expect(result["deleteStatus"] as? Int == 200)
        let summary = try #require(publisher.object(timeout: .seconds(20)) { $0["type"] as? String == "publisher" })
        let whep = try #require(summary["whep"] as? [String: Any])
        #expect(whep["sessionsOpened"] as? Int == 1)
        #expect((whep["sessionsEnded"] as? [String: Int])?["deleted"] == 1)
        let session = try #require((whep["sessions"] as? [[String: Any]])?.first)
        #expect(session["end"] as? String == "deleted")
        #expect(((session["video"] as? [String: Any])?["packetsSent"] as? Int ?? 0) > 0)
        #expect(((session["network"] as? [String: Any])?["datagramsLost"] as? Int ?? 0) > 0)
    }

    @Test("5 % loss on the session's link: aiortc's NACKs are answered with RTX per session, and its video stays whole")
    func loss() throws {
        // 640×360 at 1 Mbit/s: what is checked is repair, and aiortc decoding 720p in Python beside
        // the suite once fell behind (164 of 177 frames). The losses are seeded.
        let publisher = try Self.publisher(
            loss: 0.05, seed: 7, video: .init(codec: .h264, width: 640, height: 360, frameRate: 30, bitrate: 1_000_000, keyframeInterval: 60))
        defer {
            publisher.stop()
            _ = try? publisher.waitUntilEnded()
        }
        let url = try #require(publisher.whepEndpoint?.url)
        let client = try WHEPPeerProcess.aiortcClient(url: url, arguments: ["--duration", String(Self.seconds)])
        defer { client.stop() }
        // RTX repairs the losses: no video frame is missing (audio has no RTX: it may miss some).
        let outcome = try Self.outcome(of: client)
        Self.check(outcome, audio: false, lossless: false)
        let statistics = Self.waitForEnds(publisher, .deleted, count: 1)
        let session = try #require(statistics.sessions.first)
        let video = try #require(session.tracks[.video])
        print("aiortc at 5 % loss: \(outcome.video) of \(outcome.expectedVideo) frames, \(outcome.rtpLost) of \(outcome.rtpReceived) RTP lost; the publisher: \(video.feedback.nacksReceived) NACKs, \(video.retransmittedPacketsSent) RTX, \(video.retransmissionLimits)")
        #expect(session.network.datagramsLost > 0)
        #expect(video.feedback.nacksReceived > 0)
        #expect(video.retransmittedPacketsSent > 0)
    }
}
