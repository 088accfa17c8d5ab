public import PlayoutCore

/// One HTTP request the WHEP state machine wants sent.
public struct WHEPRequest: Sendable, Equatable {
    /// `POST` (the offer) or `DELETE` (the end of the session).
    public var method: String
    /// Where to.
    public var url: WHEPURL
    /// Header fields beyond `Host`, `Content-Length` and `Connection` (which the transport
    /// writes): `Content-Type`, `Accept`, `Authorization`.
    public var headers: [(name: String, value: String)]
    /// The body (the SDP offer for a POST).
    public var body: [UInt8]

    /// Creates a request.
    public init(method: String, url: WHEPURL, headers: [(name: String, value: String)], body: [UInt8]) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// The value of the first header field called `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    public static func == (lhs: WHEPRequest, rhs: WHEPRequest) -> Bool {
        lhs.method == rhs.method && lhs.url == rhs.url && lhs.body == rhs.body
            && lhs.headers.map(\.name) == rhs.headers.map(\.name) && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }
}

/// One HTTP response, as the WHEP state machine reads it.
public struct WHEPResponse: Sendable, Equatable {
    /// The status code.
    public var status: Int
    /// The reason phrase (may be empty).
    public var reason: String
    /// The header fields in the order received.
    public var headers: [(name: String, value: String)]
    /// The body.
    public var body: [UInt8]

    /// Creates a response.
    public init(status: Int, reason: String = "", headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
    }

    /// The value of the first header field called `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The values of every header field called `name` (case-insensitive), in order.
    public func headers(_ name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }

    public static func == (lhs: WHEPResponse, rhs: WHEPResponse) -> Bool {
        lhs.status == rhs.status && lhs.reason == rhs.reason && lhs.body == rhs.body
            && lhs.headers.map(\.name) == rhs.headers.map(\.name) && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }
}

/// What a WHEP server gave back for the offer.
public struct WHEPSessionInfo: Sendable, Equatable {
    /// The SDP answer (the 201's body), as text.
    public var answer: String
    /// The session URL (`Location`, resolved against the URL the offer was finally posted to):
    /// what ``WHEPClient/close()`` deletes.
    public var sessionURL: WHEPURL
    /// Every `rel="ice-server"` link of the 201 (see ``WHEPICEServer/isSupported``).
    public var iceServers: [WHEPICEServer]
    /// The URL the offer was finally accepted at (after redirects).
    public var endpoint: WHEPURL
    /// How many times the offer was posted (1 without redirects or retries).
    public var attempts: Int

    /// The STUN servers the ICE agent may use.
    public var stunServers: [WHEPICEServer] { iceServers.filter(\.isSupported) }
    /// The announced servers Playout cannot use (TURN, STUN over TLS), to report as such.
    public var unsupportedICEServers: [WHEPICEServer] { iceServers.filter { !$0.isSupported } }
}

/// The WHEP exchange (draft-ietf-wish-whep) as a sans-IO state machine: it decides which HTTP
/// request to send and when, and what each response means; a driver (``WHEPClient``) carries
/// the requests out and feeds back the responses and the time.
///
/// - POST the offer (`Content-Type: application/sdp`, `Authorization: Bearer` when a token is
///   given); `201 Created` → ``WHEPSessionInfo`` (answer, `Location` resolved, `Link` ice servers).
/// - `307`/`308` → the same POST to the new `Location`, at most ``Configuration/maximumRedirects``
///   times; never from https to http.
/// - `409`/`503` with `Retry-After` → wait and post again, as long as the wait ends before the
///   retry deadline.
/// - Any other status → ``WHEPError`` naming it, with an RFC 9457 problem's title and detail.
/// - ``close(now:)`` → `DELETE` of the session URL (with the token) bounded by
///   ``Configuration/deleteTimeout``.
///
/// ```swift
/// var machine = WHEPSessionStateMachine(endpoint: url, offer: sdp, token: "t", now: clock.now)
/// var action = machine.start(now: clock.now)        // .send(POST …, deadline:)
/// action = machine.received(response, now: clock.now) // .established(info) / .wait(until:) / .send / .failed
/// ```
public struct WHEPSessionStateMachine: Sendable {
    /// The bounds of the exchange.
    public struct Configuration: Sendable, Equatable {
        /// Default bound of one request, from connecting to the whole answer: 10 s.
        public static let defaultRequestTimeout: Duration = .seconds(10)
        /// Default bound of the redirects followed: 5.
        public static let defaultMaximumRedirects = 5
        /// Default window in which 409/503 answers are retried: 30 s from the start.
        public static let defaultRetryWindow: Duration = .seconds(30)
        /// Default bound of the DELETE at the end: 2 s.
        public static let defaultDeleteTimeout: Duration = .seconds(2)
        /// Default bound of the attempts (posts), whatever the retry window: 20.
        public static let defaultMaximumAttempts = 20

        /// The bound of one POST.
        public var requestTimeout: Duration
        /// How many redirects are followed.
        public var maximumRedirects: Int
        /// How long after the start a retry may still begin.
        public var retryWindow: Duration
        /// The bound of the DELETE.
        public var deleteTimeout: Duration
        /// The bound of the number of posts.
        public var maximumAttempts: Int

        /// Creates a configuration; every parameter defaults to its named constant.
        public init(
            requestTimeout: Duration = defaultRequestTimeout,
            maximumRedirects: Int = defaultMaximumRedirects,
            retryWindow: Duration = defaultRetryWindow,
            deleteTimeout: Duration = defaultDeleteTimeout,
            maximumAttempts: Int = defaultMaximumAttempts
        ) {
            self.requestTimeout = requestTimeout
            self.maximumRedirects = maximumRedirects
            self.retryWindow = retryWindow
            self.deleteTimeout = deleteTimeout
            self.maximumAttempts = maximumAttempts
        }
    }

    /// What the driver does next.
    public enum Action: Sendable, Equatable {
        /// Send `request`, giving up at `deadline`; then call ``received(_:now:)`` or
        /// ``transportFailed(_:now:)``.
        case send(WHEPRequest, deadline: MonotonicInstant)
        /// Wait until the instant, then call ``timerFired(now:)``.
        case wait(until: MonotonicInstant)
        /// The server accepted the offer.
        case established(WHEPSessionInfo)
        /// The offer failed; nothing to delete.
        case failed(WHEPError)
        /// The session is over (deleted, or the DELETE failed as recorded in ``deleteOutcome``).
        case closed
        /// Nothing to do (a call that does not apply in the current state).
        case none
    }

    /// Where the exchange is.
    public enum State: Sendable, Equatable {
        case idle
        case posting(WHEPURL)
        case waitingToRetry(until: MonotonicInstant)
        case established(WHEPSessionInfo)
        case deleting(WHEPURL)
        case failed(WHEPError)
        case closed
    }

    /// The bounds in force.
    public let configuration: Configuration
    /// The endpoint the offer is first posted to.
    public let endpoint: WHEPURL
    /// The current state.
    public private(set) var state: State = .idle
    /// How the DELETE ended: its status, or the transport error; nil before it ended.
    public private(set) var deleteOutcome: Result<Int, WHEPError>?
    /// What happened on the way, for the log: redirects, retries, TURN servers skipped.
    public private(set) var notes: [String] = []

    private let offer: [UInt8]
    private let token: String?
    private let retryDeadline: MonotonicInstant
    private var currentURL: WHEPURL
    private var redirects = 0
    private var attempts = 0

    /// A machine that will post `offer` to `endpoint`; `now` starts the retry window.
    public init(endpoint: WHEPURL, offer: String, token: String?, configuration: Configuration = Configuration(), now: MonotonicInstant) {
        self.endpoint = endpoint
        self.currentURL = endpoint
        self.offer = Array(offer.utf8)
        self.token = token.flatMap { $0.isEmpty ? nil : $0 }
        self.configuration = configuration
        self.retryDeadline = now.advanced(by: configuration.retryWindow)
    }

    /// Starts the exchange: the first POST.
    public mutating func start(now: MonotonicInstant) -> Action {
        guard case .idle = state else { return .none }
        return post(now: now)
    }

    private var authorization: [(name: String, value: String)] {
        token.map { [("Authorization", "Bearer \($0)")] } ?? []
    }

    private mutating func post(now: MonotonicInstant) -> Action {
        attempts += 1
        state = .posting(currentURL)
        let request = WHEPRequest(
            method: "POST", url: currentURL,
            headers: [("Content-Type", "application/sdp"), ("Accept", "application/sdp")] + authorization,
            body: offer
        )
        return .send(request, deadline: now.advanced(by: configuration.requestTimeout))
    }

    private mutating func fail(_ error: WHEPError) -> Action {
        state = .failed(error)
        return .failed(error)
    }

    /// Feeds the response to the request last sent.
    ///
    /// `wallClockNanoseconds` (since 1970) is what a `Retry-After` HTTP date is measured from
    /// when the response has no `Date` header; without either such a date is not followed.
    public mutating func received(_ response: WHEPResponse, now: MonotonicInstant, wallClockNanoseconds: Int64? = nil) -> Action {
        switch state {
        case .posting(let url):
            return answer(response, to: url, now: now, wallClock: wallClockNanoseconds)
        case .deleting:
            deleteOutcome = .success(response.status)
            state = .closed
            return .closed
        default:
            return .none
        }
    }

    /// Tells the machine the request last sent failed in transport (refused, timed out, TLS).
    public mutating func transportFailed(_ error: WHEPError, now: MonotonicInstant) -> Action {
        switch state {
        case .posting:
            return fail(error)
        case .deleting:
            deleteOutcome = .failure(error)
            state = .closed
            return .closed
        default:
            return .none
        }
    }

    /// The wait asked for by ``Action/wait(until:)`` is over (or the driver woke early: then it
    /// is asked to wait again).
    public mutating func timerFired(now: MonotonicInstant) -> Action {
        guard case .waitingToRetry(let until) = state else { return .none }
        guard now >= until else { return .wait(until: until) }
        return post(now: now)
    }

    /// Ends the session: a DELETE of the session URL when one was established, else nothing
    /// left to do (`closed`).
    public mutating func close(now: MonotonicInstant) -> Action {
        switch state {
        case .established(let info):
            state = .deleting(info.sessionURL)
            let request = WHEPRequest(method: "DELETE", url: info.sessionURL, headers: authorization, body: [])
            return .send(request, deadline: now.advanced(by: configuration.deleteTimeout))
        case .deleting:
            return .none
        case .idle, .posting, .waitingToRetry, .failed:
            state = .closed
            return .closed
        case .closed:
            return .closed
        }
    }

    private mutating func answer(_ response: WHEPResponse, to url: WHEPURL, now: MonotonicInstant, wallClock: Int64?) -> Action {
        switch response.status {
        case 201:
            guard let location = response.header("Location") else {
                return fail(WHEPError(.missingLocation, "\(url) answered 201 Created without a Location header: the session could not be ended; the server does not follow WHEP"))
            }
            let sessionURL: WHEPURL
            do throws(WHEPError) {
                sessionURL = try url.resolving(location)
            } catch {
                return fail(WHEPError(.missingLocation, "\(url) answered 201 Created with an unusable Location: \(error.message)"))
            }
            guard !response.body.isEmpty else {
                return fail(WHEPError(.invalidAnswer, "\(url) answered 201 Created without an SDP answer"))
            }
            if let type = response.header("Content-Type"), !type.lowercased().hasPrefix("application/sdp") {
                notes.append("\(url) answered with Content-Type '\(type)', not application/sdp; reading it as SDP")
            }
            var servers: [WHEPICEServer] = []
            for value in response.headers("Link") where servers.count < WHEPICEServer.maximumCount {
                servers += WHEPICEServer.parse(linkHeader: value).prefix(WHEPICEServer.maximumCount - servers.count)
            }
            for server in servers where !server.isSupported {
                notes.append("ICE server \(server.url) ignored: \(server.kind.rawValue.uppercased()) is not supported")
            }
            let info = WHEPSessionInfo(
                answer: String(decoding: response.body, as: UTF8.self), sessionURL: sessionURL,
                iceServers: servers, endpoint: url, attempts: attempts
            )
            state = .established(info)
            return .established(info)
        case 307, 308:
            guard let location = response.header("Location") else {
                return fail(WHEPError(.badRedirect, "\(url) answered \(response.status) without a Location to redirect to"))
            }
            guard redirects < configuration.maximumRedirects else {
                return fail(WHEPError(.badRedirect, "\(url) redirected more than \(configuration.maximumRedirects) times: a redirect loop?"))
            }
            let next: WHEPURL
            do throws(WHEPError) {
                next = try url.resolving(location)
            } catch {
                return fail(WHEPError(.badRedirect, "\(url) redirected to an unusable Location: \(error.message)"))
            }
            guard !(url.scheme == .https && next.scheme == .http) else {
                return fail(WHEPError(.badRedirect, "\(url) redirected to \(next), from https to http: refused (the offer and token would travel in clear)"))
            }
            redirects += 1
            notes.append("\(url) redirected (\(response.status)) to \(next)")
            currentURL = next
            guard attempts < configuration.maximumAttempts else {
                return fail(WHEPError(.badRedirect, "gave up after \(attempts) posts of the offer"))
            }
            return post(now: now)
        case 409, 503:
            let base = statusError(response, url: url)
            guard let value = response.header("Retry-After") else { return fail(base) }
            guard let wait = WHEPResponseFields.retryAfter(value, date: response.header("Date"), wallClockNow: wallClock) else {
                return fail(WHEPError(base.code, base.message + " (its Retry-After '\(value.prefix(40))' is neither seconds nor an HTTP date)"))
            }
            let until = now.advanced(by: wait)
            guard until <= retryDeadline, attempts < configuration.maximumAttempts else {
                return fail(WHEPError(.retryDeadlinePassed, base.message + "; it asked to retry in \(wait.wholeSeconds) s, past the retry window of \(configuration.retryWindow.wholeSeconds) s"))
            }
            notes.append("\(url) answered \(response.status): retrying in \(wait.wholeSeconds) s")
            state = .waitingToRetry(until: until)
            return .wait(until: until)
        default:
            return fail(statusError(response, url: url))
        }
    }

    /// The error for a status the machine does not follow: the status and reason, the problem's
    /// title and detail (or the start of a text body), and a hint for 401/403.
    private func statusError(_ response: WHEPResponse, url: WHEPURL) -> WHEPError {
        var message = "\(url) answered \(response.status)" + (response.reason.isEmpty ? "" : " \(Self.printable(response.reason, limit: 80))")
        let type = response.header("Content-Type")?.lowercased() ?? ""
        if type.hasPrefix("application/problem+json"), let problem = WHEPResponseFields.problem(response.body), problem.title != nil || problem.detail != nil {
            message += ": " + [problem.title, problem.detail].compactMap { $0.map { Self.printable($0, limit: 200) } }.joined(separator: ": ")
        } else if !response.body.isEmpty, type.hasPrefix("text/") || type.isEmpty {
            message += ": " + Self.printable(String(decoding: response.body.prefix(800), as: UTF8.self), limit: 200)
        }
        switch response.status {
        case 401: message += token == nil ? " (give a token with --token or PLAYOUT_WHEP_TOKEN)" : " (check --token)"
        case 403: message += " (the token is not allowed to watch this stream)"
        case 404: message += " (check the URL: no such stream)"
        default: break
        }
        return WHEPError(.httpStatus(response.status), message)
    }

    /// `text` on one line, control characters replaced, at most `limit` characters.
    static func printable(_ text: String, limit: Int) -> String {
        let flat = String(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : Character($0) })
        let trimmed = Substring(flat).trimmingSpaces
        return trimmed.count > limit ? trimmed.prefix(limit) + "…" : trimmed
    }
}

extension Duration {
    /// Whole seconds, rounded up, for messages.
    var wholeSeconds: Int64 {
        let parts = components
        return parts.seconds + (parts.attoseconds > 0 ? 1 : 0)
    }
}
