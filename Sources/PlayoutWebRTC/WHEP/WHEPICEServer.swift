/// An ICE server a WHEP server announced in a `Link: <…>; rel="ice-server"` header
/// (draft-ietf-wish-whep §4.4, RFC 8288): a STUN server (RFC 7064 `stun:`/`stuns:` URI) the ICE
/// agent may use for server-reflexive candidates, or a TURN server (RFC 7065 `turn:`/`turns:`),
/// which Playout does not support and reports as such.
///
/// ```swift
/// let links = WHEPICEServer.parse(linkHeader: #"<stun:stun.example.net>; rel="ice-server", <turn:turn.example.net?transport=udp>; rel="ice-server"; username="u"; credential="p""#)
/// links[0].kind        // .stun
/// links[0].port        // 3478
/// links[1].isSupported // false
/// ```
public struct WHEPICEServer: Sendable, Hashable, CustomStringConvertible {
    /// The four URI schemes of ICE servers.
    public enum Kind: String, Sendable, Hashable {
        /// `stun:` (UDP, default port 3478).
        case stun
        /// `stuns:` (STUN over TLS, default port 5349).
        case stuns
        /// `turn:` (default port 3478).
        case turn
        /// `turns:` (TURN over TLS, default port 5349).
        case turns
    }

    /// The URI as the server wrote it.
    public var url: String
    /// The scheme.
    public var kind: Kind
    /// The host name or address (IPv6 without brackets).
    public var host: String
    /// The port (the scheme's default when the URI names none).
    public var port: UInt16
    /// The `transport` query parameter of a TURN URI (`udp`, `tcp`), if any.
    public var transport: String?
    /// The `username` link parameter, if any.
    public var username: String?
    /// The `credential` link parameter, if any.
    public var credential: String?

    /// Whether Playout can use the server: plain `stun:` only (TURN is not supported, STUN over
    /// TLS neither).
    public var isSupported: Bool { kind == .stun }

    /// The URI, without the credential.
    public var description: String { url }

    /// The longest `Link` header value read: 8 KiB; the most servers kept from one response: 16.
    public static let maximumHeaderLength = 8 * 1024
    /// The most ICE servers kept from one response.
    public static let maximumCount = 16

    /// Reads the `rel="ice-server"` links of one `Link` header value; links with other relations,
    /// and ice-server links whose URI is not a valid STUN/TURN URI, are skipped.
    ///
    /// - Complexity: O(n) in the length of the value (at most ``maximumHeaderLength`` is read).
    public static func parse(linkHeader value: String) -> [WHEPICEServer] {
        var servers: [WHEPICEServer] = []
        for link in splitLinks(Substring(value.prefix(maximumHeaderLength))) {
            guard servers.count < maximumCount, let server = parseLink(link) else { continue }
            servers.append(server)
        }
        return servers
    }

    /// Splits a header value at the commas outside `<…>` and quoted strings.
    private static func splitLinks(_ value: Substring) -> [Substring] {
        var parts: [Substring] = []
        var start = value.startIndex
        var inAngle = false
        var inQuote = false
        var escaped = false
        var index = value.startIndex
        while index < value.endIndex {
            let character = value[index]
            if inQuote {
                if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" { inQuote = false }
            } else if inAngle {
                if character == ">" { inAngle = false }
            } else if character == "<" {
                inAngle = true
            } else if character == "\"" {
                inQuote = true
            } else if character == "," {
                parts.append(value[start..<index])
                start = value.index(after: index)
            }
            index = value.index(after: index)
        }
        parts.append(value[start...])
        return parts
    }

    private static func parseLink(_ text: Substring) -> WHEPICEServer? {
        let trimmed = text.drop { $0 == " " || $0 == "\t" }
        guard trimmed.first == "<", let close = trimmed.firstIndex(of: ">") else { return nil }
        let uri = String(trimmed[trimmed.index(after: trimmed.startIndex)..<close])
        var parameters: [String: String] = [:]
        for parameter in splitParameters(trimmed[trimmed.index(after: close)...]) {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            let name = pair[0].trimmingSpaces.lowercased()
            guard !name.isEmpty, parameters[name] == nil else { continue }
            parameters[name] = pair.count == 2 ? unquote(pair[1].trimmingSpaces) : ""
        }
        guard let relation = parameters["rel"], relation.lowercased().split(separator: " ").contains("ice-server") else { return nil }
        guard var server = parseURI(uri) else { return nil }
        server.username = parameters["username"]
        server.credential = parameters["credential"]
        return server
    }

    /// Splits the parameters after `<…>` at the semicolons outside quoted strings.
    private static func splitParameters(_ text: Substring) -> [Substring] {
        var parts: [Substring] = []
        var start = text.startIndex
        var inQuote = false
        var escaped = false
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if inQuote {
                if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" { inQuote = false }
            } else if character == "\"" {
                inQuote = true
            } else if character == ";" {
                parts.append(text[start..<index])
                start = text.index(after: index)
            }
            index = text.index(after: index)
        }
        parts.append(text[start...])
        return parts.filter { !$0.trimmingSpaces.isEmpty }
    }

    private static func unquote(_ text: String) -> String {
        guard text.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") else { return text }
        var result = ""
        var escaped = false
        for character in text.dropFirst().dropLast() {
            if escaped {
                result.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// Reads a STUN (RFC 7064) or TURN (RFC 7065) URI.
    static func parseURI(_ uri: String) -> WHEPICEServer? {
        guard let colon = uri.firstIndex(of: ":"), let kind = Kind(rawValue: uri[..<colon].lowercased()) else { return nil }
        var rest = uri[uri.index(after: colon)...]
        var transport: String?
        if let question = rest.firstIndex(of: "?") {
            let query = rest[rest.index(after: question)...]
            rest = rest[..<question]
            for item in query.split(separator: "&") where item.lowercased().hasPrefix("transport=") {
                transport = String(item.dropFirst("transport=".count)).lowercased()
            }
        }
        let host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portText = after.dropFirst()
            }
        } else if let portColon = rest.lastIndex(of: ":") {
            host = rest[..<portColon]
            portText = rest[rest.index(after: portColon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty, host.utf8.count <= 253, !host.contains(where: { " /@\t".contains($0) }) else { return nil }
        var port: UInt16 = kind == .stun || kind == .turn ? 3478 : 5349
        if let portText {
            guard portText.count <= 5, portText.allSatisfy(\.isASCIIDigit), let value = Int(portText), (1...65535).contains(value) else { return nil }
            port = UInt16(value)
        }
        return WHEPICEServer(url: uri, kind: kind, host: String(host), port: port, transport: transport, username: nil, credential: nil)
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
