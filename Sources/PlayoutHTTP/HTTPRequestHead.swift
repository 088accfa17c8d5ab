/// The request line of an HTTP/1.x request, read from the bytes received so far: what the
/// Prometheus endpoint needs to answer (method and path), with the size bounded. The WHEP
/// endpoint reads the header fields and body after it with ``HTTPRequestReader``.
///
/// ```swift
/// HTTPRequestHead.parse(Array("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".utf8), limit: 8192)
/// // .request(HTTPRequestHead(method: "GET", path: "/metrics"))
/// ```
package struct HTTPRequestHead: Sendable, Hashable {
    /// `GET`, `HEAD` …
    package var method: String
    /// The path without the query.
    package var path: String

    /// A request line's method and path.
    package init(method: String, path: String) {
        self.method = method
        self.path = path
    }

    /// What the bytes received so far hold.
    package enum Parsed: Sendable, Hashable {
        /// The head has not ended yet (no empty line) and is within the limit.
        case incomplete
        /// The head is over the limit without ending.
        case tooLarge
        /// The request line is not `METHOD TARGET HTTP/1.x`.
        case malformed
        /// A whole head.
        case request(HTTPRequestHead)
    }

    /// Parses the head at the start of `bytes` (at most `limit` bytes of it are looked at).
    package static func parse(_ bytes: [UInt8], limit: Int) -> Parsed {
        let window = bytes.prefix(limit)
        guard let end = headEnd(window) else { return bytes.count >= limit ? .tooLarge : .incomplete }
        let head = window[..<end]
        let lineEnd = head.firstIndex(of: UInt8(ascii: "\n")) ?? head.endIndex
        var line = head[..<lineEnd]
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        let parts = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy({ (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }),
              parts[1].first == UInt8(ascii: "/") || parts[1].elementsEqual("*".utf8),
              !parts[1].contains(where: { $0 <= 0x20 || $0 >= 0x7F }),
              parts[2].starts(with: "HTTP/1.".utf8), parts[2].count == 8
        else { return .malformed }
        let target = parts[1]
        let path = target.prefix { $0 != UInt8(ascii: "?") }
        return .request(HTTPRequestHead(method: String(decoding: parts[0], as: UTF8.self), path: String(decoding: path, as: UTF8.self)))
    }

    /// The index of the empty line that ends the head (after CRLF CRLF or LF LF), if any.
    package static func headEnd(_ bytes: ArraySlice<UInt8>) -> Int? {
        var previousWasLineEnd = false
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\n") {
                if previousWasLineEnd { return index }
                previousWasLineEnd = true
            } else if byte != UInt8(ascii: "\r") {
                previousWasLineEnd = false
            }
            index += 1
        }
        return nil
    }
}
