@testable import PlayoutTelemetry
@testable import PlayoutTelemetryBackends
import PlayoutHTTP
import PlayoutTesting
import Synchronization
import RealTimeTesting
import Testing

@Suite("InfluxBackend")
struct InfluxBackendTests {
    @Test("v1 and v2 write URLs are recognized", arguments: [
        ("http://127.0.0.1:8086/write?db=playout", InfluxBackend.API.v1(database: "playout")),
        ("http://127.0.0.1:8086/write?db=my%20db&rp=autogen&precision=ns", .v1(database: "my db")),
        ("http://[::1]:8428/api/v2/write?org=lab&bucket=playout", .v2(organization: "lab", bucket: "playout")),
        ("http://localhost:8086/api/v2/write?orgID=0123&bucket=b", .v2(organization: "0123", bucket: "b")),
    ])
    func urls(url: String, api: InfluxBackend.API) throws {
        let backend = try InfluxBackend(writeURL: url, token: nil)
        #expect(backend.api == api)
        #expect(backend.name.hasPrefix("influx "))
    }

    @Test("other URLs are refused with both valid forms named", arguments: [
        "http://127.0.0.1:8086/write", "http://127.0.0.1:8086/write?db=", "http://127.0.0.1:8086/query?db=x",
        "http://127.0.0.1:8086/api/v2/write?org=o", "http://127.0.0.1:8086/api/v2/write?bucket=b",
        "http://127.0.0.1:8086/write?db=x&precision=s", "127.0.0.1:8086/write?db=x", "https://127.0.0.1/write?db=x",
    ])
    func badURLs(url: String) {
        #expect { try InfluxBackend(writeURL: url, token: nil) } throws: { error in
            let error = error as! NetworkTelemetryError
            return error.code == .invalidAddress && !error.retryable && error.message.contains("http://")
        }
    }

    @Test("a token with a line break is refused")
    func badToken() {
        #expect(throws: NetworkTelemetryError.self) { try InfluxBackend(writeURL: "http://h/api/v2/write?org=o&bucket=b", token: "abc\r\nX-Evil: 1") }
    }

    @Test("a batch is one POST with precision=ns, the token and the lines")
    func request() throws {
        let requests = Mutex<[String]>([])
        let server = try ScriptedTCPServer { connection in
            let request = connection.readRequest()
            requests.withLock { $0.append(String(decoding: request, as: UTF8.self)) }
            connection.write("HTTP/1.1 204 No Content\r\n\r\n")
        }
        defer { server.stop() }
        let backend = try InfluxBackend(writeURL: "http://127.0.0.1:\(server.port)/api/v2/write?org=o&bucket=b", token: "s3cr3t",
                                        tags: [TelemetryField("host", .string("h1"))])
        defer { backend.close() }
        let records = [TelemetryRecord(sessionId: "s", seq: 0, monotonic: .zero, wallTimeNanoseconds: 42, kind: .event, name: "play")]
        try backend.deliver(records)
        try backend.deliver([])
        let sent = try #require(requests.withLock { $0.first })
        #expect(requests.withLock { $0.count } == 1)
        #expect(sent.hasPrefix("POST /api/v2/write?org=o&bucket=b&precision=ns HTTP/1.1\r\n"))
        #expect(sent.contains("\r\nAuthorization: Token s3cr3t\r\n"))
        #expect(sent.hasSuffix("\r\n\r\nplayout_event,event=play,host=h1,session=s seq=0i 42\n"))
    }

    @Test("HTTP answers are classified: 2xx delivered, 429 and 5xx retried, other 4xx dropped", arguments: [
        (204, nil), (200, nil), (500, true), (503, true), (429, true), (400, false), (401, false), (404, false), (413, false),
    ] as [(Int, Bool?)])
    func classification(status: Int, retryable: Bool?) throws {
        let server = try ScriptedTCPServer { connection in
            connection.readRequest()
            let body = #"{"error":"partial write: field type conflict"}"#
            connection.write("HTTP/1.1 \(status) Status\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        }
        defer { server.stop() }
        let backend = try InfluxBackend(writeURL: "http://127.0.0.1:\(server.port)/write?db=x", token: nil)
        let records = [TelemetryRecord(sessionId: "s", seq: 0, monotonic: .zero, wallTimeNanoseconds: 1, kind: .event, name: "play")]
        if let retryable {
            #expect { try backend.deliver(records) } throws: { error in
                let error = error as! TelemetryDeliveryError
                return error.retryable == retryable && error.reason.contains("HTTP \(status) from influx 127.0.0.1:\(server.port)")
                    && error.reason.contains("field type conflict")
            }
        } else {
            try backend.deliver(records)
        }
    }

    @Test("a dead or stalled server is a retryable error within the timeout", .realTime)
    func unreachable() throws {
        let records = [TelemetryRecord(sessionId: "s", seq: 0, monotonic: .zero, wallTimeNanoseconds: 1, kind: .event, name: "play")]
        let refused = try InfluxBackend(writeURL: "http://127.0.0.1:\(ScriptedTCPServer.unusedPort())/write?db=x", token: nil, timeout: .seconds(2))
        #expect { try refused.deliver(records) } throws: { ($0 as! TelemetryDeliveryError).retryable && "\($0)".contains("refused") }

        let server = try ScriptedTCPServer { connection in
            connection.readRequest()
            connection.stall(for: .seconds(1))
        }
        defer { server.stop() }
        let stalled = try InfluxBackend(writeURL: "http://127.0.0.1:\(server.port)/write?db=x", token: nil, timeout: .milliseconds(300))
        let start = ContinuousClock.now
        #expect { try stalled.deliver(records) } throws: { ($0 as! TelemetryDeliveryError).retryable && "\($0)".contains("timed out") }
        #expect(ContinuousClock.now - start < .seconds(2))
    }
}
