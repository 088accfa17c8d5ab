import PlayoutCore
package import PlayoutHTTP

/// A minimal blocking HTTP/1.1 client for one server: requests with a `Content-Length` body,
/// responses read whole (``HTTPResponseParser``), the connection kept alive between requests and
/// opened again when the server has closed it.
///
/// Each ``send(method:target:headers:body:)`` is one attempt bounded by ``timeout`` as a whole
/// (connect, send, wait for and read the answer); the engine's queue does the retrying. Not
/// thread-safe: a backend owns its client and calls it from its delivery thread only.
///
/// ```swift
/// let client = HTTPClient(host: "127.0.0.1", port: 8086, timeout: .seconds(2))
/// let response = try client.send(method: "POST", target: "/write?db=playout", body: Array("m v=1i".utf8))
/// print(response.status)   // 204
/// ```
package final class HTTPClient {
    /// The server's host (a name or an IPv4/IPv6 address without brackets) and port.
    package let host: String
    package let port: UInt16
    /// The bound of one request, from connecting to the last byte of the answer.
    package let timeout: Duration
    /// The bounds of an answer.
    package let limits: HTTPResponseParser.Limits
    private var connection: TCPConnection?
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 1)

    /// A client for `host`:`port`; it connects on the first request.
    package init(host: String, port: UInt16, timeout: Duration, limits: HTTPResponseParser.Limits = .init()) {
        self.host = host
        self.port = port
        self.timeout = timeout
        self.limits = limits
    }

    deinit {
        connection?.close()
        buffer.deallocate()
    }

    /// `host:port` as a URL writes it, for messages and the `Host` header.
    package var authority: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Sends one request and reads its whole answer, within ``timeout``.
    ///
    /// A kept-alive connection the server has closed in the meantime is replaced once, within
    /// the same time bound.
    ///
    /// - Parameters:
    ///   - method: `GET`, `POST` …
    ///   - target: The path and query, e.g. `/write?db=playout`.
    ///   - headers: Extra header fields (`Content-Type`, `Authorization` …); values must not
    ///     contain a line break.
    ///   - body: The body, sent with `Content-Length` (also for an empty body on POST/PUT).
    /// - Throws: ``NetworkTelemetryError`` (refused, timed out, closed, malformed, too large).
    package func send(method: String, target: String, headers: [HTTPHeader] = [], body: [UInt8] = []) throws(NetworkTelemetryError) -> HTTPResponse {
        let deadline = MonotonicClock().now.advanced(by: timeout)
        let request = try serialize(method: method, target: target, headers: headers, body: body)
        if let reused = connection, reused.isReusable {
            do throws(NetworkTelemetryError) {
                return try exchange(request, on: reused, expectsBody: method != "HEAD", deadline: deadline)
            } catch where error.code == .connectionClosed && !receivedAny {
                // The server closed the idle connection as we reused it: one fresh one.
            }
        }
        connection?.close()
        connection = nil
        let fresh = try TCPConnection.connect(host: host, port: port, deadline: deadline)
        connection = fresh
        return try exchange(request, on: fresh, expectsBody: method != "HEAD", deadline: deadline)
    }

    /// Closes the kept-alive connection, if any.
    package func close() {
        connection?.close()
        connection = nil
    }

    private var receivedAny = false

    private func exchange(_ request: [UInt8], on connection: TCPConnection, expectsBody: Bool, deadline: MonotonicInstant) throws(NetworkTelemetryError) -> HTTPResponse {
        receivedAny = false
        do throws(NetworkTelemetryError) {
            try connection.send(request, deadline: deadline)
            var parser = HTTPResponseParser(limits: limits, expectsBody: expectsBody)
            while true {
                let count = try connection.receive(into: buffer, deadline: deadline)
                let response: HTTPResponse
                do throws(HTTPResponseParser.ParseError) {
                    if count == 0 {
                        response = try parser.endOfStream()
                    } else {
                        receivedAny = true
                        guard case .complete(let whole) = try parser.consume(UnsafeRawBufferPointer(rebasing: buffer[0..<count])) else { continue }
                        response = whole
                    }
                } catch {
                    throw translate(error)
                }
                if !response.keepAlive { self.connection?.close(); self.connection = nil }
                return response
            }
        } catch {
            connection.close()
            if self.connection === connection { self.connection = nil }
            throw error
        }
    }

    private func translate(_ error: HTTPResponseParser.ParseError) -> NetworkTelemetryError {
        switch error {
        case .truncated:
            NetworkTelemetryError(.connectionClosed, "\(authority) closed the connection before a whole HTTP response")
        case .headersTooLarge, .bodyTooLarge:
            NetworkTelemetryError(.responseTooLarge, "the HTTP response from \(authority) is too large: \(error)")
        default:
            NetworkTelemetryError(.malformedResponse, "\(authority) did not answer in HTTP/1.1: \(error)")
        }
    }

    private func serialize(method: String, target: String, headers: [HTTPHeader], body: [UInt8]) throws(NetworkTelemetryError) -> [UInt8] {
        for text in [method, target] + headers.flatMap({ [$0.name, $0.value] }) where text.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) {
            throw NetworkTelemetryError(.invalidAddress, "an HTTP request to \(authority) cannot carry a line break in '\(text.prefix(40))'")
        }
        guard !method.isEmpty, !method.contains(" "), target.hasPrefix("/"), !target.contains(" ") else {
            throw NetworkTelemetryError(.invalidAddress, "'\(method) \(target)' is not a valid HTTP request line")
        }
        var head = "\(method) \(target) HTTP/1.1\r\nHost: \(authority)\r\nUser-Agent: playout\r\n"
        if !body.isEmpty || method == "POST" || method == "PUT" {
            head += "Content-Length: \(body.count)\r\n"
        }
        for header in headers { head += "\(header.name): \(header.value)\r\n" }
        head += "\r\n"
        var bytes = Array(head.utf8)
        bytes.append(contentsOf: body)
        return bytes
    }
}
