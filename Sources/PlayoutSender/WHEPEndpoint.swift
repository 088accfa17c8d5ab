#if canImport(Glibc)
import Glibc
#endif
import Logging
import Playout
import PlayoutHTTP
public import PlayoutCore
public import PlayoutRTP
public import PlayoutWebRTC

/// The built-in publisher's WHEP endpoint (draft-ietf-wish-whep), ICE-lite: an HTTP/1.1 server
/// on its own thread takes subscribers' offers and answers them; the sessions' media runs on the
/// publisher's thread over ONE UDP socket for all sessions (RFC 7983 demultiplexing), through
/// ``WHEPRouter``.
///
/// HTTP (plain, one request per connection, `Connection: close`):
/// - `POST <any path>` with `Content-Type: application/sdp` → `201 Created`, the answer,
///   `Location: /whep/session/<id>`; a bad offer → 400 with a short text; not SDP → 415;
///   a body over 64 KiB → 413; as many sessions as ``Configuration/maximumSessions`` → 503.
/// - `DELETE /whep/session/<id>` → 200 and the session ends (its media stops), or 200 for a
///   session that ended before its DELETE (a close_notify first); unknown → 404.
/// - `OPTIONS` → 204 with CORS headers (a browser's preflight); any other method → 405.
/// Connections are bounded in number (``Configuration/maximumConnections``: the oldest one still
/// sending its request is closed for a new one) and in time (``Configuration/requestTimeout``),
/// so slow or hostile clients cannot block other requests. Every rejection is counted in
/// ``Statistics/rejected`` by status.
///
/// ```swift
/// let endpoint = try WHEPEndpoint(configuration: .init(listen: SocketAddress(host: "127.0.0.1", port: 0)), tracks: tracks)
/// print(endpoint.url)   // http://127.0.0.1:40123/whep
/// let router = endpoint.makeRouter(…)   // the publisher's thread drives it
/// ```
public final class WHEPEndpoint: @unchecked Sendable {
    /// Bounds and address.
    public struct Configuration: Sendable, Hashable {
        /// Where HTTP listens (port 0: a free port); the UDP socket binds the same host, a free port.
        public var listen: SocketAddress
        /// Sessions at once: 1,000 by default; more are refused with 503.
        public var maximumSessions: Int
        /// HTTP connections at once: 64 by default.
        public var maximumConnections: Int
        /// How long a connection may take to send its request and take its answer: 5 s.
        public var requestTimeout: Duration
        /// The largest offer accepted: 64 KiB.
        public var maximumBodyBytes: Int

        /// A configuration with the documented defaults.
        public init(
            listen: SocketAddress, maximumSessions: Int = 1_000, maximumConnections: Int = 64, requestTimeout: Duration = .seconds(5),
            maximumBodyBytes: Int = 64 * 1024
        ) {
            self.listen = listen
            self.maximumSessions = maximumSessions
            self.maximumConnections = maximumConnections
            self.requestTimeout = requestTimeout
            self.maximumBodyBytes = maximumBodyBytes
        }
    }

    /// What the endpoint did.
    public struct Statistics: Sendable, Equatable {
        /// HTTP requests read whole (or refused while being read).
        public var requests = 0
        /// Sessions answered with 201.
        public var sessionsOpened = 0
        /// Sessions ended, by reason.
        public var sessionsEnded: [WHEPSessionEnd: Int] = [:]
        /// Requests refused, by status (400, 404, 405, 411, 413, 415, 431, 503).
        public var rejected: [Int: Int] = [:]
        /// Connections closed because they did not finish in time.
        public var connectionsTimedOut = 0
        /// Connections closed to make room for a new one.
        public var connectionsEvicted = 0
        /// Datagrams on the media socket from no session's address (DTLS, SRTCP) or for no
        /// session's ufrag (STUN): dropped.
        public var datagramsWithoutSession = 0
        /// Datagrams on the media socket of no RFC 7983 kind, or RTP from a subscriber: dropped.
        public var datagramsDropped = 0
        /// Per session, in the order they were opened (ended ones included, the oldest ended
        /// ones forgotten past ``WHEPEndpoint/maximumSessionRecords``).
        public var sessions: [WHEPSession.Statistics] = []
        /// Ended sessions' records forgotten to keep ``sessions`` bounded.
        public var sessionRecordsForgotten = 0

        /// Every rejected request.
        public var requestsRejected: Int { rejected.values.reduce(0, +) }
    }

    /// The path prefix of session URLs.
    public static let sessionPathPrefix = "/whep/session/"
    /// Commands (opens and closes) the media thread may fall behind by, past the session limit,
    /// before offers are refused with 503: it drains them every turn (≤ 20 ms).
    static let inboxHeadroom = 256
    /// Per-session records kept at most (live ones always; the oldest ended ones go first).
    public static let maximumSessionRecords = 10_000

    /// The configuration.
    public let configuration: Configuration
    /// The URL to POST offers to, e.g. `http://127.0.0.1:8889/whep`.
    public let url: String
    /// The HTTP port (the one the system chose when 0 was asked).
    public let port: UInt16
    /// The media socket's address (the answers' host candidate).
    public let mediaAddress: SocketAddress
    /// What is sent, as answers describe it (SSRCs are drawn per session).
    public let tracks: [WHEPLiteTrack]
    /// The H.264 profile the publisher sends (preferred among the offer's payload types).
    public let h264ProfileLevelID: String?
    /// The process's DTLS certificate.
    public let certificate: DTLSCertificate

    let statisticsValue = LockedValue(Statistics())
    /// Sessions agreed over HTTP and not ended: what DELETE finds.
    let liveSessions = LockedValue(Set<String>())
    /// Sessions that ended before their DELETE (the subscriber's close_notify came first, or
    /// consent ran out), oldest first: their DELETE still answers 200. Bounded by
    /// ``maximumSessionRecords``.
    private let endedSessions = LockedValue((ids: Set<String>(), order: [String]()))
    /// What the HTTP thread hands the media thread, bounded by ``Configuration/maximumSessions``.
    let inbox = LockedValue([Command]())
    private let logger = Logger(label: "playout.publisher.whep")
    private let listener: Int32
    private let stopping = LockedValue(false)
    private let thread = LockedValue<pthread_t?>(nil)
    private let socketBox: LockedValue<UDPReceiver?>
    private let sessionCounter = LockedValue(0)

    /// What the HTTP side asks the media side.
    enum Command {
        case open(WHEPSessionPlan)
        case close(String)
    }

    /// Listens on `configuration.listen` (HTTP) and binds the media socket; serves at once.
    ///
    /// - Throws: ``PlayoutError`` (`invalidAddress`) when the address cannot be listened on, or
    ///   the socket not bound; ``DTLSError`` when the certificate cannot be made.
    public init(configuration: Configuration, tracks: [WHEPLiteTrack], h264ProfileLevelID: String? = nil, certificate: DTLSCertificate? = nil) throws {
        guard configuration.maximumSessions > 0, configuration.maximumConnections > 0, configuration.requestTimeout > .zero else {
            throw PlayoutError(.invalidOption, "WHEPEndpoint.Configuration: maximumSessions, maximumConnections and requestTimeout must be positive")
        }
        self.configuration = configuration
        self.tracks = tracks
        self.h264ProfileLevelID = h264ProfileLevelID
        self.certificate = try certificate ?? DTLSCertificate.shared()
        let host = configuration.listen.host
        guard host != "0.0.0.0", host != "::" else {
            throw PlayoutError(.invalidAddress, "--whep-listen \(configuration.listen): name the address to serve on (its host candidate), e.g. 127.0.0.1:8889 or 192.0.2.10:8889")
        }
        let socket: UDPReceiver
        do {
            socket = try UDPReceiver(bindingTo: SocketAddress(host: host, port: 0))
        } catch {
            throw PlayoutError(.invalidAddress, "--whep-listen \(configuration.listen): cannot bind the media socket on \(host): \(error)")
        }
        mediaAddress = socket.localAddress
        socketBox = LockedValue(socket)
        (listener, port) = try Self.listen(on: configuration.listen)
        url = "http://\(host.contains(":") ? "[\(host)]" : host):\(port)/whep"
        try start()
    }

    deinit {
        stop()
    }

    /// What the endpoint did so far.
    public var statistics: Statistics { statisticsValue.withLock { $0 } }

    /// Stops serving HTTP (the thread ends within 100 ms). Sessions end with the publisher. Idempotent.
    public func stop() {
        guard !stopping.withLock({ value in defer { value = true }; return value }) else { return }
        if let thread = thread.withLock({ $0 }) { pthread_join(thread, nil) }
        Glibc.close(listener)
    }

    /// The media side, for the publisher's thread: takes the media socket (once; nil after).
    public func makeRouter(kinds: [MediaKind], codecs: [Codec], impairment: NetworkImpairment.Configuration, retransmission: [Bool]) -> WHEPRouter? {
        guard let socket = socketBox.withLock({ value in defer { value = nil }; return value }) else { return nil }
        return WHEPRouter(endpoint: self, socket: socket, kinds: kinds, codecs: codecs, impairment: impairment, retransmission: retransmission)
    }

    // MARK: HTTP

    private static func listen(on address: SocketAddress) throws -> (Int32, UInt16) {
        var storage = sockaddr_storage()
        let length: socklen_t
        let family: Int32
        if address.isIPv6 {
            var value = sockaddr_in6()
            value.sin6_family = sa_family_t(AF_INET6)
            value.sin6_port = address.port.bigEndian
            guard inet_pton(AF_INET6, address.host, &value.sin6_addr) == 1 else {
                throw PlayoutError(.invalidAddress, "--whep-listen \(address): not an IP address, e.g. 127.0.0.1:8889")
            }
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: value, as: sockaddr_in6.self) }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            family = AF_INET6
        } else {
            var value = sockaddr_in()
            value.sin_family = sa_family_t(AF_INET)
            value.sin_port = address.port.bigEndian
            guard inet_pton(AF_INET, address.host, &value.sin_addr) == 1 else {
                throw PlayoutError(.invalidAddress, "--whep-listen \(address): not an IP address, e.g. 127.0.0.1:8889")
            }
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: value, as: sockaddr_in.self) }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            family = AF_INET
        }
        let listener = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw PlayoutError(.invalidAddress, "cannot create a socket: \(String(cString: strerror(errno)))") }
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
            throw PlayoutError(.invalidAddress, "--whep-listen \(address): cannot listen: \(String(cString: strerror(result)))")
        }
        let port = withUnsafeBytes(of: storage) { raw in
            family == AF_INET6 ? UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port) : UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
        }
        return (listener, port)
    }

    private func start() throws {
        let unretained = Unmanaged.passUnretained(self).toOpaque()
        var handle = pthread_t()
        let status = pthread_create(&handle, nil, { argument in
            Unmanaged<WHEPEndpoint>.fromOpaque(argument!)._withUnsafeGuaranteedRef { $0.serve() }
            return nil
        }, unretained)
        guard status == 0 else {
            Glibc.close(listener)
            throw PlayoutError(.invalidOption, "cannot start the WHEP thread: \(String(cString: strerror(status)))")
        }
        thread.withLock { $0 = handle }
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
            fputs("playout-whep", comm)
            fclose(comm)
        }
        let clock = MonotonicClock()
        let limits = HTTPRequestReader.Limits(bodyBytes: configuration.maximumBodyBytes)
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
                    do {
                        switch try clients[position].reader.consume(chunk[..<count]) {
                        case .needMore: continue
                        case .complete(let request):
                            statisticsValue.withLock { $0.requests += 1 }
                            clients[position].response = respond(to: request, now: clock.now)
                        }
                    } catch {
                        statisticsValue.withLock { $0.requests += 1 }
                        clients[position].response = refuse(error.status, error.description)
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
            while true {
                let descriptor = accept(listener, nil, nil)
                guard descriptor >= 0 else { break }
                _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
                _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
                if clients.count >= configuration.maximumConnections {
                    // The one that has waited longest without a whole request makes room.
                    let waiting = clients.indices.filter { clients[$0].response == nil }
                    let oldest = (waiting.isEmpty ? Array(clients.indices) : waiting).min { clients[$0].deadline < clients[$1].deadline }!
                    Glibc.close(clients[oldest].descriptor)
                    clients.remove(at: oldest)
                    statisticsValue.withLock { $0.connectionsEvicted += 1 }
                }
                clients.append(Client(descriptor: descriptor, deadline: clock.now.advanced(by: configuration.requestTimeout), reader: HTTPRequestReader(limits: limits)))
            }
        }
    }

    /// The answer to one whole request.
    func respond(to request: HTTPRequest, now: MonotonicInstant) -> [UInt8] {
        switch request.method {
        case "POST":
            return offer(request, now: now)
        case "DELETE":
            guard request.path.hasPrefix(Self.sessionPathPrefix) else { return refuse(404, "no session at \(request.path.prefix(80)): sessions are at \(Self.sessionPathPrefix)<id>") }
            let id = String(request.path.dropFirst(Self.sessionPathPrefix.count))
            if liveSessions.withLock({ $0.remove(id) != nil }) {
                inbox.withLock { $0.append(.close(id)) }
                return Self.response(status: "200 OK", body: [])
            }
            // Ended already (a close_notify comes before the DELETE when a subscriber closes its
            // DTLS session first): deleting it is still fine, once.
            guard endedSessions.withLock({ $0.ids.remove(id) != nil }) else { return refuse(404, "no session \(id.prefix(40))") }
            return Self.response(status: "200 OK", body: [])
        case "OPTIONS":
            return Self.response(status: "204 No Content", extraHeaders: "Access-Control-Allow-Methods: POST, DELETE, OPTIONS\r\nAccess-Control-Allow-Headers: Content-Type, Authorization\r\n", body: [])
        default:
            return refuse(405, "use POST (an SDP offer) or DELETE (a session)", extraHeaders: "Allow: POST, DELETE, OPTIONS\r\n")
        }
    }

    private func offer(_ request: HTTPRequest, now: MonotonicInstant) -> [UInt8] {
        let type = (request.header("Content-Type") ?? "").lowercased()
        guard type.split(separator: ";").first.map({ $0.trimmingCharacters(in: " ") }) == "application/sdp" else {
            return refuse(415, "the offer must be Content-Type: application/sdp")
        }
        let reader: WHEPOfferReader
        do {
            reader = try WHEPOfferReader(parsing: String(decoding: request.body, as: UTF8.self))
        } catch {
            return refuse(400, error.description)
        }
        var system = SystemRandomNumberGenerator()
        let credentials = ICECredentials.generate(using: &system)
        let perSession = tracks.map { track in
            var copy = track
            copy.ssrc = .random(in: 1...UInt32.max, using: &system)
            copy.retransmissionSSRC = .random(in: 1...UInt32.max, using: &system)
            return copy
        }
        let answer: WHEPAnswerBuilder.Answer
        do {
            answer = try WHEPAnswerBuilder(
                offer: reader, tracks: perSession, credentials: credentials, fingerprint: certificate.fingerprint, candidates: [mediaAddress],
                h264ProfileLevelID: h264ProfileLevelID, sessionID: String(UInt64.random(in: 1...UInt64(Int64.max), using: &system))
            ).build()
        } catch {
            return refuse(400, error.description)
        }
        let id = (0..<4).map { _ in String(UInt32.random(in: 0...UInt32.max, using: &system), radix: 16) }.joined()
        // The media thread drains the inbox every turn; a full one means it is not running.
        let backlog = inbox.withLock { $0.count }
        let admitted = backlog < configuration.maximumSessions + Self.inboxHeadroom && liveSessions.withLock { live -> Bool in
            guard live.count < configuration.maximumSessions else { return false }
            live.insert(id)
            return true
        }
        guard admitted else { return refuse(503, "the endpoint serves \(configuration.maximumSessions) sessions at most", extraHeaders: "Retry-After: 5\r\n") }
        let number = sessionCounter.withLock { value -> Int in
            value += 1
            return value
        }
        let plan = WHEPSessionPlan(
            id: id, number: number, credentials: credentials, remoteUsernameFragment: reader.iceUsernameFragment,
            remoteFingerprint: reader.fingerprint, tracks: answer.tracks
        )
        inbox.withLock { $0.append(.open(plan)) }
        statisticsValue.withLock { $0.sessionsOpened += 1 }
        logger.info("WHEP session \(id) opened: \(answer.tracks.map { "\($0.mid)=pt \($0.payloadType)" }.joined(separator: ", "))")
        return Self.response(
            status: "201 Created", contentType: "application/sdp",
            extraHeaders: "Location: \(Self.sessionPathPrefix)\(id)\r\nAccess-Control-Expose-Headers: Location\r\n",
            body: Array(answer.sessionDescription.serialized().utf8)
        )
    }

    private func refuse(_ status: Int, _ text: String, extraHeaders: String = "") -> [UInt8] {
        statisticsValue.withLock { $0.rejected[status, default: 0] += 1 }
        let reasons = [
            400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 411: "Length Required", 413: "Content Too Large",
            415: "Unsupported Media Type", 431: "Request Header Fields Too Large", 503: "Service Unavailable",
        ]
        return Self.response(status: "\(status) \(reasons[status] ?? "Error")", extraHeaders: extraHeaders, body: Array((text + "\n").utf8))
    }

    private static func response(status: String, contentType: String = "text/plain; charset=utf-8", extraHeaders: String = "", body: [UInt8]) -> [UInt8] {
        var bytes = Array(
            "HTTP/1.1 \(status)\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\nAccess-Control-Allow-Origin: *\r\n\(extraHeaders)Connection: close\r\n\r\n".utf8
        )
        bytes.append(contentsOf: body)
        return bytes
    }

    /// Called by the media side when a session ends.
    func sessionEnded(_ statistics: WHEPSession.Statistics) {
        if liveSessions.withLock({ $0.remove(statistics.id) != nil }) {
            endedSessions.withLock { ended in
                ended.ids.insert(statistics.id)
                ended.order.append(statistics.id)
                if ended.order.count > Self.maximumSessionRecords { ended.ids.remove(ended.order.removeFirst()) }
            }
        }
        statisticsValue.withLock { values in
            if let end = statistics.end { values.sessionsEnded[end, default: 0] += 1 }
            if let index = values.sessions.firstIndex(where: { $0.id == statistics.id }) {
                values.sessions[index] = statistics
            } else {
                values.sessions.append(statistics)
            }
            while values.sessions.count > Self.maximumSessionRecords, let oldest = values.sessions.firstIndex(where: { $0.end != nil }) {
                values.sessions.remove(at: oldest)
                values.sessionRecordsForgotten += 1
            }
        }
        logger.debug("WHEP session \(statistics.id) ended: \(statistics.end?.rawValue ?? "?")")  // on the media thread
    }
}

extension StringProtocol {
    /// Without leading and trailing `characters`.
    fileprivate func trimmingCharacters(in characters: String) -> String {
        var view = Substring(self)
        while let first = view.first, characters.contains(first) { view = view.dropFirst() }
        while let last = view.last, characters.contains(last) { view = view.dropLast() }
        return String(view)
    }
}
