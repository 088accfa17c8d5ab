#if canImport(Glibc)
import Glibc
#endif

/// Numeric IPv4/IPv6 host text ⇄ network-order bytes (`inet_pton`/`inet_ntop`).
enum ICEAddressBytes {
    /// 4 bytes for IPv4 text, 16 for IPv6 text, nil for anything else (names, zones).
    static func bytes(_ host: String) -> [UInt8]? {
        if host.contains(":") {
            var address = in6_addr()
            guard inet_pton(AF_INET6, host, &address) == 1 else { return nil }
            return withUnsafeBytes(of: address) { Array($0) }
        }
        var address = in_addr()
        guard inet_pton(AF_INET, host, &address) == 1 else { return nil }
        return withUnsafeBytes(of: address) { Array($0) }
    }

    /// The canonical text of 4 or 16 address bytes.
    static func text(_ bytes: [UInt8]) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        let ok = bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil
        }
        guard ok else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether `host` is an IPv6 link-local address (fe80::/10).
    static func isLinkLocalIPv6(_ host: String) -> Bool {
        guard let raw = bytes(host), raw.count == 16 else { return false }
        return raw[0] == 0xFE && raw[1] & 0xC0 == 0x80
    }

    /// Whether `host` is a loopback address (127/8 or ::1).
    static func isLoopback(_ host: String) -> Bool {
        guard let raw = bytes(host) else { return false }
        if raw.count == 4 { return raw[0] == 127 }
        return raw == [UInt8](repeating: 0, count: 15) + [1]
    }
}
