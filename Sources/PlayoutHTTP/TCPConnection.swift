package import PlayoutCore
#if canImport(Glibc)
import Glibc
#endif

/// One blocking TCP connection (IPv4 or IPv6) whose every operation ends by a deadline: connect,
/// send and receive poll a non-blocking socket for at most the time left, so a peer that accepts
/// and then stalls costs at most the caller's timeout.
///
/// Not thread-safe: a backend owns its connection and uses it from its delivery thread only.
/// Host names resolve with `getaddrinfo` (which the system, not the deadline, bounds; use a
/// numeric address or a name from `/etc/hosts` where that matters).
package final class TCPConnection {
    /// The socket, or -1 once closed (TLS runs over it).
    package private(set) var descriptor: Int32
    /// `host:port` as given, for messages.
    package let peer: String
    /// How long the connection took to open: about one round trip.
    package private(set) var connectDuration: Duration = .zero

    private init(descriptor: Int32, peer: String) {
        self.descriptor = descriptor
        self.peer = peer
    }

    deinit { close() }

    /// Connects to `host`:`port` (a name, an IPv4 or an IPv6 address, without brackets), trying
    /// each resolved address in turn until `deadline`.
    ///
    /// - Throws: ``NetworkError``: `hostNotFound`, `resolutionFailed`, `connectionRefused`,
    ///   `timedOut` or `system`.
    package static func connect(host: String, port: UInt16, deadline: MonotonicInstant) throws(NetworkError) -> TCPConnection {
        let peer = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            let reason = String(cString: gai_strerror(status))
            if status == EAI_NONAME || status == -5 /* EAI_NODATA */ {
                throw NetworkError(.hostNotFound, "cannot resolve '\(host)': \(reason)")
            }
            throw NetworkError(.resolutionFailed(code: status), "cannot resolve '\(host)' now: \(reason)")
        }
        defer { freeaddrinfo(first) }
        var lastError = NetworkError(.connectionRefused, "connection to \(peer) refused")
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            entry = current.pointee.ai_next
            do throws(NetworkError) {
                let started = MonotonicClock().now
                let descriptor = try connectOne(current.pointee, peer: peer, deadline: deadline)
                let connection = TCPConnection(descriptor: descriptor, peer: peer)
                connection.connectDuration = started.duration(to: MonotonicClock().now)
                return connection
            } catch {
                lastError = error
                if error.code == .timedOut { break }
            }
        }
        throw lastError
    }

    private static func connectOne(_ address: addrinfo, peer: String, deadline: MonotonicInstant) throws(NetworkError) -> Int32 {
        let descriptor = socket(address.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw systemError(errno, "cannot create a socket for \(peer)") }
        var one: Int32 = 1
        _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        if Glibc.connect(descriptor, address.ai_addr, address.ai_addrlen) == 0 { return descriptor }
        let code = errno
        guard code == EINPROGRESS || code == EINTR else {
            Glibc.close(descriptor)
            throw connectError(code, peer: peer)
        }
        do throws(NetworkError) {
            try wait(descriptor, for: Int16(POLLOUT), until: deadline, doing: "connecting to \(peer)")
        } catch {
            Glibc.close(descriptor)
            throw error
        }
        var failure: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &failure, &length)
        guard failure == 0 else {
            Glibc.close(descriptor)
            throw connectError(failure, peer: peer)
        }
        return descriptor
    }

    private static func connectError(_ code: Int32, peer: String) -> NetworkError {
        if code == ECONNREFUSED { return NetworkError(.connectionRefused, "connection to \(peer) refused: is the server running?") }
        if code == ETIMEDOUT { return NetworkError(.timedOut, "connecting to \(peer) timed out") }
        return systemError(code, "cannot connect to \(peer)")
    }

    private static func systemError(_ code: Int32, _ what: String) -> NetworkError {
        NetworkError(.system(errno: code), "\(what): \(String(cString: strerror(code)))")
    }

    /// Polls the socket for `events` (`POLLIN`, `POLLOUT`) until `deadline`; returns when ready
    /// (or on an error or hang-up condition, which the next call reports).
    package func wait(for events: Int16, until deadline: MonotonicInstant, doing what: @autoclosure () -> String) throws(NetworkError) {
        try Self.wait(descriptor, for: events, until: deadline, doing: what())
    }

    private static func wait(_ descriptor: Int32, for events: Int16, until deadline: MonotonicInstant, doing what: @autoclosure () -> String) throws(NetworkError) {
        while true {
            let left = MonotonicClock().now.duration(to: deadline)
            guard left > .zero else { throw NetworkError(.timedOut, "\(what()) timed out") }
            let milliseconds = Int32(clamping: (left.nanoseconds + 999_999) / 1_000_000)
            var entry = pollfd(fd: descriptor, events: events, revents: 0)
            let ready = poll(&entry, 1, milliseconds)
            if ready > 0 { return }
            if ready < 0, errno != EINTR { throw systemError(errno, what()) }
        }
    }

    /// Sends all of `bytes` before `deadline`.
    ///
    /// - Throws: `timedOut`, `connectionClosed` (reset or closed by the peer) or `system`.
    package func send(_ bytes: [UInt8], deadline: MonotonicInstant) throws(NetworkError) {
        guard descriptor >= 0 else { throw NetworkError(.connectionClosed, "the connection to \(peer) is closed") }
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { raw in
                Glibc.send(descriptor, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent > 0 {
                offset += sent
                continue
            }
            let code = errno
            if code == EAGAIN || code == EWOULDBLOCK || code == EINTR {
                try Self.wait(descriptor, for: Int16(POLLOUT), until: deadline, doing: "sending to \(peer)")
                continue
            }
            if code == EPIPE || code == ECONNRESET {
                throw NetworkError(.connectionClosed, "\(peer) closed the connection while we were sending")
            }
            throw Self.systemError(code, "sending to \(peer)")
        }
    }

    /// Receives at most `buffer.count` bytes, waiting for some until `deadline`; returns how many
    /// arrived, 0 when the peer has closed its side.
    ///
    /// - Throws: `timedOut`, `connectionClosed` (reset) or `system`.
    package func receive(into buffer: UnsafeMutableRawBufferPointer, deadline: MonotonicInstant) throws(NetworkError) -> Int {
        guard descriptor >= 0 else { throw NetworkError(.connectionClosed, "the connection to \(peer) is closed") }
        while true {
            let count = recv(descriptor, buffer.baseAddress, buffer.count, 0)
            if count >= 0 { return count }
            let code = errno
            if code == EAGAIN || code == EWOULDBLOCK || code == EINTR {
                try Self.wait(descriptor, for: Int16(POLLIN), until: deadline, doing: "waiting for \(peer) to answer")
                continue
            }
            if code == ECONNRESET {
                throw NetworkError(.connectionClosed, "\(peer) reset the connection")
            }
            throw Self.systemError(code, "receiving from \(peer)")
        }
    }

    /// Bytes written that the peer's TCP has not acknowledged yet (Linux `SIOCOUTQ`: unsent and
    /// unacknowledged); 0 when closed.
    package var unacknowledgedBytes: Int {
        guard descriptor >= 0 else { return 0 }
        var count: Int32 = 0
        guard ioctl(descriptor, UInt(TIOCOUTQ), &count) == 0 else { return 0 }
        return Int(count)
    }

    /// What became of the connection, looked at without waiting: open, closed by the peer after
    /// it acknowledged every byte written, or lost (reset, or closed with bytes unacknowledged).
    package enum Health: Equatable, Sendable {
        case open
        case closedByPeer
        case lost(String)
    }

    /// The connection's ``Health`` now (reads and discards anything the peer sent unasked).
    package var health: Health {
        guard descriptor >= 0 else { return .lost("the connection to \(peer) is closed") }
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 0) > 0 else { return .open }
        var scratch = [UInt8](repeating: 0, count: 512)
        let count = scratch.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if count < 0 {
            let code = errno
            if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return .open }
            return .lost(code == ECONNRESET ? "\(peer) reset the connection" : "\(peer): \(String(cString: strerror(code)))")
        }
        let unacknowledged = unacknowledgedBytes
        if count == 0 {
            return unacknowledged == 0 ? .closedByPeer : .lost("\(peer) closed the connection with \(unacknowledged) bytes unacknowledged")
        }
        return .open  // the peer talks back (a plaintext server should not): ignored
    }

    /// Waits until the peer's TCP has acknowledged every byte written, by `deadline`.
    ///
    /// - Throws: `connectionClosed` when the peer resets or closes the connection first,
    ///   `timedOut` when bytes are still unacknowledged at the deadline (a server that stopped
    ///   reading: its receive window is full).
    package func waitUntilAcknowledged(deadline: MonotonicInstant) throws(NetworkError) {
        while true {
            switch health {
            case .open: break
            case .closedByPeer: throw NetworkError(.connectionClosed, "\(peer) closed the connection")
            case .lost(let reason): throw NetworkError(.connectionClosed, reason)
            }
            let left = unacknowledgedBytes
            if left == 0 { return }
            guard MonotonicClock().now < deadline else {
                throw NetworkError(.timedOut, "\(peer) did not take \(left) bytes within the timeout (is it reading?)")
            }
            var pause = timespec(tv_sec: 0, tv_nsec: 1_000_000)
            nanosleep(&pause, nil)
        }
    }

    /// Waits `grace` (or until `deadline`, whichever is first) for the peer to reset or close the
    /// connection — what a server that drops every connection does right after accepting it.
    ///
    /// - Throws: `connectionClosed` when it did.
    package func expectNoHangUp(within grace: Duration, deadline: MonotonicInstant) throws(NetworkError) {
        let end = min(MonotonicClock().now.advanced(by: grace), deadline)
        while true {
            switch health {
            case .open: break
            case .closedByPeer: throw NetworkError(.connectionClosed, "\(peer) closed the connection right after the batch")
            case .lost(let reason): throw NetworkError(.connectionClosed, reason)
            }
            let left = MonotonicClock().now.duration(to: end)
            guard left > .zero, descriptor >= 0 else { return }
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN) | 0x2000 /* POLLRDHUP */, revents: 0)
            _ = poll(&entry, 1, Int32(clamping: (left.nanoseconds + 999_999) / 1_000_000))
            if entry.revents == 0 { return }
        }
    }

    /// Whether the connection can still carry a request: not closed by us, and the peer has
    /// neither closed it nor sent anything unasked (either makes a kept-alive connection unusable).
    package var isReusable: Bool {
        guard descriptor >= 0 else { return false }
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 0
    }

    /// Closes the socket (idempotent).
    package func close() {
        if descriptor >= 0 {
            Glibc.close(descriptor)
            descriptor = -1
        }
    }
}
