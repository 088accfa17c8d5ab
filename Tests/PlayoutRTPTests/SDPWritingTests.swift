import Foundation
import PlayoutRTP
import Testing

@Suite("SDP writer")
struct SDPWritingTests {
    @Test("parse(serialize(x)) == x for every fixture", arguments: SDPFixture.all)
    func roundTrip(fixture: SDPFixture) throws {
        let sdp = try SessionDescription(parsing: fixture.crlf)
        let text = sdp.serialized()
        #expect(try SessionDescription(parsing: text) == sdp)
        // Writing is stable: the second serialization is the first.
        #expect(try SessionDescription(parsing: text).serialized() == text)
    }

    @Test("CRLF line endings only, and a final CRLF", arguments: SDPFixture.all)
    func lineEndings(fixture: SDPFixture) throws {
        let text = try SessionDescription(parsing: fixture.text).serialized()
        #expect(text.hasSuffix("\r\n"))
        let bytes = Array(text.utf8)
        for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "\n") {
            #expect(index > 0 && bytes[index - 1] == UInt8(ascii: "\r"))
        }
    }

    @Test("ffmpeg's own SDPs come back byte for byte (apart from fmtp spacing)", arguments: [
        SDPFixture.h264AndOpus, .vp8, .pcmu8000, .pcmu44100, .srtpH264, .multicastIPv4, .opusIPv6Multicast,
        .srtpTwoSuites,
    ])
    func ffmpegVerbatim(fixture: SDPFixture) throws {
        let written = try SessionDescription(parsing: fixture.crlf).serialized()
        #expect(written == fixture.crlf.replacingOccurrences(of: "; ", with: ";"))
    }

    @Test("a description built in code writes what ffmpeg reads")
    func builtInCode() {
        let key = Array(UInt8(0)..<30)
        let sdp = SessionDescription(
            sessionName: "Playout",
            connection: ConnectionData(address: "239.1.1.1", ttl: 16),
            media: [
                MediaDescription(
                    kind: .video, port: 5004, payloadTypes: [96],
                    connection: ConnectionData(address: "239.1.1.1", ttl: 16),
                    rtpMaps: [RTPMap(payloadType: 96, encodingName: "H264", clockRate: 90000)],
                    formatParameters: [FormatParameters(payloadType: 96, parsing: "packetization-mode=1")],
                    crypto: [CryptoAttribute(suite: .aesCM128HMACSHA1_80, keys: [.init(keyAndSalt: key)])],
                    frameRate: 30
                ),
                MediaDescription(
                    kind: .audio, port: 5006, payloadTypes: [0],
                    connection: ConnectionData(addressType: .ip6, address: "ff15::1"),
                    rtcpMux: true, direction: .sendonly, packetTime: .milliseconds(20)
                ),
            ]
        )
        #expect(sdp.serialized() == """
            v=0\r
            o=- 0 0 IN IP4 127.0.0.1\r
            s=Playout\r
            c=IN IP4 239.1.1.1/16\r
            t=0 0\r
            m=video 5004 RTP/AVP 96\r
            a=rtpmap:96 H264/90000\r
            a=fmtp:96 packetization-mode=1\r
            a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd\r
            a=framerate:30\r
            m=audio 5006 RTP/AVP 0\r
            c=IN IP6 ff15::1\r
            a=rtcp-mux\r
            a=sendonly\r
            a=ptime:20\r

            """)
    }

    @Test("packet times are written as the shortest decimal of milliseconds", arguments: [
        ("20", "20"), ("2.5", "2.5"), ("0.125", "0.125"), ("020", "20"), ("10.000", "10"), ("0.000001", "0.000001"),
    ])
    func decimals(ptime: String, written: String) throws {
        let sdp = try SessionDescription(parsing: "v=0\nm=audio 1 RTP/AVP 0\na=ptime:\(ptime)\n")
        let text = sdp.serialized()
        #expect(text.contains("a=ptime:\(written)\r\n"))
        #expect(try SessionDescription(parsing: text) == sdp)
    }

    @Test("a session-level direction and extmap, i/u/e/p/r/z/k lines and unknown letters survive the trip")
    func otherLines() throws {
        let text = """
            v=0
            o=- 1 2 IN IP4 10.0.0.1
            s=Session
            z=2882844526 -1h
            i=information
            k=prompt
            t=2873397496 2873404696
            r=7d 1h 0 25h
            u=http://example.com
            a=inactive
            a=extmap:3/sendonly urn:ietf:params:rtp-hdrext:toffset
            y=unknown
            m=audio 1 RTP/AVP 0
            k=clear:secret
            i=audio information
            c=IN IP4 10.0.0.2
            b=CT:100
            a=sendrecv
            """
        let sdp = try SessionDescription(parsing: text)
        #expect(sdp.otherFields.map(\.type) == ["i", "u", "z", "k", "r", "y"])
        #expect(sdp.timing == [SDPTiming(start: 2_873_397_496, stop: 2_873_404_696)])
        #expect(sdp.direction == .inactive)
        #expect(sdp.extensionMaps == [ExtensionMap(id: 3, direction: .sendonly, uri: "urn:ietf:params:rtp-hdrext:toffset")])
        #expect(sdp.media[0].otherFields.map(\.type) == ["i", "k"])
        #expect(sdp.media[0].direction == .sendrecv)
        let written = sdp.serialized()
        #expect(try SessionDescription(parsing: written) == sdp)
        #expect(written.contains("m=audio 1 RTP/AVP 0\r\ni=audio information\r\nc=IN IP4 10.0.0.2\r\nb=CT:100\r\nk=clear:secret\r\n"))
        #expect(written.contains("a=sendrecv\r\n"))
    }
}
