/// An `http://` or `https://` URL as WHEP uses it: the endpoint a subscriber posts its offer to,
/// and the session URL a server's `Location` names (absolute or relative, see
/// ``resolving(_:)``).
///
/// ```swift
/// let endpoint = try WHEPURL("https://example.com:8443/whep/stream?x=1")
/// endpoint.host      // "example.com"
/// endpoint.port      // 8443
/// endpoint.target    // "/whep/stream?x=1"
/// try endpoint.resolving("../session/42").description   // "https://example.com:8443/session/42"
/// ```
///
/// User information (`user@host`) and fragments are not kept; a fragment is dropped, user
/// information is refused (a token belongs in `Authorization`).
public struct WHEPURL: Sendable, Hashable, CustomStringConvertible {
    /// The two schemes WHEP runs over.
    public enum Scheme: String, Sendable, Hashable {
        /// Plain HTTP/1.1 over TCP (default port 80).
        case http
        /// HTTP/1.1 over TLS (default port 443).
        case https

        /// The port used when the URL names none.
        public var defaultPort: UInt16 { self == .http ? 80 : 443 }
    }

    /// The scheme.
    public var scheme: Scheme
    /// The host: a name, an IPv4 address, or an IPv6 address without brackets.
    public var host: String
    /// The port (the scheme's default when the URL names none).
    public var port: UInt16
    /// The path and query, always starting with `/`.
    public var target: String

    /// The longest URL accepted: 8 KiB.
    public static let maximumLength = 8 * 1024

    /// Creates a URL from its parts.
    public init(scheme: Scheme, host: String, port: UInt16? = nil, target: String = "/") {
        self.scheme = scheme
        self.host = host
        self.port = port ?? scheme.defaultPort
        self.target = target.hasPrefix("/") ? target : "/" + target
    }

    /// Parses an absolute `http://` or `https://` URL.
    ///
    /// - Throws: ``WHEPError`` with code `invalidURL`, naming what is wrong.
    public init(_ text: String) throws(WHEPError) {
        guard text.utf8.count <= Self.maximumLength else {
            throw WHEPError(.invalidURL, "a URL of \(text.utf8.count) bytes is longer than \(Self.maximumLength)")
        }
        guard !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F || $0.value > 0x7E }) else {
            throw WHEPError(.invalidURL, "'\(text.prefix(80))' has spaces or characters a URL cannot hold: percent-encode them")
        }
        let lower = text.lowercased()
        let scheme: Scheme
        let rest: Substring
        if lower.hasPrefix("http://") {
            scheme = .http
            rest = text.dropFirst(7)
        } else if lower.hasPrefix("https://") {
            scheme = .https
            rest = text.dropFirst(8)
        } else {
            throw WHEPError(.invalidURL, "'\(text.prefix(80))' is not an http:// or https:// URL, e.g. https://example.com/whep/stream")
        }
        let withoutFragment = rest.prefix { $0 != "#" }
        let authorityEnd = withoutFragment.firstIndex { $0 == "/" || $0 == "?" } ?? withoutFragment.endIndex
        let authority = withoutFragment[..<authorityEnd]
        var target = String(withoutFragment[authorityEnd...])
        if target.isEmpty { target = "/" } else if target.hasPrefix("?") { target = "/" + target }
        guard !authority.contains("@") else {
            throw WHEPError(.invalidURL, "'\(text.prefix(80))' carries user information: give a token with --token instead")
        }
        let host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw WHEPError(.invalidURL, "'\(text.prefix(80))' has an unclosed IPv6 address: write [::1]:8889")
            }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw WHEPError(.invalidURL, "'\(text.prefix(80))' has text after the IPv6 address") }
                portText = after.dropFirst()
            }
            guard host.contains(":"), host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw WHEPError(.invalidURL, "'\(host)' in '\(text.prefix(80))' is not an IPv6 address")
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        guard !host.isEmpty, host.utf8.count <= 253, authority.hasPrefix("[") || !host.contains(where: { "[]:/\\".contains($0) }) else {
            throw WHEPError(.invalidURL, "'\(text.prefix(80))' has no valid host")
        }
        var port = scheme.defaultPort
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy(\.isASCIIDigit), let value = Int(portText), (1...65535).contains(value) else {
                throw WHEPError(.invalidURL, "'\(portText.prefix(20))' in '\(text.prefix(80))' is not a port (1…65535)")
            }
            port = UInt16(value)
        }
        self.init(scheme: scheme, host: String(host), port: port, target: Self.removingDotSegments(target))
    }

    /// `host:port` as a URL writes it (the port left out when it is the scheme's default):
    /// the value of the `Host` header.
    public var authority: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == scheme.defaultPort ? name : "\(name):\(port)"
    }

    /// The URL as text.
    public var description: String { "\(scheme.rawValue)://\(authority)\(target)" }

    /// Resolves a URI reference against this URL (RFC 3986 §5.2): an absolute URL, a
    /// network-path (`//host/path`), an absolute path, a query, or a relative path; dot segments
    /// are removed.
    ///
    /// - Throws: ``WHEPError`` with code `invalidURL` when the reference is empty after trimming,
    ///   too long, or resolves to a URL that is not http(s).
    public func resolving(_ reference: String) throws(WHEPError) -> WHEPURL {
        let trimmed = String(reference.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
        guard !trimmed.isEmpty else { throw WHEPError(.invalidURL, "an empty Location from \(authority)") }
        guard trimmed.utf8.count <= Self.maximumLength else {
            throw WHEPError(.invalidURL, "a Location of \(trimmed.utf8.count) bytes from \(authority) is longer than \(Self.maximumLength)")
        }
        guard !trimmed.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F || $0.value > 0x7E }) else {
            throw WHEPError(.invalidURL, "the Location '\(trimmed.prefix(80))' from \(authority) has characters a URL cannot hold")
        }
        let reference = String(trimmed.prefix { $0 != "#" })
        if let colon = reference.firstIndex(of: ":"), reference[..<colon].allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }),
           reference[..<colon].first?.isLetter == true
        {
            return try WHEPURL(reference)
        }
        if reference.hasPrefix("//") { return try WHEPURL("\(scheme.rawValue):\(reference)") }
        var resolved = self
        if reference.isEmpty { return resolved }
        if reference.hasPrefix("/") {
            resolved.target = Self.removingDotSegments(reference)
        } else if reference.hasPrefix("?") {
            resolved.target = path + reference
        } else {
            let directory = path.lastIndex(of: "/").map { String(path[...$0]) } ?? "/"
            resolved.target = Self.removingDotSegments(directory + reference)
        }
        return resolved
    }

    /// The target without its query.
    var path: String { String(target.prefix { $0 != "?" }) }

    /// RFC 3986 §5.2.4 on the path part of `target` (the query is kept as is).
    static func removingDotSegments(_ target: String) -> String {
        let pathPart = target.prefix { $0 != "?" }
        let query = target.dropFirst(pathPart.count)
        guard pathPart.contains(".") else { return target }
        var output: [Substring] = []
        let segments = pathPart.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        for (index, segment) in segments.enumerated() {
            let isLast = index == segments.count - 1
            switch segment {
            case ".":
                if isLast { output.append("") }
            case "..":
                if !output.isEmpty { output.removeLast() }
                if isLast { output.append("") }
            default:
                output.append(segment)
            }
        }
        return "/" + output.joined(separator: "/") + query
    }
}

extension Character {
    /// `0`…`9` only (not other scripts' digits).
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
