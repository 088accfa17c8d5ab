import PlayoutCore
import PlayoutRTP
import PlayoutWebRTC
import Testing

@Suite("WHEP SDP offer")
struct SDPOfferTests {
    static let fingerprint = try! DTLSFingerprint(algorithm: .sha256, digest: [UInt8](repeating: 0x5A, count: 32))
    static let offer = WHEPOffer(
        iceUsernameFragment: "pLay", icePassword: "abcdefghijklmnopqrstuv+/",
        candidates: ["a=candidate:1 1 udp 2130706431 192.0.2.7 50000 typ host", "candidate:2 1 udp 2130706175 2001:db8::7 50001 typ host", "3 1 udp 1694498815 198.51.100.9 61000 typ srflx raddr 192.0.2.7 rport 50000"],
        fingerprint: fingerprint
    )

    @Test("recvonly video and audio, bundled, rtcp-mux, actpass, ICE, fingerprint, every candidate then end-of-candidates")
    func shape() throws {
        let text = Self.offer.serialized()
        let sdp = try SessionDescription(parsing: text)
        #expect(sdp.attribute("group") == "BUNDLE 0 1")
        #expect(sdp.media.map(\.kind) == [.video, .audio])
        for (index, media) in sdp.media.enumerated() {
            #expect(media.attribute("mid") == String(index))
            #expect(media.direction == .recvonly)
            #expect(media.rtcpMux)
            #expect(media.proto.rawValue == "UDP/TLS/RTP/SAVPF")
            #expect(media.attribute("setup") == "actpass")
            #expect(media.attribute("ice-ufrag") == "pLay")
            #expect(media.attribute("ice-pwd") == "abcdefghijklmnopqrstuv+/")
            #expect(media.attribute("ice-options") != nil)
            #expect(media.attribute("fingerprint") == "sha-256 " + Self.fingerprint.hexDigest)
            let candidates = media.attributes.filter { $0.name == "candidate" }.compactMap(\.value)
            #expect(candidates == ["1 1 udp 2130706431 192.0.2.7 50000 typ host", "2 1 udp 2130706175 2001:db8::7 50001 typ host", "3 1 udp 1694498815 198.51.100.9 61000 typ srflx raddr 192.0.2.7 rport 50000"])
            #expect(media.attributes.last?.name == "end-of-candidates")
            #expect(media.extensionID(uri: WHEPOffer.midExtensionURI) == 1)
            #expect(media.extensionID(uri: WHEPOffer.absoluteCaptureTimeExtensionURI) == 2)
        }
        #expect(sdp.media[0].extensionID(uri: WHEPOffer.playoutDelayExtensionURI) == 3)
        #expect(text.contains("\r\na=candidate:1 1 udp"), "one candidate: prefix, not two")
        #expect(!text.contains("candidate:candidate"))
    }

    @Test("video: VP8, VP9, H.264 (four profiles, mode 1), H.265, each with RTX and nack, pli, fir, remb")
    func videoCodecs() throws {
        let video = try SessionDescription(parsing: Self.offer.serialized()).media[0]
        let names = video.payloadTypes.compactMap { video.rtpMap(for: $0)?.encodingName }
        #expect(names == ["VP8", "rtx", "VP9", "rtx", "H264", "rtx", "H264", "rtx", "H264", "rtx", "H264", "rtx", "H265", "rtx"])
        let h264 = video.payloadTypes.filter { video.rtpMap(for: $0)?.encodingName == "H264" }
        #expect(h264.compactMap { video.formatParameters(for: $0)?["profile-level-id"] } == ["42e01f", "42001f", "4d001f", "640c1f"])
        #expect(h264.allSatisfy { video.formatParameters(for: $0)?.packetizationMode == 1 })
        let rtx = Dictionary(uniqueKeysWithValues: video.retransmissionPayloadTypes.map { ($0.original, $0.rtx) })
        for payloadType in video.payloadTypes where video.rtpMap(for: payloadType)?.encodingName != "rtx" {
            #expect(rtx[payloadType] == payloadType + 1)
            for feedback in [RTCPFeedbackCapability.nack(nil), .pictureLoss(nil), .fullIntraRequest(nil), .receiverEstimatedMaximumBitrate(nil)] {
                #expect(video.acceptsFeedback(feedback, payloadType: payloadType), "\(payloadType) \(feedback)")
            }
        }
    }

    @Test("audio: Opus stereo with minptime, in-band FEC; only the kinds asked for, in their order")
    func audioAndKinds() throws {
        let audio = try SessionDescription(parsing: Self.offer.serialized()).media[1]
        #expect(audio.payloadTypes == [111])
        #expect(audio.rtpMap(for: 111) == RTPMap(payloadType: 111, encodingName: "opus", clockRate: 48_000, channels: 2))
        #expect(audio.formatParameters(for: 111)?.formatted == "minptime=10;useinbandfec=1;stereo=1")
        var audioOnly = Self.offer
        audioOnly.kinds = [.audio]
        let sdp = try SessionDescription(parsing: audioOnly.serialized())
        #expect(sdp.media.map(\.kind) == [.audio])
        #expect(sdp.attribute("group") == "BUNDLE 0")
        var twice = Self.offer
        twice.kinds = [.audio, .video, .audio]
        #expect(try SessionDescription(parsing: twice.serialized()).media.map(\.kind) == [.audio, .video])
    }
}

@Suite("WHEP SDP answer")
struct SDPAnswerTests {
    /// What aiortc 1.4 answered to our offer with H.264 preferred (Tests/WebRTCPeers/aiortc_whep.py).
    static let aiortc = """
        v=0\r
        o=- 4004760929 4004760929 IN IP4 0.0.0.0\r
        s=-\r
        t=0 0\r
        a=group:BUNDLE 0 1\r
        a=msid-semantic:WMS *\r
        m=video 37838 UDP/TLS/RTP/SAVPF 102 103 100 101\r
        c=IN IP4 127.0.0.1\r
        a=sendonly\r
        a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid\r
        a=mid:0\r
        a=rtcp:9 IN IP4 0.0.0.0\r
        a=rtcp-mux\r
        a=ssrc-group:FID 653529707 2082475313\r
        a=ssrc:653529707 cname:46391068\r
        a=ssrc:2082475313 cname:46391068\r
        a=rtpmap:102 H264/90000\r
        a=rtcp-fb:102 nack\r
        a=rtcp-fb:102 nack pli\r
        a=rtcp-fb:102 goog-remb\r
        a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f\r
        a=rtpmap:103 rtx/90000\r
        a=fmtp:103 apt=102\r
        a=rtpmap:100 H264/90000\r
        a=rtcp-fb:100 nack\r
        a=fmtp:100 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r
        a=rtpmap:101 rtx/90000\r
        a=fmtp:101 apt=100\r
        a=candidate:16572de626da4e5384a0ce2d0d93678a 1 udp 2130706431 127.0.0.1 37838 typ host\r
        a=candidate:f957a2332b1715da3b0ef8ba684454eb 1 udp 2130706431 192.0.2.2 51971 typ host\r
        a=end-of-candidates\r
        a=ice-ufrag:MhVE\r
        a=ice-pwd:O9rGu7Tnn090A0rClWtsCU\r
        a=fingerprint:sha-256 F1:42:62:1E:2C:0A:DF:1C:18:2D:C3:F6:BE:29:19:3E:4B:8D:2B:58:3B:5A:93:C3:7F:7A:02:69:83:30:FC:5F\r
        a=setup:active\r
        m=audio 37838 UDP/TLS/RTP/SAVPF 111\r
        c=IN IP4 127.0.0.1\r
        a=sendonly\r
        a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid\r
        a=mid:1\r
        a=rtcp-mux\r
        a=ssrc:3433516732 cname:46391068\r
        a=rtpmap:111 opus/48000/2\r
        a=ice-ufrag:MhVE\r
        a=ice-pwd:O9rGu7Tnn090A0rClWtsCU\r
        a=fingerprint:sha-256 F1:42:62:1E:2C:0A:DF:1C:18:2D:C3:F6:BE:29:19:3E:4B:8D:2B:58:3B:5A:93:C3:7F:7A:02:69:83:30:FC:5F\r
        a=setup:active\r

        """

    @Test("an aiortc answer reads whole: ICE, fingerprint, role, candidates, codecs with RTX and feedback, SSRCs")
    func aiortcAnswer() throws {
        let answer = try WHEPAnswer(parsing: Self.aiortc)
        #expect(answer.iceUsernameFragment == "MhVE")
        #expect(answer.icePassword == "O9rGu7Tnn090A0rClWtsCU")
        #expect(!answer.iceLite)
        #expect(answer.fingerprint.algorithm == .sha256)
        #expect(answer.fingerprint.hexDigest.hasPrefix("F1:42:62"))
        #expect(answer.setup == .active)
        #expect(answer.bundle == ["0", "1"])
        #expect(answer.candidates == ["16572de626da4e5384a0ce2d0d93678a 1 udp 2130706431 127.0.0.1 37838 typ host", "f957a2332b1715da3b0ef8ba684454eb 1 udp 2130706431 192.0.2.2 51971 typ host"])
        #expect(answer.endOfCandidates)
        let video = answer.media[0]
        #expect(video.kind == .video && video.mid == "0" && video.direction == .sendonly && !video.isRejected && video.rtcpMux)
        #expect(video.codecs.map(\.payloadType) == [102, 100])
        #expect(video.codecs.map(\.retransmissionPayloadType) == [103, 101])
        #expect(video.codecs[0].formatParameters?["profile-level-id"] == "42001f")
        #expect(video.codecs[0].feedback.map(\.attributeValue) == ["102 nack", "102 nack pli", "102 goog-remb"])
        #expect(video.codecs[1].feedback.map(\.attributeValue) == ["100 nack"])
        #expect(video.extensionID(WHEPOffer.midExtensionURI) == 1)
        #expect(video.ssrcs == [653_529_707, 2_082_475_313])
        #expect(video.retransmissionSSRCs.map(\.media) == [653_529_707] && video.retransmissionSSRCs.map(\.rtx) == [2_082_475_313])
        let audio = answer.media[1]
        #expect(audio.mid == "1")
        #expect(audio.codecs.map(\.name) == ["opus"])
        #expect(audio.codecs[0].channels == 2 && audio.codecs[0].clockRate == 48_000)
        #expect(audio.ssrcs == [3_433_516_732])
    }

    static func replacing(_ old: String, with new: String, in text: String = aiortc) -> String {
        text.split(separator: "\r\n", omittingEmptySubsequences: false).map { $0 == old ? new : String($0) }.joined(separator: "\r\n")
    }

    static func dropping(_ prefix: String, in text: String = aiortc) -> String {
        text.split(separator: "\r\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix(prefix) }.joined(separator: "\r\n")
    }

    @Test("session-level ICE and fingerprint, ice-lite, no setup (active), a rejected m-line")
    func sessionLevelAndRejected() throws {
        let text = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\na=ice-lite\r\na=ice-ufrag:abcd\r\na=ice-pwd:0123456789012345678901\r\n"
            + "a=fingerprint:SHA-256 " + (0..<32).map { _ in "ab" }.joined(separator: ":") + "\r\n"
            + "m=video 0 UDP/TLS/RTP/SAVPF 96\r\na=mid:0\r\na=rtpmap:96 VP8/90000\r\n"
            + "m=audio 9 UDP/TLS/RTP/SAVPF 111 0\r\na=mid:1\r\na=rtpmap:111 OPUS/48000/2\r\na=candidate:1 1 udp 1 192.0.2.1 9 typ host\r\n"
        let answer = try WHEPAnswer(parsing: text)
        #expect(answer.iceLite)
        #expect(answer.setup == .active)
        #expect(answer.fingerprint.algorithm == .sha256 && answer.fingerprint.hexDigest.hasPrefix("AB:AB"))
        #expect(answer.media[0].isRejected && answer.media[0].codecs.isEmpty)
        #expect(answer.media[1].codecs.map(\.name) == ["OPUS"])
        #expect(answer.media[1].otherPayloadTypes == [0])
        #expect(answer.candidates == ["1 1 udp 1 192.0.2.1 9 typ host"], "the transport is the first accepted m-line")
        #expect(!answer.endOfCandidates)
    }

    @Test("hostile answers are clear errors", arguments: [
        (dropping("a=ice-ufrag"), WHEPAnswerError.missingICECredentials(mid: "0")),
        (dropping("a=ice-pwd"), .missingICECredentials(mid: "0")),
        (replacing("a=ice-pwd:O9rGu7Tnn090A0rClWtsCU", with: "a=ice-pwd:short"), .invalidICECredentials(mid: "0")),
        (replacing("a=ice-ufrag:MhVE", with: "a=ice-ufrag:Mh VE"), .invalidICECredentials(mid: "0")),
        (dropping("a=fingerprint"), .missingFingerprint(mid: "0")),
        (replacing("a=fingerprint:sha-256 F1:42:62:1E:2C:0A:DF:1C:18:2D:C3:F6:BE:29:19:3E:4B:8D:2B:58:3B:5A:93:C3:7F:7A:02:69:83:30:FC:5F", with: "a=fingerprint:sha-256 F1:42"), .invalidFingerprint("sha-256 F1:42")),
        (replacing("a=fingerprint:sha-256 F1:42:62:1E:2C:0A:DF:1C:18:2D:C3:F6:BE:29:19:3E:4B:8D:2B:58:3B:5A:93:C3:7F:7A:02:69:83:30:FC:5F", with: "a=fingerprint:sha-256"), .invalidFingerprint("sha-256")),
        (replacing("a=mid:1", with: "a=mid:0"), .duplicateMid("0")),
        (replacing("a=setup:active", with: "a=setup:holdconn"), .invalidSetup("holdconn")),
        ("v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n", .noMedia),
        ("v=0\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96 97\r\na=rtpmap:96 AV1/90000\r\na=rtpmap:97 rtx/90000\r\na=fmtp:97 apt=96\r\na=ice-ufrag:abcd\r\na=ice-pwd:0123456789012345678901\r\n", .noSupportedCodec),
        ("v=0\r\ns=-\r\nt=0 0\r\nm=video 0 UDP/TLS/RTP/SAVPF 96\r\na=rtpmap:96 VP8/90000\r\n", .noSupportedCodec),
    ])
    func hostile(text: String, expected: WHEPAnswerError) {
        #expect(throws: expected) { try WHEPAnswer(parsing: text) }
    }

    @Test("not SDP, truncated, oversized, too many m-lines: a typed SDP error")
    func notSDP() {
        for text in ["", "hello", "<html>404</html>", String(Self.aiortc.prefix(30)), String(repeating: "a=x:" + String(repeating: "y", count: 1000) + "\r\n", count: 100),
                     "v=0\r\ns=-\r\nt=0 0\r\n" + String(repeating: "m=audio 9 RTP/AVP 0\r\n", count: 40)] {
            #expect { try WHEPAnswer(parsing: text) } throws: { error in
                guard let error = error as? WHEPAnswerError else { return false }
                if case .sdp = error { return true }
                return error == .noMedia || error == .noSupportedCodec || error == .missingICECredentials(mid: nil)
            }
        }
    }

    @Test("every prefix and random mutations of a real answer: an answer or a typed error, never a crash")
    func mutations() {
        let bytes = Array(Self.aiortc.utf8)
        for length in stride(from: 0, through: bytes.count, by: 7) {
            _ = try? WHEPAnswer(parsing: String(decoding: bytes.prefix(length), as: UTF8.self))
        }
        var generator = SeededRandomNumberGenerator(seed: 29)
        for _ in 0..<400 {
            var mutated = bytes
            for _ in 0..<(1 + Int(generator.next() % 8)) {
                let index = Int(generator.next() % UInt64(mutated.count))
                switch generator.next() % 3 {
                case 0: mutated[index] = UInt8(truncatingIfNeeded: generator.next())
                case 1: mutated.remove(at: index)
                default: mutated.insert(contentsOf: mutated[index..<min(index + 40, mutated.count)], at: index)
                }
            }
            if let answer = try? WHEPAnswer(parsing: String(decoding: mutated, as: UTF8.self)) {
                #expect(answer.icePassword.utf8.count >= 22)
                #expect(Set(answer.media.compactMap(\.mid)).count == answer.media.compactMap(\.mid).count)
            }
        }
    }

    @Test("a WebRTC offer is not mistaken for an answer only by shape: our own offer reads (actpass kept as written)")
    func ownOffer() throws {
        let answer = try WHEPAnswer(parsing: SDPOfferTests.offer.serialized())
        #expect(answer.setup == .actpass)
        #expect(answer.media[0].codecs.count == 7)
        #expect(answer.candidates.count == 3)
    }
}

