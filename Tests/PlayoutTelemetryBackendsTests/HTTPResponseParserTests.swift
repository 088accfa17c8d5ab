@testable import PlayoutTelemetry
@testable import PlayoutTelemetryBackends
import PlayoutTesting
import PlayoutHTTP
import Testing

/// Feeds `text` to a fresh parser in pieces of `step` bytes, then ends the stream.
private func parse(_ bytes: [UInt8], step: Int = .max, limits: HTTPResponseParser.Limits = .init(), endStream: Bool = true) throws(HTTPResponseParser.ParseError) -> HTTPResponse? {
    var parser = HTTPResponseParser(limits: limits)
    var offset = 0
    while offset < bytes.count {
        let end = min(bytes.count, offset &+ step)
        let progress = try parser.consume(bytes[offset..<end])
        if case .complete(let response) = progress { return response }
        offset = end
    }
    return endStream ? try parser.endOfStream() : nil
}

private func parse(_ text: String, step: Int = .max, limits: HTTPResponseParser.Limits = .init()) throws(HTTPResponseParser.ParseError) -> HTTPResponse? {
    try parse(Array(text.utf8), step: step, limits: limits)
}

@Suite("HTTPResponseParser")
struct HTTPResponseParserTests {
    static let valid: [(String, Int, String, Bool)] = [
        ("HTTP/1.1 204 No Content\r\nX-Influxdb-Version: 1.6.7\r\n\r\n", 204, "", true),
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 200, "hello", true),
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello", 200, "hello", false),
        ("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi", 200, "hi", false),
        ("HTTP/1.0 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nhi", 200, "hi", true),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\n", 200, "hello world", true),
        ("HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n", 400, "0123456789", true),
        ("HTTP/1.1 500 Internal Server Error\r\n\r\nuntil close", 500, "until close", false),
        ("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n", 201, "", true),
        ("HTTP/1.1 200 OK\nContent-Length: 3\n\nabc", 200, "abc", true),
        ("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", 200, "", true),
        ("HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", 304, "", true),
    ]

    @Test("valid responses parse the same whole or byte by byte", arguments: valid)
    func validResponses(text: String, status: Int, body: String, keepAlive: Bool) throws {
        for step in [Int.max, 1, 3, 7] {
            let response = try #require(try parse(text, step: step))
            #expect(response.status == status)
            #expect(String(decoding: response.body, as: UTF8.self) == body)
            #expect(response.keepAlive == keepAlive)
        }
    }

    @Test("headers are kept in order with their values trimmed")
    func headers() throws {
        let response = try #require(try parse("HTTP/1.1 400 Bad Request\r\nX-Influxdb-Error:  unable to parse  \r\nContent-Length: 0\r\n\r\n"))
        #expect(response.reason == "Bad Request")
        #expect(response.header("x-influxdb-error") == "unable to parse")
        #expect(response.headers.map(\.name) == ["X-Influxdb-Error", "Content-Length"])
    }

    @Test("every strict prefix of a response is truncated, never a response", arguments: valid.map(\.0).filter { !$0.contains("until close") })
    func truncated(text: String) {
        let bytes = Array(text.utf8)
        for length in 0..<bytes.count {
            #expect(throws: HTTPResponseParser.ParseError.truncated) { try parse(Array(bytes[..<length])) }
        }
    }

    static let hostile: [(String, HTTPResponseParser.ParseError)] = [
        ("HTTP/2 200 OK\r\n\r\n", .malformedStatusLine),
        ("SSH-2.0-OpenSSH_9.2p1\r\n", .malformedStatusLine),
        ("HTTP/1.1 20 OK\r\n\r\n", .malformedStatusLine),
        ("HTTP/1.1 999 What\r\n\r\n", .malformedStatusLine),
        ("HTTP/1.1 200OK\r\n\r\n", .malformedStatusLine),
        ("HTTP/1.1 200 O\u{1}K\r\n\r\n", .malformedStatusLine),
        ("HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n", .malformedHeader),
        ("HTTP/1.1 200 OK\r\n: empty name\r\n\r\n", .malformedHeader),
        ("HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", .malformedHeader),
        ("HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n", .malformedHeader),
        ("HTTP/1.1 200 OK\r\nA: b\u{0}c\r\n\r\n", .malformedHeader),
        ("HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\n", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n", .invalidContentLength),
        ("HTTP/1.1 200 OK\r\nContent-Length: 2000000\r\n\r\n", .bodyTooLarge(limit: HTTPResponseParser.Limits.defaultBodyBytes)),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", .unsupportedTransferEncoding("gzip")),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", .invalidChunkSize),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", .invalidChunkSize),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", .invalidChunkSize),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n", .invalidChunkSize),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5 x\r\n", .invalidChunkSize),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcdef\r\n", .invalidChunkSize),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffff\r\n", .bodyTooLarge(limit: HTTPResponseParser.Limits.defaultBodyBytes)),
    ]

    @Test("hostile responses get a clear error, whole or byte by byte", arguments: hostile)
    func hostileResponses(text: String, error: HTTPResponseParser.ParseError) {
        for step in [Int.max, 1] {
            #expect(throws: error) { try parse(text, step: step) }
        }
    }

    @Test("headers over the limit are refused before the end of the head arrives")
    func oversizedHeaders() {
        let limits = HTTPResponseParser.Limits(headerBytes: 1024, headerCount: 10, bodyBytes: 1024)
        let long = "HTTP/1.1 200 OK\r\nX-Long: " + String(repeating: "a", count: 5000)
        #expect(throws: HTTPResponseParser.ParseError.headersTooLarge(limit: 1024)) { try parse(Array(long.utf8), limits: limits, endStream: false) }
        let many = "HTTP/1.1 200 OK\r\n" + String(repeating: "A: b\r\n", count: 11) + "\r\n"
        #expect(throws: HTTPResponseParser.ParseError.headersTooLarge(limit: 10)) { try parse(many, limits: limits) }
        let endless = "HTTP/1.1 200 OK\r\n" + String(repeating: "A: b\r\n", count: 300)
        #expect(throws: HTTPResponseParser.ParseError.headersTooLarge(limit: 1024)) {
            try parse(Array(endless.utf8), limits: HTTPResponseParser.Limits(headerBytes: 1024, headerCount: 1000, bodyBytes: 1024), endStream: false)
        }
    }

    @Test("a body delimited by the close is bounded too")
    func oversizedUntilClose() {
        let limits = HTTPResponseParser.Limits(headerBytes: 1024, headerCount: 10, bodyBytes: 100)
        let text = "HTTP/1.1 200 OK\r\n\r\n" + String(repeating: "x", count: 101)
        #expect(throws: HTTPResponseParser.ParseError.bodyTooLarge(limit: 100)) { try parse(Array(text.utf8), step: 10, limits: limits) }
    }

    @Test("random bytes never crash, never complete past the limits, and end in an error or needMore")
    func randomBytes() {
        var generator = SeededRandomNumberGenerator(seed: 15)
        let limits = HTTPResponseParser.Limits(headerBytes: 512, headerCount: 8, bodyBytes: 256)
        let alphabet = Array("HTTP/1.1 200 OK\r\n:;0123456789abcdefContent-Length: Transfer-Encoding: chunked\r\n\r\n".utf8)
        var completed = 0
        for round in 0..<3000 {
            let length = Int(generator.next() % 600)
            let bytes: [UInt8] = (0..<length).map { _ in
                let value = generator.next()
                return round.isMultiple(of: 2) ? UInt8(truncatingIfNeeded: value) : alphabet[Int(value % UInt64(alphabet.count))]
            }
            let prefix = round.isMultiple(of: 3) ? Array("HTTP/1.1 200 OK\r\n".utf8) : []
            do {
                if let response = try parse(prefix + bytes, step: Int(generator.next() % 64) + 1, limits: limits) {
                    completed += 1
                    #expect(response.body.count <= 256)
                    #expect(response.headers.count <= 8)
                }
            } catch {
                // Any ParseError is the expected outcome for garbage.
            }
        }
        #expect(completed < 3000)
    }
}

