import Foundation
import PlayoutCore
import PlayoutRTP
import PlayoutWebRTC
import RealTimeTesting
import Testing

/// The `openssl` executable on PATH, if any.
let dtlsInteropOpenSSL: String? = {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/openssl" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}()

/// Interop with an independent DTLS stack on loopback UDP: the `openssl` command's `s_server` and
/// `s_client` (its own handshake driver, timers and key export), comparing the exported
/// `EXTRACTOR-dtls_srtp` keying material they print with ours.
@Suite(
    "DTLS-SRTP interop with openssl s_server/s_client", .serialized, .realTime(timeLimit: .seconds(90)),
    .enabled(if: dtlsInteropOpenSSL != nil, "openssl is not on PATH: install openssl to run the DTLS interop tests")
)
struct DTLSInteropTests {
    /// A running `openssl` child writing its output to a file (no reader thread, no run loop:
    /// the test polls the file and `isRunning`).
    final class Child {
        let process: Process
        let input: Pipe
        let outputFile: URL

        init(arguments: [String]) throws {
            process = Process()
            process.executableURL = URL(fileURLWithPath: dtlsInteropOpenSSL!)
            process.arguments = arguments
            input = Pipe()  // held open: EOF on stdin would end an s_client/s_server session
            outputFile = FileManager.default.temporaryDirectory.appendingPathComponent("playout-dtls-out-\(UUID().uuidString)")
            _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
            let output = try FileHandle(forWritingTo: outputFile)
            process.standardInput = input
            process.standardOutput = output
            process.standardError = output
            try process.run()
            try output.close()
        }

        deinit {
            stop()
            try? FileManager.default.removeItem(at: outputFile)
        }

        var text: String {
            (try? String(decoding: Data(contentsOf: outputFile), as: UTF8.self)) ?? ""
        }

        /// Waits (real time, up to `limit`) until the output contains `marker`.
        func wait(for marker: String, limit: Duration = .seconds(20)) -> Bool {
            let clock = MonotonicClock()
            let end = clock.now.advanced(by: limit)
            while clock.now < end {
                if text.contains(marker) { return true }
                usleep(10_000)
            }
            return text.contains(marker)
        }

        /// Waits (real time, up to `limit`) for the process to exit by itself.
        func waitForExit(limit: Duration = .seconds(20)) {
            let clock = MonotonicClock()
            let end = clock.now.advanced(by: limit)
            while process.isRunning, clock.now < end { usleep(10_000) }
        }

        /// The hex after "Keying material: ".
        var keyingMaterial: String? {
            let text = text
            guard let range = text.range(of: "Keying material: ") else { return nil }
            return String(text[range.upperBound...].prefix(while: { $0.isHexDigit }))
        }

        func stop() {
            if process.isRunning { process.terminate() }
            waitForExit(limit: .seconds(5))
            try? input.fileHandleForWriting.close()
        }
    }

    /// A fresh P-256 certificate and key from the openssl command, in `directory`; its fingerprint.
    static func makePeerCertificate(in directory: URL) throws -> DTLSFingerprint {
        let key = directory.appendingPathComponent("key.pem").path
        let certificate = directory.appendingPathComponent("cert.pem").path
        let request = try Child(arguments: [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key, "-out", certificate, "-subj", "/CN=openssl-peer", "-days", "1",
        ])
        request.waitForExit()
        let print = try Child(arguments: ["x509", "-in", certificate, "-noout", "-fingerprint", "-sha256"])
        print.waitForExit()
        _ = print.wait(for: "\n", limit: .seconds(5))
        // "sha256 Fingerprint=AB:CD:…" (the case of the prefix varies by version).
        let line = print.text.split(separator: "\n").first { $0.contains("=") } ?? ""
        let hex = line.split(separator: "=").last.map(String.init) ?? ""
        return try DTLSFingerprint(sdpValue: "sha-256 " + hex)
    }

    /// The exporter output `client key ‖ server key ‖ client salt ‖ server salt` from our keys.
    static func exporterHex(_ keys: DTLSSRTPKeys, role: DTLSEndpoint.Role) -> String {
        let client = role == .client ? keys.outbound : keys.inbound
        let server = role == .client ? keys.inbound : keys.outbound
        let bytes = client.masterKey + server.masterKey + client.masterSalt + server.masterSalt
        return bytes.map { String(format: "%02X", $0) }.joined()
    }

    /// Drives `endpoint` over `socket` with `peer` until it connects, fails, or 20 s pass (real time).
    static func drive(
        _ endpoint: DTLSEndpoint, socket: UDPReceiver, peer initialPeer: SocketAddress?, loseFirst: Bool = false
    ) throws -> DTLSSRTPKeys? {
        var lose = loseFirst
        let clock = MonotonicClock()
        let end = clock.now.advanced(by: .seconds(20))
        var peer = initialPeer
        endpoint.start(now: clock.now)
        while clock.now < end {
            while let action = endpoint.poll(now: clock.now) {
                switch action {
                case .send(let datagram):
                    if lose {
                        lose = false
                    } else if let peer {
                        try datagram.withUnsafeBytes { try socket.send($0, to: peer) }
                    }
                case .connected(let keys):
                    return keys
                case .failed(let error):
                    Issue.record("DTLS failed: \(error)")
                    return nil
                case .closed:
                    return nil
                }
            }
            let wait = endpoint.nextDeadline.map { clock.now.duration(to: $0) } ?? .milliseconds(100)
            try socket.receive(timeout: max(.zero, min(wait, .milliseconds(100)))) { datagram in
                if peer == nil { peer = datagram.source }
                if DatagramDemultiplexer.kind(of: datagram.bytes) == .dtls {
                    endpoint.receive(datagram.bytes, now: clock.now)
                }
            }
        }
        Issue.record("no DTLS handshake within 20 s")
        return nil
    }

    /// A loopback UDP port that was free a moment ago.
    static func freePort() throws -> UInt16 {
        try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: 0)).localAddress.port
    }

    @Test("our client against openssl s_server: SRTP_AES128_CM_SHA1_80 and the same exported keys")
    func clientAgainstSServer() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("playout-dtls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fingerprint = try Self.makePeerCertificate(in: directory)
        let port = try Self.freePort()
        let server = try Child(arguments: [
            "s_server", "-dtls1_2", "-accept", "127.0.0.1:\(port)", "-naccept", "1",
            "-cert", directory.appendingPathComponent("cert.pem").path, "-key", directory.appendingPathComponent("key.pem").path,
            "-use_srtp", "SRTP_AES128_CM_SHA1_80", "-keymatexport", "EXTRACTOR-dtls_srtp", "-keymatexportlen", "60",
            "-verify", "1",
        ])
        defer { server.stop() }
        #expect(server.wait(for: "ACCEPT"), "s_server did not start: \(server.text)")

        let socket = try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
        let endpoint = try DTLSEndpoint(role: .client, certificate: .shared(), remoteFingerprint: fingerprint)
        let keys = try #require(try Self.drive(endpoint, socket: socket, peer: SocketAddress(host: "127.0.0.1", port: port)))
        #expect(keys.profile == .aes128CMSHA1_80)
        #expect(server.wait(for: "Keying material: "), "s_server printed no keys: \(server.text)")
        _ = server.wait(for: "\n", limit: .seconds(1))
        #expect(server.keyingMaterial == Self.exporterHex(keys, role: .client))
        #expect(server.text.contains("SRTP Extension negotiated, profile=SRTP_AES128_CM_SHA1_80"))

        // close_notify reaches s_server.
        endpoint.close(now: MonotonicClock().now)
        while let action = endpoint.poll(now: MonotonicClock().now) {
            if case .send(let datagram) = action { try datagram.withUnsafeBytes { try socket.send($0, to: SocketAddress(host: "127.0.0.1", port: port)) } }
        }
        #expect(server.wait(for: "shut", limit: .seconds(10)) || server.wait(for: "DONE", limit: .seconds(1)), "\(server.text)")
    }

    @Test("our first ClientHello lost: the copy sent at our deadline completes the handshake with s_server")
    func retransmissionAgainstSServer() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("playout-dtls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fingerprint = try Self.makePeerCertificate(in: directory)
        let port = try Self.freePort()
        let server = try Child(arguments: [
            "s_server", "-dtls1_2", "-accept", "127.0.0.1:\(port)", "-naccept", "1",
            "-cert", directory.appendingPathComponent("cert.pem").path, "-key", directory.appendingPathComponent("key.pem").path,
            "-use_srtp", "SRTP_AES128_CM_SHA1_80", "-keymatexport", "EXTRACTOR-dtls_srtp", "-keymatexportlen", "60",
        ])
        defer { server.stop() }
        #expect(server.wait(for: "ACCEPT"), "s_server did not start: \(server.text)")
        let socket = try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
        let endpoint = try DTLSEndpoint(role: .client, certificate: .shared(), remoteFingerprint: fingerprint)
        let keys = try #require(try Self.drive(endpoint, socket: socket, peer: SocketAddress(host: "127.0.0.1", port: port), loseFirst: true))
        #expect(endpoint.statistics.retransmissions >= 1)
        #expect(server.wait(for: "Keying material: "), "s_server printed no keys: \(server.text)")
        _ = server.wait(for: "\n", limit: .seconds(1))
        #expect(server.keyingMaterial == Self.exporterHex(keys, role: .client))
    }

    @Test("our server against openssl s_client: the same exported keys, s_client's certificate checked")
    func serverAgainstSClient() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("playout-dtls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fingerprint = try Self.makePeerCertificate(in: directory)
        let socket = try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
        let endpoint = try DTLSEndpoint(role: .server, certificate: .shared(), remoteFingerprint: fingerprint)
        let client = try Child(arguments: [
            "s_client", "-dtls1_2", "-connect", "127.0.0.1:\(socket.localAddress.port)",
            "-cert", directory.appendingPathComponent("cert.pem").path, "-key", directory.appendingPathComponent("key.pem").path,
            "-use_srtp", "SRTP_AES128_CM_SHA1_80", "-keymatexport", "EXTRACTOR-dtls_srtp", "-keymatexportlen", "60",
        ])
        defer { client.stop() }
        let keys = try #require(try Self.drive(endpoint, socket: socket, peer: nil))
        #expect(keys.profile == .aes128CMSHA1_80)
        #expect(client.wait(for: "Keying material: "), "s_client printed no keys: \(client.text)")
        _ = client.wait(for: "\n", limit: .seconds(1))
        #expect(client.keyingMaterial == Self.exporterHex(keys, role: .server))

        // s_client's "Q" command ends the session with close_notify: our endpoint reports it.
        client.input.fileHandleForWriting.write(Data("Q\n".utf8))
        let clock = MonotonicClock()
        let end = clock.now.advanced(by: .seconds(10))
        var events: [DTLSEndpoint.Action] = []
        while endpoint.state == .connected, clock.now < end {
            try socket.receive(timeout: .milliseconds(100)) { datagram in
                if DatagramDemultiplexer.kind(of: datagram.bytes) == .dtls { endpoint.receive(datagram.bytes, now: clock.now) }
            }
            while let action = endpoint.poll(now: clock.now) { events.append(action) }
        }
        #expect(endpoint.state == .closed, "no close_notify from s_client: \(client.text)")
        #expect(events.last == .closed)
    }
}
