#if canImport(Glibc)
import Glibc
#endif
package import PlayoutCore

/// The small HTTP/1.1 server behind the endpoints Playout serves — Prometheus's `/metrics` and
/// the publisher's WHEP endpoint — on a thread of its own: one request per connection
/// (`Connection: close`), read by a bounded ``HTTPRequestReader``, non-blocking sockets under one
/// `poll`, every connection bounded in time (``Configuration/requestTimeout``, answer included)
/// and at most ``Configuration/maximumConnections`` at once: past it, the connection that has
/// waited longest without a whole request is closed for the new one, so slow clients cannot hold
/// the others off. What to answer is the owner's (`respond`, on the server's thread).
///
/// ```swift
/// let server = try HTTPServer(host: "127.0.0.1", port: 0, configuration: .init(threadName: "playout-metrics")) { request, _ in
///     HTTPServer.response(status: 200, body: Array("ok\n".utf8))
/// }
/// print(server.port)
/// ```
package final class HTTPServer: Sendable {
    /// The server's bounds.
    package struct Configuration: Sendable {
        /// Connections served at once.
        package var maximumConnections: Int
        /// How long a connection may take to send its request and take its answer.
        package var requestTimeout: Duration
        /// The bounds of one request.
        package var limits: HTTPRequestReader.Limits
        /// The thread's name (at most 15 characters show).
        package var threadName: String

        /// A configuration: 64 connections, 5 s each, the reader's default limits.
        package init(
            maximumConnections: Int = 64, requestTimeout: Duration = .seconds(5), limits: HTTPRequestReader.Limits = .init(), threadName: String
        ) {
            self.maximumConnections = maximumConnections
            self.requestTimeout = requestTimeout
            self.limits = limits
            self.threadName = threadName
        }
    }

    /// Connections the server closed before answering them.
    package struct Statistics: Sendable, Equatable {
        /// Past their ``Configuration/requestTimeout``.
        package var connectionsTimedOut = 0
        /// To make room for a new one.
        package var connectionsEvicted = 0
    }

    /// The answer to a whole request, or to one the reader refused (answer with its status), at
    /// that instant.
    package typealias Responder = @Sendable (Result<HTTPRequest, HTTPRequestReader.RequestError>, MonotonicInstant) -> [UInt8]

    /// The port listened on (the one the system chose when 0 was asked).
    package let port: UInt16
    private let configuration: Configuration
    private let respond: Responder
    private let listener: Int32
    private let stopping = LockedValue(false)
    private let thread = LockedValue<pthread_t?>(nil)
    private let statisticsValue = LockedValue(Statistics())

    /// Listens on `host`:`port` (an IPv4 or IPv6 address; port 0: any free port) and serves at once.
    ///
    /// - Throws: ``NetworkError``: `invalidAddress` for a host that is not an IP address, `system`
    ///   when the port cannot be bound (in use, privileged) or the thread cannot start.
    package init(host: String, port: UInt16, configuration: Configuration, respond: @escaping Responder) throws(NetworkError) {
        self.configuration = configuration
        self.respond = respond
        (listener, self.port) = try Self.listen(host: host, port: port)
        // The thread does not retain the server: deinit (or stop()) ends and joins it, so the
        // server is alive for as long as the thread runs.
        let unretained = Unmanaged.passUnretained(self).toOpaque()
        var handle = pthread_t()
        let status = pthread_create(&handle, nil, { argument in
            Unmanaged<HTTPServer>.fromOpaque(argument!)._withUnsafeGuaranteedRef { $0.serve() }
            return nil
        }, unretained)
        guard status == 0 else {
            Glibc.close(listener)
            stopping.withLock { $0 = true }
            throw NetworkError(.system(errno: status), "cannot start the \(configuration.threadName) thread: \(String(cString: strerror(status)))")
        }
        thread.withLock { $0 = handle }
    }

    deinit {
        stop()
    }

    /// Connections closed before their answer, so far.
    package var statistics: Statistics { statisticsValue.withLock { $0 } }

    /// Stops serving: the thread ends within 100 ms, the socket is closed. Idempotent.
    package func stop() {
        guard !stopping.withLock({ value in defer { value = true }; return value }) else { return }
        if let thread = thread.withLock({ $0 }) { pthread_join(thread, nil) }
        Glibc.close(listener)
    }

    /// A whole response: the status line (`200 OK`, the reason from the status), the fields, the
    /// body (left out for a HEAD with `includeBody: false`), `Connection: close`.
    package static func response(
        status: Int, contentType: String = "text/plain; charset=utf-8", extraHeaders: String = "", body: [UInt8], includeBody: Bool = true
    ) -> [UInt8] {
        var bytes = Array(
            "HTTP/1.1 \(status) \(reason(status))\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n\(extraHeaders)Connection: close\r\n\r\n".utf8
        )
        if includeBody { bytes.append(contentsOf: body) }
        return bytes
    }

    /// The reason phrase of the statuses the endpoints answer with.
    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 400: "Bad Request"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 431: "Request Header Fields Too Large"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }

    private static func listen(host: String, port: UInt16) throws(NetworkError) -> (Int32, UInt16) {
        var storage = sockaddr_storage()
        let length: socklen_t
        let family: Int32
        if host.contains(":") {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { throw NetworkError(.invalidAddress, "'\(host)' is not an IP address to listen on") }
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: address, as: sockaddr_in6.self) }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            family = AF_INET6
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { throw NetworkError(.invalidAddress, "'\(host)' is not an IP address to listen on") }
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: address, as: sockaddr_in.self) }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            family = AF_INET
        }
        let listener = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw NetworkError(.system(errno: errno), "cannot create a socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var boundLength = length
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                guard bind(listener, pointer, length) == 0, Glibc.listen(listener, 128) == 0 else { return errno }
                return getsockname(listener, pointer, &boundLength) == 0 ? 0 : errno
            }
        }
        guard result == 0 else {
            Glibc.close(listener)
            let shown = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            throw NetworkError(.system(errno: result), "cannot listen on \(shown): \(String(cString: strerror(result)))")
        }
        let bound = withUnsafeBytes(of: storage) { raw in
            family == AF_INET6 ? UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port) : UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
        }
        return (listener, bound)
    }

    /// One client connection: its request so far, then its answer being sent, and its deadline.
    private struct Client {
        var descriptor: Int32
        var deadline: MonotonicInstant
        var reader: HTTPRequestReader
        var response: [UInt8]?
        var sent = 0
    }

    private func serve() {
        if let comm = fopen("/proc/thread-self/comm", "w") {
            fputs(String(configuration.threadName.prefix(15)), comm)
            fclose(comm)
        }
        let clock = MonotonicClock()
        var clients: [Client] = []
        var chunk = [UInt8](repeating: 0, count: 4_096)
        defer { for client in clients { Glibc.close(client.descriptor) } }
        while !stopping.withLock({ $0 }) {
            let now = clock.now
            var timedOut = 0
            clients.removeAll { client in
                guard now >= client.deadline else { return false }
                Glibc.close(client.descriptor)
                timedOut += 1
                return true
            }
            if timedOut > 0 { statisticsValue.withLock { $0.connectionsTimedOut += timedOut } }
            var entries = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            entries += clients.map { pollfd(fd: $0.descriptor, events: Int16($0.response == nil ? POLLIN : POLLOUT), revents: 0) }
            let nearest = clients.map(\.deadline).min().map { now.duration(to: $0) } ?? .milliseconds(100)
            let wait = Int32(clamping: (min(max(nearest, .zero), .milliseconds(100)).nanoseconds + 999_999) / 1_000_000)
            guard poll(&entries, nfds_t(entries.count), wait) > 0 else { continue }
            var closed = Set<Int32>()
            for (index, entry) in entries.enumerated().dropFirst() where entry.revents != 0 {
                let position = index - 1
                if clients[position].response == nil {
                    let count = chunk.withUnsafeMutableBytes { recv(entry.fd, $0.baseAddress, $0.count, 0) }
                    if count < 0, errno == EAGAIN || errno == EINTR { continue }
                    guard count > 0 else {
                        closed.insert(entry.fd)
                        continue
                    }
                    do throws(HTTPRequestReader.RequestError) {
                        switch try clients[position].reader.consume(chunk[..<count]) {
                        case .needMore: continue
                        case .complete(let request): clients[position].response = respond(.success(request), clock.now)
                        }
                    } catch {
                        clients[position].response = respond(.failure(error), clock.now)
                    }
                }
                if let response = clients[position].response {
                    let offset = clients[position].sent
                    let sent = response.withUnsafeBytes { Glibc.send(entry.fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
                    if sent > 0 { clients[position].sent += sent }
                    if clients[position].sent >= response.count || (sent < 0 && errno != EAGAIN && errno != EINTR) { closed.insert(entry.fd) }
                }
            }
            if !closed.isEmpty {
                clients.removeAll { client in
                    guard closed.contains(client.descriptor) else { return false }
                    Glibc.close(client.descriptor)
                    return true
                }
            }
            guard entries[0].revents != 0 else { continue }
            // New connections, as many as wait; past the cap, the one that has waited longest
            // without a whole request makes room.
            while true {
                let descriptor = accept(listener, nil, nil)
                guard descriptor >= 0 else { break }
                _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
                _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
                if clients.count >= configuration.maximumConnections {
                    let waiting = clients.indices.filter { clients[$0].response == nil }
                    let oldest = (waiting.isEmpty ? Array(clients.indices) : waiting).min { clients[$0].deadline < clients[$1].deadline }!
                    Glibc.close(clients[oldest].descriptor)
                    clients.remove(at: oldest)
                    statisticsValue.withLock { $0.connectionsEvicted += 1 }
                }
                clients.append(Client(descriptor: descriptor, deadline: clock.now.advanced(by: configuration.requestTimeout), reader: HTTPRequestReader(limits: configuration.limits)))
            }
        }
    }
}
