/// One whole HTTP/1.x request as a server reads it: the request line (``HTTPRequestHead``), the
/// header fields and a `Content-Length` body.
package struct HTTPRequest: Sendable, Hashable {
    /// `POST`, `DELETE`, `GET` …
    package var method: String
    /// The path without the query.
    package var path: String
    /// The header fields in the order received.
    package var headers: [HTTPHeader]
    /// The body (empty without `Content-Length`).
    package var body: [UInt8]

    /// Creates a request from its parts.
    package init(method: String, path: String, headers: [HTTPHeader] = [], body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }

    /// The value of the first header called `name` (case-insensitive), if any.
    package func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// A sans-IO, bounded reader of one HTTP/1.1 request on the server side: feed it the bytes as
/// they arrive; it answers `needMore`, the whole request, or the error status to answer with.
///
/// The head (request line and fields) is bounded by ``Limits/headBytes`` and
/// ``Limits/headerCount``; the body must be announced by `Content-Length` and is bounded by
/// ``Limits/bodyBytes`` — a larger announcement is refused before any of it is read (413), a
/// chunked body is refused (411: the WHEP endpoint's clients know their offer's length). Memory
/// never exceeds the head limit plus the body limit.
///
/// ```swift
/// var reader = HTTPRequestReader()
/// if case .complete(let request) = try reader.consume(Array("DELETE /whep/session/1 HTTP/1.1\r\n\r\n".utf8)) {
///     print(request.method, request.path)   // DELETE /whep/session/1
/// }
/// ```
package struct HTTPRequestReader {
    /// The bounds of a request.
    package struct Limits: Sendable, Equatable {
        /// The request line and header fields: 8 KiB by default.
        package var headBytes: Int
        /// Header fields: 64 by default.
        package var headerCount: Int
        /// The body: 64 KiB by default (an SDP offer is a few KiB).
        package var bodyBytes: Int

        /// Limits; the defaults suit SDP offers.
        package init(headBytes: Int = 8 * 1024, headerCount: Int = 64, bodyBytes: Int = 64 * 1024) {
            self.headBytes = headBytes
            self.headerCount = headerCount
            self.bodyBytes = bodyBytes
        }
    }

    /// Why a request is refused, with the status that says so.
    package enum RequestError: Error, Sendable, Equatable, CustomStringConvertible {
        /// Not `METHOD TARGET HTTP/1.x`, a header line that is not `name: value`, or a bad
        /// `Content-Length`: 400.
        case malformed(String)
        /// The head is over ``Limits/headBytes`` or has more than ``Limits/headerCount`` fields: 431.
        case headTooLarge(limit: Int)
        /// The body is announced (or sent) larger than ``Limits/bodyBytes``: 413.
        case bodyTooLarge(limit: Int)
        /// A body without `Content-Length` (chunked): 411.
        case lengthRequired

        /// The status code to answer with.
        package var status: Int {
            switch self {
            case .malformed: 400
            case .headTooLarge: 431
            case .bodyTooLarge: 413
            case .lengthRequired: 411
            }
        }

        /// The short text of the refusal's body.
        package var description: String {
            switch self {
            case .malformed(let why): "bad request: \(why)"
            case .headTooLarge(let limit): "request head over \(limit) bytes or too many header fields"
            case .bodyTooLarge(let limit): "request body over \(limit) bytes"
            case .lengthRequired: "a request body needs Content-Length (chunked bodies are not accepted)"
            }
        }
    }

    /// What a call to ``consume(_:)`` found.
    package enum Progress: Sendable, Equatable {
        /// Not whole yet: feed more bytes.
        case needMore
        /// The whole request (bytes after it are ignored: one request per connection).
        case complete(HTTPRequest)
    }

    /// The bounds in force.
    package let limits: Limits
    private var buffer: [UInt8] = []
    private var head: (request: HTTPRequest, bodyStart: Int, length: Int)?

    /// A reader for one request.
    package init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Takes the next bytes of the connection.
    ///
    /// - Throws: ``RequestError`` on the first byte that makes the request unacceptable.
    package mutating func consume(_ bytes: some Collection<UInt8>) throws(RequestError) -> Progress {
        buffer.append(contentsOf: bytes.prefix(limits.headBytes + limits.bodyBytes + 1 - buffer.count))
        if head == nil {
            switch HTTPRequestHead.parse(buffer, limit: limits.headBytes) {
            case .incomplete: return .needMore
            case .tooLarge: throw .headTooLarge(limit: limits.headBytes)
            case .malformed: throw .malformed("not an HTTP/1.x request line")
            case .request(let line):
                guard let end = HTTPRequestHead.headEnd(buffer.prefix(limits.headBytes)[...]) else { return .needMore }
                let headers = try Self.fields(buffer[..<end], limit: limits.headerCount)
                var request = HTTPRequest(method: line.method, path: line.path, headers: headers)
                var length = 0
                if let encoding = request.header("Transfer-Encoding"), !encoding.isEmpty { throw .lengthRequired }
                let lengths = headers.filter { $0.name.lowercased() == "content-length" }.map(\.value)
                if let first = lengths.first {
                    guard lengths.allSatisfy({ $0 == first }), first.count <= 12, first.utf8.allSatisfy({ (48...57).contains($0) }),
                          let value = Int(first)
                    else { throw .malformed("Content-Length '\(first.prefix(20))' is not one number") }
                    guard value <= limits.bodyBytes else { throw .bodyTooLarge(limit: limits.bodyBytes) }
                    length = value
                }
                request.body = []
                head = (request, end + 1, length)
            }
        }
        guard let (request, start, length) = head else { return .needMore }
        guard buffer.count - start >= length else { return .needMore }
        var whole = request
        whole.body = Array(buffer[start..<start + length])
        return .complete(whole)
    }

    /// The header fields of `head` (after its request line).
    private static func fields(_ head: ArraySlice<UInt8>, limit: Int) throws(RequestError) -> [HTTPHeader] {
        var lines = head.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).dropFirst()
        while let last = lines.last, last.isEmpty || last == [UInt8(ascii: "\r")] { lines.removeLast() }
        guard lines.count <= limit else { throw .headTooLarge(limit: limit) }
        var headers: [HTTPHeader] = []
        for var line in lines {
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex,
                  line.first != UInt8(ascii: " "), line.first != UInt8(ascii: "\t"),
                  line[..<colon].allSatisfy({ $0 > 0x20 && $0 < 0x7F })
            else { throw .malformed("a header line is not 'name: value'") }
            let name = String(decoding: line[..<colon], as: UTF8.self)
            let value = String(decoding: line[line.index(after: colon)...], as: UTF8.self).trimmingSpaces()
            headers.append(HTTPHeader(name, value))
        }
        return headers
    }
}

extension String {
    /// Without leading and trailing spaces and tabs.
    fileprivate func trimmingSpaces() -> String {
        var view = Substring(self)
        while view.first == " " || view.first == "\t" { view = view.dropFirst() }
        while view.last == " " || view.last == "\t" { view = view.dropLast() }
        return String(view)
    }
}
