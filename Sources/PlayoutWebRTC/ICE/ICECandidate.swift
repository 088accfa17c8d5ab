import PlayoutCore
public import PlayoutRTP

/// An ICE candidate (RFC 8445 §5, SDP form RFC 8839 §5.1): a transport address one side can
/// be reached on, its type, priority and foundation.
///
/// Only UDP candidates with numeric IPv4/IPv6 addresses are usable here; parsing a TCP
/// candidate or an mDNS `.local` name throws a typed error the caller can count and skip.
///
/// ```swift
/// let candidate = try ICECandidate(sdp: "a=candidate:1 1 udp 2130706431 192.0.2.1 54321 typ host")
/// candidate.sdpAttribute   // "candidate:1 1 udp 2130706431 192.0.2.1 54321 typ host"
/// ```
public struct ICECandidate: Hashable, Sendable, CustomStringConvertible {
    /// The candidate type, with its RFC 8445 §5.1.2.2 recommended type preference.
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        /// An address of a local interface.
        case host
        /// The address a STUN server saw (`srflx`).
        case serverReflexive = "srflx"
        /// The address a peer's check came from or a response reported (`prflx`).
        case peerReflexive = "prflx"
        /// An address on a TURN relay (`relay`; not gathered here).
        case relayed = "relay"

        /// The recommended type preference: host 126, peer-reflexive 110, server-reflexive 100, relayed 0.
        public var typePreference: UInt32 {
            switch self {
            case .host: 126
            case .peerReflexive: 110
            case .serverReflexive: 100
            case .relayed: 0
            }
        }
    }

    /// Groups candidates of the same type, base IP and STUN server (RFC 8445 §5.1.1.3); at most 32 ice-chars.
    public var foundation: String
    /// 1 for RTP (rtcp-mux and BUNDLE leave only component 1).
    public var component: Int
    /// The priority (RFC 8445 §5.1.2).
    public var priority: UInt32
    /// The transport address.
    /// The transport address (numeric host and port).
    public var address: SocketAddress
    /// Host, server-reflexive, peer-reflexive or relayed.
    public var kind: Kind
    /// The related address (`raddr`/`rport`): the base of a reflexive candidate.
    public var relatedAddress: SocketAddress?

    /// Creates a candidate from its parts.
    public init(foundation: String, component: Int = 1, priority: UInt32, address: SocketAddress, kind: Kind, relatedAddress: SocketAddress? = nil) {
        self.foundation = foundation
        self.component = component
        self.priority = priority
        self.address = address
        self.kind = kind
        self.relatedAddress = relatedAddress
    }

    /// The largest local preference.
    public static let maximumLocalPreference: UInt32 = 65_535

    /// The priority of a candidate (RFC 8445 §5.1.2.1):
    /// `2^24 × type preference + 2^8 × local preference + (256 − component)`.
    public static func priority(kind: Kind, localPreference: UInt32 = maximumLocalPreference, component: Int = 1) -> UInt32 {
        let type = kind.typePreference << 24
        let local = (min(localPreference, maximumLocalPreference)) << 8
        let componentPart = UInt32(clamping: max(0, min(256 - component, 255)))
        return type | local | componentPart
    }

    /// The foundation of a candidate (RFC 8445 §5.1.1.3): equal for the same type, base IP
    /// address, STUN/TURN server and transport, different otherwise. A short decimal hash of
    /// those four, so both ends and every run agree.
    public static func foundation(kind: Kind, baseHost: String, server: SocketAddress? = nil, transport: String = "udp") -> String {
        var hash: UInt32 = 0x811C_9DC5  // FNV-1a, 32 bits
        for byte in "\(kind.rawValue)|\(baseHost)|\(server?.description ?? "")|\(transport)".utf8 {
            hash = (hash ^ UInt32(byte)) &* 0x0100_0193
        }
        return String(hash)
    }

    /// A host candidate on `address` with the recommended priority and its foundation.
    public static func host(_ address: SocketAddress, localPreference: UInt32 = maximumLocalPreference, component: Int = 1) -> ICECandidate {
        ICECandidate(
            foundation: foundation(kind: .host, baseHost: address.host), component: component,
            priority: priority(kind: .host, localPreference: localPreference, component: component), address: address, kind: .host)
    }

    /// The `candidate:` attribute value (no `a=`).
    public var sdpAttribute: String {
        var text = "candidate:\(foundation) \(component) udp \(priority) \(address.host) \(address.port) typ \(kind.rawValue)"
        if let relatedAddress { text += " raddr \(relatedAddress.host) rport \(relatedAddress.port)" }
        return text
    }

    public var description: String {
        "\(kind.rawValue) \(address) (priority \(priority))"
    }

    /// Parses `a=candidate:…`, `candidate:…` (as in a trickled candidate) or the bare value.
    /// Extension attributes (`generation 0`, `network-id 1`, `ufrag …`) are accepted and ignored.
    public init(sdp text: some StringProtocol) throws(ICECandidateParseError) {
        var line = Substring(text).iceTrimmed
        if line.hasPrefix("a=") { line = line.dropFirst(2) }
        if line.hasPrefix("candidate:") { line = line.dropFirst("candidate:".count) }
        guard line.utf8.count <= 1_024 else { throw .malformed("a candidate line longer than 1024 bytes") }
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 8 else { throw .malformed("\(fields.count) fields where at least 8 are needed: foundation component transport priority address port typ type") }
        let foundation = fields[0]
        guard (1...32).contains(foundation.count), foundation.allSatisfy(\.isICEChar) else {
            throw .malformed("foundation '\(foundation.prefix(40))' is not 1–32 ice-chars")
        }
        guard let component = Int(fields[1]), (1...256).contains(component) else { throw .malformed("component '\(fields[1].prefix(20))' is not 1–256") }
        let transport = fields[2].lowercased()
        guard transport == "udp" else { throw .unsupportedTransport(String(transport.prefix(20))) }
        guard let priority = UInt32(fields[3]), priority > 0 else { throw .malformed("priority '\(fields[3].prefix(20))' is not 1…2^32−1") }
        let host = String(fields[4])
        guard let port = UInt16(fields[5]) else { throw .malformed("port '\(fields[5].prefix(20))' is not 0–65535") }
        guard fields[6] == "typ" else { throw .malformed("'typ' expected where '\(fields[6].prefix(20))' is") }
        guard let kind = Kind(rawValue: String(fields[7])) else { throw .unknownType(String(fields[7].prefix(20))) }
        let address = try Self.address(host: host, port: port)
        var relatedHost: String?
        var relatedPort: UInt16?
        var index = 8
        while index + 1 < fields.count {
            switch fields[index] {
            case "raddr": relatedHost = String(fields[index + 1])
            case "rport": relatedPort = UInt16(fields[index + 1])
            default: break
            }
            index += 2
        }
        var related: SocketAddress?
        if let relatedHost, let relatedPort {
            related = try? Self.address(host: relatedHost, port: relatedPort)  // "0.0.0.0 0" and names: no related address
        }
        self.init(foundation: String(foundation), component: component, priority: priority, address: address, kind: kind, relatedAddress: related)
    }

    static func address(host: String, port: UInt16) throws(ICECandidateParseError) -> SocketAddress {
        if ICEAddressBytes.bytes(host) == nil {
            if host.lowercased().hasSuffix(".local") { throw .unsupportedAddress(host, reason: "mDNS .local names are not resolved") }
            throw .unsupportedAddress(String(host.prefix(80)), reason: "not a numeric IPv4 or IPv6 address")
        }
        do { return try SocketAddress(host: host, port: port).normalized } catch { throw .unsupportedAddress(host, reason: error.message) }
    }
}

/// Why an `a=candidate:` line was not taken.
public enum ICECandidateParseError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The line is not a candidate as RFC 8839 §5.1 writes it.
    case malformed(String)
    /// A transport other than UDP (TCP candidates are ignored).
    case unsupportedTransport(String)
    /// A hostname (mDNS `.local`) or anything not a numeric address.
    case unsupportedAddress(String, reason: String)
    /// A `typ` other than host, srflx, prflx or relay.
    case unknownType(String)

    public var description: String {
        switch self {
        case .malformed(let reason): "ICE candidate malformed: \(reason)"
        case .unsupportedTransport(let transport): "ICE candidate over \(transport) ignored: only UDP candidates are used"
        case .unsupportedAddress(let host, let reason): "ICE candidate address '\(host)' unsupported: \(reason)"
        case .unknownType(let type): "ICE candidate type '\(type)' is not host, srflx, prflx or relay"
        }
    }
}

extension Character {
    /// ice-char: ALPHA / DIGIT / "+" / "/" (RFC 8839).
    var isICEChar: Bool {
        guard isASCII, let value = asciiValue else { return false }
        return (0x41...0x5A).contains(value) || (0x61...0x7A).contains(value) || (0x30...0x39).contains(value) || value == 0x2B || value == 0x2F
    }
}

extension Substring {
    var iceTrimmed: Substring {
        var result = self
        while let first = result.first, first == " " || first == "\t" || first == "\r" || first == "\n" { result = result.dropFirst() }
        while let last = result.last, last == " " || last == "\t" || last == "\r" || last == "\n" { result = result.dropLast() }
        return result
    }
}
