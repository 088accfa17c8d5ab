import PlayoutCore
import PlayoutHTTP
import PlayoutRTP
import PlayoutSender
import PlayoutWebRTC
import RealTimeTesting
import Testing

/// The request reader the WHEP endpoint reads each connection with, fed hostile input.
@Suite("WHEP endpoint: HTTP request reader")
struct WHEPHTTPRequestReaderTests {
    static let post = Array("POST /whep HTTP/1.1\r\nHost: x\r\nContent-Type: application/sdp\r\nContent-Length: 11\r\n\r\nv=0\r\ns=-\r\n!".utf8)

    @Test("a request arriving byte by byte is whole only at its last body byte; bytes after it are ignored")
    func bytewise() throws {
        var reader = HTTPRequestReader()
        for byte in Self.post.dropLast(2) { #expect(try reader.consume([byte]) == .needMore) }
        guard case .complete(let request) = try reader.consume(Self.post.suffix(2) + Array("GARBAGE".utf8)) else {
            Issue.record("not complete")
            return
        }
        #expect(request.method == "POST")
        #expect(request.path == "/whep")
        #expect(request.header("content-type") == "application/sdp")
        #expect(request.body == Array("v=0\r\ns=-\r\n!".utf8))
    }

    @Test("DELETE without a body; the query is not part of the path")
    func delete() throws {
        var reader = HTTPRequestReader()
        #expect(try reader.consume(Array("DELETE /whep/session/ab?x=1 HTTP/1.1\r\n\r\n".utf8)) == .complete(HTTPRequest(method: "DELETE", path: "/whep/session/ab")))
    }

    @Test("refusals carry their status", arguments: [
        ("POST / HTTP/1.1\r\nContent-Length: 70000\r\n\r\n", 413),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411),
        ("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nContent-Length: -5\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\n no-name\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\n: empty\r\n\r\n", 400),
        ("post / HTTP/1.1\r\n\r\n", 400),
        ("POST /whep SPDY/3\r\n\r\n", 400),
        ("\u{16}\u{03}\u{01}\u{02}\u{00}\u{01}\r\n\r\n", 400),
    ])
    func refused(text: String, status: Int) {
        var reader = HTTPRequestReader()
        #expect(throws: HTTPRequestReader.RequestError.self) { try reader.consume(Array(text.utf8)) }
        var again = HTTPRequestReader()
        do {
            _ = try again.consume(Array(text.utf8))
        } catch {
            #expect(error.status == status)
        }
    }

    @Test("a head over 8 KiB, or with more than 64 fields, is 431 without waiting for its end")
    func largeHead() {
        var reader = HTTPRequestReader()
        let long = Array("GET / HTTP/1.1\r\nX: ".utf8) + [UInt8](repeating: 0x61, count: 9_000)
        #expect(throws: HTTPRequestReader.RequestError.headTooLarge(limit: 8 * 1024)) { try reader.consume(long) }
        var many = HTTPRequestReader()
        let fields = (0..<70).map { "X\($0): y\r\n" }.joined()
        #expect(throws: HTTPRequestReader.RequestError.headTooLarge(limit: 64)) { try many.consume(Array("GET / HTTP/1.1\r\n\(fields)\r\n".utf8)) }
    }

    @Test("random bytes never crash, and whatever is accepted is within the limits", arguments: [UInt64(21), 22, 23])
    func random(seed: UInt64) {
        var random = SeededRandomNumberGenerator(seed: seed)
        let limits = HTTPRequestReader.Limits(headBytes: 512, headerCount: 8, bodyBytes: 256)
        for round in 0..<500 {
            var reader = HTTPRequestReader(limits: limits)
            var bytes = round.isMultiple(of: 2) ? Self.post : []
            for _ in 0..<Int(random.next() % 64) {
                if bytes.isEmpty || random.next() % 3 == 0 {
                    bytes.append(UInt8(truncatingIfNeeded: random.next()))
                } else {
                    bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next())
                }
            }
            if case .complete(let request)? = try? reader.consume(bytes) {
                #expect(request.body.count <= limits.bodyBytes)
                #expect(request.headers.count <= limits.headerCount)
            }
        }
    }
}

/// The endpoint over real TCP on loopback: statuses, bounds, slow clients.
@Suite("WHEP endpoint: HTTP", .realTime)
struct WHEPEndpointHTTPTests {
    static let tracks = [
        WHEPLiteTrack(codec: .h264, clockRate: 90_000, feedback: [.nack(nil), .pictureLoss(nil)], retransmission: true, ssrc: 1),
        WHEPLiteTrack(codec: .opus, clockRate: 48_000, channels: 2, ssrc: 2),
    ]

    static func endpoint(_ configure: (inout WHEPEndpoint.Configuration) -> Void = { _ in }) throws -> WHEPEndpoint {
        var configuration = WHEPEndpoint.Configuration(listen: try SocketAddress(host: "127.0.0.1", port: 0))
        configure(&configuration)
        return try WHEPEndpoint(configuration: configuration, tracks: tracks)
    }

    static var offer: String {
        WHEPOffer(
            iceUsernameFragment: "abcd", icePassword: "abcdefghijklmnopqrstuvwx", candidates: ["1 1 udp 2130706431 127.0.0.1 5000 typ host"],
            fingerprint: try! DTLSCertificate().fingerprint
        ).serialized()
    }

    /// One request on a fresh connection; the whole response.
    static func request(_ endpoint: WHEPEndpoint, _ method: String, _ path: String, contentType: String? = "application/sdp", body: [UInt8] = []) throws -> HTTPResponse {
        let deadline = MonotonicClock().now.advanced(by: .seconds(5))
        let connection = try TCPConnection.connect(host: "127.0.0.1", port: endpoint.port, deadline: deadline)
        defer { connection.close() }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        try connection.send(Array((head + "\r\n").utf8) + body, deadline: deadline)
        var parser = HTTPResponseParser()
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = try buffer.withUnsafeMutableBytes { try connection.receive(into: $0, deadline: deadline) }
            if count == 0 { return try parser.endOfStream() }
            if case .complete(let response) = try parser.consume(buffer[..<count]) { return response }
        }
    }

    @Test("POST an offer: 201, Location, an application/sdp answer that reads back; DELETE: 200, then 404")
    func postAndDelete() throws {
        let endpoint = try Self.endpoint()
        defer { endpoint.stop() }
        let created = try Self.request(endpoint, "POST", "/whep", body: Array(Self.offer.utf8))
        #expect(created.status == 201)
        #expect(created.header("Content-Type") == "application/sdp")
        let location = try #require(created.header("Location"))
        #expect(location.hasPrefix(WHEPEndpoint.sessionPathPrefix))
        let answer = try WHEPAnswer(parsing: String(decoding: created.body, as: UTF8.self))
        #expect(answer.iceLite)
        #expect(answer.setup == .passive)
        #expect(answer.candidates.contains { $0.contains("127.0.0.1 \(endpoint.mediaAddress.port) typ host") })
        #expect(try Self.request(endpoint, "DELETE", location, contentType: nil).status == 200)
        #expect(try Self.request(endpoint, "DELETE", location, contentType: nil).status == 404)
        #expect(try Self.request(endpoint, "DELETE", "/elsewhere", contentType: nil).status == 404)
        let statistics = endpoint.statistics
        #expect(statistics.sessionsOpened == 1)
        #expect(statistics.rejected == [404: 2])
    }

    @Test("bad offers, wrong types, large bodies and other methods are refused, each counted by status")
    func refusals() throws {
        let endpoint = try Self.endpoint()
        defer { endpoint.stop() }
        let bad = try Self.request(endpoint, "POST", "/whep", body: Array("v=0\r\nthis is not sdp\r\n".utf8))
        #expect(bad.status == 400)
        #expect(bad.bodyText().contains("offer"))
        #expect(try Self.request(endpoint, "POST", "/whep", contentType: "text/plain", body: Array(Self.offer.utf8)).status == 415)
        #expect(try Self.request(endpoint, "POST", "/whep", body: [UInt8](repeating: 0x61, count: 70_000)).status == 413)
        #expect(try Self.request(endpoint, "GET", "/whep", contentType: nil).status == 405)
        #expect(try Self.request(endpoint, "PUT", "/whep", body: [1]).status == 405)
        #expect(try Self.request(endpoint, "OPTIONS", "/whep", contentType: nil).status == 204)
        let passive = Self.offer.replacing("a=setup:actpass", with: "a=setup:passive")
        let refused = try Self.request(endpoint, "POST", "/whep", body: Array(passive.utf8))
        #expect(refused.status == 400)
        #expect(refused.bodyText().contains("DTLS server"))
        #expect(endpoint.statistics.rejected == [400: 2, 405: 2, 413: 1, 415: 1])
        #expect(endpoint.statistics.sessionsOpened == 0)
    }

    @Test("past maximumSessions: 503 with Retry-After; a DELETE makes room")
    func capacity() throws {
        let endpoint = try Self.endpoint { $0.maximumSessions = 1 }
        defer { endpoint.stop() }
        let first = try Self.request(endpoint, "POST", "/whep", body: Array(Self.offer.utf8))
        #expect(first.status == 201)
        let second = try Self.request(endpoint, "POST", "/whep", body: Array(Self.offer.utf8))
        #expect(second.status == 503)
        #expect(second.header("Retry-After") != nil)
        #expect(try Self.request(endpoint, "DELETE", try #require(first.header("Location")), contentType: nil).status == 200)
        #expect(try Self.request(endpoint, "POST", "/whep", body: Array(Self.offer.utf8)).status == 201)
    }

    @Test("slow clients do not block others: a POST is answered while idle connections hold the rest; they time out, counted")
    func slowClients() throws {
        let endpoint = try Self.endpoint {
            $0.maximumConnections = 4
            $0.requestTimeout = .milliseconds(800)
        }
        defer { endpoint.stop() }
        let deadline = MonotonicClock().now.advanced(by: .seconds(5))
        var idle: [TCPConnection] = []
        for _ in 0..<6 {
            let connection = try TCPConnection.connect(host: "127.0.0.1", port: endpoint.port, deadline: deadline)
            try connection.send(Array("POST /whep HTTP/1.1\r\nContent-Le".utf8), deadline: deadline)
            idle.append(connection)
        }
        defer { for connection in idle { connection.close() } }
        let started = MonotonicClock().now
        #expect(try Self.request(endpoint, "POST", "/whep", body: Array(Self.offer.utf8)).status == 201)
        #expect(started.duration(to: MonotonicClock().now) < .milliseconds(700))
        // The idle ones are evicted (more than the cap) or time out; the endpoint waits for neither.
        let waitUntil = MonotonicClock().now.advanced(by: .seconds(3))
        while endpoint.statistics.connectionsTimedOut + endpoint.statistics.connectionsEvicted < 6, MonotonicClock().now < waitUntil {
            sleepUntil(MonotonicClock().now.advanced(by: .milliseconds(50)))
        }
        let statistics = endpoint.statistics
        #expect(statistics.connectionsTimedOut + statistics.connectionsEvicted >= 6)
        #expect(statistics.connectionsEvicted >= 2)
    }
}
