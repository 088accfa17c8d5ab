public import PlayoutCore
#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address and a UDP port, e.g. `127.0.0.1:5004` or `[::1]:5004`.
public struct SocketAddress: Hashable, Sendable, CustomStringConvertible {
    /// The numeric host, e.g. `"127.0.0.1"`, `"::1"`, `"239.1.1.1"`.
    public var host: String
    public var port: UInt16

    /// Creates an address from a numeric host (no name resolution) and a port.
    public init(host: String, port: UInt16) throws(UDPError) {
        var probe = sockaddr_storage()
        guard Self.fill(&probe, host: host, port: port) != nil else {
            throw UDPError(.invalidAddress, "'\(host)' is not an IPv4 or IPv6 address (e.g. 127.0.0.1 or ::1)")
        }
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` or `[IPv6]:PORT`.
    public init(parsing text: String) throws(UDPError) {
        let host: Substring
        let port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[close...].hasPrefix("]:") else {
                throw UDPError(.invalidAddress, "'\(text)' is not [IPv6]:PORT, e.g. [::1]:5004")
            }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), text.firstIndex(of: ":") == colon else {
                throw UDPError(.invalidAddress, "'\(text)' is not HOST:PORT, e.g. 127.0.0.1:5004 or [::1]:5004")
            }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        }
        guard let number = UInt16(port) else {
            throw UDPError(.invalidAddress, "'\(port)' in '\(text)' is not a port number (0…65535)")
        }
        try self.init(host: String(host), port: number)
    }

    public var description: String {
        isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// The same address with its host in the canonical text form (`::0001` → `::1`), so that
    /// equal addresses compare equal.
    public var normalized: SocketAddress {
        var storage = sockaddr_storage()
        guard Self.fill(&storage, host: host, port: port) != nil, let canonical = SocketAddress(storage: storage) else { return self }
        return canonical
    }

    /// Whether the host is an IPv6 address.
    public var isIPv6: Bool {
        host.contains(":")
    }

    /// Whether the host is a multicast group (224.0.0.0/4 or ff00::/8).
    public var isMulticast: Bool {
        var storage = sockaddr_storage()
        guard Self.fill(&storage, host: host, port: port) != nil else { return false }
        return withUnsafeBytes(of: storage) { raw in
            if storage.ss_family == sa_family_t(AF_INET) {
                let address = raw.load(as: sockaddr_in.self).sin_addr.s_addr
                return UInt32(bigEndian: address) >> 28 == 0xE
            }
            return raw.load(as: sockaddr_in6.self).sin6_addr.__in6_u.__u6_addr8.0 == 0xFF
        }
    }

    /// Writes the address into `storage`; returns its length, or nil when `host` is not numeric.
    static func fill(_ storage: inout sockaddr_storage, host: String, port: UInt16) -> socklen_t? {
        storage = sockaddr_storage()
        return withUnsafeMutableBytes(of: &storage) { raw -> socklen_t? in
            if host.contains(":") {
                var address = sockaddr_in6()
                address.sin6_family = sa_family_t(AF_INET6)
                address.sin6_port = port.bigEndian
                guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { return nil }
                raw.storeBytes(of: address, as: sockaddr_in6.self)
                return socklen_t(MemoryLayout<sockaddr_in6>.size)
            }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
            raw.storeBytes(of: address, as: sockaddr_in.self)
            return socklen_t(MemoryLayout<sockaddr_in>.size)
        }
    }

    static func string(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Reads an address the kernel filled in.
    init?(storage: sockaddr_storage) {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let result: (String, UInt16)? = withUnsafeBytes(of: storage) { raw in
            switch Int32(storage.ss_family) {
            case AF_INET:
                var address = raw.load(as: sockaddr_in.self)
                guard inet_ntop(AF_INET, &address.sin_addr, &text, socklen_t(text.count)) != nil else { return nil }
                return (Self.string(text), UInt16(bigEndian: address.sin_port))
            case AF_INET6:
                var address = raw.load(as: sockaddr_in6.self)
                guard inet_ntop(AF_INET6, &address.sin6_addr, &text, socklen_t(text.count)) != nil else { return nil }
                return (Self.string(text), UInt16(bigEndian: address.sin6_port))
            default:
                return nil
            }
        }
        guard let (host, port) = result else { return nil }
        self.host = host
        self.port = port
    }
}

/// A UDP transport error: a ``PlayoutError`` with one of the codes below.
public typealias UDPError = PlayoutError

extension PlayoutError.Code {
    /// The port is taken.
    public static let addressInUse = Self("addressInUse")
    /// Binding or sending needs privileges the process lacks.
    public static let permissionDenied = Self("permissionDenied")
    /// The address is not on this machine.
    public static let addressNotAvailable = Self("addressNotAvailable")
    /// No route to the address.
    public static let unreachable = Self("unreachable")
    /// Not an IPv4/IPv6 address or HOST:PORT.
    public static let invalidAddress = Self("invalidAddress")
    /// Any other system call failure (the message has the errno text).
    public static let system = Self("system")
}

extension PlayoutError {
    /// Maps `errno` from `operation` on `address` to an error that names the fix.
    static func from(errno number: Int32, operation: String, address: SocketAddress?) -> UDPError {
        let place = address.map { " \($0)" } ?? ""
        switch number {
        case EADDRINUSE:
            return UDPError(.addressInUse, "UDP\(place) is already in use: choose another port or stop the program using it")
        case EACCES, EPERM:
            return UDPError(.permissionDenied, "permission denied to \(operation)\(place): ports below 1024 need root or CAP_NET_BIND_SERVICE")
        case EADDRNOTAVAIL:
            return UDPError(.addressNotAvailable, "cannot \(operation)\(place): the address is not on this machine (bind 0.0.0.0 or a local address)")
        case ENETUNREACH, EHOSTUNREACH:
            return UDPError(.unreachable, "cannot \(operation)\(place): network unreachable (check the address and routes)")
        default:
            return UDPError(.system, "cannot \(operation)\(place): \(String(cString: strerror(number)))")
        }
    }
}
