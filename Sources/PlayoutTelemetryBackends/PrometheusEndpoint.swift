public import PlayoutHTTP
import PlayoutCore
public import Prometheus
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A minimal HTTP server for Prometheus to scrape: `GET /metrics` answers the registry's metrics
/// in the text exposition format (`text/plain; version=0.0.4`); any other path is 404, any other
/// method 405. One thread serves up to ``maximumConnections`` connections at once, multiplexed
/// with `poll`: each is bounded in size (8 KiB of request head) and time (2 s to send its request
/// and take the answer), and closed after its answer. Slow clients (slowloris) cannot block a
/// scrape: a scrape is answered as soon as its own request is in, and when the cap is reached the
/// connection that has waited longest without a whole request is closed to make room.
///
/// Pair it with a ``MetricsBackend`` fed through ``metricsFactory`` (a `PrometheusMetricsFactory`
/// on ``registry``; the global `MetricsSystem` is never touched):
///
/// ```swift
/// let endpoint = try PrometheusEndpoint(spec: "127.0.0.1:9464")   // --telemetry prometheus:127.0.0.1:9464
/// let metrics = MetricsBackend(factory: endpoint.metricsFactory)
/// try metrics.deliver(records)
/// // … scrape http://127.0.0.1:9464/metrics …
/// endpoint.stop()
/// ```
public final class PrometheusEndpoint: Sendable {
    /// The host the endpoint listens on when a spec names none: loopback only (`127.0.0.1`), so
    /// that metrics are not offered to the network by default; name a host
    /// (`prometheus:0.0.0.0:9464`) for a Prometheus on another machine.
    public static let defaultHost = "127.0.0.1"
    /// The largest request head read: 8 KiB.
    public static let maximumRequestBytes = 8 * 1024
    /// How long a connection may take to send its request and take its answer: 2 s.
    public static let requestTimeout: Duration = .seconds(2)
    /// Connections served at once: 32. Past it, the oldest connection still sending its request
    /// is closed for the new one.
    public static let maximumConnections = 32

    /// The registry whose metrics are served.
    public let registry: PrometheusCollectorRegistry
    /// The address listened on.
    public let host: String
    /// The port listened on (the one the system chose when 0 was asked).
    public let port: UInt16

    private let listener: Int32
    private let stopping = Atomic<Bool>(false)
    private let thread = Mutex<pthread_t?>(nil)

    /// A factory creating swift-metrics metrics in ``registry``.
    public var metricsFactory: PrometheusMetricsFactory {
        PrometheusMetricsFactory(registry: registry)
    }

    /// Starts serving `registry` on `host`:`port` (port 0: any free port, see ``port``).
    ///
    /// - Throws: ``NetworkTelemetryError``: `invalidAddress` for a host that is not an IPv4 or
    ///   IPv6 address, `system` when the port cannot be bound (in use, privileged).
    public init(host: String = PrometheusEndpoint.defaultHost, port: UInt16, registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) throws(NetworkTelemetryError) {
        self.registry = registry
        self.host = host
        var storage = sockaddr_storage()
        let length: socklen_t
        let family: Int32
        if host.contains(":") {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else {
                throw NetworkTelemetryError(.invalidAddress, "'\(host)' is not an IP address to listen on, e.g. prometheus:127.0.0.1:9464 or prometheus:[::1]:9464")
            }
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: address, as: sockaddr_in6.self) }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            family = AF_INET6
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
                throw NetworkTelemetryError(.invalidAddress, "'\(host)' is not an IP address to listen on, e.g. prometheus:127.0.0.1:9464 or prometheus:[::1]:9464")
            }
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: address, as: sockaddr_in.self) }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            family = AF_INET
        }
        let listener = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw NetworkTelemetryError(.system(errno: errno), "cannot create a socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var boundLength = length
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                guard bind(listener, pointer, length) == 0, listen(listener, 64) == 0 else { return errno }
                return getsockname(listener, pointer, &boundLength) == 0 ? 0 : errno
            }
        }
        guard result == 0 else {
            Glibc.close(listener)
            let shown = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            throw NetworkTelemetryError(.system(errno: result), "cannot serve /metrics on \(shown): \(String(cString: strerror(result)))")
        }
        self.listener = listener
        self.port = withUnsafeBytes(of: storage) { raw in
            family == AF_INET6 ? UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port) : UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
        }
        try start()
    }

    /// Starts serving on `[HOST:]PORT` as `--telemetry prometheus:[HOST:]PORT` gives it
    /// (`9464`, `127.0.0.1:9464`, `[::1]:9464`); the host defaults to ``defaultHost``, port 0 picks a
    /// free port (read ``port``).
    ///
    /// - Throws: ``NetworkTelemetryError`` with code `invalidAddress` and an example for a bad spec.
    public convenience init(spec: String, registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) throws(NetworkTelemetryError) {
        let (host, port) = try Self.address(parsing: spec)
        try self.init(host: host, port: port, registry: registry)
    }

    /// The host and port `[HOST:]PORT` names (the host defaults to ``defaultHost``), checked as
    /// ``init(spec:registry:)`` checks them, without listening.
    ///
    /// - Throws: ``NetworkTelemetryError`` with code `invalidAddress` and an example.
    public static func address(parsing spec: String) throws(NetworkTelemetryError) -> (host: String, port: UInt16) {
        if !spec.isEmpty, spec.count <= 5, spec.allSatisfy({ $0.isASCII && $0.isNumber }), let port = UInt16(spec) {
            return (defaultHost, port)
        }
        return try GraphiteBackend.parse(address: spec, example: "prometheus:127.0.0.1:9464 or prometheus:9464", allowingPortZero: true)
    }

    deinit {
        stop()
    }

    /// Stops serving: the accept loop ends within 100 ms, the socket is closed. Idempotent.
    public func stop() {
        guard !stopping.exchange(true, ordering: .relaxed) else { return }
        if let thread = thread.withLock({ $0 }) { pthread_join(thread, nil) }
        Glibc.close(listener)
    }

    private func start() throws(NetworkTelemetryError) {
        // The thread does not retain the endpoint: deinit (or stop()) ends and joins it, so the
        // endpoint is alive for as long as the thread runs, and dropping the last reference stops it.
        let unretained = Unmanaged.passUnretained(self).toOpaque()
        var handle = pthread_t()
        let status = pthread_create(&handle, nil, { argument in
            Unmanaged<PrometheusEndpoint>.fromOpaque(argument!)._withUnsafeGuaranteedRef { $0.serve() }
            return nil
        }, unretained)
        guard status == 0 else {
            // deinit closes the listener.
            throw NetworkTelemetryError(.system(errno: status), "cannot start the /metrics thread: \(String(cString: strerror(status)))")
        }
        thread.withLock { $0 = handle }
    }

    /// One client connection: its request so far, then its answer being sent, and its deadline.
    private struct Client {
        var descriptor: Int32
        var deadline: MonotonicInstant
        var received: [UInt8] = []
        var response: [UInt8]?
        var sent = 0
    }

    private func serve() {
        if let comm = fopen("/proc/thread-self/comm", "w") {
            fputs("playout-metrics", comm)
            fclose(comm)
        }
        var clients: [Client] = []
        var chunk = [UInt8](repeating: 0, count: 2048)
        defer { for client in clients { Glibc.close(client.descriptor) } }
        while !stopping.load(ordering: .relaxed) {
            let now = MonotonicClock().now
            // Connections past their deadline are closed.
            clients.removeAll { client in
                guard now >= client.deadline else { return false }
                Glibc.close(client.descriptor)
                return true
            }
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
                    clients[position].received.append(contentsOf: chunk[..<count])
                    let parsed = HTTPRequestHead.parse(clients[position].received, limit: Self.maximumRequestBytes)
                    guard parsed != .incomplete else { continue }
                    clients[position].response = response(to: parsed)
                    clients[position].received = []
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
            // New connections, as many as wait (each closes the oldest unfinished one past the cap).
            while true {
                let descriptor = accept(listener, nil, nil)
                guard descriptor >= 0 else { break }
                _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
                _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
                if clients.count >= Self.maximumConnections {
                    let oldest = clients.indices.min { clients[$0].deadline < clients[$1].deadline }!
                    Glibc.close(clients[oldest].descriptor)
                    clients.remove(at: oldest)
                }
                clients.append(Client(descriptor: descriptor, deadline: MonotonicClock().now.advanced(by: Self.requestTimeout)))
            }
        }
    }

    /// The answer to a parsed request head.
    private func response(to parsed: HTTPRequestHead.Parsed) -> [UInt8] {
        switch parsed {
        case .request(let head) where head.path == "/metrics" && (head.method == "GET" || head.method == "HEAD"):
            let body = registry.emitToBuffer()
            return Self.response(status: "200 OK", contentType: "text/plain; version=0.0.4; charset=utf-8", body: body, includeBody: head.method == "GET")
        case .request(let head) where head.path == "/metrics":
            return Self.response(status: "405 Method Not Allowed", extraHeaders: "Allow: GET, HEAD\r\n", body: Array("use GET /metrics\n".utf8))
        case .request:
            return Self.response(status: "404 Not Found", body: Array("not found: Prometheus metrics are at /metrics\n".utf8))
        case .tooLarge:
            return Self.response(status: "431 Request Header Fields Too Large", body: Array("request head over \(Self.maximumRequestBytes) bytes\n".utf8))
        case .malformed, .incomplete:
            return Self.response(status: "400 Bad Request", body: Array("not an HTTP/1.x request\n".utf8))
        }
    }

    private static func response(status: String, contentType: String = "text/plain; charset=utf-8", extraHeaders: String = "", body: [UInt8], includeBody: Bool = true) -> [UInt8] {
        var bytes = Array("HTTP/1.1 \(status)\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n\(extraHeaders)Connection: close\r\n\r\n".utf8)
        if includeBody { bytes.append(contentsOf: body) }
        return bytes
    }
}
