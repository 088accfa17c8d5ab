/// One header line of an HTTP message.
package struct HTTPHeader: Sendable, Hashable {
    /// The field name as received (compare case-insensitively).
    package var name: String
    /// The field value without surrounding whitespace.
    package var value: String

    package init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// A whole HTTP/1.x response.
package struct HTTPResponse: Sendable, Hashable {
    /// The status code (200, 204, 404, 500 …).
    package var status: Int
    /// The reason phrase (may be empty).
    package var reason: String
    /// The header fields in the order received.
    package var headers: [HTTPHeader]
    /// The body (de-chunked).
    package var body: [UInt8]
    /// Whether the connection may carry another request after this response.
    package var keepAlive: Bool

    /// The value of the first header called `name` (case-insensitive), if any.
    package func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The body as text (invalid UTF-8 repaired), at most `limit` characters, for messages.
    package func bodyText(limit: Int = 200) -> String {
        let text = String(decoding: body.prefix(limit * 4), as: UTF8.self)
        let trimmed = text.prefix(limit).split(whereSeparator: { $0 == "\n" || $0 == "\r" }).joined(separator: " ")
        return text.count > limit ? trimmed + "…" : trimmed
    }
}

/// A sans-IO parser of one HTTP/1.1 response (RFC 9112): feed it the bytes as they arrive with
/// ``consume(_:)``, and ``endOfStream()`` when the peer closes; it answers `needMore` or the
/// whole response.
///
/// Memory is bounded by ``Limits``: the status line and headers together, each chunk-size line,
/// and the body; anything over a limit is an error, never a growing buffer. Bodies are delimited
/// by `Content-Length`, `Transfer-Encoding: chunked` or the end of the connection; 1xx interim
/// responses are skipped; 204 and 304 (and any response to HEAD) have no body.
///
/// ```swift
/// var parser = HTTPResponseParser()
/// let bytes = Array("HTTP/1.1 204 No Content\r\n\r\n".utf8)
/// if case .complete(let response) = try bytes.withUnsafeBytes({ try parser.consume($0) }) { print(response.status) }  // 204
/// ```
package struct HTTPResponseParser {
    /// The bounds of what a response may hold.
    package struct Limits: Sendable, Equatable {
        /// The default bound of the status line and header section: 16 KiB.
        package static let defaultHeaderBytes = 16 * 1024
        /// The default bound of the number of header fields: 100.
        package static let defaultHeaderCount = 100
        /// The default bound of the body: 1 MiB (a telemetry server answers with a few bytes).
        package static let defaultBodyBytes = 1024 * 1024

        package var headerBytes: Int
        package var headerCount: Int
        package var bodyBytes: Int

        package init(headerBytes: Int = defaultHeaderBytes, headerCount: Int = defaultHeaderCount, bodyBytes: Int = defaultBodyBytes) {
            self.headerBytes = headerBytes
            self.headerCount = headerCount
            self.bodyBytes = bodyBytes
        }
    }

    /// Why the bytes are not an acceptable HTTP/1.1 response.
    package enum ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The first line is not `HTTP/1.x NNN reason`.
        case malformedStatusLine
        /// A header line is not `name: value` (or uses obsolete line folding).
        case malformedHeader
        /// The status line and headers exceed `limit` bytes, or there are more than `limit` fields.
        case headersTooLarge(limit: Int)
        /// The body exceeds `limit` bytes.
        case bodyTooLarge(limit: Int)
        /// `Content-Length` is not a number, or two of them disagree.
        case invalidContentLength
        /// A chunk-size line is not hexadecimal, too long, or a chunk does not end with CRLF.
        case invalidChunkSize
        /// A transfer coding other than chunked.
        case unsupportedTransferEncoding(String)
        /// The stream ended before the response did.
        case truncated

        package var description: String {
            switch self {
            case .malformedStatusLine: "malformed status line"
            case .malformedHeader: "malformed header line"
            case .headersTooLarge(let limit): "headers larger than \(limit) bytes or fields"
            case .bodyTooLarge(let limit): "body larger than \(limit) bytes"
            case .invalidContentLength: "invalid Content-Length"
            case .invalidChunkSize: "invalid chunk"
            case .unsupportedTransferEncoding(let coding): "unsupported Transfer-Encoding '\(coding)'"
            case .truncated: "response cut short"
            }
        }
    }

    /// What a call to ``consume(_:)`` found.
    package enum Progress: Sendable, Equatable {
        /// The response is not complete yet: feed more bytes.
        case needMore
        /// The whole response.
        case complete(HTTPResponse)
    }

    private enum State {
        case statusLine
        case headers
        case fixedBody(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
        case untilClose
        case complete
    }

    /// The bounds in force.
    package let limits: Limits
    private let expectsBody: Bool
    private var state = State.statusLine
    private var pending: [UInt8] = []
    private var headBytes = 0
    private var response = HTTPResponse(status: 0, reason: "", headers: [], body: [], keepAlive: true)
    private var isHTTP10 = false

    /// A parser for one response; `expectsBody` is false for the answer to a HEAD request.
    package init(limits: Limits = Limits(), expectsBody: Bool = true) {
        self.limits = limits
        self.expectsBody = expectsBody
    }

    /// Parses `bytes`, the next bytes of the stream.
    ///
    /// - Returns: `complete` once the response is whole (bytes after it make the connection
    ///   unusable for another request: `keepAlive` becomes false), `needMore` before.
    /// - Throws: ``ParseError`` on the first byte that cannot belong to a valid response; the
    ///   parser is then spent.
    package mutating func consume(_ bytes: UnsafeRawBufferPointer) throws(ParseError) -> Progress {
        if case .complete = state {
            if !bytes.isEmpty { response.keepAlive = false }
            return .complete(response)
        }
        pending.append(contentsOf: bytes)
        return try process()
    }

    /// Parses `bytes`, the next bytes of the stream (see ``consume(_:)-(UnsafeRawBufferPointer)``).
    package mutating func consume(_ bytes: some Collection<UInt8>) throws(ParseError) -> Progress {
        if case .complete = state {
            if !bytes.isEmpty { response.keepAlive = false }
            return .complete(response)
        }
        pending.append(contentsOf: bytes)
        return try process()
    }

    private mutating func process() throws(ParseError) -> Progress {
        var position = 0
        defer { pending.removeFirst(min(position, pending.count)) }
        while true {
            switch state {
            case .statusLine:
                guard let line = try nextLine(&position, limit: limits.headerBytes - headBytes, tooLong: .headersTooLarge(limit: limits.headerBytes)) else { return .needMore }
                try parseStatusLine(line)
                state = .headers
            case .headers:
                guard let line = try nextLine(&position, limit: limits.headerBytes - headBytes, tooLong: .headersTooLarge(limit: limits.headerBytes)) else { return .needMore }
                if line.isEmpty {
                    try finishHead()
                } else {
                    try parseHeader(line)
                }
            case .fixedBody(let remaining):
                let count = min(remaining, pending.count - position)
                response.body.append(contentsOf: pending[position..<position + count])
                position += count
                if count == remaining {
                    state = .complete
                } else {
                    state = .fixedBody(remaining: remaining - count)
                    return .needMore
                }
            case .chunkSize:
                guard let line = try nextLine(&position, limit: 1024, tooLong: .invalidChunkSize) else { return .needMore }
                let size = try parseChunkSize(line)
                if size == 0 {
                    state = .trailers
                } else {
                    guard size <= limits.bodyBytes - response.body.count else { throw .bodyTooLarge(limit: limits.bodyBytes) }
                    state = .chunkData(remaining: size)
                }
            case .chunkData(let remaining):
                let count = min(remaining, pending.count - position)
                response.body.append(contentsOf: pending[position..<position + count])
                position += count
                if count == remaining {
                    state = .chunkDataEnd
                } else {
                    state = .chunkData(remaining: remaining - count)
                    return .needMore
                }
            case .chunkDataEnd:
                guard let line = try nextLine(&position, limit: 0, tooLong: .invalidChunkSize) else { return .needMore }
                guard line.isEmpty else { throw .invalidChunkSize }
                state = .chunkSize
            case .trailers:
                guard let line = try nextLine(&position, limit: limits.headerBytes - headBytes, tooLong: .headersTooLarge(limit: limits.headerBytes)) else { return .needMore }
                if line.isEmpty { state = .complete }
            case .untilClose:
                let count = pending.count - position
                guard count <= limits.bodyBytes - response.body.count else { throw .bodyTooLarge(limit: limits.bodyBytes) }
                response.body.append(contentsOf: pending[position...])
                position = pending.count
                return .needMore
            case .complete:
                if position < pending.count { response.keepAlive = false }
                position = pending.count
                return .complete(response)
            }
        }
    }

    /// Tells the parser the peer closed the stream.
    ///
    /// - Returns: The response when it is complete, or delimited by the close.
    /// - Throws: ``ParseError/truncated`` when the stream ended inside the response.
    package mutating func endOfStream() throws(ParseError) -> HTTPResponse {
        switch state {
        case .complete:
            response.keepAlive = false
            return response
        case .untilClose:
            state = .complete
            response.keepAlive = false
            return response
        default:
            throw .truncated
        }
    }

    /// The next line (without CR LF or a bare LF) from `position`, or nil when no line end has
    /// arrived yet; a line longer than `limit` bytes throws `tooLong`.
    private mutating func nextLine(_ position: inout Int, limit: Int, tooLong: ParseError) throws(ParseError) -> ArraySlice<UInt8>? {
        guard let end = pending[position...].firstIndex(of: UInt8(ascii: "\n")) else {
            if pending.count - position > max(limit, 0) + 1 { throw tooLong }
            return nil
        }
        var line = pending[position..<end]
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        guard line.count <= max(limit, 0) else { throw tooLong }
        switch state {
        case .statusLine, .headers, .trailers: headBytes += end + 1 - position
        default: break
        }
        position = end + 1
        return line
    }

    private mutating func parseStatusLine(_ line: ArraySlice<UInt8>) throws(ParseError) {
        // HTTP/1.x SP 3DIGIT [SP reason]
        let bytes = Array(line)
        guard bytes.count >= 12, bytes.starts(with: Array("HTTP/1.".utf8)),
              (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[7]), bytes[8] == UInt8(ascii: " "),
              bytes[9...11].allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              bytes.count == 12 || bytes[12] == UInt8(ascii: " ")
        else { throw .malformedStatusLine }
        let status = bytes[9...11].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        guard (100...599).contains(status) else { throw .malformedStatusLine }
        guard !bytes.dropFirst(12).contains(where: { $0 < 0x20 && $0 != 0x09 || $0 == 0x7F }) else { throw .malformedStatusLine }
        isHTTP10 = bytes[7] == UInt8(ascii: "0")
        response = HTTPResponse(status: status, reason: String(decoding: bytes.dropFirst(13), as: UTF8.self), headers: [], body: [], keepAlive: !isHTTP10)
    }

    private mutating func parseHeader(_ line: ArraySlice<UInt8>) throws(ParseError) {
        guard response.headers.count < limits.headerCount else { throw .headersTooLarge(limit: limits.headerCount) }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex,
              line[..<colon].allSatisfy(Self.isTokenByte)
        else { throw .malformedHeader }
        let isWhitespace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        var value = line[(colon + 1)...]
        while let first = value.first, isWhitespace(first) { value = value.dropFirst() }
        while let last = value.last, isWhitespace(last) { value = value.dropLast() }
        guard !value.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) else { throw .malformedHeader }
        response.headers.append(HTTPHeader(String(decoding: line[..<colon], as: UTF8.self), String(decoding: value, as: UTF8.self)))
    }

    /// tchar of RFC 9110 §5.6.2.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }

    private mutating func finishHead() throws(ParseError) {
        if (100...199).contains(response.status) {
            // An interim response: the real one follows.
            state = .statusLine
            return
        }
        var contentLength: Int?
        var chunked = false
        for header in response.headers {
            switch header.name.lowercased() {
            case "content-length":
                for part in header.value.split(separator: ",", omittingEmptySubsequences: false) {
                    let digits = part.trimmingSpaces
                    guard !digits.isEmpty, digits.count <= 18, digits.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                          let length = Int(digits), contentLength == nil || contentLength == length
                    else { throw .invalidContentLength }
                    contentLength = length
                }
            case "transfer-encoding":
                let codings = header.value.split(separator: ",").map { $0.trimmingSpaces.lowercased() }
                for coding in codings where coding != "chunked" { throw .unsupportedTransferEncoding(coding) }
                chunked = !codings.isEmpty
            case "connection":
                let options = header.value.split(separator: ",").map { $0.trimmingSpaces.lowercased() }
                if options.contains("close") { response.keepAlive = false }
                if isHTTP10, options.contains("keep-alive") { response.keepAlive = true }
            default:
                break
            }
        }
        if !expectsBody || response.status == 204 || response.status == 304 {
            state = .complete
        } else if chunked {
            state = .chunkSize
        } else if let contentLength {
            guard contentLength <= limits.bodyBytes else { throw .bodyTooLarge(limit: limits.bodyBytes) }
            state = contentLength == 0 ? .complete : .fixedBody(remaining: contentLength)
        } else {
            response.keepAlive = false
            state = .untilClose
        }
    }

    private func parseChunkSize(_ line: ArraySlice<UInt8>) throws(ParseError) -> Int {
        let digits = line.prefix { $0 != UInt8(ascii: ";") && $0 != 0x20 && $0 != 0x09 }
        guard !digits.isEmpty, digits.count <= 15 else { throw .invalidChunkSize }
        var size = 0
        for byte in digits {
            let value: Int
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = Int(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = Int(byte - UInt8(ascii: "a")) + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = Int(byte - UInt8(ascii: "A")) + 10
            default: throw .invalidChunkSize
            }
            size = size * 16 + value
        }
        let rest = line.dropFirst(digits.count).drop { $0 == 0x20 || $0 == 0x09 }
        guard rest.isEmpty || rest.first == UInt8(ascii: ";") else { throw .invalidChunkSize }
        return size
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs.
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
