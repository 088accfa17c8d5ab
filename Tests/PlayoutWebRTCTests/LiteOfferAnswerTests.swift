import PlayoutCore
import PlayoutRTP
import Testing

@testable import PlayoutWebRTC

/// The ICE-lite endpoint's side of offer/answer: reading a subscriber's offer, writing the answer.
@Suite("ICE-lite WHEP offer reading and answer writing")
struct LiteOfferAnswerTests {
    /// An offer aiortc 1.4 wrote (`addTransceiver("video"/"audio", direction="recvonly")`): BUNDLE
    /// with a transport per m-line, VP8 and two H.264 profiles with RTX, no abs-capture-time.
    static let aiortcOffer = """
        v=0\r
        o=- 4004770867 4004770867 IN IP4 0.0.0.0\r
        s=-\r
        t=0 0\r
        a=group:BUNDLE 0 1\r
        a=msid-semantic:WMS *\r
        m=video 55217 UDP/TLS/RTP/SAVPF 97 98 99 100 101 102\r
        c=IN IP4 192.0.2.2\r
        a=recvonly\r
        a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid\r
        a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time\r
        a=mid:0\r
        a=rtcp:9 IN IP4 0.0.0.0\r
        a=rtcp-mux\r
        a=ssrc-group:FID 7160227 381115901\r
        a=ssrc:7160227 cname:96b04c00-513c-4a72-8369-af7d794a2d3f\r
        a=ssrc:381115901 cname:96b04c00-513c-4a72-8369-af7d794a2d3f\r
        a=rtpmap:97 VP8/90000\r
        a=rtcp-fb:97 nack\r
        a=rtcp-fb:97 nack pli\r
        a=rtcp-fb:97 goog-remb\r
        a=rtpmap:98 rtx/90000\r
        a=fmtp:98 apt=97\r
        a=rtpmap:99 H264/90000\r
        a=rtcp-fb:99 nack\r
        a=rtcp-fb:99 nack pli\r
        a=rtcp-fb:99 goog-remb\r
        a=fmtp:99 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f\r
        a=rtpmap:100 rtx/90000\r
        a=fmtp:100 apt=99\r
        a=rtpmap:101 H264/90000\r
        a=rtcp-fb:101 nack\r
        a=rtcp-fb:101 nack pli\r
        a=rtcp-fb:101 goog-remb\r
        a=fmtp:101 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r
        a=rtpmap:102 rtx/90000\r
        a=fmtp:102 apt=101\r
        a=candidate:f957a2332b1715da3b0ef8ba684454eb 1 udp 2130706431 192.0.2.2 55217 typ host\r
        a=end-of-candidates\r
        a=ice-ufrag:KJYl\r
        a=ice-pwd:AwtTj9AaU9r468GBW6FIVH\r
        a=fingerprint:sha-256 71:33:C8:89:33:27:C6:B1:5B:AF:44:47:A9:62:00:CB:51:23:92:27:75:89:D7:53:CB:98:2E:C2:6B:FD:6F:AC\r
        a=setup:actpass\r
        m=audio 60493 UDP/TLS/RTP/SAVPF 96 0 8\r
        c=IN IP4 192.0.2.2\r
        a=recvonly\r
        a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid\r
        a=extmap:2 urn:ietf:params:rtp-hdrext:ssrc-audio-level\r
        a=mid:1\r
        a=rtcp:9 IN IP4 0.0.0.0\r
        a=rtcp-mux\r
        a=rtpmap:96 opus/48000/2\r
        a=rtpmap:0 PCMU/8000\r
        a=rtpmap:8 PCMA/8000\r
        a=ice-ufrag:LyxJ\r
        a=ice-pwd:qygIlvlmIBkzvnEUfIBD6q\r
        a=fingerprint:sha-256 71:33:C8:89:33:27:C6:B1:5B:AF:44:47:A9:62:00:CB:51:23:92:27:75:89:D7:53:CB:98:2E:C2:6B:FD:6F:AC\r
        a=setup:actpass\r

        """

    static let credentials = ICECredentials(ufrag: "srvr", password: "0123456789abcdefABCDEF++")
    static let fingerprint = try! DTLSFingerprint(algorithm: .sha256, digest: Array(0..<32))
    static let media = try! SocketAddress(host: "127.0.0.1", port: 50_000)
    static let h264 = WHEPLiteTrack(
        codec: .h264, clockRate: 90_000, feedback: [.nack(nil), .pictureLoss(nil), .fullIntraRequest(nil), .receiverEstimatedMaximumBitrate(nil)],
        retransmission: true, ssrc: 1_111, retransmissionSSRC: 2_222
    )
    static let opus = WHEPLiteTrack(codec: .opus, clockRate: 48_000, channels: 2, ssrc: 3_333)

    static func answer(_ offer: String, tracks: [WHEPLiteTrack] = [h264, opus], profile: String? = "640c1f") throws -> WHEPAnswerBuilder.Answer {
        let reader = try WHEPOfferReader(parsing: offer)
        return try WHEPAnswerBuilder(offer: reader, tracks: tracks, credentials: credentials, fingerprint: fingerprint, candidates: [media], h264ProfileLevelID: profile).build()
    }

    @Test("aiortc's offer: the BUNDLE tag's credentials, H.264 under the offer's payload type 99 with RTX 100, Opus 96, mid extension id 1")
    func aiortc() throws {
        let reader = try WHEPOfferReader(parsing: Self.aiortcOffer)
        #expect(reader.iceUsernameFragment == "KJYl")
        #expect(reader.bundle == ["0", "1"])
        #expect(reader.setup == "actpass")
        let answer = try Self.answer(Self.aiortcOffer)
        #expect(answer.tracks.count == 2)
        let video = try #require(answer.tracks.first { $0.mid == "0" })
        // No 640c1f offered: the first packetization-mode=1 H.264 in the offer's order.
        #expect(video.payloadType == 99)
        #expect(video.retransmissionPayloadType == 100)
        #expect(video.midExtensionID == 1)
        #expect(video.absoluteCaptureTimeExtensionID == nil)  // aiortc offers abs-send-time, not abs-capture-time
        #expect(Set(video.feedback) == [.nack(99), .pictureLoss(99), .receiverEstimatedMaximumBitrate(99)])  // no ccm fir offered
        #expect(video.retransmissionSSRC == 2_222)
        let audio = try #require(answer.tracks.first { $0.mid == "1" })
        #expect(audio.payloadType == 96)
        #expect(audio.retransmissionPayloadType == nil)
        #expect(audio.feedback.isEmpty)
    }

    @Test("the answer reads back with the subscriber's own parser: ice-lite, passive, our fingerprint, BUNDLE, sendonly, ssrc-group, candidates")
    func answerReadsBack() throws {
        let text = try Self.answer(Self.aiortcOffer).sessionDescription.serialized()
        let parsed = try WHEPAnswer(parsing: text)
        #expect(parsed.iceLite)
        #expect(parsed.setup == .passive)
        #expect(parsed.fingerprint == Self.fingerprint)
        #expect(parsed.iceUsernameFragment == Self.credentials.ufrag)
        #expect(parsed.icePassword == Self.credentials.password)
        #expect(parsed.bundle == ["0", "1"])
        #expect(parsed.endOfCandidates)
        #expect(parsed.candidates.contains { $0.hasSuffix("127.0.0.1 50000 typ host") })
        let video = try #require(parsed.media.first)
        #expect(video.mid == "0")
        #expect(video.direction == .sendonly)
        #expect(video.rtcpMux)
        #expect(video.codecs.map(\.payloadType) == [99])
        #expect(video.codecs.first?.retransmissionPayloadType == 100)
        #expect(video.codecs.first?.formatParameters?.parameters.contains(.init(name: "packetization-mode", value: "1")) == true)
        #expect(video.ssrcs == [1_111, 2_222])
        #expect(video.retransmissionSSRCs.map(\.media) == [1_111])
        #expect(video.retransmissionSSRCs.map(\.rtx) == [2_222])
        #expect(video.extensionID(WHEPOffer.midExtensionURI) == 1)
        #expect(parsed.media[1].codecs.map(\.name) == ["opus"])
        #expect(parsed.media[1].ssrcs == [3_333])
        #expect(text.contains("a=ice-lite\r\n"))
        #expect(text.contains("a=setup:passive\r\n"))
    }

    @Test("Playout's own subscriber offer: the preferred H.264 profile 640c1f (pt 106, RTX 107), abs-capture-time id 2, ccm fir kept")
    func playoutOffer() throws {
        let offer = WHEPOffer(
            iceUsernameFragment: "abcd", icePassword: "abcdefghijklmnopqrstuvwx", candidates: ["1 1 udp 2130706431 127.0.0.1 5000 typ host"],
            fingerprint: Self.fingerprint
        ).serialized()
        let answer = try Self.answer(offer)
        let video = try #require(answer.tracks.first)
        #expect(video.payloadType == 106)
        #expect(video.retransmissionPayloadType == 107)
        #expect(video.midExtensionID == 1)
        #expect(video.absoluteCaptureTimeExtensionID == 2)
        #expect(video.feedback.contains(.fullIntraRequest(106)))
        #expect(answer.tracks[1].payloadType == 111)
        // Without a preferred profile: the offer's first packetization-mode=1 H.264 (42e01f, pt 100).
        #expect(try Self.answer(offer, profile: nil).tracks.first?.payloadType == 100)
    }

    @Test("VP8 is chosen by name; no RTX without retransmission, and then no generic NACK")
    func vp8WithoutRetransmission() throws {
        var vp8 = Self.h264
        vp8.codec = .vp8
        vp8.retransmission = false
        let answer = try Self.answer(Self.aiortcOffer, tracks: [vp8])
        let video = try #require(answer.tracks.first)
        #expect(video.payloadType == 97)
        #expect(video.retransmissionPayloadType == nil)
        #expect(!video.feedback.contains(.nack(97)))
        #expect(video.feedback.contains(.pictureLoss(97)))
        // Audio was offered but is not sent: rejected, still with its mid, out of BUNDLE.
        let sections = answer.sessionDescription.media
        #expect(sections.count == 2)
        #expect(sections[1].port == 0)
        #expect(sections[1].attribute("mid") == "1")
        #expect(answer.sessionDescription.attribute("group") == "BUNDLE 0")
    }

    @Test("offers that cannot be answered get a typed error naming why", arguments: [
        ("a=setup:actpass", "a=setup:passive", "invalidSetup"),
        ("a=fingerprint:sha-256", "a=fingerprnt:sha-256", "missingFingerprint"),
        ("a=fingerprint:sha-256 71:33", "a=fingerprint:sha-256 7Z:33", "invalidFingerprint"),
        ("a=ice-ufrag:KJYl", "a=ice-ufrag:K", "invalidICECredentials"),
        ("a=ice-pwd:AwtTj9AaU9r468GBW6FIVH", "a=ice-pwdx:AwtTj9AaU9r468GBW6FIVH", "missingICECredentials"),
        ("a=mid:1", "a=mid:0", "duplicateMid"),
        ("a=mid:1", "a=mxd:1", "missingMid"),
        ("a=group:BUNDLE 0 1", "a=group:BUNDLE 0", "notBundled"),
        ("a=rtcp-mux\r\na=ssrc-group", "a=ssrc-group", "noRTCPMux"),
        ("packetization-mode=1", "packetization-mode=0", "noCommonCodec"),
        ("a=recvonly\r\na=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid\r\na=extmap:2 http", "a=inactive\r\na=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid\r\na=extmap:2 http", "noCommonCodec-video"),
    ])
    func refused(replacing: String, with replacement: String, expected: String) throws {
        #expect(Self.aiortcOffer.contains(replacing))
        let hostile = Self.aiortcOffer.replacing(replacing, with: replacement)
        // Only video is sent where the video m-line is what fails.
        let tracks = expected.hasPrefix("noCommonCodec") ? [Self.h264] : [Self.h264, Self.opus]
        do {
            _ = try Self.answer(hostile, tracks: tracks)
            Issue.record("answered an offer that should be refused (\(expected))")
        } catch let error as WHEPOfferError {
            #expect(Self.caseName(error) == expected.replacing("-video", with: ""), "\(error)")
            #expect(!error.description.isEmpty)
        }
    }

    static func caseName(_ error: WHEPOfferError) -> String {
        switch error {
        case .sdp: "sdp"
        case .noMedia: "noMedia"
        case .missingMid: "missingMid"
        case .duplicateMid: "duplicateMid"
        case .missingICECredentials: "missingICECredentials"
        case .invalidICECredentials: "invalidICECredentials"
        case .missingFingerprint: "missingFingerprint"
        case .invalidFingerprint: "invalidFingerprint"
        case .invalidSetup: "invalidSetup"
        case .notBundled: "notBundled"
        case .noRTCPMux: "noRTCPMux"
        case .noCommonCodec: "noCommonCodec"
        }
    }

    @Test("not SDP, empty, oversized and without media: refused before anything is built")
    func notSDP() {
        #expect(throws: WHEPOfferError.self) { try WHEPOfferReader(parsing: "") }
        #expect(throws: WHEPOfferError.self) { try WHEPOfferReader(parsing: "GET / HTTP/1.1\r\n\r\n") }
        #expect(throws: WHEPOfferError.self) { try WHEPOfferReader(parsing: String(repeating: "a=x:" + String(repeating: "y", count: 100) + "\r\n", count: 1_000)) }
        #expect(throws: WHEPOfferError.noMedia) { try WHEPOfferReader(parsing: "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n") }
    }

    @Test("truncated and mutated offers never crash: each is answered or refused with a typed error", arguments: [UInt64(11), 12])
    func mutated(seed: UInt64) {
        var random = SeededRandomNumberGenerator(seed: seed)
        let bytes = Array(Self.aiortcOffer.utf8)
        var answered = 0
        for round in 0..<400 {
            var copy = round.isMultiple(of: 2) ? Array(bytes.prefix(Int(random.next() % UInt64(bytes.count)))) : bytes
            if !round.isMultiple(of: 2) {
                for _ in 0..<4 { copy[Int(random.next() % UInt64(copy.count))] = UInt8(truncatingIfNeeded: random.next()) }
            }
            if let answer = try? Self.answer(String(decoding: copy, as: UTF8.self)) {
                answered += 1
                // Whatever was answered is a usable answer.
                #expect(!answer.tracks.isEmpty)
                #expect((try? WHEPAnswer(parsing: answer.sessionDescription.serialized())) != nil)
            }
        }
        #expect(answered < 400)
    }
}
