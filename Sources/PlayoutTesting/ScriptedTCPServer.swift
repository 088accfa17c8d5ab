import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A TCP server on 127.0.0.1 for tests of network clients: it accepts connections one at a time
/// on its own thread and hands each to a script (answer with these bytes, stall, close at once),
/// so a test can play a misbehaving server with real sockets.
///
/// ```swift
/// let server = try ScriptedTCPServer { connection in
///     _ = connection.readRequest()
///     connection.write("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n")
/// }
/// defer { server.stop() }
/// // point a client at 127.0.0.1:\(server.port)
/// ```
public final class ScriptedTCPServer: Sendable {
    /// One accepted connection, as a script sees it.
    public struct Connection: Sendable {
        /// The socket (closed by the server after the script returns).
        public let descriptor: Int32

        /// Reads one HTTP request (head and a `Content-Length` body) or whatever arrives within
        /// `timeout`, at most 1 MiB; returns the bytes.
        @discardableResult
        public func readRequest(timeout: Duration = .seconds(5)) -> [UInt8] {
            var received: [UInt8] = []
            let deadline = ContinuousClock.now + timeout
            var chunk = [UInt8](repeating: 0, count: 65536)
            while received.count < 1 << 20, ContinuousClock.now < deadline {
                if let end = Self.headEnd(received) {
                    let head = String(decoding: received[..<end], as: UTF8.self).lowercased()
                    var length = 0
                    if let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }) {
                        length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
                    }
                    if received.count >= end + 4 + length { break }
                }
                var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&entry, 1, 50) >= 0 else { break }
                if entry.revents == 0 { continue }
                let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                if count <= 0 { break }
                received.append(contentsOf: chunk[..<count])
            }
            return received
        }

        private static func headEnd(_ bytes: [UInt8]) -> Int? {
            guard bytes.count >= 4 else { return nil }
            for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
                return index
            }
            return nil
        }

        /// Writes `bytes` (as much as the peer takes).
        public func write(_ bytes: [UInt8]) {
            var offset = 0
            while offset < bytes.count {
                let sent = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
                if sent <= 0 { return }
                offset += sent
            }
        }

        /// Keeps the connection open without answering for `duration` (a stalled server).
        public func stall(for duration: Duration) {
            let deadline = ContinuousClock.now + duration
            while ContinuousClock.now < deadline { usleep(10_000) }
        }

        /// Writes `text` as UTF-8.
        public func write(_ text: String) {
            write(Array(text.utf8))
        }
    }

    /// The port the server listens on (on 127.0.0.1).
    public let port: UInt16
    /// How many connections it has accepted.
    public var acceptedCount: Int { accepted.load(ordering: .relaxed) }

    private let listener: Int32
    private let stopping = Atomic<Bool>(false)
    private let accepted = Atomic<Int>(0)
    private let finished = Mutex<Bool>(false)

    /// Starts a server on 127.0.0.1 (a free port the system picks) whose script runs once per
    /// accepted connection, on the server's thread; the connection is closed when it returns.
    public init(script: @escaping @Sendable (Connection) -> Void) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                guard bind(listener, pointer, length) == 0, listen(listener, 16) == 0 else { return -1 }
                return getsockname(listener, pointer, &length)
            }
        }
        guard bound == 0 else {
            close(listener)
            throw POSIXError(.EADDRINUSE)
        }
        self.listener = listener
        self.port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in run(script) }
        thread.start()
    }

    private func run(_ script: @Sendable (Connection) -> Void) {
        defer { finished.withLock { $0 = true } }
        while !stopping.load(ordering: .relaxed) {
            var entry = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 50) > 0 else { continue }
            let descriptor = accept(listener, nil, nil)
            guard descriptor >= 0 else { continue }
            accepted.add(1, ordering: .relaxed)
            script(Connection(descriptor: descriptor))
            close(descriptor)
        }
    }

    /// Stops accepting, waits (at most 5 s) for the running script to return and closes the
    /// listening socket.
    public func stop() {
        stopping.store(true, ordering: .relaxed)
        let deadline = ContinuousClock.now + .seconds(5)
        while !finished.withLock({ $0 }), ContinuousClock.now < deadline { usleep(5_000) }
        close(listener)
    }

    /// A TCP port on 127.0.0.1 that nobody listens on now (bound, read and released).
    public static func unusedPort() -> UInt16 {
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(probe) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(probe, pointer, length) == 0 ? getsockname(probe, pointer, &length) : -1
            }
        }
        return UInt16(bigEndian: address.sin_port)
    }
}
