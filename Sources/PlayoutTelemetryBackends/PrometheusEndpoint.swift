import PlayoutCore
public import Prometheus
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A minimal HTTP server for Prometheus to scrape: `GET /metrics` answers the registry's metrics
/// in the text exposition format (`text/plain; version=0.0.4`); any other path is 404, any other
/// method 405. One thread accepts and answers one connection at a time, each bounded in size
/// (8 KiB of request head) and time (2 s), and closed after its answer.
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
    /// The host the endpoint listens on when a spec names none: every interface (`0.0.0.0`), as
    /// exporters do, so a Prometheus on another machine can scrape it.
    public static let defaultHost = "0.0.0.0"
    /// The largest request head read: 8 KiB.
    public static let maximumRequestBytes = 8 * 1024
    /// How long a connection may take to send its request: 2 s.
    public static let requestTimeout: Duration = .seconds(2)

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

    private func serve() {
        if let comm = fopen("/proc/thread-self/comm", "w") {
            fputs("playout-metrics", comm)
            fclose(comm)
        }
        while !stopping.load(ordering: .relaxed) {
            var entry = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 100) > 0 else { continue }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
            answer(client)
            Glibc.close(client)
        }
    }

    /// Reads one request head from `client` (bounded in size and time) and answers it.
    private func answer(_ client: Int32) {
        let deadline = MonotonicClock().now.advanced(by: Self.requestTimeout)
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 2048)
        var parsed = HTTPRequestHead.Parsed.incomplete
        while parsed == .incomplete {
            let left = MonotonicClock().now.duration(to: deadline)
            guard left > .zero else { return }
            var entry = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, Int32(clamping: (left.nanoseconds + 999_999) / 1_000_000))
            if ready < 0, errno != EINTR { return }
            guard ready > 0 else { continue }
            let count = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EAGAIN || errno == EINTR { continue }
            guard count > 0 else { return }
            received.append(contentsOf: chunk[..<count])
            parsed = HTTPRequestHead.parse(received, limit: Self.maximumRequestBytes)
        }
        let response: [UInt8]
        switch parsed {
        case .request(let head) where head.path == "/metrics" && (head.method == "GET" || head.method == "HEAD"):
            let body = registry.emitToBuffer()
            response = Self.response(status: "200 OK", contentType: "text/plain; version=0.0.4; charset=utf-8", body: body, includeBody: head.method == "GET")
        case .request(let head) where head.path == "/metrics":
            response = Self.response(status: "405 Method Not Allowed", extraHeaders: "Allow: GET, HEAD\r\n", body: Array("use GET /metrics\n".utf8))
        case .request:
            response = Self.response(status: "404 Not Found", body: Array("not found: Prometheus metrics are at /metrics\n".utf8))
        case .tooLarge:
            response = Self.response(status: "431 Request Header Fields Too Large", body: Array("request head over \(Self.maximumRequestBytes) bytes\n".utf8))
        case .malformed, .incomplete:
            response = Self.response(status: "400 Bad Request", body: Array("not an HTTP/1.x request\n".utf8))
        }
        var offset = 0
        while offset < response.count {
            let sent = response.withUnsafeBytes { Glibc.send(client, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if sent > 0 {
                offset += sent
                continue
            }
            guard sent < 0, errno == EAGAIN || errno == EINTR else { return }
            let left = MonotonicClock().now.duration(to: deadline)
            guard left > .zero else { return }
            var entry = pollfd(fd: client, events: Int16(POLLOUT), revents: 0)
            _ = poll(&entry, 1, Int32(clamping: (left.nanoseconds + 999_999) / 1_000_000))
        }
    }

    private static func response(status: String, contentType: String = "text/plain; charset=utf-8", extraHeaders: String = "", body: [UInt8], includeBody: Bool = true) -> [UInt8] {
        var bytes = Array("HTTP/1.1 \(status)\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n\(extraHeaders)Connection: close\r\n\r\n".utf8)
        if includeBody { bytes.append(contentsOf: body) }
        return bytes
    }
}
