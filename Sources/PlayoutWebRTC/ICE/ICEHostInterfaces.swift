#if canImport(Glibc)
import Glibc
#endif
public import PlayoutCore
public import PlayoutRTP

/// The local addresses host candidates are gathered on (RFC 8445 §5.1.1.1), from `getifaddrs`.
///
/// IPv4 and IPv6 addresses of interfaces that are up; IPv6 link-local (fe80::/10) only when asked
/// (binding one needs its scope); loopback only when asked or when nothing else is there. The
/// result is sorted so that the first is preferred: IPv4 before IPv6, then by interface name.
///
/// ```swift
/// let addresses = try ICEHostInterfaces.addresses(.init(interface: "eth0"))
/// ```
public enum ICEHostInterfaces {
    /// Which addresses to take.
    public struct Options: Hashable, Sendable {
        /// Take loopback addresses too (tests on 127.0.0.1). Without it, loopback is taken only
        /// when no other address is there.
        public var includeLoopback: Bool
        /// Take IPv6 link-local addresses.
        public var includeLinkLocalIPv6: Bool
        /// Only this interface (`--ice-interface IF`); nil for all.
        public var interface: String?
        /// Take IPv4 addresses.
        public var includeIPv4: Bool
        /// Take IPv6 addresses.
        public var includeIPv6: Bool

        /// Creates options; the defaults take IPv4 and IPv6 on every interface, without loopback or link-local.
        public init(includeLoopback: Bool = false, includeLinkLocalIPv6: Bool = false, interface: String? = nil, includeIPv4: Bool = true, includeIPv6: Bool = true) {
            self.includeLoopback = includeLoopback
            self.includeLinkLocalIPv6 = includeLinkLocalIPv6
            self.interface = interface
            self.includeIPv4 = includeIPv4
            self.includeIPv6 = includeIPv6
        }
    }

    /// One local address and the interface it is on.
    public struct Address: Hashable, Sendable {
        /// The interface's name, e.g. `eth0`.
        public var interface: String
        /// The numeric address (port 0).
        public var host: String
        /// Whether it is loopback.
        public var isLoopback: Bool
    }

    /// The interface addresses to gather host candidates on. Throws when `getifaddrs` fails or
    /// when `options.interface` names an interface that has no usable address.
    public static func addresses(_ options: Options = Options()) throws(ICEError) -> [Address] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else {
            throw ICEError(.iceGathering, "cannot list the network interfaces: \(String(cString: strerror(errno)))")
        }
        defer { freeifaddrs(list) }
        var all: [Address] = []
        var seenInterface = false
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            cursor = entry.pointee.ifa_next
            guard let socketAddress = entry.pointee.ifa_addr else { continue }
            let name = String(cString: entry.pointee.ifa_name)
            if let wanted = options.interface, wanted != name { continue }
            seenInterface = true
            let flags = entry.pointee.ifa_flags
            guard flags & UInt32(truncatingIfNeeded: IFF_UP) != 0 else { continue }
            let family = Int32(socketAddress.pointee.sa_family)
            var host: String?
            if family == AF_INET, options.includeIPv4 {
                let raw = UnsafeRawPointer(socketAddress).load(as: sockaddr_in.self)
                host = withUnsafeBytes(of: raw.sin_addr) { ICEAddressBytes.text(Array($0)) }
            } else if family == AF_INET6, options.includeIPv6 {
                let raw = UnsafeRawPointer(socketAddress).load(as: sockaddr_in6.self)
                host = withUnsafeBytes(of: raw.sin6_addr) { ICEAddressBytes.text(Array($0)) }
            }
            guard let host else { continue }
            if ICEAddressBytes.isLinkLocalIPv6(host) && !options.includeLinkLocalIPv6 { continue }
            let loopback = flags & UInt32(truncatingIfNeeded: IFF_LOOPBACK) != 0 || ICEAddressBytes.isLoopback(host)
            all.append(Address(interface: name, host: host, isLoopback: loopback))
        }
        if let wanted = options.interface, !seenInterface {
            throw ICEError(.iceGathering, "no network interface named '\(wanted)': see `ip addr` for the names")
        }
        let chosen = select(all, options: options)
        if let wanted = options.interface, chosen.isEmpty {
            throw ICEError(.iceGathering, "interface '\(wanted)' has no usable IPv4 or IPv6 address (is it up?)")
        }
        return chosen
    }

    /// The rule on a list: loopback only when asked or when nothing else is there; IPv4 first,
    /// then by interface and address; no duplicates.
    static func select(_ all: [Address], options: Options) -> [Address] {
        let nonLoopback = all.filter { !$0.isLoopback }
        let chosen = options.includeLoopback || nonLoopback.isEmpty ? all : nonLoopback
        var seen = Set<String>()
        return chosen.filter { seen.insert($0.host).inserted }.sorted { a, b in
            let aV6 = a.host.contains(":")
            let bV6 = b.host.contains(":")
            if aV6 != bV6 { return !aV6 }
            if a.isLoopback != b.isLoopback { return !a.isLoopback }
            return (a.interface, a.host) < (b.interface, b.host)
        }
    }

    /// Host candidates for sockets bound on these addresses: local preferences descend in list
    /// order (RFC 8445 §5.1.2.1), so the first address is preferred.
    public static func candidates(for bound: [SocketAddress]) -> [ICECandidate] {
        bound.enumerated().map { index, address in
            ICECandidate.host(address, localPreference: ICECandidate.maximumLocalPreference - UInt32(min(index, 65_535)))
        }
    }
}
