public import Logging
import PlayoutCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The blocking WHEP client a subscriber's control thread calls: ``open(offer:)`` posts the SDP
/// offer and returns the server's answer, session URL and ICE servers; ``close()`` deletes the
/// session (within 2 s). The decisions are ``WHEPSessionStateMachine``'s; this type carries its
/// requests out over HTTP/1.1 or HTTPS (OpenSSL) and sleeps its retry waits.
///
/// ```swift
/// let client = try WHEPClient(endpoint: WHEPURL("https://example.com/whep/stream"), token: "secret")
/// let session = try client.open(offer: offer.serialized())
/// let answer = try WHEPAnswer(parsing: session.answer)
/// // … ICE with session.stunServers, DTLS, media …
/// client.close()      // DELETE session.sessionURL
/// ```
///
/// Thread-safe: ``close()`` may be called from another thread (a signal handler's thread) while
/// ``open(offer:)`` waits; the offer is then abandoned (a session the server creates meanwhile is
/// deleted at once) and `open` throws `cancelled`.
public final class WHEPClient: Sendable {
    /// The client's bounds and TLS checks.
    public struct Configuration: Sendable, Equatable {
        /// Default bound of the answer's body: 256 KiB (an SDP answer is a few KiB).
        public static let defaultMaximumAnswerBytes = 256 * 1024

        /// Timeouts, redirects, the retry window, the DELETE bound.
        public var session: WHEPSessionStateMachine.Configuration
        /// How https certificates are checked.
        public var tls: WHEPTLSOptions
        /// The bound of a response body.
        public var maximumAnswerBytes: Int

        /// Creates a configuration with the documented defaults.
        public init(
            session: WHEPSessionStateMachine.Configuration = .init(),
            tls: WHEPTLSOptions = .init(),
            maximumAnswerBytes: Int = defaultMaximumAnswerBytes
        ) {
            self.session = session
            self.tls = tls
            self.maximumAnswerBytes = maximumAnswerBytes
        }
    }

    /// The endpoint the offer is posted to.
    public let endpoint: WHEPURL
    /// The bounds in force.
    public let configuration: Configuration
    private let token: String?
    private let logger: Logger
    private let transport: WHEPTransport
    private let storage = Mutex(Storage())

    private struct Storage {
        var machine: WHEPSessionStateMachine?
        var cancelled = false
    }

    /// A client for `endpoint`; `token` (empty counts as none) goes in `Authorization: Bearer`.
    public init(endpoint: WHEPURL, token: String?, configuration: Configuration = Configuration(), logger: Logger = Logger(label: "playout.whep")) {
        self.endpoint = endpoint
        self.token = token
        self.configuration = configuration
        self.logger = logger
        self.transport = WHEPTransport(maximumBodyBytes: configuration.maximumAnswerBytes, tls: configuration.tls)
    }

    /// What happened on the way (redirects, retries, TURN servers ignored), in order.
    public var notes: [String] { storage.withLock { $0.machine?.notes ?? [] } }

    /// Posts `offer` and returns what the server answered, following redirects and retrying
    /// 409/503 answers as ``WHEPSessionStateMachine`` decides.
    ///
    /// Blocks for at most the retry window plus one request timeout.
    ///
    /// - Throws: ``WHEPError``; `cancelled` when ``close()`` was called meanwhile.
    public func open(offer: String) throws(WHEPError) -> WHEPSessionInfo {
        let clock = MonotonicClock()
        var action: WHEPSessionStateMachine.Action = storage.withLock { storage in
            guard storage.machine == nil else { return .failed(WHEPError(.cancelled, "open(offer:) was already called on this WHEP client")) }
            var machine = WHEPSessionStateMachine(endpoint: endpoint, offer: offer, token: token, configuration: configuration.session, now: clock.now)
            let action = machine.start(now: clock.now)
            storage.machine = machine
            return action
        }
        var reported = 0
        while true {
            for note in notes.dropFirst(reported) {
                logger.notice("\(note)")
                reported += 1
            }
            switch action {
            case .send(let request, let deadline):
                logger.debug("WHEP: \(request.method) \(request.url)")
                let result: Result<WHEPResponse, WHEPError>
                do throws(WHEPError) {
                    result = .success(try transport.perform(request, deadline: deadline))
                } catch {
                    result = .failure(error)
                }
                action = storage.withLock { storage in
                    switch result {
                    case .success(let response): storage.machine!.received(response, now: clock.now, wallClockNanoseconds: clock.wallClockNanoseconds)
                    case .failure(let error): storage.machine!.transportFailed(error, now: clock.now)
                    }
                }
                if storage.withLock({ $0.cancelled }) {
                    if case .established = action { _ = close() }
                    throw WHEPError(.cancelled, "the WHEP session was closed while the offer was under way")
                }
            case .wait(let until):
                while clock.now < until {
                    if storage.withLock({ $0.cancelled }) { throw WHEPError(.cancelled, "the WHEP session was closed while waiting to retry") }
                    var pause = timespec(tv_sec: 0, tv_nsec: Int(min(clock.now.duration(to: until).nanoseconds, 50_000_000)))
                    nanosleep(&pause, nil)
                }
                action = storage.withLock { $0.machine!.timerFired(now: clock.now) }
            case .established(let info):
                logger.info("WHEP: session \(info.sessionURL) (after \(info.attempts) post(s))")
                return info
            case .failed(let error):
                throw error
            case .closed, .none:
                throw WHEPError(.cancelled, "the WHEP session was closed while the offer was under way")
            }
        }
    }

    /// Ends the session: `DELETE` of the session URL (with the token), bounded by
    /// ``WHEPSessionStateMachine/Configuration/deleteTimeout``. Idempotent.
    ///
    /// - Returns: The DELETE's status, or why it failed; nil when there was no session to
    ///   delete (never opened, failed, still under way — then ``open(offer:)`` is cancelled).
    @discardableResult
    public func close() -> Result<Int, WHEPError>? {
        let clock = MonotonicClock()
        let action: WHEPSessionStateMachine.Action = storage.withLock { storage in
            storage.cancelled = true
            guard var machine = storage.machine else { return .closed }
            if case .posting = machine.state { return .none }  // open(offer:) deletes what it gets
            let action = machine.close(now: clock.now)
            storage.machine = machine
            return action
        }
        guard case .send(let request, let deadline) = action else {
            return storage.withLock { $0.machine?.deleteOutcome }
        }
        logger.debug("WHEP: DELETE \(request.url)")
        let outcome: Result<Int, WHEPError>
        do throws(WHEPError) {
            let response = try transport.perform(request, deadline: deadline)
            outcome = .success(response.status)
            _ = storage.withLock { $0.machine!.received(response, now: clock.now) }
        } catch {
            outcome = .failure(error)
            _ = storage.withLock { $0.machine!.transportFailed(error, now: clock.now) }
        }
        switch outcome {
        case .success(let status) where (200..<300).contains(status): logger.info("WHEP: session \(request.url) deleted (\(status))")
        case .success(let status): logger.warning("WHEP: the server answered \(status) to DELETE \(request.url)")
        case .failure(let error): logger.warning("WHEP: DELETE \(request.url) failed: \(error)")
        }
        return outcome
    }
}
