#if canImport(Glibc)
import Glibc
#endif
import PlayoutHTTP
import PlayoutCore
@testable import PlayoutTelemetry
@testable import PlayoutTelemetryBackends
import PlayoutTesting
import Synchronization
import RealTimeTesting
import Testing

private func record(_ kind: TelemetryRecord.Kind, _ name: String, seconds: Int64, fields: [TelemetryField] = [],
                    tags: [TelemetryField] = [TelemetryField("run", .string("r42"))]) -> TelemetryRecord {
    TelemetryRecord(sessionId: "s1", seq: 0, monotonic: .zero, wallTimeNanoseconds: seconds * 1_000_000_000 + 999_999_999,
                    kind: kind, name: name, fields: fields, tags: tags)
}

@Suite("GraphitePlaintext")
struct GraphitePlaintextTests {
    @Test("issue 28: a track's fields go under track.KIND with the schema's names; totals and identities left out")
    func schemaTracks() {
        let encoder = GraphitePlaintext(tags: [], schema: InfluxLineProtocolTests.schema)
        let (lines, _) = encoder.encode([record(.heartbeat, "heartbeat", seconds: 101, fields: [
            TelemetryField("playoutDelay", .double(0.23)), TelemetryField("framesRendered", .int(80)),
            TelemetryField("video.framesRendered", .int(30)), TelemetryField("video.ssrc", .int(1234)), TelemetryField("audio.bitrate", .double(64000)),
        ])])
        #expect(String(decoding: lines, as: UTF8.self) == """
            playout.r42.heartbeat.playout_delay_seconds 0.23 101
            playout.r42.track.video.frames_rendered 30 101
            playout.r42.track.audio.bitrate_bits_per_second 64000.0 101

            """)
    }

    @Test("events are cumulative counters, one line per name and batch; heartbeat and metric values are gauges")
    func lines() {
        var encoder = GraphitePlaintext(tags: [TelemetryField("host", .string("lab1"))])
        let batch = [
            record(.event, "play", seconds: 100),
            record(.heartbeat, "heartbeat", seconds: 101, fields: [
                TelemetryField("framesDecoded", .int(300)), TelemetryField("bitrate", .double(2.5e6)),
                TelemetryField("stalled", .bool(false)), TelemetryField("state", .string("playing")), TelemetryField("bad", .double(.nan)),
            ]),
            record(.event, "playing", seconds: 102),
            record(.event, "play", seconds: 103),
            record(.metric, "cpu", seconds: 104, fields: [TelemetryField("value", .double(0.5))]),
        ]
        let (lines, counts) = encoder.encode(batch)
        #expect(String(decoding: lines, as: UTF8.self) == """
            playout.r42.lab1.heartbeat.frames_decoded 300 101
            playout.r42.lab1.heartbeat.bitrate 2500000.0 101
            playout.r42.lab1.heartbeat.stalled 0 101
            playout.r42.lab1.metrics.cpu 0.5 104
            playout.r42.lab1.events.play 2 103
            playout.r42.lab1.events.playing 1 102

            """)
        // Not committed (not sent): the same batch gives the same counts.
        #expect(encoder.encode(batch).counts == counts)
        encoder.commit(counts)
        let (next, _) = encoder.encode([record(.event, "play", seconds: 200)])
        #expect(String(decoding: next, as: UTF8.self) == "playout.r42.lab1.events.play 3 200\n")
    }

    @Test("hostile names and tags become safe path components", arguments: [
        ("a.b c", "a_b_c"), ("", "_"), ("x\ny\tz", "x_y_z"), ("ünï", "_ufcn_uef"), ("東京", "_u6771_u4eac"), ("大阪", "_u5927_u962a"), ("ok-name_1", "ok-name_1"), ("a;b=c", "a_b_c"), ("../..", "_____"),
    ])
    func sanitize(text: String, expected: String) {
        #expect(GraphitePlaintext.sanitize(text) == expected)
        let (lines, _) = GraphitePlaintext(prefix: "p.q r").encode([record(.event, text, seconds: 1, tags: [TelemetryField("t", .string(text))])])
        #expect(String(decoding: lines, as: UTF8.self) == "p.q_r.\(expected).events.\(expected) 1 1\n")
    }

    @Test("every line of random input has exactly three fields and a path of safe characters")
    func randomInput() {
        var generator = SeededRandomNumberGenerator(seed: 3)
        let alphabet = Array(" .\n\t;=,ab€\\/")
        for _ in 0..<500 {
            func text() -> String { String((0..<Int(generator.next() % 8)).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }) }
            let batch = [
                record(.event, text(), seconds: 1, tags: [TelemetryField(text(), .string(text()))]),
                record(.heartbeat, "heartbeat", seconds: 1, fields: [TelemetryField(text(), .double(Double(generator.next() % 1000) / 7))]),
            ]
            for line in String(decoding: GraphitePlaintext().encode(batch).lines, as: UTF8.self).split(separator: "\n") {
                let parts = line.split(separator: " ", omittingEmptySubsequences: false)
                #expect(parts.count == 3)
                #expect(parts[0].allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) })
                #expect(!parts[0].contains(".."))
            }
        }
    }
}

@Suite("GraphiteBackend")
struct GraphiteBackendTests {
    @Test("addresses parse; bad ones are refused with an example", arguments: ["127.0.0.1:2003", "[::1]:2003", "localhost:1"])
    func addresses(address: String) throws {
        _ = try GraphiteBackend(address: address)
    }

    @Test("bad addresses are refused", arguments: ["", "2003", "host:", "host:0", "host:70000", "::1:2003", "[::1]2003", "a b:1", "host:port"])
    func badAddresses(address: String) {
        #expect { try GraphiteBackend(address: address) } throws: { error in
            let error = error as! NetworkTelemetryError
            return error.code == .invalidAddress && error.message.contains("e.g. graphite:")
        }
    }

    @Test("lines arrive over one kept connection; after the server closes it, the next batch reconnects")
    func delivery() throws {
        let received = Mutex<[String]>([])
        let server = try ScriptedTCPServer { connection in
            // Reads what arrives for a moment, then closes (the backend must reconnect).
            let bytes = connection.readRequest(timeout: .milliseconds(300))
            shutdown(connection.descriptor, Int32(SHUT_RDWR))
            received.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) }
        }
        defer { server.stop() }
        let backend = GraphiteBackend(host: "127.0.0.1", port: server.port)
        defer { backend.close() }
        try backend.deliver([record(.event, "play", seconds: 10)])
        try backend.deliver([record(.event, "play", seconds: 11)])
        // Wait (bounded) for the server to close the first connection.
        let deadline = ContinuousClock.now + .seconds(3)
        while received.withLock({ $0.count }) < 1, ContinuousClock.now < deadline { try? await_(milliseconds: 20) }
        try backend.deliver([record(.event, "play", seconds: 12)])
        while received.withLock({ $0.count }) < 2, ContinuousClock.now < deadline { try? await_(milliseconds: 20) }
        #expect(received.withLock { $0 } == ["playout.r42.events.play 1 10\nplayout.r42.events.play 2 11\n", "playout.r42.events.play 3 12\n"])
        #expect(server.acceptedCount == 2)
    }

    @Test("a port nobody listens on is a retryable 'refused', and the count does not advance")
    func refused() throws {
        let backend = GraphiteBackend(host: "127.0.0.1", port: ScriptedTCPServer.unusedPort(), timeout: .seconds(2))
        #expect { try backend.deliver([record(.event, "play", seconds: 1)]) } throws: { error in
            let error = error as! TelemetryDeliveryError
            return error.retryable && error.reason.contains("refused")
        }
    }

    @Test("a server that closes or resets every connection delivers nothing: each batch fails (retryable) and its count does not advance", arguments: [false, true])
    func closingServer(reset: Bool) throws {
        let server = try ScriptedTCPServer { connection in
            if reset {
                var linger = linger(l_onoff: 1, l_linger: 0)
                setsockopt(connection.descriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
            }
            // Returns without reading: the server closes the connection at once.
        }
        defer { server.stop() }
        let backend = GraphiteBackend(host: "127.0.0.1", port: server.port, timeout: .seconds(1))
        defer { backend.close() }
        var failures = 0
        for second in 1...5 {
            do {
                try backend.deliver([record(.event, "play", seconds: Int64(second), fields: [], tags: [TelemetryField("run", .string(String(repeating: "x", count: 2_000)))])])
            } catch {
                #expect(error.retryable)
                failures += 1
            }
        }
        #expect(failures == 5, "nothing the server dropped counts as delivered")
    }

    @Test("a server that never reads: once its receive window is full the batches fail within the timeout, not counted as delivered", .realTime)
    func neverReading() throws {
        let server = try ScriptedTCPServer { connection in connection.stall(for: .seconds(8)) }
        defer { server.stop() }
        let backend = GraphiteBackend(host: "127.0.0.1", port: server.port, timeout: .milliseconds(500))
        defer { backend.close() }
        let fields = (0..<50).map { TelemetryField("field\($0)", .double(Double($0))) }
        var (failures, delivered) = (0, 0)
        for second in 0..<60 {
            // ≈ 100 KB a batch, 6 MB in all: more than any socket buffer on loopback holds.
            let batch = (0..<40).map { _ in record(.heartbeat, "heartbeat", seconds: Int64(second), fields: fields) }
            do {
                try backend.deliver(batch)
                delivered += 1
            } catch {
                failures += 1
            }
            if failures >= 2 { break }
        }
        #expect(failures >= 2)
        // What a server that reads nothing can take is its receive buffer (≈ 128 KB unread on
        // Linux), not the megabytes our send buffer would swallow.
        #expect(delivered <= 3, "\(delivered) batches of ≈ 100 KB counted as delivered")
    }

    @Test("a server that accepts and never reads makes a large send time out within the timeout", .realTime)
    func stalled() throws {
        let server = try ScriptedTCPServer { connection in connection.stall(for: .seconds(2)) }
        defer { server.stop() }
        let deadline = MonotonicClock().now.advanced(by: .milliseconds(500))
        let connection = try TCPConnection.connect(host: "127.0.0.1", port: server.port, deadline: deadline)
        let start = ContinuousClock.now
        #expect { try connection.send([UInt8](repeating: 65, count: 64 << 20), deadline: deadline) } throws: {
            ($0 as! NetworkTelemetryError).code == .timedOut
        }
        #expect(ContinuousClock.now - start < .milliseconds(1500))
    }
}

/// Sleeps `milliseconds` (a bounded poll interval in tests that wait for a server's thread).
private func await_(milliseconds: Int) throws {
    var time = timespec(tv_sec: 0, tv_nsec: milliseconds * 1_000_000)
    nanosleep(&time, nil)
}
