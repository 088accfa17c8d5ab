import Foundation
#if canImport(Glibc)
import Glibc
#endif
import PlayoutCore
import PlayoutHTTP
import PlayoutTesting
@testable import PlayoutWebRTC
import RealTimeTesting
import Testing

/// HTTPS through OpenSSL against `openssl s_server -www` on loopback with a throwaway
/// self-signed certificate (SAN `DNS:localhost`, `IP:127.0.0.1`).
@Suite("WHEP over TLS", .serialized, .realTime)
struct WHEPTLSTests {
    /// A certificate, its key, and an `openssl s_server -www` serving them on 127.0.0.1.
    final class TLSServer {
        let directory: URL
        let port: UInt16
        let process: Process
        var certificate: String { directory.appendingPathComponent("cert.pem").path }

        init(subjectAltName: String = "DNS:localhost,IP:127.0.0.1") throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("playout-whep-tls-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let request = Process()
            request.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            request.arguments = [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
                "-subj", "/CN=playout-test", "-addext", "subjectAltName=\(subjectAltName)",
                "-keyout", directory.appendingPathComponent("key.pem").path, "-out", directory.appendingPathComponent("cert.pem").path,
            ]
            request.standardError = FileHandle.nullDevice
            try request.run()
            request.waitUntilExit()
            guard request.terminationStatus == 0 else { throw WHEPError(.tlsFailed, "openssl req failed") }
            port = ScriptedTCPServer.unusedPort()
            process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = [
                "s_server", "-accept", "127.0.0.1:\(port)", "-cert", directory.appendingPathComponent("cert.pem").path,
                "-key", directory.appendingPathComponent("key.pem").path, "-www", "-quiet",
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Wait for the listening socket (the event), at most 5 s.
            let deadline = ContinuousClock.now + .seconds(5)
            while ContinuousClock.now < deadline {
                if Self.isListening(port) { return }
                Thread.sleep(forTimeInterval: 0.02)
            }
        }

        /// Whether something accepts TCP connections on the port.
        static func isListening(_ port: UInt16) -> Bool {
            do {
                let socket = try TCPConnection.open(host: "127.0.0.1", port: port, deadline: MonotonicClock().now.advanced(by: .milliseconds(200)))
                socket.close()
                return true
            } catch {
                return false
            }
        }

        func stop() {
            // s_server ignores SIGTERM while it waits in accept: SIGKILL.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    func get(_ url: String, tls: WHEPTLSOptions) throws(WHEPError) -> WHEPResponse {
        try WHEPTransport(maximumBodyBytes: 64 * 1024, tls: tls).perform(
            WHEPRequest(method: "GET", url: try WHEPURL(url), headers: [], body: []),
            deadline: MonotonicClock().now.advanced(by: .seconds(5))
        )
    }

    @Test("a self-signed certificate is refused with a clear verification error")
    func refusedWithoutInsecure() throws {
        let server = try TLSServer()
        defer { server.stop() }
        #expect { try get("https://127.0.0.1:\(server.port)/", tls: .init()) } throws: { error in
            let error = error as! WHEPError
            return error.code == .certificateRejected && error.message.contains("self-signed certificate") && error.message.contains("--insecure")
        }
    }

    @Test("insecure skips the check: the answer reads (s_server's HTTP/1.0 status page)")
    func acceptedInsecure() throws {
        let server = try TLSServer()
        defer { server.stop() }
        let response = try get("https://127.0.0.1:\(server.port)/", tls: .init(insecure: true))
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self).contains("Ciphers"))
    }

    @Test("trusting the certificate verifies it, by IP address and by host name (SNI)")
    func trusted() throws {
        let server = try TLSServer()
        defer { server.stop() }
        let options = WHEPTLSOptions(trustedCertificatesFile: server.certificate)
        #expect(try get("https://127.0.0.1:\(server.port)/", tls: options).status == 200)
        #expect(try get("https://localhost:\(server.port)/", tls: options).status == 200)
    }

    @Test("a trusted certificate for another name is refused: the host name is checked")
    func hostNameChecked() throws {
        let server = try TLSServer(subjectAltName: "DNS:whep.example")
        defer { server.stop() }
        #expect { try get("https://127.0.0.1:\(server.port)/", tls: .init(trustedCertificatesFile: server.certificate)) } throws: { error in
            let error = error as! WHEPError
            return error.code == .certificateRejected && error.message.contains("mismatch")
        }
    }

    @Test("plain HTTP to a TLS port, and TLS to a plain port, fail clearly and within the bound")
    func mismatchedSchemes() throws {
        let server = try TLSServer()
        defer { server.stop() }
        #expect(throws: WHEPError.self) { try get("http://127.0.0.1:\(server.port)/", tls: .init()) }
        let plain = try ScriptedTCPServer { connection in
            connection.readRequest(timeout: .seconds(1))
            connection.write("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        }
        defer { plain.stop() }
        #expect { try get("https://127.0.0.1:\(plain.port)/", tls: .init(insecure: true)) } throws: { ($0 as! WHEPError).code == .tlsFailed || ($0 as! WHEPError).code == .connectionFailed }
    }
}
