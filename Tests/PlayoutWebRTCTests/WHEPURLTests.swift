import PlayoutWebRTC
import Testing

@Suite("WHEP URLs, Link headers, problem bodies, Retry-After")
struct WHEPURLTests {
    @Test("absolute URLs: scheme, host, default and explicit ports, IPv6, target", arguments: [
        ("http://127.0.0.1:8889/whep/live", WHEPURL.Scheme.http, "127.0.0.1", UInt16(8889), "/whep/live"),
        ("https://example.com/whep", .https, "example.com", 443, "/whep"),
        ("HTTP://Example.com", .http, "Example.com", 80, "/"),
        ("https://[::1]:9443/a?b=c#frag", .https, "::1", 9443, "/a?b=c"),
        ("http://host?x=1", .http, "host", 80, "/?x=1"),
        ("http://h/a/./b/../c", .http, "h", 80, "/a/c"),
    ])
    func parses(text: String, scheme: WHEPURL.Scheme, host: String, port: UInt16, target: String) throws {
        let url = try WHEPURL(text)
        #expect(url.scheme == scheme)
        #expect(url.host == host)
        #expect(url.port == port)
        #expect(url.target == target)
    }

    @Test("hostile or foreign URLs are a clear invalidURL error", arguments: [
        "", "rtsp://example.com/x", "http://", "http://:80/", "http://h:0/", "http://h:65536/", "http://h:8a/",
        "http://user:pw@h/", "http://[::1/", "http://[zz]/", "http://h /x", "http://h/\u{7F}", "whep", "http://h/é",
        "http://" + String(repeating: "a", count: 9000),
    ])
    func refuses(text: String) {
        #expect { try WHEPURL(text) } throws: { ($0 as? WHEPError)?.code == .invalidURL }
    }

    @Test("Location references resolve against the request URL (RFC 3986 §5.2)", arguments: [
        ("/whep/session/1", "https://example.com:8443/whep/session/1"),
        ("session/1", "https://example.com:8443/whep/session/1"),
        ("../resource/abc", "https://example.com:8443/resource/abc"),
        ("./x?y=1", "https://example.com:8443/whep/x?y=1"),
        ("?id=4", "https://example.com:8443/whep/stream?id=4"),
        ("//other.example:9000/s", "https://other.example:9000/s"),
        ("http://plain.example/s", "http://plain.example/s"),
        ("https://example.com:8443/whep/s#f", "https://example.com:8443/whep/s"),
    ])
    func resolves(reference: String, expected: String) throws {
        let base = try WHEPURL("https://example.com:8443/whep/stream?token=x")
        #expect(try base.resolving(reference).description == expected)
    }

    @Test("unusable Locations are errors, not crashes", arguments: ["", "   ", "ftp://x/y", "a b", "http://[::1"])
    func unusableLocation(reference: String) throws {
        let base = try WHEPURL("http://h/whep")
        #expect(throws: WHEPError.self) { try base.resolving(reference) }
    }

    @Test("Link ice-server: STUN kept with its port, TURN with credentials flagged unsupported, other rels ignored")
    func linkHeaders() {
        let value = #"<stun:stun.example.net>; rel="ice-server", <turn:turn.example.net:3479?transport=udp>; rel="ice-server"; username="user"; credential="my;pass, word"; credential-type="password", <https://example.net/x>; rel="alternate", <stuns:[2001:db8::1]:5350>; rel="ice-server""#
        let servers = WHEPICEServer.parse(linkHeader: value)
        #expect(servers.count == 3)
        #expect(servers[0].kind == .stun && servers[0].host == "stun.example.net" && servers[0].port == 3478 && servers[0].isSupported)
        #expect(servers[1].kind == .turn && servers[1].port == 3479 && servers[1].transport == "udp")
        #expect(servers[1].username == "user" && servers[1].credential == "my;pass, word" && !servers[1].isSupported)
        #expect(servers[2].kind == .stuns && servers[2].host == "2001:db8::1" && servers[2].port == 5350 && !servers[2].isSupported)
    }

    @Test("hostile Link values give no server and no crash", arguments: [
        "", "<", ">;rel=ice-server", "<stun:>; rel=\"ice-server\"", "<stun:h:99999>; rel=\"ice-server\"", "<mailto:x>; rel=\"ice-server\"",
        "<stun:h>; rel=\"ice-serverx\"", "<stun:h>; rel=\"ice-server", String(repeating: "<stun:h>; rel=\"ice-server\",", count: 5000),
    ])
    func hostileLinks(value: String) {
        let servers = WHEPICEServer.parse(linkHeader: value)
        #expect(servers.count <= WHEPICEServer.maximumCount)
        #expect(servers.allSatisfy { $0.host == "h" })
    }

    @Test("problem+json: title and detail read, escapes decoded, nesting skipped, garbage is nil")
    func problems() {
        let body = #"{"type":"https://x/e","status":404,"extra":{"a":[1,2,{"b":null}],"t":true},"title":"Stream \"live\" not found","detail":"caf\u00e9 \ud83d\ude00"}"#
        let problem = WHEPResponseFields.problem(Array(body.utf8))
        #expect(problem?.title == #"Stream "live" not found"#)
        #expect(problem?.detail == "café 😀")
        for garbage in ["", "[]", "{", "{\"title\":}", "{\"title\":\"x\"", "null", "{\"a\":" + String(repeating: "[", count: 100) + "]}", "\u{FF}"] {
            #expect(WHEPResponseFields.problem(Array(garbage.utf8)) == nil, "\(garbage.prefix(20))")
        }
        #expect(WHEPResponseFields.problem(Array(#"{"title":"only"}"#.utf8))?.detail == nil)
    }

    @Test("Retry-After: seconds, an HTTP date against Date or the wall clock, garbage")
    func retryAfter() {
        #expect(WHEPResponseFields.retryAfter("2", date: nil, wallClockNow: nil) == .seconds(2))
        #expect(WHEPResponseFields.retryAfter(" 120 ", date: nil, wallClockNow: nil) == .seconds(120))
        #expect(WHEPResponseFields.retryAfter("Sun, 06 Nov 1994 08:49:37 GMT", date: "Sun, 06 Nov 1994 08:49:30 GMT", wallClockNow: nil) == .seconds(7))
        // 784111777 is 1994-11-06T08:49:37Z.
        #expect(WHEPResponseFields.retryAfter("Sun, 06 Nov 1994 08:49:37 GMT", date: nil, wallClockNow: 784_111_770 * 1_000_000_000) == .seconds(7))
        #expect(WHEPResponseFields.retryAfter("Sun, 06 Nov 1994 08:49:37 GMT", date: nil, wallClockNow: 784_111_800 * 1_000_000_000) == .zero)
        #expect(WHEPResponseFields.retryAfter("Sun, 06 Nov 1994 08:49:37 GMT", date: nil, wallClockNow: nil) == nil)
        for garbage in ["", "-1", "1.5", "soon", "99999999999", "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT"] {
            #expect(WHEPResponseFields.retryAfter(garbage, date: nil, wallClockNow: 0) == nil, "\(garbage)")
        }
    }
}
