@testable import PlayoutTelemetry
@testable import PlayoutTelemetryBackends
import PlayoutTesting
import PlayoutHTTP
import Synchronization
import RealTimeTesting
import Testing

@Suite("HTTPClient")
struct HTTPClientTests {
    @Test("a kept-alive connection carries several requests; the request has Host and Content-Length")
    func keepAlive() throws {
        let requests = Mutex<[String]>([])
        let server = try ScriptedTCPServer { connection in
            for _ in 0..<3 {
                let request = connection.readRequest()
                guard !request.isEmpty else { return }
                requests.withLock { $0.append(String(decoding: request, as: UTF8.self)) }
                connection.write("HTTP/1.1 204 No Content\r\n\r\n")
            }
        }
        defer { server.stop() }
        let client = HTTPClient(host: "127.0.0.1", port: server.port, timeout: .seconds(5))
        for index in 0..<3 {
            let response = try client.send(method: "POST", target: "/write?db=x", headers: [HTTPHeader("X-Try", "\(index)")], body: Array("m v=\(index)i\n".utf8))
            #expect(response.status == 204)
        }
        #expect(server.acceptedCount == 1)
        let first = try #require(requests.withLock { $0.first })
        #expect(first == "POST /write?db=x HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\nUser-Agent: playout\r\nContent-Length: 7\r\nX-Try: 0\r\n\r\nm v=0i\n")
    }

    @Test("a server that closes after each answer gets a new connection per request")
    func reconnects() throws {
        let server = try ScriptedTCPServer { connection in
            connection.readRequest()
            connection.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        }
        defer { server.stop() }
        let client = HTTPClient(host: "127.0.0.1", port: server.port, timeout: .seconds(5))
        for _ in 0..<3 {
            let response = try client.send(method: "GET", target: "/ping")
            #expect(response.body == Array("ok".utf8))
        }
        #expect(server.acceptedCount == 3)
    }

    @Test("a port nobody listens on is 'connection refused', retryable, at once")
    func refused() {
        let client = HTTPClient(host: "127.0.0.1", port: ScriptedTCPServer.unusedPort(), timeout: .seconds(5))
        let start = ContinuousClock.now
        #expect { try client.send(method: "GET", target: "/") } throws: { error in
            let error = error as! NetworkTelemetryError
            return error.code == .connectionRefused && error.retryable && error.message.contains("refused")
        }
        #expect(ContinuousClock.now - start < .seconds(2))
    }

    @Test("a server that accepts and stalls times out within the timeout, retryable", .realTime)
    func stalls() throws {
        let server = try ScriptedTCPServer { connection in
            connection.readRequest()
            connection.stall(for: .seconds(1))
        }
        defer { server.stop() }
        let client = HTTPClient(host: "127.0.0.1", port: server.port, timeout: .milliseconds(400))
        let start = ContinuousClock.now
        #expect { try client.send(method: "POST", target: "/write", body: [1, 2, 3]) } throws: { error in
            let error = error as! NetworkTelemetryError
            return error.code == .timedOut && error.retryable
        }
        let elapsed = ContinuousClock.now - start
        #expect(elapsed >= .milliseconds(390) && elapsed < .seconds(2))
    }

    @Test("a server that sends half an answer and stalls times out too", .realTime)
    func stallsMidResponse() throws {
        let server = try ScriptedTCPServer { connection in
            connection.readRequest()
            connection.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part")
            connection.stall(for: .seconds(1))
        }
        defer { server.stop() }
        let client = HTTPClient(host: "127.0.0.1", port: server.port, timeout: .milliseconds(300))
        #expect { try client.send(method: "GET", target: "/") } throws: { ($0 as! NetworkTelemetryError).code == .timedOut }
    }

    @Test("a server that drips its answer byte by byte cannot stretch the request past its timeout", .realTime)
    func drips() throws {
        let server = try ScriptedTCPServer { connection in
            connection.readRequest()
            for byte in Array("HTTP/1.1 200 OK\r\nX-Slow: ".utf8) + [UInt8](repeating: 97, count: 100) {
                connection.write([byte])
                connection.stall(for: .milliseconds(20))
            }
        }
        defer { server.stop() }
        let client = HTTPClient(host: "127.0.0.1", port: server.port, timeout: .milliseconds(300))
        let start = ContinuousClock.now
        #expect { try client.send(method: "GET", target: "/") } throws: { ($0 as! NetworkTelemetryError).code == .timedOut }
        #expect(ContinuousClock.now - start < .seconds(2))
    }

    @Test("a server that closes at once is 'connection closed'; garbage is 'malformed'; a huge answer is 'too large'")
    func misbehaving() throws {
        let closing = try ScriptedTCPServer { connection in connection.readRequest() }
        defer { closing.stop() }
        #expect { try HTTPClient(host: "127.0.0.1", port: closing.port, timeout: .seconds(2)).send(method: "GET", target: "/") } throws: {
            ($0 as! NetworkTelemetryError).code == .connectionClosed
        }

        let garbage = try ScriptedTCPServer { connection in
            connection.readRequest()
            connection.write("SSH-2.0-OpenSSH_9.2\r\n\r\n")
        }
        defer { garbage.stop() }
        #expect { try HTTPClient(host: "127.0.0.1", port: garbage.port, timeout: .seconds(2)).send(method: "GET", target: "/") } throws: {
            ($0 as! NetworkTelemetryError).code == .malformedResponse
        }

        let huge = try ScriptedTCPServer { connection in
            connection.readRequest()
            connection.write("HTTP/1.1 200 OK\r\n\r\n")
            connection.write([UInt8](repeating: 65, count: 300_000))
        }
        defer { huge.stop() }
        let limits = HTTPResponseParser.Limits(headerBytes: 1024, headerCount: 10, bodyBytes: 64 * 1024)
        #expect { try HTTPClient(host: "127.0.0.1", port: huge.port, timeout: .seconds(2), limits: limits).send(method: "GET", target: "/") } throws: {
            ($0 as! NetworkTelemetryError).code == .responseTooLarge
        }
    }

    @Test("a kept-alive connection the server has closed is replaced within the same request")
    func staleKeepAlive() throws {
        let server = try ScriptedTCPServer { connection in
            connection.readRequest()
            // Promises keep-alive, then closes: the next request must go on a new connection.
            connection.write("HTTP/1.1 204 No Content\r\n\r\n")
        }
        defer { server.stop() }
        let client = HTTPClient(host: "127.0.0.1", port: server.port, timeout: .seconds(5))
        #expect(try client.send(method: "POST", target: "/a", body: [1]).status == 204)
        #expect(try client.send(method: "POST", target: "/b", body: [2]).status == 204)
        #expect(server.acceptedCount == 2)
    }

    @Test("a host name resolves (localhost, from /etc/hosts)")
    func names() throws {
        let server = try ScriptedTCPServer { connection in
            connection.readRequest()
            connection.write("HTTP/1.1 204 No Content\r\n\r\n")
        }
        defer { server.stop() }
        #expect(try HTTPClient(host: "localhost", port: server.port, timeout: .seconds(5)).send(method: "GET", target: "/").status == 204)
        // An unknown name is not tried here: resolving it would ask a DNS server off this machine.
    }

    @Test("header values with a line break are refused before anything is sent")
    func headerInjection() {
        let client = HTTPClient(host: "127.0.0.1", port: ScriptedTCPServer.unusedPort(), timeout: .seconds(1))
        #expect { try client.send(method: "POST", target: "/", headers: [HTTPHeader("Authorization", "Token a\r\nX: y")]) } throws: {
            ($0 as! NetworkTelemetryError).code == .invalidAddress
        }
    }
}

@Suite("HTTPEndpoint")
struct HTTPEndpointTests {
    @Test("URLs are taken apart", arguments: [
        ("http://127.0.0.1:8086/write?db=playout", "127.0.0.1", 8086, "/write", "db=playout"),
        ("http://[::1]:8428/api/v2/write?org=o&bucket=b", "::1", 8428, "/api/v2/write", "org=o&bucket=b"),
        ("HTTP://influx.lab/write?db=x", "influx.lab", 80, "/write", "db=x"),
        ("http://localhost:1", "localhost", 1, "/", ""),
    ] as [(String, String, Int, String, String)])
    func valid(text: String, host: String, port: Int, path: String, query: String) throws {
        let endpoint = try HTTPEndpoint(parsing: text)
        #expect(endpoint.host == host && Int(endpoint.port) == port && endpoint.path == path && endpoint.query == query)
    }

    @Test("bad URLs are refused with an example of a good one", arguments: [
        "", "influx://x", "https://127.0.0.1/write", "http://", "http://:8086/", "http://host:0/", "http://host:65536/",
        "http://host:port/", "http://user:pw@host/", "http://[::1/", "http://[127.0.0.1]/", "http://host/a b", "http://host/#frag",
        "http://ho\u{1}st/", "http://hôst/",
    ])
    func invalid(text: String) {
        #expect { try HTTPEndpoint(parsing: text) } throws: { error in
            let error = error as! NetworkTelemetryError
            return error.code == .invalidAddress && error.message.contains("e.g. http://")
        }
    }

    @Test("query values are percent-decoded; encoding round-trips hostile text")
    func percent() throws {
        let endpoint = try HTTPEndpoint(parsing: "http://h/write?db=my%20db&rp=a%2Cb&x")
        #expect(endpoint.queryValue("db") == "my db")
        #expect(endpoint.queryValue("rp") == "a,b")
        #expect(endpoint.queryValue("x") == "")
        let hostile = "a b&c=d%e\"f\\g\nh ñ"
        #expect(HTTPEndpoint.percentDecoded(Substring(HTTPEndpoint.percentEncoded(hostile))) == hostile)
        #expect(HTTPEndpoint.percentDecoded("%zz%4") == "%zz%4")
    }
}
