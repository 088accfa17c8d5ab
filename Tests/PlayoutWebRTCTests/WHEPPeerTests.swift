import Foundation
#if canImport(Glibc)
import Glibc
#endif
import PlayoutRTP
import PlayoutTesting
import PlayoutWebRTC
import RealTimeTesting
import Testing

/// Our offer against two independent WebRTC stacks serving WHEP on loopback: the answer reads,
/// the DELETE reaches them. (The media path needs ICE and DTLS: see the integration tests.)
@Suite("WHEP against aiortc and GStreamer webrtcbin", .realTime)
struct WHEPPeerTests {
    static var offer: WHEPOffer {
        let fingerprint = try! DTLSFingerprint(algorithm: .sha256, digest: (0..<32).map { _ in UInt8.random(in: 0...255) })
        return WHEPOffer(
            iceUsernameFragment: "pLay", icePassword: "p1ayoutTestPassword0123",
            candidates: ["1 1 udp 2130706431 127.0.0.1 50000 typ host"],
            fingerprint: fingerprint
        )
    }

    @Test("POST our offer, read the answer, DELETE the session", arguments: [
        ("aiortc_whep.py", "vp8"), ("aiortc_whep.py", "h264"), ("gst_whep.py", "vp8"), ("gst_whep.py", "h264"),
    ])
    func offerAnswerDelete(script: String, video: String) throws {
        let peer = try WHEPPeerProcess(script: script, arguments: ["--port", "0", "--video", video, "--token", "peer-token"] + (script.hasPrefix("aiortc") ? ["--loopback"] : []))
        defer { peer.stop() }
        let ready = try #require(peer.event("ready"), "\(script) did not start: is python3-aiortc / gstreamer1.0-nice installed (make setup)?")
        let port = try #require(ready["port"] as? Int)
        let client = try WHEPClient(endpoint: WHEPURL("http://127.0.0.1:\(port)/whep"), token: "peer-token")
        let session = try client.open(offer: Self.offer.serialized())
        let answer = try WHEPAnswer(parsing: session.answer)

        #expect(answer.iceUsernameFragment.count >= 4)
        #expect(answer.icePassword.count >= 22)
        #expect(answer.fingerprint.algorithm == .sha256)
        #expect(answer.fingerprint.digest.count == 32)
        #expect(answer.setup == .active || answer.setup == .passive)
        #expect(!answer.candidates.isEmpty)
        #expect(answer.bundle == ["0", "1"])
        #expect(answer.media.map(\.mid) == ["0", "1"])
        #expect(answer.media.map(\.kind) == [.video, .audio])
        #expect(answer.media.allSatisfy { $0.direction == .sendonly && $0.rtcpMux && !$0.isRejected })
        let videoCodecs = answer.media[0].codecs.map { $0.name.uppercased() }
        #expect(!videoCodecs.isEmpty && videoCodecs.allSatisfy { $0 == video.uppercased() }, "\(videoCodecs)")
        if video == "h264" {
            #expect(answer.media[0].codecs.allSatisfy { $0.formatParameters?.packetizationMode == 1 || $0.formatParameters == nil })
        }
        #expect(answer.media[1].codecs.map { $0.name.lowercased() } == ["opus"])
        #expect(answer.media[1].codecs.first?.clockRate == 48_000)
        #expect(peer.event("created") != nil)

        let identifier = String(session.sessionURL.target.split(separator: "/").last ?? "")
        #expect(session.sessionURL.target == "/whep/\(identifier)")
        #expect(client.close() == .success(200))
        let deleted = peer.event("deleted", timeout: .seconds(10)) { $0["id"] as? String == identifier }
        #expect(deleted != nil, "the peer saw the DELETE")
    }

    @Test("a wrong token is refused by the peer with 401 and its problem title")
    func wrongToken() throws {
        let peer = try WHEPPeerProcess(script: "aiortc_whep.py", arguments: ["--port", "0", "--token", "right"])
        defer { peer.stop() }
        let port = try #require(peer.event("ready")?["port"] as? Int)
        let client = try WHEPClient(endpoint: WHEPURL("http://127.0.0.1:\(port)/whep"), token: "wrong")
        #expect { try client.open(offer: Self.offer.serialized()) } throws: { error in
            let error = error as! WHEPError
            return error.code == .httpStatus(401) && error.message.contains("missing or wrong bearer token")
        }
    }
}
