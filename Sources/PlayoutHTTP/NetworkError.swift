/// Why a connection to a server failed: a bad address, a server that refuses, stalls, closes or
/// answers something that is not HTTP. The telemetry backends call it `NetworkTelemetryError`;
/// WHEP reads it into its own error.
///
/// Each error says whether the same request may succeed later (``retryable``).
public struct NetworkError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, for code that acts on it.
    public enum Code: Sendable, Equatable {
        /// A URL or `HOST:PORT` given by the user is not valid (never retried).
        case invalidAddress
        /// The host name does not exist (never retried).
        case hostNotFound
        /// The host name could not be resolved now (`getaddrinfo`'s `EAI_*` code; retried).
        case resolutionFailed(code: Int32)
        /// Nobody listens on the port (retried).
        case connectionRefused
        /// Connecting, sending or receiving took longer than the timeout (retried).
        case timedOut
        /// The peer closed or reset the connection before a whole response arrived (retried).
        case connectionClosed
        /// A system call failed with this `errno` (retried).
        case system(errno: Int32)
        /// The response is not HTTP/1.x as RFC 9112 defines it (retried: the batch is not at fault).
        case malformedResponse
        /// The response's headers or body exceed the client's limits (retried).
        case responseTooLarge
    }

    /// What went wrong.
    public var code: Code
    /// What happened, in a user's words, naming the peer.
    public var message: String

    /// An error with its code and message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Whether the same request may succeed later: everything but a bad address or an unknown host.
    public var retryable: Bool {
        switch code {
        case .invalidAddress, .hostNotFound: false
        case .resolutionFailed, .connectionRefused, .timedOut, .connectionClosed, .system, .malformedResponse, .responseTooLarge: true
        }
    }

    public var description: String { message }
}
