@testable import PlayoutTelemetry
@testable import PlayoutTelemetryBackends
import PlayoutHTTP
import PlayoutTesting
import Testing

@Suite("HTTPRequestHead")
struct HTTPRequestHeadTests {
    @Test("request lines parse", arguments: [
        ("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "GET", "/metrics"),
        ("HEAD /metrics?name[]=x HTTP/1.0\r\n\r\n", "HEAD", "/metrics"),
        ("GET / HTTP/1.1\n\n", "GET", "/"),
    ])
    func valid(text: String, method: String, path: String) {
        #expect(HTTPRequestHead.parse(Array(text.utf8), limit: 8192) == .request(HTTPRequestHead(method: method, path: path)))
    }

    @Test("hostile heads are malformed, incomplete or too large", arguments: [
        ("GET /metrics HTTP/1.1\r\n", HTTPRequestHead.Parsed.incomplete),
        ("", .incomplete),
        ("get /metrics HTTP/1.1\r\n\r\n", .malformed),
        ("GET metrics HTTP/1.1\r\n\r\n", .malformed),
        ("GET /metrics HTTP/2.0\r\n\r\n", .malformed),
        ("GET /a b HTTP/1.1\r\n\r\n", .malformed),
        ("GET  /metrics HTTP/1.1\r\n\r\n", .malformed),
        ("\u{0}\u{1}\r\n\r\n", .malformed),
        ("GET /metrics HTTP/1.1\r\nX: " + String(repeating: "a", count: 9000), .tooLarge),
    ])
    func hostile(text: String, expected: HTTPRequestHead.Parsed) {
        #expect(HTTPRequestHead.parse(Array(text.utf8), limit: 8192) == expected)
    }

    @Test("random bytes never crash and never read past the limit")
    func random() {
        var generator = SeededRandomNumberGenerator(seed: 11)
        for _ in 0..<3000 {
            let bytes = (0..<Int(generator.next() % 300)).map { _ in UInt8(truncatingIfNeeded: generator.next() % 5 == 0 ? 10 : generator.next()) }
            if case .request(let head) = HTTPRequestHead.parse(bytes, limit: 128) {
                #expect(head.method.utf8.count + head.path.utf8.count < 128)
            }
        }
    }
}
