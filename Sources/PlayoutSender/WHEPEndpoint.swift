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
    /// The HTTP side: PlayoutHTTP's server (as the Prometheus endpoint's), answering through
    /// ``respond(to:now:)``.
    private let server: HTTPServer
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
        // The server answers through the endpoint, which owns it: weakly (an answer while the
        // endpoint goes away is a 503).
        let answering = Answering()
        let httpConfiguration = HTTPServer.Configuration(
            maximumConnections: configuration.maximumConnections, requestTimeout: configuration.requestTimeout,
            limits: .init(bodyBytes: configuration.maximumBodyBytes), threadName: "playout-whep"
        )
        do throws(NetworkError) {
            server = try HTTPServer(host: host, port: configuration.listen.port, configuration: httpConfiguration) { request, now in
                guard let endpoint = answering.endpoint else { return HTTPServer.response(status: 503, body: []) }
                return endpoint.answer(request, now: now)
            }
        } catch {
            throw PlayoutError(.invalidAddress, "--whep-listen \(configuration.listen): \(error.message)")
        }
        port = server.port
        url = "http://\(host.contains(":") ? "[\(host)]" : host):\(port)/whep"
        answering.endpoint = self
    }

    /// The endpoint the server answers through, held weakly.
    private final class Answering: @unchecked Sendable {
        weak var endpoint: WHEPEndpoint?  // set once, before the first request can be read
    }

    deinit {
        stop()
    }

    /// What the endpoint did so far.
    public var statistics: Statistics {
        var statistics = statisticsValue.withLock { $0 }
        let closed = server.statistics
        statistics.connectionsTimedOut = closed.connectionsTimedOut
        statistics.connectionsEvicted = closed.connectionsEvicted
        return statistics
    }

    /// Stops serving HTTP (the thread ends within 100 ms). Sessions end with the publisher. Idempotent.
    public func stop() {
        server.stop()
    }

    /// The media side, for the publisher's thread: takes the media socket (once; nil after).
    public func makeRouter(kinds: [MediaKind], codecs: [Codec], impairment: NetworkImpairment.Configuration, retransmission: [Bool]) -> WHEPRouter? {
        guard let socket = socketBox.withLock({ value in defer { value = nil }; return value }) else { return nil }
        return WHEPRouter(endpoint: self, socket: socket, kinds: kinds, codecs: codecs, impairment: impairment, retransmission: retransmission)
    }

    // MARK: HTTP

    /// The answer to a request the server read (or refused: answered with the reader's status).
    private func answer(_ request: Result<HTTPRequest, HTTPRequestReader.RequestError>, now: MonotonicInstant) -> [UInt8] {
        statisticsValue.withLock { $0.requests += 1 }
        switch request {
        case .success(let request): return respond(to: request, now: now)
        case .failure(let error): return refuse(error.status, error.description)
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
                return Self.response(status: 200, body: [])
            }
            // Ended already (a close_notify comes before the DELETE when a subscriber closes its
            // DTLS session first): deleting it is still fine, once.
            guard endedSessions.withLock({ $0.ids.remove(id) != nil }) else { return refuse(404, "no session \(id.prefix(40))") }
            return Self.response(status: 200, body: [])
        case "OPTIONS":
            return Self.response(status: 204, extraHeaders: "Access-Control-Allow-Methods: POST, DELETE, OPTIONS\r\nAccess-Control-Allow-Headers: Content-Type, Authorization\r\n", body: [])
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
            status: 201, contentType: "application/sdp",
            extraHeaders: "Location: \(Self.sessionPathPrefix)\(id)\r\nAccess-Control-Expose-Headers: Location\r\n",
            body: Array(answer.sessionDescription.serialized().utf8)
        )
    }

    private func refuse(_ status: Int, _ text: String, extraHeaders: String = "") -> [UInt8] {
        statisticsValue.withLock { $0.rejected[status, default: 0] += 1 }
        return Self.response(status: status, extraHeaders: extraHeaders, body: Array((text + "\n").utf8))
    }

    /// A response with the CORS header every answer carries (a browser may POST here).
    private static func response(status: Int, contentType: String = "text/plain; charset=utf-8", extraHeaders: String = "", body: [UInt8]) -> [UInt8] {
        HTTPServer.response(status: status, contentType: contentType, extraHeaders: "Access-Control-Allow-Origin: *\r\n" + extraHeaders, body: body)
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
