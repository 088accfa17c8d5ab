import PlayoutRTP
import PlayoutTesting
import Testing

/// Whatever arrives on the socket, `unprotect` returns an error and the session stays usable.
@Suite("SRTP: hostile input to unprotect")
struct SRTPHostileInputTests {
    static let suites = SRTPCryptoSuite.supportedSuites

    /// Unprotects `bytes` as RTP and as RTCP in a buffer of exactly their length; both must throw.
    static func expectRefused(_ bytes: [UInt8], by session: SRTPSession, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(throws: SRTPError.self, sourceLocation: sourceLocation) { try session.unprotectRTP(bytes) }
        #expect(throws: SRTPError.self, sourceLocation: sourceLocation) { try session.unprotectRTCP(bytes) }
    }

    @Test("empty, 1-byte and 11-byte packets are too short", arguments: suites)
    func tooShort(suite: SRTPCryptoSuite) throws {
        let session = try SRTPSession(keyingMaterial: .random(for: suite), direction: .inbound)
        #expect(throws: SRTPError.packetTooShort(length: 0, minimum: 12 + suite.authenticationTagLength)) {
            try session.unprotectRTP([])
        }
        #expect(throws: SRTPError.packetTooShort(length: 1, minimum: 12 + suite.authenticationTagLength)) {
            try session.unprotectRTP([0x80])
        }
        #expect(throws: SRTPError.packetTooShort(length: 11, minimum: 12 + suite.authenticationTagLength)) {
            try session.unprotectRTP(Array(SRTPTestPackets.rtp(sequenceNumber: 1).prefix(11)))
        }
        #expect(throws: SRTPError.packetTooShort(length: 11, minimum: 8 + suite.rtcpOverhead)) {
            try session.unprotectRTCP(Array(SRTPTestPackets.rtcp().prefix(11)))
        }
        #expect(session.statistics.otherFailures == 4)
        #expect(session.statistics.authFailures == 0)
    }

    @Test("a packet cut anywhere inside its tag or trailer is refused", arguments: suites)
    func truncatedTags(suite: SRTPCryptoSuite) throws {
        let (sender, receiver) = try SRTPSession.pair(suite)
        let rtp = try sender.protectRTP(SRTPTestPackets.rtp(sequenceNumber: 5, payloadLength: 30))
        for cut in 1...(suite.authenticationTagLength + 8) {
            Self.expectRefused(Array(rtp.dropLast(cut)), by: receiver)
        }
        let rtcp = try sender.protectRTCP(SRTPTestPackets.rtcp())
        for cut in 1...(suite.rtcpOverhead + 4) {
            #expect(throws: SRTPError.self) { try receiver.unprotectRTCP(Array(rtcp.dropLast(cut))) }
        }
        // The untouched packets still pass afterwards.
        #expect(try receiver.unprotectRTP(rtp).count == 42)
        #expect(try receiver.unprotectRTCP(rtcp).count == SRTPTestPackets.rtcp().count)
    }

    @Test("random bytes of every length 0…2000 are refused, never crash", arguments: suites)
    func randomBytes(suite: SRTPCryptoSuite) throws {
        let session = try SRTPSession(keyingMaterial: .random(for: suite), direction: .inbound)
        var generator = SeededRandomNumberGenerator(seed: 0x5352_5450)
        for length in 0...2_000 {
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            Self.expectRefused(bytes, by: session)
            // The same bytes with a valid RTP/RTCP version, so they reach libsrtp2's parser.
            if length > 1 {
                bytes[0] = 0x80 | (bytes[0] & 0x3F)
                Self.expectRefused(bytes, by: session)
            }
        }
        #expect(session.statistics.packetsUnprotected == 0)
    }

    @Test("headers claiming more than the packet holds are refused", arguments: suites)
    func hugeClaims(suite: SRTPCryptoSuite) throws {
        let session = try SRTPSession(keyingMaterial: .random(for: suite), direction: .inbound)
        var packet = SRTPTestPackets.rtp(sequenceNumber: 1, payloadLength: 16)
        // 15 CSRCs (60 bytes) in a 28-byte packet.
        packet[0] = 0x8F
        Self.expectRefused(packet, by: session)
        // A header extension claiming 65535 words.
        packet = [0x90] + packet.dropFirst().prefix(11) + [0xBE, 0xDE, 0xFF, 0xFF] + Array(repeating: 0, count: 20)
        Self.expectRefused(packet, by: session)
        // Padding claiming 255 bytes.
        packet = SRTPTestPackets.rtp(sequenceNumber: 2, payloadLength: 16)
        packet[0] = 0xA0
        packet[packet.count - 1] = 0xFF
        Self.expectRefused(packet, by: session)
        // A sender refuses to protect the same lies instead of reading past the packet.
        let sender = try SRTPSession(keyingMaterial: .random(for: suite), direction: .outbound)
        var lying = SRTPTestPackets.rtp(sequenceNumber: 3, payloadLength: 16)
        lying[0] = 0x8F
        #expect(throws: SRTPError.libsrtpBadParameter(.protect)) { try sender.protectRTP(lying) }
        lying = [0x90] + lying.dropFirst().prefix(11) + [0xBE, 0xDE, 0xFF, 0xFF] + Array(repeating: 0, count: 20)
        #expect(throws: SRTPError.libsrtpBadParameter(.protect)) { try sender.protectRTP(lying) }
        // An RTCP length field of 65535 words.
        var rtcp = SRTPTestPackets.rtcp()
        rtcp[2] = 0xFF
        rtcp[3] = 0xFF
        Self.expectRefused(rtcp, by: session)
    }

    @Test("a length larger than the buffer, or negative, is refused before libsrtp2 sees it")
    func lengthClaims() throws {
        let session = try SRTPSession(keyingMaterial: .random(for: .aesCM128HMACSHA1_80), direction: .inbound)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0x80)
        for length in [65, 1_500, Int(Int32.max), Int(Int32.max) + 1, Int.max, -1, Int.min] {
            #expect(throws: SRTPError.invalidLength(length: length, capacity: 64)) { try session.unprotectRTP(buffer, length: length) }
            #expect(throws: SRTPError.invalidLength(length: length, capacity: 64)) { try session.unprotectRTCP(buffer, length: length) }
        }
        let empty = UnsafeMutableRawBufferPointer(start: nil, count: 0)
        #expect(throws: SRTPError.self) { try session.unprotectRTP(empty, length: 0) }
        #expect(throws: SRTPError.invalidLength(length: 1, capacity: 0)) { try session.unprotectRTP(empty, length: 1) }
        #expect(session.statistics.otherFailures == 16)
    }
}
