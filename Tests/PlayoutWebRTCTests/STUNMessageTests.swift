import PlayoutCore
import PlayoutRTP
import Testing

@testable import PlayoutWebRTC

/// Hex text (spaces ignored) to bytes.
func stunHex(_ text: String) -> [UInt8] {
    let digits = Array(text.filter { !$0.isWhitespace })
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}

/// RFC 5769 §2: the sample messages, their password and transaction ID.
enum RFC5769 {
    static let password = Array("VOkJxbRl1RmTxUk/WvJxBt".utf8)
    static let transactionID = STUNTransactionID(bytes: stunHex("b7e7a701bc34d686fa87dfae"))!
    /// §2.1 Sample Request.
    static let request = stunHex("""
        000100582112a442b7e7a701bc34d686fa87dfae802200105354554e207465737420636c69656e74
        002400046e0001ff80290008932ff9b151263b36000600096576746a3a68367659202020
        000800149aeaa70cbfd8cb56781ef2b5b2d3f249c1b571a280280004e57a3bcf
        """)
    /// §2.2 Sample IPv4 Response.
    static let ipv4Response = stunHex("""
        0101003c2112a442b7e7a701bc34d686fa87dfae8022000b7465737420766563746f7220
        002000080001a147e112a643000800142b91f599fd9e90c38c7489f92af9ba53f06be7d7
        80280004c07d4c96
        """)
    /// §2.3 Sample IPv6 Response.
    static let ipv6Response = stunHex("""
        010100482112a442b7e7a701bc34d686fa87dfae8022000b7465737420766563746f7220
        002000140002a1470113a9faa5d3f179bc25f4b5bed2b9d9
        00080014a382954e4be67bf11784c97c8292c275bfe3ed4180280004c8fb0b4c
        """)
}

@Suite("STUN messages (RFC 8489, RFC 5769 vectors)")
struct STUNMessageTests {
    @Test("RFC 5769 §2.1 sample request parses, verifies and re-serializes byte for byte")
    func sampleRequest() throws {
        let message = try STUNMessage(parsing: RFC5769.request)
        #expect(message.messageClass == .request)
        #expect(message.method == .binding)
        #expect(message.transactionID == RFC5769.transactionID)
        #expect(message.attributes.first == .software("STUN test client"))
        #expect(message.priority == 0x6E00_01FF)
        #expect(message.iceControlled == 0x932F_F9B1_5126_3B36)
        #expect(message.username == "evtj:h6vY")
        #expect(message.paddingByte == 0x20)
        #expect(STUNMessage.verifyFingerprint(RFC5769.request))
        #expect(STUNMessage.verifyIntegrity(RFC5769.request, key: RFC5769.password))
        #expect(message.encoded() == RFC5769.request)
        // Recomputing MESSAGE-INTEGRITY and FINGERPRINT gives the RFC's values.
        #expect(message.encoded(integrityKey: RFC5769.password, fingerprint: true) == RFC5769.request)
    }

    @Test("RFC 5769 §2.2 sample IPv4 response: XOR-MAPPED-ADDRESS 192.0.2.1:32853")
    func sampleIPv4Response() throws {
        let message = try STUNMessage(parsing: RFC5769.ipv4Response)
        #expect(message.messageClass == .successResponse)
        #expect(message.attributes.first == .software("test vector"))
        #expect(message.mappedAddress == (try SocketAddress(host: "192.0.2.1", port: 32853)))
        #expect(STUNMessage.verifyFingerprint(RFC5769.ipv4Response))
        #expect(STUNMessage.verifyIntegrity(RFC5769.ipv4Response, key: RFC5769.password))
        #expect(message.encoded() == RFC5769.ipv4Response)
        #expect(message.encoded(integrityKey: RFC5769.password, fingerprint: true) == RFC5769.ipv4Response)
    }

    @Test("RFC 5769 §2.3 sample IPv6 response: XOR-MAPPED-ADDRESS [2001:db8:1234:5678:11:2233:4455:6677]:32853")
    func sampleIPv6Response() throws {
        let message = try STUNMessage(parsing: RFC5769.ipv6Response)
        #expect(message.mappedAddress == (try SocketAddress(host: "2001:db8:1234:5678:11:2233:4455:6677", port: 32853)))
        #expect(STUNMessage.verifyFingerprint(RFC5769.ipv6Response))
        #expect(STUNMessage.verifyIntegrity(RFC5769.ipv6Response, key: RFC5769.password))
        #expect(message.encoded() == RFC5769.ipv6Response)
        #expect(message.encoded(integrityKey: RFC5769.password, fingerprint: true) == RFC5769.ipv6Response)
    }

    @Test("a wrong password or any changed byte fails verification", arguments: [RFC5769.request, RFC5769.ipv4Response, RFC5769.ipv6Response])
    func tamperingFails(vector: [UInt8]) {
        #expect(!STUNMessage.verifyIntegrity(vector, key: Array("VOkJxbRl1RmTxUk/WvJxBT".utf8)))
        for index in 20..<(vector.count - 8) {
            var changed = vector
            changed[index] ^= 0x01
            #expect(!STUNMessage.verifyFingerprint(changed), "byte \(index)")
        }
        // The transaction ID is covered by the MAC.
        var changed = vector
        changed[12] ^= 0x80
        #expect(!STUNMessage.verifyIntegrity(changed, key: RFC5769.password))
    }

    @Test("message types interleave method and class bits (RFC 8489 §5)")
    func messageTypes() throws {
        let id = RFC5769.transactionID
        #expect(STUNMessage(class: .request, transactionID: id).messageType == 0x0001)
        #expect(STUNMessage(class: .indication, transactionID: id).messageType == 0x0011)
        #expect(STUNMessage(class: .successResponse, transactionID: id).messageType == 0x0101)
        #expect(STUNMessage(class: .errorResponse, transactionID: id).messageType == 0x0111)
        let odd = STUNMessage(class: .errorResponse, method: STUNMessage.Method(rawValue: 0xABC), transactionID: id)
        #expect(try STUNMessage(parsing: odd.encoded()).method.rawValue == 0xABC)
    }

    @Test("every attribute round-trips, with MESSAGE-INTEGRITY and FINGERPRINT computed")
    func everyAttribute() throws {
        var random = SeededRandomNumberGenerator(seed: 1)
        var message = STUNMessage(class: .errorResponse, transactionID: .random(using: &random))
        message.attributes = [
            .mappedAddress(try SocketAddress(host: "198.51.100.7", port: 1)),
            .xorMappedAddress(try SocketAddress(host: "2001:db8::1", port: 65535)),
            .xorMappedAddress(try SocketAddress(host: "10.0.0.1", port: 5004)),
            .username("ab:cd"),
            .errorCode(code: 487, reason: "Role Conflict"),
            .unknownAttributes([0x0031, 0x7FFF, 0x0003]),
            .priority(0x6E7F_1EFF),
            .useCandidate,
            .software("Playout ✓"),
            .iceControlled(0x0102_0304_0506_0708),
            .iceControlling(.max),
            .other(type: 0xC001, value: [1, 2, 3]),
        ]
        let key = Array("0123456789012345678901".utf8)
        let bytes = message.encoded(integrityKey: key, fingerprint: true)
        #expect(STUNMessage.looksLikeSTUN(bytes))
        #expect(STUNMessage.verifyIntegrity(bytes, key: key))
        #expect(STUNMessage.verifyFingerprint(bytes))
        let parsed = try STUNMessage(parsing: bytes)
        #expect(Array(parsed.attributes.dropLast(2)) == message.attributes)
        #expect(parsed.errorCode == 487)
        #expect(parsed.useCandidate && parsed.hasMessageIntegrity && parsed.hasFingerprint)
        #expect(parsed.unknownComprehensionRequired.isEmpty)
        #expect(parsed.encoded() == bytes)
    }

    @Test("unknown attributes: comprehension-optional kept, comprehension-required reported")
    func unknownAttributes() throws {
        var message = STUNMessage(class: .request, transactionID: RFC5769.transactionID)
        message.attributes = [.other(type: 0x0031, value: [9]), .other(type: 0x8FFF, value: [])]
        let parsed = try STUNMessage(parsing: message.encoded())
        #expect(parsed.unknownComprehensionRequired == [0x0031])
        #expect(parsed.attributes == message.attributes)
    }

    @Test("attributes after MESSAGE-INTEGRITY other than FINGERPRINT are ignored; nothing may follow FINGERPRINT")
    func integrityAndFingerprintOrder() throws {
        var message = STUNMessage(class: .request, transactionID: RFC5769.transactionID)
        message.attributes = [.username("a:b"), .messageIntegrity(Array(repeating: 7, count: 20)), .priority(5), .fingerprint(1)]
        let parsed = try STUNMessage(parsing: message.encoded())
        #expect(parsed.priority == nil)
        #expect(parsed.attributes.count == 3)
        message.attributes = [.fingerprint(1), .priority(5)]
        #expect(throws: STUNParseError.attributeAfterFingerprint(type: 0x0024)) { try STUNMessage(parsing: message.encoded()) }
    }

    @Test("looksLikeSTUN: the vectors yes; RTP, DTLS, short, wrong length or cookie no")
    func classifier() {
        #expect(STUNMessage.looksLikeSTUN(RFC5769.request))
        #expect(STUNMessage.looksLikeSTUN(RFC5769.ipv6Response))
        var rtp = RFC5769.request
        rtp[0] = 0x80
        #expect(!STUNMessage.looksLikeSTUN(rtp))
        var dtls = RFC5769.request
        dtls[0] = 22
        #expect(!STUNMessage.looksLikeSTUN(dtls))
        #expect(!STUNMessage.looksLikeSTUN(Array(RFC5769.request.prefix(19))))
        #expect(!STUNMessage.looksLikeSTUN(Array(RFC5769.request.dropLast(4))))
        var cookie = RFC5769.request
        cookie[5] = 0
        #expect(!STUNMessage.looksLikeSTUN(cookie))
        #expect(!STUNMessage.looksLikeSTUN([]))
    }

    @Test("hostile input gets typed errors: truncated, oversized, bad cookie, overrun, bad values")
    func typedErrors() {
        for length in 0..<RFC5769.request.count {
            #expect(throws: STUNParseError.self) { try STUNMessage(parsing: Array(RFC5769.request.prefix(length))) }
        }
        #expect(throws: STUNParseError.truncated(needed: 20, available: 3)) { try STUNMessage(parsing: [0, 1, 0]) }
        var oversized = RFC5769.request + [UInt8](repeating: 0, count: 2_000)
        oversized[2] = 0x08
        oversized[3] = 0x28
        #expect(throws: STUNParseError.tooLarge(size: oversized.count, limit: STUNMessage.maximumSize)) { try STUNMessage(parsing: oversized) }
        var cookie = RFC5769.request
        cookie[4] = 0
        #expect(throws: STUNParseError.badMagicCookie(0x0012_A442)) { try STUNMessage(parsing: cookie) }
        #expect(throws: STUNParseError.notSTUN(firstByte: 0x80)) { try STUNMessage(parsing: [0x80] + [UInt8](RFC5769.request.dropFirst())) }
        // An attribute claiming 0x100 bytes in a short message.
        var overrun = RFC5769.request
        overrun[22] = 0x01
        #expect(throws: STUNParseError.attributeOverrun(type: 0x8022, offset: 20)) { try STUNMessage(parsing: overrun) }
        // PRIORITY of 3 bytes; ERROR-CODE 800; XOR-MAPPED-ADDRESS family 3; USERNAME not UTF-8.
        let id = RFC5769.transactionID
        for (type, value) in [(UInt16(0x0024), [UInt8](repeating: 0, count: 3)), (0x0009, [0, 0, 8, 0]), (0x0020, [0, 3, 0, 0, 1, 2, 3, 4]), (0x0006, [0xFF, 0xFE])] {
            let bytes = STUNMessage(class: .request, transactionID: id, attributes: [.other(type: type, value: value)]).encoded()
            #expect(throws: STUNParseError.self) { try STUNMessage(parsing: bytes) }
        }
    }

    @Test("ten thousand random datagrams and mutated vectors: no crash, and what parses round-trips")
    func randomAndMutated() throws {
        var random = SeededRandomNumberGenerator(seed: 5769)
        let vectors = [RFC5769.request, RFC5769.ipv4Response, RFC5769.ipv6Response]
        var parsedCount = 0
        for round in 0..<10_000 {
            var bytes: [UInt8]
            if round.isMultiple(of: 2) {
                bytes = (0..<Int.random(in: 0...80, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                if bytes.count >= 8, round.isMultiple(of: 4) {  // make it look like STUN so the attribute walk runs
                    bytes[0] &= 0x03
                    bytes[2] = UInt8((bytes.count - 20) >> 8 & 0xFF)
                    bytes[3] = UInt8((bytes.count - 20) & 0xFF)
                    bytes.replaceSubrange(4..<8, with: [0x21, 0x12, 0xA4, 0x42])
                }
            } else {
                bytes = vectors[round % 3]
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
            }
            _ = STUNMessage.looksLikeSTUN(bytes)
            _ = STUNMessage.verifyFingerprint(bytes)
            _ = STUNMessage.verifyIntegrity(bytes, key: RFC5769.password)
            guard let message = try? STUNMessage(parsing: bytes) else { continue }
            parsedCount += 1
            let again = try STUNMessage(parsing: message.encoded())
            #expect(again == message)
        }
        #expect(parsedCount > 1_000)
    }
}
