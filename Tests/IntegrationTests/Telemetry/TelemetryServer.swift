import Foundation
import PlayoutTelemetry
import PlayoutTelemetryBackends
import PlayoutHTTP
import PlayoutTesting
#if canImport(Glibc)
import Glibc
#endif

/// A real telemetry server (InfluxDB, VictoriaMetrics, Prometheus from Debian's packages) started
/// by a test on 127.0.0.1 with free ports and a temporary directory, ready once its ping endpoint
/// answers, and stopped (SIGTERM, then SIGKILL) with its directory removed.
final class TelemetryServer {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The program's name, for messages.
    let name: String
    /// The HTTP port.
    let port: UInt16
    /// The temporary directory holding its data, configuration and log.
    let directory: URL
    private let process: Process

    /// Whether `path` is an installed executable.
    static func isInstalled(_ path: String) -> Bool {
        FileManager.default.isExecutableFile(atPath: path)
    }

    /// Starts `executable` with `arguments(directory)` and waits (at most `timeout`) until
    /// `GET readinessPath` on `port` answers 2xx.
    ///
    /// - Throws: ``Failure`` naming the server and the end of its log when it exits or does not
    ///   become ready in time (it is stopped then).
    init(name: String, executable: String, port: UInt16, readinessPath: String, timeout: Duration = .seconds(30),
         files: [String: String] = [:], arguments: (URL) -> [String]) throws {
        self.name = name
        self.port = port
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("playout-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (file, contents) in files {
            try contents.write(to: directory.appendingPathComponent(file), atomically: true, encoding: .utf8)
        }
        let log = directory.appendingPathComponent("server.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments(directory)
        process.currentDirectoryURL = directory
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()

        let client = HTTPClientForTests(port: port)
        let deadline = ContinuousClock.now + timeout
        while true {
            if !process.isRunning {
                let tail = logTail()
                try? FileManager.default.removeItem(at: directory)
                throw Failure(description: "\(name) exited with status \(process.terminationStatus) before it was ready:\n\(tail)")
            }
            if let status = try? client.status(of: readinessPath), (200...299).contains(status) { break }
            if ContinuousClock.now > deadline {
                let tail = logTail()
                stop()
                throw Failure(description: "\(name) did not answer \(readinessPath) on 127.0.0.1:\(port) within \(timeout):\n\(tail)")
            }
            usleep(50_000)
        }
    }

    deinit { stop() }

    /// The last lines of the server's log.
    func logTail() -> String {
        let text = (try? String(contentsOf: directory.appendingPathComponent("server.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(15).joined(separator: "\n")
    }

    /// Stops the server (SIGTERM, SIGKILL after 10 s) and removes its directory. Idempotent.
    func stop() {
        if process.isRunning {
            process.terminate()
            let deadline = ContinuousClock.now + .seconds(10)
            while process.isRunning, ContinuousClock.now < deadline { usleep(20_000) }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// `GET target` on the server; the body parsed as JSON.
    func getJSON(_ target: String) throws -> Any {
        let response = try HTTPClientForTests(port: port).get(target)
        guard (200...299).contains(response.status) else {
            throw Failure(description: "\(name): GET \(target) answered \(response.status): \(String(decoding: response.body, as: UTF8.self))")
        }
        return try JSONSerialization.jsonObject(with: Data(response.body), options: [.fragmentsAllowed])
    }

    /// `GET target`; the body as text (VictoriaMetrics' export is JSON Lines).
    func getText(_ target: String) throws -> String {
        let response = try HTTPClientForTests(port: port).get(target)
        guard (200...299).contains(response.status) else {
            throw Failure(description: "\(name): GET \(target) answered \(response.status): \(String(decoding: response.body, as: UTF8.self))")
        }
        return String(decoding: response.body, as: UTF8.self)
    }

    /// `POST target` with no body; the status.
    func post(_ target: String) throws -> Int {
        try HTTPClientForTests(port: port).post(target)
    }

    /// Polls `probe` every 200 ms until it returns a value, at most `timeout`.
    static func poll<T>(_ what: String, timeout: Duration = .seconds(30), _ probe: () throws -> T?) throws -> T {
        let deadline = ContinuousClock.now + timeout
        var lastError: (any Error)?
        while ContinuousClock.now < deadline {
            do {
                if let value = try probe() { return value }
            } catch {
                lastError = error
            }
            usleep(200_000)
        }
        throw Failure(description: "\(what) did not happen within \(timeout)\(lastError.map { ": \($0)" } ?? "")")
    }

    /// `text` percent-encoded for a query string.
    static func encoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? text
    }
}

/// Queries go through the same HTTP/1.1 client the backends use (package API), one request each.
struct HTTPClientForTests {
    let port: UInt16

    struct Response {
        var status: Int
        var body: [UInt8]
    }

    func get(_ target: String) throws -> Response {
        try send("GET", target)
    }

    func post(_ target: String) throws -> Int {
        try send("POST", target).status
    }

    func status(of target: String) throws -> Int {
        try send("GET", target).status
    }

    private func send(_ method: String, _ target: String) throws -> Response {
        let response = try HTTPClient(host: "127.0.0.1", port: port, timeout: .seconds(10)).send(method: method, target: target)
        return Response(status: response.status, body: response.body)
    }
}
