import PlayoutCore
import PlayoutRTP
import Testing

@testable import PlayoutWebRTC

/// The ICE-lite, controlled side: what it answers and what it counts and drops.
@Suite("ICE-lite responder")
struct LiteICEResponderTests {
    static let local = ICECredentials(ufrag: "lite", password: "abcdefghijklmnopqrstuvwx")
    static let remoteUfrag = "peer"
    static let source = try! SocketAddress(host: "192.0.2.7", port: 40_000)
    static let t0 = MonotonicInstant(nanoseconds: 1_000_000_000)

    /// A check as a full controlling agent sends it to us.
    static func request(
        username: String = "lite:peer", password: String = local.password, useCandidate: Bool = false, controlled: Bool = false,
        fingerprint: Bool = true, id: UInt64 = 7, extra: [STUNAttribute] = []
    ) -> [UInt8] {
        var message = STUNMessage(class: .request, transactionID: STUNTransactionID(high: 1, low: id))
        message.attributes = [.username(username), .priority(1_853_824_767), controlled ? .iceControlled(42) : .iceControlling(42)] + extra
        if useCandidate { message.attributes.append(.useCandidate) }
        return message.encoded(integrityKey: Array(password.utf8), fingerprint: fingerprint)
    }

    @Test("an authenticated check is answered: XOR-MAPPED-ADDRESS of its source, signed with our password, with FINGERPRINT")
    func answersAuthenticatedCheck() throws {
        var ice = ICELiteResponder(local: Self.local, remoteUsernameFragment: Self.remoteUfrag, now: Self.t0)
        let reply1 = ice.receive(Self.request(), from: Self.source, now: Self.t0)
        let response = try #require(reply1)
        let parsed = try STUNMessage(parsing: response)
        #expect(parsed.messageClass == .successResponse)
        #expect(parsed.transactionID == STUNTransactionID(high: 1, low: 7))
        #expect(parsed.mappedAddress == Self.source)
        #expect(STUNMessage.verifyIntegrity(response, key: Array(Self.local.password.utf8)))
        #expect(STUNMessage.verifyFingerprint(response))
        #expect(ice.statistics.requestsAnswered == 1)
        // Validated, not nominated: media does not go there yet.
        #expect(ice.isValidated(Self.source))
        #expect(ice.selectedAddress == nil)
    }

    @Test("USE-CANDIDATE nominates the source; a later nomination moves media")
    func nomination() throws {
        var ice = ICELiteResponder(local: Self.local, remoteUsernameFragment: Self.remoteUfrag, now: Self.t0)
        let reply2 = ice.receive(Self.request(useCandidate: true), from: Self.source, now: Self.t0)
        _ = try #require(reply2)
        #expect(ice.selectedAddress == Self.source)
        let other = try SocketAddress(host: "198.51.100.3", port: 5_000)
        let reply3 = ice.receive(Self.request(useCandidate: true, id: 8), from: other, now: Self.t0)
        _ = try #require(reply3)
        #expect(ice.selectedAddress == other)
        #expect(ice.statistics.nominations == 2)
    }

    @Test("unauthenticated, foreign and malformed datagrams are counted and dropped, never answered")
    func dropsUnauthenticated() throws {
        var ice = ICELiteResponder(local: Self.local, remoteUsernameFragment: Self.remoteUfrag, now: Self.t0)
        #expect(ice.receive(Self.request(password: "wrongwrongwrongwrongwrong"), from: Self.source, now: Self.t0) == nil)
        #expect(ice.receive(Self.request(username: "other:peer"), from: Self.source, now: Self.t0) == nil)
        #expect(ice.receive(Self.request(username: "lite:intruder"), from: Self.source, now: Self.t0) == nil)
        #expect(ice.receive(Self.request(username: "nocolon"), from: Self.source, now: Self.t0) == nil)
        #expect(ice.receive(Self.request(fingerprint: false), from: Self.source, now: Self.t0) == nil)
        var unsigned = STUNMessage(class: .request, transactionID: STUNTransactionID(high: 2, low: 2))
        unsigned.attributes = [.username("lite:peer"), .useCandidate]
        #expect(ice.receive(unsigned.encoded(integrityKey: nil, fingerprint: true), from: Self.source, now: Self.t0) == nil)
        var response = STUNMessage(class: .successResponse, transactionID: STUNTransactionID(high: 3, low: 3))
        response.attributes = [.xorMappedAddress(Self.source)]
        #expect(ice.receive(response.encoded(integrityKey: Array(Self.local.password.utf8), fingerprint: true), from: Self.source, now: Self.t0) == nil)
        #expect(ice.receive([0x16, 0xfe, 0xfd, 0, 0], from: Self.source, now: Self.t0) == nil)
        #expect(ice.receive([], from: Self.source, now: Self.t0) == nil)
        let statistics = ice.statistics
        #expect(statistics.droppedUnauthenticated == 2)
        #expect(statistics.droppedWrongUsername == 3)
        #expect(statistics.droppedBadFingerprint == 1)
        #expect(statistics.droppedNotRequest == 1)
        #expect(statistics.droppedMalformed == 2)
        #expect(statistics.requestsAnswered == 0)
        #expect(ice.selectedAddress == nil)
        #expect(ice.validatedAddresses.isEmpty)
        // Nothing unauthenticated refreshes consent.
        #expect(ice.lastConsent == nil)
    }

    @Test("RFC 5769 §2.1's request authenticates with its password; it says ICE-CONTROLLED, so a lite agent answers 487, signed")
    func rfc5769Request() throws {
        // The vector's USERNAME is "evtj:h6vY" and it carries ICE-CONTROLLED.
        let local = ICECredentials(ufrag: "evtj", password: "VOkJxbRl1RmTxUk/WvJxBt")
        var ice = ICELiteResponder(local: local, remoteUsernameFragment: "h6vY", now: Self.t0)
        let source = try SocketAddress(host: "192.0.2.1", port: 32_853)
        let reply4 = ice.receive(RFC5769.request, from: source, now: Self.t0)
        let response = try #require(reply4)
        let parsed = try STUNMessage(parsing: response)
        #expect(parsed.messageClass == .errorResponse)
        #expect(parsed.errorCode == 487)
        #expect(parsed.transactionID == RFC5769.transactionID)
        #expect(STUNMessage.verifyIntegrity(response, key: RFC5769.password))
        #expect(ice.statistics.roleConflicts == 1)
        #expect(ice.selectedAddress == nil)
        // A bit flipped anywhere in the signed part: dropped.
        var tampered = RFC5769.request
        tampered[30] ^= 0x01
        #expect(ice.receive(tampered, from: source, now: Self.t0) == nil)
    }

    @Test("an unknown comprehension-required attribute is answered 420 with UNKNOWN-ATTRIBUTES")
    func unknownAttribute() throws {
        var ice = ICELiteResponder(local: Self.local, remoteUsernameFragment: Self.remoteUfrag, now: Self.t0)
        let bytes = Self.request(extra: [.other(type: 0x7777, value: [1, 2, 3, 4])])
        let reply5 = ice.receive(bytes, from: Self.source, now: Self.t0)
        let parsed = try STUNMessage(parsing: try #require(reply5))
        #expect(parsed.errorCode == 420)
        #expect(parsed.attributes.contains(.unknownAttributes([0x7777])))
    }

    @Test("consent: 30 s without an authenticated check, counted from creation until the first one")
    func consent() throws {
        var ice = ICELiteResponder(local: Self.local, remoteUsernameFragment: Self.remoteUfrag, now: Self.t0)
        #expect(!ice.consentExpired(now: Self.t0.advanced(by: .seconds(29))))
        #expect(ice.consentExpired(now: Self.t0.advanced(by: .seconds(30))))
        let t1 = Self.t0.advanced(by: .seconds(20))
        let reply6 = ice.receive(Self.request(useCandidate: true), from: Self.source, now: t1)
        _ = try #require(reply6)
        #expect(!ice.consentExpired(now: t1.advanced(by: .milliseconds(29_999))))
        #expect(ice.consentExpired(now: t1.advanced(by: .seconds(30))))
        #expect(ice.consentDeadline == t1.advanced(by: .seconds(30)))
        // A bad check does not extend it.
        _ = ice.receive(Self.request(password: "wrongwrongwrongwrongwrong"), from: Self.source, now: t1.advanced(by: .seconds(29)))
        #expect(ice.consentExpired(now: t1.advanced(by: .seconds(30))))
    }

    @Test("validated addresses are bounded: the oldest is forgotten, counted")
    func boundedAddresses() throws {
        var ice = ICELiteResponder(local: Self.local, remoteUsernameFragment: Self.remoteUfrag, now: Self.t0)
        for port in 1...UInt16(ICELiteResponder.maximumValidatedAddresses + 5) {
            _ = ice.receive(Self.request(id: UInt64(port)), from: try SocketAddress(host: "192.0.2.9", port: port), now: Self.t0)
        }
        #expect(ice.validatedAddresses.count == ICELiteResponder.maximumValidatedAddresses)
        #expect(ice.statistics.addressesForgotten == 5)
        #expect(!ice.isValidated(try SocketAddress(host: "192.0.2.9", port: 1)))
    }

    @Test("random and truncated datagrams never crash and are never answered", arguments: [UInt64(1), 2, 3])
    func hostile(seed: UInt64) throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        var ice = ICELiteResponder(local: Self.local, remoteUsernameFragment: Self.remoteUfrag, now: Self.t0)
        let valid = Self.request(useCandidate: true)
        for _ in 0..<2_000 {
            var bytes: [UInt8]
            switch random.next() % 3 {
            case 0: bytes = (0..<Int(random.next() % 1_600)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            case 1: bytes = Array(valid.prefix(Int(random.next() % UInt64(valid.count))))
            default:
                bytes = valid
                bytes[Int(random.next() % UInt64(bytes.count))] ^= UInt8(truncatingIfNeeded: random.next() | 1)
            }
            #expect(ice.receive(bytes, from: Self.source, now: Self.t0) == nil)
        }
        #expect(ice.statistics.requestsAnswered == 0)
        #expect(ice.selectedAddress == nil)
        // The untouched check still works afterwards.
        #expect(ice.receive(valid, from: Self.source, now: Self.t0) != nil)
    }

    @Test("the ufrag a server routes a check by is the USERNAME's first part")
    func routingUfrag() {
        #expect(Self.request().withUnsafeBytes { ICELiteResponder.localUsernameFragment(ofRequest: $0) } == "lite")
        #expect([UInt8](repeating: 0, count: 8).withUnsafeBytes { ICELiteResponder.localUsernameFragment(ofRequest: $0) } == nil)
    }
}
