import Foundation
import PlayoutTesting
import PlayoutWebRTC
import RealTimeTesting
import Synchronization
import Testing

/// The blocking WHEP client against scripted HTTP servers on loopback (real sockets).
@Suite("WHEPClient over HTTP")
struct WHEPClientTests {
    static let offer = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n"
    static let answer = "v=0\r\no=- 7 7 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n"

    /// A recorded request: request line, header fields (lower-cased names), body.
    struct Seen: Sendable {
        var line: String
        var fields: [String: String]
        var body: String

        init(_ bytes: [UInt8]) {
            let text = String(decoding: bytes, as: UTF8.self)
            let parts = text.components(separatedBy: "\r\n\r\n")
            let head = parts[0].components(separatedBy: "\r\n")
            line = head[0]
            var fields: [String: String] = [:]
            for field in head.dropFirst() {
                guard let colon = field.firstIndex(of: ":") else { continue }
                fields[field[..<colon].lowercased()] = field[field.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            self.fields = fields
            body = parts.dropFirst().joined(separator: "\r\n\r\n")
        }
    }

    /// A server whose `respond` gives the answer to the n-th connection's request; every
    /// request is recorded.
    final class Recorder: Sendable {
        let seen = Mutex<[Seen]>([])
        var requests: [Seen] { seen.withLock { $0 } }
    }

    static func server(_ recorder: Recorder, respond: @escaping @Sendable (Int, Seen) -> String) throws -> ScriptedTCPServer {
        try ScriptedTCPServer { connection in
            let request = Seen(connection.readRequest())
            let index = recorder.seen.withLock { seen in
                seen.append(request)
                return seen.count - 1
            }
            connection.write(respond(index, request))
        }
    }

    static func created(location: String, extra: String = "") -> String {
        "HTTP/1.1 201 Created\r\nContent-Type: application/sdp\r\nLocation: \(location)\r\n\(extra)Content-Length: \(answer.utf8.count)\r\n\r\n\(answer)"
    }

    func client(_ port: UInt16, path: String = "/whep/live", token: String? = "t0ken", session: WHEPSessionStateMachine.Configuration = .init(), maximumAnswerBytes: Int = 64 * 1024) throws -> WHEPClient {
        try WHEPClient(
            endpoint: WHEPURL("http://127.0.0.1:\(port)\(path)"), token: token,
            configuration: .init(session: session, maximumAnswerBytes: maximumAnswerBytes)
        )
    }

    @Test("201 with a relative Location: the answer, the session URL; the POST and the DELETE carry the token", arguments: ["/whep/session/1", "session/1"])
    func createdRelative(location: String) throws {
        let recorder = Recorder()
        let server = try Self.server(recorder) { index, _ in
            index == 0 ? Self.created(location: location) : "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
        }
        defer { server.stop() }
        let client = try client(server.port)
        let session = try client.open(offer: Self.offer)
        #expect(session.answer == Self.answer)
        #expect(session.sessionURL.description == "http://127.0.0.1:\(server.port)/whep/session/1")
        #expect(client.close() == .success(200))
        #expect(client.close() == .success(200), "close is idempotent: one DELETE")
        let requests = recorder.requests
        #expect(requests.count == 2)
        #expect(requests[0].line == "POST /whep/live HTTP/1.1")
        #expect(requests[0].fields["content-type"] == "application/sdp")
        #expect(requests[0].fields["authorization"] == "Bearer t0ken")
        #expect(requests[0].fields["host"] == "127.0.0.1:\(server.port)")
        #expect(requests[0].body == Self.offer)
        #expect(requests[1].line == "DELETE /whep/session/1 HTTP/1.1")
        #expect(requests[1].fields["authorization"] == "Bearer t0ken")
    }

    @Test("201 with an absolute Location on another server: the DELETE goes there")
    func createdAbsolute() throws {
        let deletes = Recorder()
        let other = try Self.server(deletes) { _, _ in "HTTP/1.1 204 No Content\r\n\r\n" }
        defer { other.stop() }
        let posts = Recorder()
        let server = try Self.server(posts) { _, _ in Self.created(location: "http://127.0.0.1:\(other.port)/sessions/abc") }
        defer { server.stop() }
        let client = try client(server.port)
        let session = try client.open(offer: Self.offer)
        #expect(session.sessionURL.port == other.port)
        #expect(client.close() == .success(204))
        #expect(deletes.requests.map(\.line) == ["DELETE /sessions/abc HTTP/1.1"])
        #expect(posts.requests.count == 1)
    }

    @Test("307 and 308 are followed keeping the POST and its body", arguments: [307, 308])
    func redirects(status: Int) throws {
        let recorder = Recorder()
        let server = try Self.server(recorder) { index, _ in
            index == 0 ? "HTTP/1.1 \(status) Redirect\r\nLocation: /edge/2/whep\r\nContent-Length: 0\r\n\r\n" : Self.created(location: "s/9")
        }
        defer { server.stop() }
        let session = try client(server.port).open(offer: Self.offer)
        #expect(session.sessionURL.target == "/edge/2/s/9")
        #expect(session.attempts == 2)
        let requests = recorder.requests
        #expect(requests.map(\.line) == ["POST /whep/live HTTP/1.1", "POST /edge/2/whep HTTP/1.1"])
        #expect(requests.map(\.body) == [Self.offer, Self.offer])
        #expect(requests[1].fields["authorization"] == "Bearer t0ken")
    }

    static func response(_ status: String, type: String?, body: String) -> String {
        "HTTP/1.1 \(status)\r\n" + (type.map { "Content-Type: \($0)\r\n" } ?? "") + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
    }

    @Test("401, 403, 404 with and without problem+json: one error naming the status and the problem", arguments: [
        (response("401 Unauthorized", type: "application/problem+json", body: #"{"title":"Unauthorized","detail":"token expired"}"#), 401, "401 Unauthorized: Unauthorized: token expired"),
        (response("403 Forbidden", type: nil, body: ""), 403, "403 Forbidden (the token is not allowed"),
        (response("404 Not Found", type: "application/problem+json", body: #"{"type":"about:blank","title":"No such stream"}"#), 404, "404 Not Found: No such stream"),
        (response("404 Not Found", type: "text/plain", body: "not here\n"), 404, "404 Not Found: not here"),
    ])
    func statuses(response: String, status: Int, expected: String) throws {
        let server = try Self.server(Recorder()) { _, _ in response }
        defer { server.stop() }
        let client = try client(server.port)
        #expect { try client.open(offer: Self.offer) } throws: { error in
            let error = error as! WHEPError
            return error.code == .httpStatus(status) && error.message.contains(expected) && error.message.contains("http://127.0.0.1:\(server.port)/whep/live")
        }
        #expect(client.close() == nil, "nothing to delete")
    }

    @Test("201 without Location is an error")
    func missingLocation() throws {
        let server = try Self.server(Recorder()) { _, _ in "HTTP/1.1 201 Created\r\nContent-Length: \(Self.answer.utf8.count)\r\n\r\n\(Self.answer)" }
        defer { server.stop() }
        #expect { try client(server.port).open(offer: Self.offer) } throws: { ($0 as! WHEPError).code == .missingLocation }
    }

    @Test("an oversized answer is refused within the bound, not read whole")
    func oversized() throws {
        let server = try ScriptedTCPServer { connection in
            connection.readRequest()
            connection.write("HTTP/1.1 201 Created\r\nLocation: /s\r\nContent-Length: 10000000\r\n\r\n")
            connection.write([UInt8](repeating: 0x61, count: 200_000))
        }
        defer { server.stop() }
        #expect { try client(server.port, maximumAnswerBytes: 64 * 1024).open(offer: Self.offer) } throws: { ($0 as! WHEPError).code == .responseTooLarge }
        let chunked = try ScriptedTCPServer { connection in
            connection.readRequest()
            connection.write("HTTP/1.1 201 Created\r\nLocation: /s\r\nTransfer-Encoding: chunked\r\n\r\n")
            for _ in 0..<20 { connection.write("1000\r\n" + String(repeating: "a", count: 4096) + "\r\n") }
        }
        defer { chunked.stop() }
        #expect { try client(chunked.port, maximumAnswerBytes: 32 * 1024).open(offer: Self.offer) } throws: { ($0 as! WHEPError).code == .responseTooLarge }
    }

    @Test("garbage instead of HTTP, and a refused port, are clear errors")
    func garbageAndRefused() throws {
        let server = try Self.server(Recorder()) { _, _ in "SSH-2.0-OpenSSH_9.2\r\n\r\n" }
        defer { server.stop() }
        #expect { try client(server.port).open(offer: Self.offer) } throws: { ($0 as! WHEPError).code == .malformedResponse }
        #expect { try client(ScriptedTCPServer.unusedPort()).open(offer: Self.offer) } throws: { error in
            let error = error as! WHEPError
            return error.code == .connectionFailed && error.message.contains("refused")
        }
    }

    @Test("Link ice-server headers of the 201: STUN for use, TURN reported")
    func links() throws {
        let links = "Link: <stun:127.0.0.1:3478>; rel=\"ice-server\"\r\nLink: <turn:turn.example:3478?transport=udp>; rel=\"ice-server\"; username=\"u\"; credential=\"p\", <https://x/y>; rel=\"help\"\r\n"
        let server = try Self.server(Recorder()) { _, _ in Self.created(location: "/s", extra: links) }
        defer { server.stop() }
        let client = try client(server.port)
        let session = try client.open(offer: Self.offer)
        #expect(session.stunServers.map { "\($0.host):\($0.port)" } == ["127.0.0.1:3478"])
        #expect(session.unsupportedICEServers.map(\.kind) == [.turn])
        #expect(session.unsupportedICEServers.first?.username == "u")
        #expect(client.notes.contains { $0.contains("turn:turn.example") && $0.contains("not supported") })
    }

    @Test("409 and 503 with Retry-After: 1 are retried after about a second", .realTime, arguments: [409, 503])
    func retryAfter(status: Int) throws {
        let recorder = Recorder()
        let server = try Self.server(recorder) { index, _ in
            index == 0 ? "HTTP/1.1 \(status) Busy\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n" : Self.created(location: "/s")
        }
        defer { server.stop() }
        let started = ContinuousClock.now
        let session = try client(server.port).open(offer: Self.offer)
        let elapsed = ContinuousClock.now - started
        #expect(session.attempts == 2)
        #expect(elapsed >= .milliseconds(950) && elapsed < .seconds(5), "\(elapsed)")
        #expect(recorder.requests.map(\.body) == [Self.offer, Self.offer])
    }

    @Test("a Retry-After past the retry window fails at once", .realTime)
    func retryTooLate() throws {
        let server = try Self.server(Recorder()) { _, _ in "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 60\r\nContent-Length: 0\r\n\r\n" }
        defer { server.stop() }
        let started = ContinuousClock.now
        #expect { try client(server.port, session: .init(retryWindow: .seconds(5))).open(offer: Self.offer) } throws: { ($0 as! WHEPError).code == .retryDeadlinePassed }
        #expect(ContinuousClock.now - started < .seconds(2))
    }

    @Test("a server that never answers: timed out within the request timeout", .realTime)
    func neverAnswers() throws {
        let server = try ScriptedTCPServer { connection in
            connection.readRequest()
            connection.stall(for: .seconds(3))
        }
        defer { server.stop() }
        let started = ContinuousClock.now
        #expect { try client(server.port, session: .init(requestTimeout: .milliseconds(500))).open(offer: Self.offer) } throws: { ($0 as! WHEPError).code == .timedOut }
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .milliseconds(450) && elapsed < .seconds(2), "\(elapsed)")
    }

    @Test("a DELETE that is never answered ends within the 2 s bound", .realTime)
    func deleteBounded() throws {
        let connections = Mutex(0)
        let server = try ScriptedTCPServer { connection in
            let index = connections.withLock { count in
                count += 1
                return count - 1
            }
            connection.readRequest()
            if index == 0 { connection.write(Self.created(location: "/s")) } else { connection.stall(for: .seconds(3)) }
        }
        defer { server.stop() }
        let client = try client(server.port)
        _ = try client.open(offer: Self.offer)
        let started = ContinuousClock.now
        let outcome = client.close()
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .milliseconds(1900) && elapsed < .milliseconds(2600), "\(elapsed)")
        #expect(outcome.map { result in if case .failure(let error) = result { error.code == .timedOut } else { false } } == true)
    }

    @Test("close() from another thread while the client waits to retry cancels the offer", .realTime)
    func closeWhileWaiting() throws {
        let server = try Self.server(Recorder()) { _, _ in "HTTP/1.1 503 Busy\r\nRetry-After: 20\r\nContent-Length: 0\r\n\r\n" }
        defer { server.stop() }
        let client = try client(server.port)
        let closer = Thread {
            Thread.sleep(forTimeInterval: 0.3)
            client.close()
        }
        closer.start()
        let started = ContinuousClock.now
        #expect { try client.open(offer: Self.offer) } throws: { ($0 as! WHEPError).code == .cancelled }
        #expect(ContinuousClock.now - started < .seconds(3))
    }

    @Test("close() while the POST is under way: open is cancelled and the session the server made is deleted", .realTime)
    func closeWhilePosting() throws {
        let recorder = Recorder()
        let server = try Self.server(recorder) { index, _ in
            if index == 0 { Thread.sleep(forTimeInterval: 0.6) }
            return index == 0 ? Self.created(location: "/s/late") : "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
        }
        defer { server.stop() }
        let client = try client(server.port)
        let closer = Thread {
            Thread.sleep(forTimeInterval: 0.2)
            client.close()
        }
        closer.start()
        #expect { try client.open(offer: Self.offer) } throws: { ($0 as! WHEPError).code == .cancelled }
        #expect(recorder.requests.map(\.line) == ["POST /whep/live HTTP/1.1", "DELETE /s/late HTTP/1.1"])
    }
}
