import PlayoutCore
import PlayoutRTP
import Testing

/// The port rule of `publish --fanout N` (viewer i at the SDP's port + i × stride), the SSRC and
/// key rewriting that goes with it, and what hostile SDPs get.
@Suite("SDP fan-out: viewer i at the SDP's port + i × stride")
struct SessionDescriptionFanoutTests {
    static let key = "WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVz"  // 30 bytes, base64

    /// The built-in publisher's shape: video at P, audio at P + 2, SRTP, SSRCs and an RTX group.
    static let publisherSDP = """
        v=0
        o=- 0 0 IN IP4 127.0.0.1
        s=playout publish
        c=IN IP4 127.0.0.1
        t=0 0
        m=video 5004 RTP/SAVP 96 98
        a=rtpmap:96 H264/90000
        a=rtpmap:98 rtx/90000
        a=fmtp:98 apt=96
        a=ssrc-group:FID 4294967294 100
        a=ssrc:4294967294 cname:playout
        a=ssrc:100 cname:playout
        a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(key)
        a=sendonly
        m=audio 5006 RTP/SAVP 97
        a=rtpmap:97 opus/48000/2
        a=ssrc:7 cname:playout
        a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(key)
        a=sendonly

        """

    static func sdp(_ media: String) throws -> SessionDescription {
        try SessionDescription(parsing: "v=0\no=- 0 0 IN IP4 127.0.0.1\ns=x\nc=IN IP4 127.0.0.1\nt=0 0\n" + media)
    }

    @Test("the publisher's SDP has stride 4 (video at P, audio at P+2); video alone, 2")
    func strides() throws {
        #expect(try SessionDescription(parsing: Self.publisherSDP).fanoutStride == 4)
        #expect(try Self.sdp("m=video 5004 RTP/AVP 96\na=rtpmap:96 H264/90000\n").fanoutStride == 2)
        #expect(try Self.sdp("m=audio 5006 RTP/AVP 97\na=rtpmap:97 opus/48000/2\n").fanoutStride == 2)
        // The span from the lowest port to the highest RTCP port, whatever the order of the sections.
        #expect(try Self.sdp("m=audio 6010 RTP/AVP 97\nm=video 6000 RTP/AVP 96\n").fanoutStride == 12)
        // An explicit a=rtcp port counts.
        #expect(try Self.sdp("m=video 5004 RTP/AVP 96\na=rtcp:5009\n").fanoutStride == 6)
    }

    @Test("viewer 0 is the SDP itself; viewer i's ports, a=rtcp ports, SSRCs and ssrc-groups move, and it round-trips")
    func viewers() throws {
        let base = try SessionDescription(parsing: Self.publisherSDP)
        #expect(try base.fannedOut(viewer: 0) == base)
        let third = try base.fannedOut(viewer: 3)
        #expect(third.media.map(\.port) == [5016, 5018])
        #expect(third.media[0].ssrcAttributes.map(\.ssrc) == [1, 103])  // 4294967294 + 3 wraps to 1
        #expect(third.media[1].ssrcAttributes.map(\.ssrc) == [10])
        #expect(third.media[0].attribute("ssrc-group") == "FID 1 103")
        #expect(try SessionDescription(parsing: third.serialized()) == third)
        #expect(base.highestFanoutPort(viewers: 4) == 5019)
        let explicit = try Self.sdp("m=video 5004 RTP/AVP 96\na=rtcp:5009\n")
        #expect(try explicit.fannedOut(viewer: 2).media[0].rtcp?.port == 5021)
        #expect(try explicit.fannedOut(viewer: 2).media[0].port == 5016)
    }

    @Test("each viewer's a=crypto key is its own: the same master key, the salt's first six bytes XORed with the viewer")
    func keys() throws {
        let base = try SessionDescription(parsing: Self.publisherSDP)
        let original = try SRTPKeyingMaterial(crypto: base.media[0].crypto[0])
        for viewer in [1, 2, 255, 256, 14_000] {
            let fanned = try base.fannedOut(viewer: viewer)
            let keys = try SRTPKeyingMaterial(crypto: fanned.media[0].crypto[0])
            #expect(keys == original.fannedOut(viewer: viewer))
            #expect(keys.masterKey == original.masterKey)
            #expect(keys.masterSalt != original.masterSalt)
            #expect(keys.masterSalt[6...] == original.masterSalt[6...])
            #expect(try SRTPKeyingMaterial(crypto: fanned.media[1].crypto[0]) == keys)
        }
        #expect(original.fannedOut(viewer: 0) == original)
        #expect(original.fannedOut(viewer: 1) != original.fannedOut(viewer: 2))
    }

    @Test("a packet protected for viewer 1 does not unprotect with viewer 2's keys, and does with viewer 1's")
    func keysIsolateViewers() throws {
        let original = try SRTPKeyingMaterial(base64: Self.key, suite: .aesCM128HMACSHA1_80)
        let sender = try SRTPSession(keyingMaterial: original.fannedOut(viewer: 1), direction: .outbound)
        var packet = [UInt8](repeating: 0, count: 300)
        packet[0] = 0x80
        packet[1] = 96
        packet[3] = 1
        packet[11] = 9
        let length = try packet.withUnsafeMutableBytes { try sender.protectRTP($0, length: 100) }
        var other = packet
        let wrong = try SRTPSession(keyingMaterial: original.fannedOut(viewer: 2), direction: .inbound)
        #expect(throws: SRTPError.self) { try other.withUnsafeMutableBytes { _ = try wrong.unprotectRTP($0, length: length) } }
        let shared = try SRTPSession(keyingMaterial: original, direction: .inbound)
        other = packet
        #expect(throws: SRTPError.self) { try other.withUnsafeMutableBytes { _ = try shared.unprotectRTP($0, length: length) } }
        let right = try SRTPSession(keyingMaterial: original.fannedOut(viewer: 1), direction: .inbound)
        #expect(try packet.withUnsafeMutableBytes { try right.unprotectRTP($0, length: length) } == 100)
    }

    @Test("no m-line, or only disabled ones (port 0): stride 0, viewer 0 is the SDP, any other viewer is refused")
    func nothingToMove() throws {
        for text in ["", "m=video 0 RTP/AVP 96\nm=audio 0 RTP/AVP 97\n"] {
            let sdp = try Self.sdp(text)
            #expect(sdp.fanoutStride == 0)
            #expect(sdp.highestFanoutPort(viewers: 3) == nil)
            #expect(try sdp.fannedOut(viewer: 0) == sdp)
            #expect(throws: SDPFanoutError.noMediaPort) { try sdp.fannedOut(viewer: 1) }
        }
        // A disabled section stays disabled and takes no part in the stride.
        let mixed = try Self.sdp("m=video 5004 RTP/AVP 96\nm=audio 0 RTP/AVP 97\n")
        #expect(mixed.fanoutStride == 2)
        #expect(try mixed.fannedOut(viewer: 5).media.map(\.port) == [5014, 0])
    }

    @Test("ports near 65535: the last viewer that fits is given, the next is refused naming the viewer and its highest port")
    func portLimit() throws {
        let top = try Self.sdp("m=video 65530 RTP/AVP 96\nm=audio 65532 RTP/AVP 97\n")
        #expect(top.fanoutStride == 4)
        #expect(try top.fannedOut(viewer: 0).media.map(\.port) == [65530, 65532])
        #expect(throws: SDPFanoutError.portOutOfRange(viewer: 1, port: 65537)) { try top.fannedOut(viewer: 1) }
        let fits = try Self.sdp("m=video 65528 RTP/AVP 96\nm=audio 65530 RTP/AVP 97\n")
        #expect(try fits.fannedOut(viewer: 1).media.map(\.port) == [65532, 65534])
        #expect(throws: SDPFanoutError.portOutOfRange(viewer: 2, port: 65539)) { try fits.fannedOut(viewer: 2) }
        // The RTCP port of the highest section counts: 65534 + 1 fits, 65535 + 1 does not.
        let last = try Self.sdp("m=video 65535 RTP/AVP 96\n")
        #expect(throws: SDPFanoutError.portOutOfRange(viewer: 1, port: 65538)) { try last.fannedOut(viewer: 1) }
        // Huge viewer numbers are refused, not trapped on.
        #expect(throws: SDPFanoutError.portOutOfRange(viewer: .max, port: .max)) { try fits.fannedOut(viewer: .max) }
        #expect(throws: SDPFanoutError.portOutOfRange(viewer: 1 << 62, port: .max)) { try fits.fannedOut(viewer: 1 << 62) }
        #expect(fits.highestFanoutPort(viewers: .max) == .max)
        #expect(throws: SDPFanoutError.negativeViewer(-1)) { try fits.fannedOut(viewer: -1) }
        #expect(SDPFanoutError.portOutOfRange(viewer: 2, port: 65539).description.contains("viewer 2"))
    }

    @Test("many m-lines: one stride covers them all, and viewers' port blocks never overlap")
    func manySections() throws {
        let text = (0..<20).map { "m=video \(10_000 + 2 * $0) RTP/AVP 96\n" }.joined()
        let sdp = try Self.sdp(text)
        #expect(sdp.fanoutStride == 40)
        let fifth = try sdp.fannedOut(viewer: 5)
        let ports: [UInt16] = (0..<20).map { (section: Int) -> UInt16 in UInt16(10_200 + 2 * section) }
        #expect(fifth.media.map(\.port) == ports)
    }

    @Test("an a=crypto key of the wrong length or an unknown suite is a typed error, not a crash")
    func badCrypto() throws {
        let unknown = try Self.sdp("m=video 5004 RTP/SAVP 96\na=crypto:1 FOO_BAR inline:\(Self.key)\n")
        #expect(throws: SDPFanoutError.unusableCrypto(suite: "FOO_BAR")) { try unknown.fannedOut(viewer: 1) }
        #expect(try unknown.fannedOut(viewer: 0) == unknown)
        // The parser refuses a short key; one built in code reaches fannedOut.
        var short = try Self.sdp("m=video 5004 RTP/SAVP 96\n")
        short.media[0].crypto = [CryptoAttribute(suite: .aesCM128HMACSHA1_80, keys: [.init(keyAndSalt: [1, 2, 3])])]
        #expect(throws: SDPFanoutError.unusableCrypto(suite: "AES_CM_128_HMAC_SHA1_80")) { try short.fannedOut(viewer: 1) }
    }

    @Test("random SDPs (seeded): every viewer either gets ports = port + i × stride, all ≤ 65535 and apart from every other viewer's, or a typed error")
    func randomSDPs() throws {
        var random = SeededRandomNumberGenerator(seed: 30)
        for _ in 0..<300 {
            let count = Int.random(in: 0...6, using: &random)
            var text = ""
            for _ in 0..<count {
                let port = Bool.random(using: &random) ? Int.random(in: 0...65535, using: &random) : Int.random(in: 60_000...65535, using: &random)
                text += "m=video \(port) RTP/AVP 96\n"
                if Int.random(in: 0..<4, using: &random) == 0 { text += "a=ssrc:\(UInt32.random(in: 0...UInt32.max, using: &random)) cname:x\n" }
            }
            let sdp = try Self.sdp(text)
            let stride = sdp.fanoutStride
            var used: [Set<Int>] = []
            for viewer in 0..<8 {
                do {
                    let fanned = try sdp.fannedOut(viewer: viewer)
                    var ports = Set<Int>()
                    for (original, moved) in zip(sdp.media, fanned.media) {
                        if original.port == 0 {
                            #expect(moved.port == 0)
                            continue
                        }
                        #expect(Int(moved.port) == Int(original.port) + viewer * stride)
                        #expect(Int(moved.port) + (viewer == 0 ? 0 : 1) <= 65535)
                        ports.insert(Int(moved.port))
                        ports.insert(Int(moved.port) + 1)
                        #expect(moved.ssrcAttributes.map(\.ssrc) == original.ssrcAttributes.map { $0.ssrc &+ UInt32(viewer) })
                    }
                    for earlier in used { #expect(earlier.isDisjoint(with: ports)) }
                    used.append(ports)
                } catch {
                    #expect(viewer > 0)
                    switch error {
                    case .noMediaPort: #expect(stride == 0)
                    case .portOutOfRange(let refused, let port):
                        #expect(refused == viewer)
                        #expect(port > 65535)
                    default: Issue.record("unexpected \(error)")
                    }
                }
            }
        }
    }
}
