/// Why a WHEP subscription could not be opened or closed: a bad URL, a server that cannot be
/// reached, refuses the TLS certificate check, answers with an error status or with something
/// that is not a usable WHEP answer.
///
/// The message names the peer and, where there is one, the fix:
///
/// ```swift
/// do { _ = try WHEPURL("rtsp://example.com/whep") }
/// catch { print(error) }   // "'rtsp://example.com/whep' is not an http:// or https:// URL, e.g. https://example.com/whep/stream"
/// ```
public struct WHEPError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, for code that acts on it.
    public enum Code: Sendable, Equatable {
        /// The URL given (or a `Location` a server sent) is not a valid http(s) URL.
        case invalidURL
        /// The host name cannot be resolved, nobody listens on the port, or the connection broke.
        case connectionFailed
        /// Connecting, sending or waiting for the answer took longer than the timeout.
        case timedOut
        /// The TLS handshake failed for a reason other than the certificate.
        case tlsFailed
        /// The server's certificate did not verify (untrusted, expired, wrong host name).
        case certificateRejected
        /// The server did not answer in HTTP/1.1.
        case malformedResponse
        /// The answer's headers or body exceed the client's limits.
        case responseTooLarge
        /// The server answered the offer with this status (not 201, nor a redirect or retry
        /// that could be followed).
        case httpStatus(Int)
        /// A `201 Created` without a `Location` header: the session could never be deleted.
        case missingLocation
        /// More redirects than the configured bound, a redirect without `Location`, or a
        /// redirect from https to http.
        case badRedirect
        /// The server asked to retry later (409/503 with `Retry-After`) past the retry deadline.
        case retryDeadlinePassed
        /// The 201's body is not an SDP answer the subscriber can use.
        case invalidAnswer
        /// ``WHEPClient/close()`` was called while the offer was still under way.
        case cancelled
    }

    /// What went wrong.
    public var code: Code
    /// What happened, in a user's words, naming the server.
    public var message: String

    /// An error with its code and message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
