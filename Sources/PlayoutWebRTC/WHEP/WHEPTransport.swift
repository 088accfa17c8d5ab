internal import COpenSSL
import PlayoutCore
import PlayoutHTTP
#if canImport(Glibc)
import Glibc
#endif

/// How `https://` connections are checked.
public struct WHEPTLSOptions: Sendable, Equatable {
    /// Skip the certificate check (any certificate, any host name). For test servers with a
    /// self-signed certificate only: the CLI says so loudly.
    public var insecure: Bool
    /// A PEM file of certificates to trust in addition to the system store (a private CA).
    public var trustedCertificatesFile: String?

    /// Options that check the certificate against the system store (`insecure` false).
    public init(insecure: Bool = false, trustedCertificatesFile: String? = nil) {
        self.insecure = insecure
        self.trustedCertificatesFile = trustedCertificatesFile
    }
}

/// Sends one HTTP/1.1 request over a fresh TCP (and for https, TLS) connection and reads the
/// whole response with ``HTTPResponseParser`` (bounded by its limits), all before a deadline.
///
/// Blocking; one request per connection (`Connection: close`). TLS goes through OpenSSL 3:
/// TLS 1.2 or newer, SNI for host names, the certificate verified against the system store and
/// the host name (or IP address) checked, unless ``WHEPTLSOptions/insecure``.
struct WHEPTransport: Sendable {
    /// The bounds of a response: 16 KiB of headers, 64 fields, a body of `maximumBodyBytes`.
    let limits: HTTPResponseParser.Limits
    let tls: WHEPTLSOptions

    init(maximumBodyBytes: Int, tls: WHEPTLSOptions) {
        self.limits = HTTPResponseParser.Limits(headerBytes: 16 * 1024, headerCount: 64, bodyBytes: maximumBodyBytes)
        self.tls = tls
    }

    /// The request as bytes: request line, `Host`, `User-Agent`, `Connection: close`,
    /// `Content-Length` (for a body or a POST), the request's own fields, the body.
    static func serialize(_ request: WHEPRequest) throws(WHEPError) -> [UInt8] {
        for text in [request.method] + request.headers.flatMap({ [$0.name, $0.value] }) where text.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) {
            throw WHEPError(.invalidURL, "an HTTP request cannot carry a line break in '\(text.prefix(40))'")
        }
        var head = "\(request.method) \(request.url.target) HTTP/1.1\r\nHost: \(request.url.authority)\r\nUser-Agent: playout\r\nConnection: close\r\n"
        if !request.body.isEmpty || request.method == "POST" { head += "Content-Length: \(request.body.count)\r\n" }
        for field in request.headers { head += "\(field.name): \(field.value)\r\n" }
        head += "\r\n"
        return Array(head.utf8) + request.body
    }

    /// Sends `request` and returns the whole response, by `deadline`.
    func perform(_ request: WHEPRequest, deadline: MonotonicInstant) throws(WHEPError) -> WHEPResponse {
        let bytes = try Self.serialize(request)
        let socket = try TCPConnection.open(host: request.url.host, port: request.url.port, deadline: deadline)
        defer { socket.close() }
        var session: TLSSession?
        if request.url.scheme == .https {
            session = try TLSSession(socket: socket, host: request.url.host, options: tls, deadline: deadline)
        }
        defer { session?.shutdown() }
        let peer = request.url.authority
        if let session { try session.write(bytes, deadline: deadline) } else { try socket.write(bytes, deadline: deadline) }
        var parser = HTTPResponseParser(limits: limits, expectsBody: request.method != "HEAD")
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count: Int
            if let session {
                count = try session.read(into: &buffer, deadline: deadline)
            } else {
                count = try socket.read(into: &buffer, deadline: deadline)
            }
            do throws(HTTPResponseParser.ParseError) {
                if count == 0 {
                    return Self.response(try parser.endOfStream())
                }
                if case .complete(let response) = try parser.consume(buffer[0..<count]) { return Self.response(response) }
            } catch {
                switch error {
                case .truncated: throw WHEPError(.connectionFailed, "\(peer) closed the connection before a whole HTTP response")
                case .headersTooLarge, .bodyTooLarge: throw WHEPError(.responseTooLarge, "the HTTP response from \(peer) is too large: \(error)")
                default: throw WHEPError(.malformedResponse, "\(peer) did not answer in HTTP/1.1: \(error)")
                }
            }
        }
    }

    private static func response(_ response: HTTPResponse) -> WHEPResponse {
        WHEPResponse(status: response.status, reason: response.reason, headers: response.headers.map { ($0.name, $0.value) }, body: response.body)
    }
}

extension WHEPError {
    /// A connection's failure (PlayoutHTTP's ``NetworkError``) as WHEP tells it: timed out, or the
    /// connection failed (refused, reset, unresolvable, a system error), with the same message.
    init(_ error: NetworkError) {
        switch error.code {
        case .timedOut: self.init(.timedOut, error.message)
        case .malformedResponse: self.init(.malformedResponse, error.message)
        case .responseTooLarge: self.init(.responseTooLarge, error.message)
        case .invalidAddress: self.init(.invalidURL, error.message)
        case .hostNotFound, .resolutionFailed, .connectionRefused, .connectionClosed, .system: self.init(.connectionFailed, error.message)
        }
    }
}

/// One connection's calls with WHEP's errors.
extension TCPConnection {
    static func open(host: String, port: UInt16, deadline: MonotonicInstant) throws(WHEPError) -> TCPConnection {
        do throws(NetworkError) { return try connect(host: host, port: port, deadline: deadline) } catch { throw WHEPError(error) }
    }

    func wait(for events: Int16, until deadline: MonotonicInstant, what: String) throws(WHEPError) {
        do throws(NetworkError) { try wait(for: events, until: deadline, doing: what) } catch { throw WHEPError(error) }
    }

    func write(_ bytes: [UInt8], deadline: MonotonicInstant) throws(WHEPError) {
        do throws(NetworkError) { try send(bytes, deadline: deadline) } catch { throw WHEPError(error) }
    }

    func read(into buffer: inout [UInt8], deadline: MonotonicInstant) throws(WHEPError) -> Int {
        let result = buffer.withUnsafeMutableBytes { raw in Result { () throws(NetworkError) in try receive(into: raw, deadline: deadline) } }
        do throws(NetworkError) { return try result.get() } catch { throw WHEPError(error) }
    }
}

/// One TLS client session over a connected `TCPConnection` (OpenSSL, non-blocking, deadline-bound).
final class TLSSession {
    private let context: OpaquePointer
    private let ssl: OpaquePointer
    private let socket: TCPConnection

    init(socket: TCPConnection, host: String, options: WHEPTLSOptions, deadline: MonotonicInstant) throws(WHEPError) {
        self.socket = socket
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw Self.failure(.tlsFailed, "cannot create a TLS context") }
        self.context = context
        guard let ssl = SSL_new(context) else {
            SSL_CTX_free(context)
            throw Self.failure(.tlsFailed, "cannot create a TLS session")
        }
        self.ssl = ssl
        _ = playout_tls_require_tls12(context)
        playout_tls_set_modes(context)
        playout_tls_ignore_unexpected_eof(ssl)
        let isAddress = Self.isIPAddress(host)
        if !isAddress { _ = playout_tls_set_sni(ssl, host) }
        if options.insecure {
            SSL_set_verify(ssl, SSL_VERIFY_NONE, nil)
        } else {
            guard SSL_CTX_set_default_verify_paths(context) == 1 else { throw Self.failure(.tlsFailed, "cannot load the system's trusted certificates") }
            if let file = options.trustedCertificatesFile {
                guard SSL_CTX_load_verify_locations(context, file, nil) == 1 else {
                    throw Self.failure(.tlsFailed, "cannot load trusted certificates from '\(file)'")
                }
            }
            // SSL_set1_host takes an IP address too (checked against the certificate's IP SANs).
            guard SSL_set1_host(ssl, host) == 1 else { throw Self.failure(.tlsFailed, "cannot set the host name '\(host)' to check") }
            SSL_set_verify(ssl, SSL_VERIFY_PEER, nil)
        }
        guard SSL_set_fd(ssl, socket.descriptor) == 1 else { throw Self.failure(.tlsFailed, "cannot attach TLS to the socket") }
        while true {
            ERR_clear_error()
            let result = SSL_connect(ssl)
            if result == 1 { break }
            let error = SSL_get_error(ssl, result)
            if error == SSL_ERROR_WANT_READ {
                try socket.wait(for: Int16(POLLIN), until: deadline, what: "the TLS handshake with \(socket.peer)")
            } else if error == SSL_ERROR_WANT_WRITE {
                try socket.wait(for: Int16(POLLOUT), until: deadline, what: "the TLS handshake with \(socket.peer)")
            } else {
                let verify = SSL_get_verify_result(ssl)
                if !options.insecure, verify != Int(X509_V_OK) {
                    let reason = String(cString: X509_verify_cert_error_string(verify))
                    throw Self.failure(.certificateRejected, "the TLS certificate of \(socket.peer) is not trusted: \(reason) (use --insecure only for a test server)")
                }
                throw Self.failure(.tlsFailed, "the TLS handshake with \(socket.peer) failed")
            }
        }
    }

    deinit {
        SSL_free(ssl)
        SSL_CTX_free(context)
    }

    /// A failure with OpenSSL's first queued reason appended (the queue is then cleared).
    private static func failure(_ code: WHEPError.Code, _ message: String) -> WHEPError {
        let error = ERR_get_error()
        ERR_clear_error()
        guard error != 0 else { return WHEPError(code, message) }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(error, &text, text.count)
        return WHEPError(code, "\(message): \(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))")
    }

    static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    func write(_ bytes: [UInt8], deadline: MonotonicInstant) throws(WHEPError) {
        var offset = 0
        while offset < bytes.count {
            ERR_clear_error()
            let written = bytes.withUnsafeBytes { SSL_write(ssl, $0.baseAddress! + offset, Int32(clamping: $0.count - offset)) }
            if written > 0 {
                offset += Int(written)
                continue
            }
            try waitFor(SSL_get_error(ssl, written), deadline: deadline, doing: "sending to \(socket.peer) over TLS")
        }
    }

    /// Reads some bytes; 0 at the end of the stream (close_notify or the peer closing).
    func read(into buffer: inout [UInt8], deadline: MonotonicInstant) throws(WHEPError) -> Int {
        while true {
            ERR_clear_error()
            let count = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32(clamping: $0.count)) }
            if count > 0 { return Int(count) }
            let error = SSL_get_error(ssl, count)
            if error == SSL_ERROR_ZERO_RETURN { return 0 }
            try waitFor(error, deadline: deadline, doing: "waiting for \(socket.peer) to answer over TLS")
        }
    }

    private func waitFor(_ error: Int32, deadline: MonotonicInstant, doing what: String) throws(WHEPError) {
        switch error {
        case SSL_ERROR_WANT_READ: try socket.wait(for: Int16(POLLIN), until: deadline, what: what)
        case SSL_ERROR_WANT_WRITE: try socket.wait(for: Int16(POLLOUT), until: deadline, what: what)
        default: throw Self.failure(.connectionFailed, "\(what): the TLS connection broke")
        }
    }

    /// Sends close_notify (best effort, no waiting).
    func shutdown() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
    }
}
