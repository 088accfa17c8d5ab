import PlayoutCore
import PlayoutHTTP

/// An `http://HOST[:PORT]/PATH[?QUERY]` URL taken apart, without Foundation: what a network
/// backend needs to connect (host, port) and what it sends (path and query as given).
///
/// ```swift
/// let url = try HTTPEndpoint(parsing: "http://[::1]:8086/write?db=playout")
/// print(url.host, url.port, url.path, url.queryItems)   // ::1 8086 /write [("db", "playout")]
/// ```
package struct HTTPEndpoint: Sendable, Hashable {
    /// The host: a name, or an IPv4 or IPv6 address (without brackets).
    package var host: String
    /// The port (80 when the URL gives none).
    package var port: UInt16
    /// The path, starting with `/` (percent-escapes kept as written).
    package var path: String
    /// The query without `?` (percent-escapes kept as written), empty when there is none.
    package var query: String

    /// Parses `text`.
    ///
    /// - Throws: ``NetworkTelemetryError`` with code `invalidAddress` and a message that shows a
    ///   valid URL, for anything but a plain `http://` URL (https, user info, a fragment, a bad
    ///   port, spaces or control characters).
    package init(parsing text: String) throws(NetworkTelemetryError) {
        func invalid(_ why: String) -> NetworkTelemetryError {
            NetworkTelemetryError(.invalidAddress, "'\(text)' \(why), e.g. http://127.0.0.1:8086/write?db=playout")
        }
        guard !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else {
            throw invalid("has a space or control character")
        }
        let lowered = text.lowercased()
        if lowered.hasPrefix("https://") {
            throw invalid("uses https, which Playout does not speak: use http (or a local TLS proxy)")
        }
        guard lowered.hasPrefix("http://") else { throw invalid("is not an http:// URL") }
        let rest = text.dropFirst("http://".count)
        guard !rest.contains("#") else { throw invalid("has a fragment (#…)") }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        guard !authority.contains("@") else { throw invalid("has user info (user@…): pass credentials another way") }
        var hostPart: Substring
        var portPart: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw invalid("has an unclosed [IPv6] address") }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("has something after its [IPv6] address that is not :PORT") }
                portPart = after.dropFirst()
            }
            guard hostPart.contains(":") else { throw invalid("has brackets around something that is not an IPv6 address") }
        } else {
            if let colon = authority.firstIndex(of: ":") {
                hostPart = authority[..<colon]
                portPart = authority[authority.index(after: colon)...]
            } else {
                hostPart = authority
            }
        }
        guard !hostPart.isEmpty else { throw invalid("has no host") }
        guard hostPart.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._:%".contains($0)) }) else {
            throw invalid("has a host with characters a host name cannot have")
        }
        var port: UInt16 = 80
        if let portPart {
            guard !portPart.isEmpty, portPart.count <= 5, portPart.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let number = UInt16(portPart), number > 0
            else { throw invalid("has a port that is not a number from 1 to 65535") }
            port = number
        }
        let target = rest[authorityEnd...]
        let queryStart = target.firstIndex(of: "?")
        let path = queryStart.map { target[..<$0] } ?? target
        self.host = String(hostPart)
        self.port = port
        self.path = path.isEmpty ? "/" : String(path)
        self.query = queryStart.map { String(target[target.index(after: $0)...]) } ?? ""
    }

    /// The query's `name=value` pairs, percent-decoded (`+` stays a plus), in order.
    package var queryItems: [(name: String, value: String)] {
        query.split(separator: "&").map { item in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (Self.percentDecoded(parts[0]), parts.count > 1 ? Self.percentDecoded(parts[1]) : "")
        }
    }

    /// The decoded value of the first query item called `name`, if any.
    package func queryValue(_ name: String) -> String? {
        queryItems.first { $0.name == name }?.value
    }

    /// The path and query as a request line carries them.
    package var target: String {
        query.isEmpty ? path : "\(path)?\(query)"
    }

    /// `text` with `%XX` escapes decoded (invalid escapes kept as written; invalid UTF-8 repaired).
    package static func percentDecoded(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8)[...]
        while let byte = iterator.popFirst() {
            if byte == UInt8(ascii: "%"), iterator.count >= 2,
               let high = iterator[iterator.startIndex].hexDigitValue, let low = iterator[iterator.startIndex + 1].hexDigitValue {
                bytes.append(high << 4 | low)
                iterator = iterator.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `text` percent-encoded for a query value (everything but RFC 3986's unreserved characters).
    package static func percentEncoded(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let digits = Array("0123456789ABCDEF".utf8)
                result += "%" + String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 15)]], as: UTF8.self)
            }
        }
        return result
    }
}
