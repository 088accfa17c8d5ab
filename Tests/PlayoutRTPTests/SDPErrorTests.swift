import PlayoutRTP
import Testing

@Suite("SDP parse errors name the line")
struct SDPErrorTests {
    /// A few valid session lines, so that the bad line is line 7 when appended.
    private static let head = "v=0\no=- 0 0 IN IP4 127.0.0.1\ns=No Name\nc=IN IP4 127.0.0.1\nt=0 0\na=tool:test\n"
    private static let mPort = "a port number 0…65535 in m=<media> <port> <proto> <fmt> …"
    private static let cLine = "c=IN IP4|IP6 <address>[/<ttl>][/<count>]"
    private static let rtpmap = "a=rtpmap:<payload type> <encoding>/<clock rate>[/<channels>]"
    private static let crypto = "a=crypto:<tag> <suite> inline:<base64 key||salt>[|<lifetime>][|<MKI>:<length>]"
    private static let extmap = "a=extmap:<id 1…255>[/<direction>] <uri> [<attributes>]"

    /// (line 7 and what follows, the expected error's `expected`, the line it names).
    static let badLines: [(String, String, Int)] = [
        ("m=video", "m=<media> <port> <proto> <fmt> …", 7),
        ("m=video 5004 RTP/AVP", "m=<media> <port> <proto> <fmt> …", 7),
        ("m=video port RTP/AVP 96", mPort, 7),
        ("m=video 65536 RTP/AVP 96", mPort, 7),
        ("m=video -1 RTP/AVP 96", mPort, 7),
        ("m=video 5004/2/3 RTP/AVP 96", mPort, 7),
        ("m=video 5004/0 RTP/AVP 96", "<port>/<count> with a count of 1 or more in m=<media> <port> <proto> <fmt> …", 7),
        ("m=video 5004 RTP/AVP 128", "RTP payload types 0…127 in m=<media> <port> <proto> <fmt> …", 7),
        ("m=video 5004 RTP/SAVPF 96 dynamic", "RTP payload types 0…127 in m=<media> <port> <proto> <fmt> …", 7),
        ("m=audio 5004 RTP/AVP 0\nc=IN IP4", cLine, 8),
        ("m=audio 5004 RTP/AVP 0\nc=IN IPX 10.0.0.1", cLine, 8),
        ("m=audio 5004 RTP/AVP 0\nc=IN IP4 /127", cLine, 8),
        ("m=audio 5004 RTP/AVP 0\nc=IN IP4 239.1.1.1/256", "a multicast TTL 0…255 in \(cLine)", 8),
        ("m=audio 5004 RTP/AVP 0\nc=IN IP4 239.1.1.1/1/0", "an address count of 1 or more in \(cLine)", 8),
        ("m=audio 5004 RTP/AVP 0\nc=IN IP6 ff02::1/x", "an address count of 1 or more in c=IN IP6 <address>[/<count>]", 8),
        ("m=audio 5004 RTP/AVP 0\nc=IN IP6 ff02::1/1/2", cLine, 8),
        ("b=AS", "b=<type>:<bandwidth>, e.g. b=AS:64", 7),
        ("b=AS:lots", "b=<type>:<bandwidth>, e.g. b=AS:64", 7),
        ("t=0", "t=<start> <stop>, e.g. t=0 0", 7),
        ("a=extmap:0 urn:x", extmap, 7),
        ("a=extmap:1/sideways urn:x", extmap, 7),
        ("a=extmap:1", extmap, 7),
        ("m=video 5004 RTP/AVP 96\na=rtpmap:96 H264", rtpmap, 8),
        ("m=video 5004 RTP/AVP 96\na=rtpmap:96 H264/90000 extra", rtpmap, 8),
        ("m=video 5004 RTP/AVP 96\na=rtpmap:128 H264/90000", "a payload type 0…127 in \(rtpmap)", 8),
        ("m=video 5004 RTP/AVP 96\na=rtpmap:96 H264/0", rtpmap, 8),
        ("m=video 5004 RTP/AVP 96\na=rtpmap:96 /90000", rtpmap, 8),
        ("m=audio 5004 RTP/AVP 96\na=rtpmap:96 opus/48000/0", "a channel count of 1 or more in \(rtpmap)", 8),
        ("m=video 5004 RTP/AVP 96\na=fmtp:h264 packetization-mode=1", "a=fmtp:<payload type 0…127> <parameters>", 8),
        (
            "m=video 5004 RTP/AVP 96\na=rtpmap:96 H264/90000\na=fmtp:96 sprop-parameter-sets=Z0L!,aM==",
            "sprop-parameter-sets as comma-separated base64 NAL units in a=fmtp:96", 9
        ),
        (
            "m=video 5004 RTP/AVP 96\na=fmtp:96 sprop-vps=QAE;sprop-sps=@@@@\na=rtpmap:96 H265/90000",
            "sprop-sps as comma-separated base64 NAL units in a=fmtp:96", 8
        ),
        (
            "m=video 5004 RTP/AVP 96\na=rtpmap:96 H264/90000\na=fmtp:96 packetization-mode=single",
            "packetization-mode as 0, 1 or 2 in a=fmtp:96", 9
        ),
        (
            "m=video 5004 RTP/AVP 96\na=rtpmap:96 H264/90000\na=fmtp:96 profile-level-id=42e0",
            "profile-level-id as 6 hex digits in a=fmtp:96", 9
        ),
        (
            "m=audio 5004 RTP/AVP 97\na=rtpmap:97 opus/48000/2\na=fmtp:97 stereo=yes",
            "stereo as 0 or 1 in a=fmtp:97", 9
        ),
        (
            "m=audio 5004 RTP/AVP 97\na=rtpmap:97 MPEG4-GENERIC/44100/2\na=fmtp:97 mode=AAC-hbr;config=12G0",
            "config as hex digits in a=fmtp:97", 9
        ),
        (
            "m=audio 5004 RTP/AVP 97\na=rtpmap:97 MPEG4-GENERIC/44100/2\na=fmtp:97 sizelength=thirteen",
            "sizelength as a number of bits in a=fmtp:97", 9
        ),
        ("m=video 5004 RTP/AVP 96\na=crypto:1 AES_CM_128_HMAC_SHA1_80", crypto, 8),
        ("m=video 5004 RTP/AVP 96\na=crypto:x AES_CM_128_HMAC_SHA1_80 inline:AAAA", crypto, 8),
        ("m=video 5004 RTP/AVP 96\na=crypto:1 AES_CM_128_HMAC_SHA1_80 key:AAAA", crypto, 8),
        (
            "m=video 5004 RTP/AVP 96\na=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:cEVI!yFLCNiZuaQIDYdABVqrMmueJrlP90HR2ak0",
            "a base64 key after inline: (invalid base64: '!' at offset 4 is not in the base64 alphabet)", 8
        ),
        (
            "m=video 5004 RTP/AVP 96\na=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:AAECAwQF",
            "a 30-byte key and salt for AES_CM_128_HMAC_SHA1_80, not 6 bytes", 8
        ),
        (
            "m=video 5004 RTP/AVP 96\na=crypto:1 AEAD_AES_256_GCM inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd",
            "a 44-byte key and salt for AEAD_AES_256_GCM, not 30 bytes", 8
        ),
        (
            "m=video 5004 RTP/AVP 96\na=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd|1:0",
            "|<MKI>:<length 1…128> after the key", 8
        ),
        (
            "m=video 5004 RTP/AVP 96\na=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd|2^64",
            "|<lifetime> (2^n or a number of packets) after the key", 8
        ),
        ("m=video 5004 RTP/AVP 96\na=rtcp:port", "a=rtcp:<port> [IN IP4|IP6 <address>]", 8),
        ("m=video 5004 RTP/AVP 96\na=rtcp:5005 IN IP4", "a=rtcp:<port> [IN IP4|IP6 <address>]", 8),
        ("m=video 5004 RTP/AVP 96\na=rtcp:5005 IN IP9 1.2.3.4", cLine, 8),
        ("m=video 5004 RTP/AVP 96\na=ssrc:-1 cname:x", "a=ssrc:<ssrc 0…4294967295> <attribute>[:<value>]", 8),
        ("m=video 5004 RTP/AVP 96\na=ssrc:4294967296 cname:x", "a=ssrc:<ssrc 0…4294967295> <attribute>[:<value>]", 8),
        ("m=video 5004 RTP/AVP 96\na=ssrc:1", "a=ssrc:<ssrc 0…4294967295> <attribute>[:<value>]", 8),
        ("m=video 5004 RTP/AVP 96\na=framerate:fast", "a=framerate:<frames per second>, e.g. 30 or 29.97", 8),
        ("m=video 5004 RTP/AVP 96\na=framerate:nan", "a=framerate:<frames per second>, e.g. 30 or 29.97", 8),
        ("m=video 5004 RTP/AVP 96\na=framerate:1e9", "a=framerate:<frames per second>, e.g. 30 or 29.97", 8),
        ("m=audio 5004 RTP/AVP 0\na=ptime:-20", "a=ptime:<milliseconds>, e.g. 20", 8),
        ("m=audio 5004 RTP/AVP 0\na=ptime:20ms", "a=ptime:<milliseconds>, e.g. 20", 8),
        ("m=audio 5004 RTP/AVP 0\nhello", "<type>=<value>, e.g. a=rtpmap:96 H264/90000", 8),
        ("m=audio 5004 RTP/AVP 0\nA=rtpmap:0 PCMU/8000", "<type>=<value>, e.g. a=rtpmap:96 H264/90000", 8),
    ]

    @Test("a bad line gives invalidLine with its number, what was expected and the line", arguments: badLines)
    func badLine(tail: String, expected: String, line: Int) {
        let text = Self.head + tail + "\n"
        let found = String(text.split(separator: "\n", omittingEmptySubsequences: false)[line - 1])
        #expect(throws: SDPParseError.invalidLine(line: line, expected: expected, found: found)) {
            try SessionDescription(parsing: text)
        }
        // The same with CRLF line endings: same error, no "\r" in what was found.
        let crlf = text.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\r\n")
        #expect(throws: SDPParseError.invalidLine(line: line, expected: expected, found: found)) {
            try SessionDescription(parsing: crlf)
        }
    }

    @Test("the description reads 'SDP line N: expected …, found '…''")
    func description() {
        let error = SDPParseError.invalidLine(line: 7, expected: "m=<media> <port> <proto> <fmt> …", found: "m=video")
        #expect(error.description == "SDP line 7: expected m=<media> <port> <proto> <fmt> …, found 'm=video'")
        #expect(throws: error) { try SessionDescription(parsing: Self.head + "m=video") }
        let long = SDPParseError.invalidLine(line: 2, expected: "x", found: String(repeating: "a", count: 150) + "\u{1}")
        #expect(long.description == "SDP line 2: expected x, found '\(String(repeating: "a", count: 100))…'")
        #expect(SDPParseError.invalidLine(line: 1, expected: "v=0", found: "a\u{7}b").description
            == "SDP line 1: expected v=0, found 'a?b'")
        #expect(SDPParseError.empty.description == "SDP is empty: expected a session description starting with v=0")
        #expect(SDPParseError.tooLarge(bytes: 70000, limit: 65536).description
            == "SDP is 70000 bytes: at most 65536 bytes are accepted")
        #expect(SDPParseError.lineTooLong(line: 3, length: 5000, limit: 4096).description
            == "SDP line 3 is 5000 bytes long: at most 4096 bytes are accepted")
        #expect(SDPParseError.tooManyMediaSections(line: 40, limit: 32).description
            == "SDP line 40: more than 32 media sections (m= lines) are not accepted")
        #expect(SDPParseError.missingLine(expected: "v=0").description == "SDP has no v=0 line")
    }

    @Test("the first line must be v=0", arguments: [
        ("x=0", "x=0"), ("v=1", "v=1"), ("hello", "hello"), ("o=- 0 0 IN IP4 1.2.3.4", "o=- 0 0 IN IP4 1.2.3.4"),
        (" v=0", " v=0"), ("V=0", "V=0"),
    ])
    func firstLine(text: String, found: String) {
        #expect(throws: SDPParseError.invalidLine(line: 1, expected: "v=0", found: found)) {
            try SessionDescription(parsing: text + "\nm=audio 1 RTP/AVP 0\n")
        }
    }

    @Test("a malformed o= line is an error; a UTF-8 byte order mark is skipped")
    func originAndBOM() throws {
        #expect(throws: SDPParseError.invalidLine(
            line: 2, expected: "o=<username> <sess-id> <sess-version> IN IP4|IP6 <address>", found: "o=- 0 0 IN IP4"
        )) {
            try SessionDescription(parsing: "v=0\no=- 0 0 IN IP4\n")
        }
        #expect(try SessionDescription(parsing: "\u{FEFF}v=0\ns=bom\n").sessionName == "bom")
    }

    @Test("blank lines before v=0 count in the line number")
    func blankLinesCount() {
        #expect(throws: SDPParseError.invalidLine(line: 3, expected: "v=0", found: "s=x")) {
            try SessionDescription(parsing: "\r\n  \r\ns=x\r\n")
        }
    }

    @Test("empty and blank inputs are .empty", arguments: ["", "\n", "\r\n\r\n", "   \n\t\n"])
    func empty(text: String) {
        #expect(throws: SDPParseError.empty) { try SessionDescription(parsing: text) }
    }

    @Test("a session without media parses; no m= line is not an error")
    func noMedia() throws {
        let sdp = try SessionDescription(parsing: "v=0\r\n")
        #expect(sdp.media.isEmpty)
    }
}
