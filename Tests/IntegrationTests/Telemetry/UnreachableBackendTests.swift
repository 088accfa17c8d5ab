import PlayoutTelemetry
import PlayoutTelemetryBackends
import PlayoutTesting
import RealTimeTesting
import Testing

/// Every network backend against a port nobody listens on, a server that accepts then stalls,
/// and (HTTP) one that answers 500: the right error, classified right, within the timeout.
@Suite("Unreachable telemetry servers", .realTime)
struct UnreachableBackendTests {
    static let timeout: Duration = .milliseconds(500)

    static func influxV1(_ port: UInt16) throws -> any TelemetryBackend {
        try InfluxBackend(writeURL: "http://127.0.0.1:\(port)/write?db=playout", token: nil, timeout: timeout)
    }

    static func influxV2(_ port: UInt16) throws -> any TelemetryBackend {
        try InfluxBackend(writeURL: "http://127.0.0.1:\(port)/api/v2/write?org=o&bucket=b", token: "token", timeout: timeout)
    }

    static func graphite(_ port: UInt16) throws -> any TelemetryBackend {
        GraphiteBackend(host: "127.0.0.1", port: port, timeout: timeout)
    }

    static let makers: [(String, @Sendable (UInt16) throws -> any TelemetryBackend)] = [
        ("influx v1", influxV1), ("influx v2", influxV2), ("graphite", graphite),
    ]

    /// A batch of `count` heartbeats of 40 fields each.
    static func batch(_ count: Int) -> [TelemetryRecord] {
        let fields = (0..<40).map { TelemetryField("field\($0)", .int(Int64($0))) }
        return (0..<count).map {
            TelemetryRecord(sessionId: "s", seq: UInt64($0), monotonic: .zero, wallTimeNanoseconds: 1_700_000_000_000_000_000, kind: .heartbeat,
                            name: "heartbeat", fields: fields)
        }
    }

    /// Runs `deliver` and returns its error and how long it took.
    static func failure(_ backend: any TelemetryBackend, _ records: [TelemetryRecord]) -> (TelemetryDeliveryError?, Duration) {
        let start = ContinuousClock.now
        do {
            try backend.deliver(records)
            return (nil, ContinuousClock.now - start)
        } catch {
            return (error, ContinuousClock.now - start)
        }
    }

    @Test("a port nobody listens on: 'refused', retryable, at once", arguments: makers.map(\.0))
    func refused(kind: String) throws {
        let backend = try Self.makers.first { $0.0 == kind }!.1(ScriptedTCPServer.unusedPort())
        let (error, elapsed) = Self.failure(backend, Self.batch(1))
        #expect(error?.retryable == true && error?.reason.contains("refused") == true, "\(String(describing: error))")
        #expect(elapsed < .seconds(1))
    }

    @Test("a server that accepts then stalls: 'timed out', retryable, within the timeout", arguments: makers.map(\.0))
    func stalled(kind: String) throws {
        let server = try ScriptedTCPServer { connection in connection.stall(for: .seconds(3)) }
        defer { server.stop() }
        // HTTP waits for an answer that never comes; Graphite never hears back, so only a batch
        // larger than the socket buffers can show the stall: 2,000 lines of 10 KB (a long prefix,
        // so encoding stays cheap and the timeout is all I/O).
        let backend = kind == "graphite"
            ? GraphiteBackend(host: "127.0.0.1", port: server.port, prefix: String(repeating: "p", count: 10_000), timeout: Self.timeout)
            : try Self.makers.first { $0.0 == kind }!.1(server.port)
        let records = Self.batch(kind == "graphite" ? 50 : 1)
        let (error, elapsed) = Self.failure(backend, records)
        #expect(error?.retryable == true && error?.reason.contains("timed out") == true, "\(String(describing: error))")
        #expect(elapsed < Self.timeout + .seconds(1))
    }

    @Test("a server that answers 500: retryable, with the server's words", arguments: ["influx v1", "influx v2"])
    func serverError(kind: String) throws {
        let server = try ScriptedTCPServer { connection in
            connection.readRequest()
            connection.write("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 13\r\n\r\nengine failed")
        }
        defer { server.stop() }
        let backend = try Self.makers.first { $0.0 == kind }!.1(server.port)
        let (error, elapsed) = Self.failure(backend, Self.batch(1))
        #expect(error?.retryable == true && error?.reason.contains("HTTP 500") == true && error?.reason.contains("engine failed") == true)
        #expect(elapsed < Self.timeout + .seconds(1))
    }
}
