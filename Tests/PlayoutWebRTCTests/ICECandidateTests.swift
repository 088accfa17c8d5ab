import PlayoutCore
import PlayoutRTP
import Testing

@testable import PlayoutWebRTC

@Suite("ICE candidates, priorities, foundations, credentials and host interfaces")
struct ICECandidateTests {
    @Test("a host candidate parses from SDP and formats back")
    func hostCandidate() throws {
        let candidate = try ICECandidate(sdp: "a=candidate:1 1 UDP 2130706431 192.0.2.1 54321 typ host generation 0 network-id 1\r\n")
        #expect(candidate.foundation == "1")
        #expect(candidate.component == 1)
        #expect(candidate.priority == 2_130_706_431)
        #expect(candidate.address == (try SocketAddress(host: "192.0.2.1", port: 54321)))
        #expect(candidate.kind == .host)
        #expect(candidate.relatedAddress == nil)
        #expect(candidate.sdpAttribute == "candidate:1 1 udp 2130706431 192.0.2.1 54321 typ host")
        #expect(try ICECandidate(sdp: candidate.sdpAttribute) == candidate)
    }

    @Test("srflx with raddr/rport, IPv6 prflx, relay")
    func reflexiveCandidates() throws {
        let srflx = try ICECandidate(sdp: "candidate:842163049 1 udp 1677729535 203.0.113.9 61000 typ srflx raddr 10.0.0.5 rport 50000")
        #expect(srflx.kind == .serverReflexive)
        #expect(srflx.relatedAddress == (try SocketAddress(host: "10.0.0.5", port: 50000)))
        #expect(try ICECandidate(sdp: srflx.sdpAttribute) == srflx)
        let v6 = try ICECandidate(sdp: "candidate:a+/B 1 udp 1845501695 2001:DB8::0001 9 typ prflx")
        #expect(v6.address.host == "2001:db8::1")
        #expect(v6.kind == .peerReflexive)
        #expect(try ICECandidate(sdp: "candidate:3 1 udp 16777215 198.51.100.1 3478 typ relay raddr 0.0.0.0 rport 0").kind == .relayed)
    }

    @Test("TCP and mDNS candidates are reported as unsupported, not crashed on")
    func unsupported() {
        #expect(throws: ICECandidateParseError.unsupportedTransport("tcp")) {
            try ICECandidate(sdp: "candidate:1 1 tcp 1518280447 192.0.2.1 9 typ host tcptype active")
        }
        #expect(throws: ICECandidateParseError.self) {
            try ICECandidate(sdp: "candidate:1 1 udp 2130706431 3c5e1b7e-2d4c-4a6b-9e8f-0123456789ab.local 54321 typ host")
        }
        do {
            _ = try ICECandidate(sdp: "candidate:1 1 udp 2130706431 abc.local 1 typ host")
            Issue.record("an mDNS name parsed")
        } catch {
            guard case .unsupportedAddress(_, let reason) = error else { Issue.record("\(error)"); return }
            #expect(reason.contains("mDNS"))
        }
    }

    @Test("malformed lines get typed errors", arguments: [
        "", "candidate:", "candidate:1 1 udp", "candidate:1 1 udp x 192.0.2.1 1 typ host", "candidate:1 1 udp 0 192.0.2.1 1 typ host",
        "candidate:1 1 udp 5 192.0.2.1 70000 typ host", "candidate:1 1 udp 5 192.0.2.1 1 type host", "candidate:1 1 udp 5 192.0.2.1 1 typ hst",
        "candidate:1 0 udp 5 192.0.2.1 1 typ host", "candidate:f*o 1 udp 5 192.0.2.1 1 typ host", "candidate:1 1 udp 5 999.0.0.1 1 typ host",
        "candidate:123456789012345678901234567890123 1 udp 5 192.0.2.1 1 typ host",
    ])
    func malformed(line: String) {
        #expect(throws: ICECandidateParseError.self) { try ICECandidate(sdp: line) }
    }

    @Test("oversized and random lines never crash")
    func hostileLines() {
        #expect(throws: ICECandidateParseError.self) { try ICECandidate(sdp: "candidate:1 1 udp 5 192.0.2.1 1 typ host " + String(repeating: "x ", count: 5_000)) }
        var random = SeededRandomNumberGenerator(seed: 8445)
        let words = ["candidate:1", "1", "udp", "2130706431", "192.0.2.1", "::1", "54321", "typ", "host", "srflx", "raddr", "rport", "x", "-1", "99999999999"]
        var parsed = 0
        for _ in 0..<5_000 {
            let line = (0..<Int.random(in: 0...12, using: &random)).map { _ in words.randomElement(using: &random)! }.joined(separator: " ")
            if (try? ICECandidate(sdp: line)) != nil { parsed += 1 }
            let bytes = (0..<Int.random(in: 0...60, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            _ = try? ICECandidate(sdp: String(decoding: bytes, as: UTF8.self))
        }
        #expect(parsed < 5_000)
    }

    @Test("priority follows RFC 8445 §5.1.2.1")
    func priorities() {
        #expect(ICECandidate.priority(kind: .host) == 2_130_706_431)
        #expect(ICECandidate.priority(kind: .serverReflexive, localPreference: 65_535) == 1_694_498_815)
        #expect(ICECandidate.priority(kind: .peerReflexive, localPreference: 0, component: 2) == (110 << 24) + 254)
        #expect(ICECandidate.priority(kind: .relayed, localPreference: 10) == (10 << 8) + 255)
        #expect(ICECandidate.Kind.allCases.map(\.typePreference) == [126, 100, 110, 0])
        // Pair priority (RFC 8445 §6.1.2.3).
        #expect(ICECandidatePair.priority(controlling: 10, controlled: 20) == (10 << 32) + 40)
        #expect(ICECandidatePair.priority(controlling: 20, controlled: 10) == (10 << 32) + 40 + 1)
    }

    @Test("foundations are equal for the same type, base, server and transport, different otherwise")
    func foundations() throws {
        let server = try SocketAddress(host: "198.51.100.2", port: 3478)
        let a = ICECandidate.foundation(kind: .serverReflexive, baseHost: "10.0.0.1", server: server)
        #expect(a == ICECandidate.foundation(kind: .serverReflexive, baseHost: "10.0.0.1", server: server))
        #expect(a != ICECandidate.foundation(kind: .host, baseHost: "10.0.0.1"))
        #expect(a != ICECandidate.foundation(kind: .serverReflexive, baseHost: "10.0.0.2", server: server))
        #expect(a != ICECandidate.foundation(kind: .serverReflexive, baseHost: "10.0.0.1", server: try SocketAddress(host: "198.51.100.3", port: 3478)))
        #expect(a.count <= 32 && a.allSatisfy(\.isICEChar))
        let hosts = ICEHostInterfaces.candidates(for: [try SocketAddress(host: "10.0.0.1", port: 1), try SocketAddress(host: "::1", port: 2)])
        #expect(hosts[0].priority > hosts[1].priority)
        #expect(hosts[0].foundation != hosts[1].foundation)
    }

    @Test("generated credentials have RFC 8445 lengths and ice-chars")
    func credentials() {
        var random = SeededRandomNumberGenerator(seed: 3)
        let first = ICECredentials.generate(using: &random)
        let second = ICECredentials.generate(using: &random)
        #expect(first.isValid && second.isValid)
        #expect(first.ufrag.count >= 4 && first.password.count >= 22)
        #expect(first != second)
        #expect(!ICECredentials(ufrag: "abc", password: "short").isValid)
        #expect(ICECredentials.generate().isValid)
    }

    @Test("host interfaces: loopback when asked, filtered by interface, link-local IPv6 left out")
    func hostInterfaces() throws {
        let withLoopback = try ICEHostInterfaces.addresses(.init(includeLoopback: true))
        #expect(withLoopback.contains { $0.host == "127.0.0.1" })
        #expect(!withLoopback.contains { ICEAddressBytes.isLinkLocalIPv6($0.host) })
        let onlyLo = try ICEHostInterfaces.addresses(.init(interface: "lo"))
        #expect(!onlyLo.isEmpty)
        #expect(onlyLo.allSatisfy { $0.interface == "lo" && $0.isLoopback })  // nothing else there: loopback it is
        let v4 = try ICEHostInterfaces.addresses(.init(includeLoopback: true, interface: "lo", includeIPv6: false))
        #expect(v4.allSatisfy { !$0.host.contains(":") })
        #expect(throws: ICEError.self) { try ICEHostInterfaces.addresses(.init(interface: "no-such-if0")) }
        let all = try ICEHostInterfaces.addresses()
        #expect(!all.isEmpty)
        if all.contains(where: { !$0.isLoopback }) { #expect(all.allSatisfy { !$0.isLoopback }) }
    }

    @Test("the selection rule: loopback only when nothing else, IPv4 first, no duplicates")
    func selectionRule() {
        let lo = ICEHostInterfaces.Address(interface: "lo", host: "127.0.0.1", isLoopback: true)
        let eth = ICEHostInterfaces.Address(interface: "eth0", host: "10.1.2.3", isLoopback: false)
        let eth6 = ICEHostInterfaces.Address(interface: "eth0", host: "2001:db8::5", isLoopback: false)
        #expect(ICEHostInterfaces.select([lo, eth6, eth, eth], options: .init()) == [eth, eth6])
        #expect(ICEHostInterfaces.select([lo], options: .init()) == [lo])
        #expect(ICEHostInterfaces.select([lo, eth6, eth], options: .init(includeLoopback: true)) == [eth, lo, eth6])
    }
}
