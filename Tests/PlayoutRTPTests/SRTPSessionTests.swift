import PlayoutCore
import PlayoutRTP
import Testing

@Suite("SRTP crypto suites and keying material")
struct SRTPKeyingTests {
    @Test("suites parse from their RFC 4568 names and know their lengths", arguments: [
        ("AES_CM_128_HMAC_SHA1_80", SRTPCryptoSuite.aesCM128HMACSHA1_80, 16, 14, 10, 10),
        ("AES_CM_128_HMAC_SHA1_32", .aesCM128HMACSHA1_32, 16, 14, 4, 4),
        ("AEAD_AES_128_GCM", .aeadAES128GCM, 16, 12, 16, 16),
        ("AEAD_AES_256_GCM", .aeadAES256GCM, 32, 12, 16, 16),
    ])
    func suites(name: String, suite: SRTPCryptoSuite, key: Int, salt: Int, tag: Int, rtcpTag: Int) throws {
        #expect(try SRTPCryptoSuite(name: name) == suite)
        #expect(suite.name == name)
        #expect(suite.masterKeyLength == key)
        #expect(suite.masterSaltLength == salt)
        #expect(suite.keyingMaterialLength == key + salt)
        #expect(suite.authenticationTagLength == tag)
        #expect(suite.rtcpAuthenticationTagLength == rtcpTag)
    }

    @Test("an unknown suite name is a clear error")
    func unknownSuite() {
        #expect(throws: SRTPError.unknownSuite("AES_CM_128_HMAC_SHA1_64")) { try SRTPCryptoSuite(name: "AES_CM_128_HMAC_SHA1_64") }
        #expect(SRTPError.unknownSuite("x").description.contains("use one of AES_CM_128_HMAC_SHA1_80, AES_CM_128_HMAC_SHA1_32"))
    }

    @Test("libsrtp2 supports AES-CM, and GCM is detected by creating a session")
    func detection() throws {
        #expect(SRTPCryptoSuite.aesCM128HMACSHA1_80.isSupported)
        #expect(SRTPCryptoSuite.aesCM128HMACSHA1_32.isSupported)
        // Debian's libsrtp2 2.5 is built with NSS and has GCM; record what this machine has.
        let gcm = SRTPCryptoSuite.aeadAES128GCM.isSupported && SRTPCryptoSuite.aeadAES256GCM.isSupported
        #expect(gcm == SRTPCryptoSuite.supportedSuites.contains(.aeadAES128GCM))
        for suite in SRTPCryptoSuite.allCases where !suite.isSupported {
            #expect(throws: SRTPError.unsupportedSuite(suite)) {
                try SRTPSession(keyingMaterial: .random(for: suite), direction: .inbound)
            }
        }
    }

    @Test("base64 keying material round-trips, as ffmpeg's -srtp_out_params and SDP inline: carry it")
    func base64() throws {
        // The key ffmpeg printed in an SDP: a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:L4hW…iN0
        let text = "L4hW4UUM4+GbxYfLAr4a0TCTb8zLWzGjb7ZRAiN0"
        let keys = try SRTPKeyingMaterial(base64: text, suite: .aesCM128HMACSHA1_80)
        #expect(keys.masterKey.count == 16)
        #expect(keys.masterSalt.count == 14)
        #expect(keys.base64 == text)
        #expect(keys.concatenated == (try Base64.decode(text)))
        #expect(try SRTPKeyingMaterial(base64: "inline:" + text, suite: .aesCM128HMACSHA1_80) == keys)
        #expect(try SRTPKeyingMaterial(base64: "inline:" + text + "|2^31", suite: .aesCM128HMACSHA1_80) == keys)
        #expect(!keys.description.contains(text))
        #expect(!keys.description.contains("\(keys.masterKey)"))
    }

    @Test("a key of the wrong length names the suite, the lengths and the fix")
    func wrongLength() {
        let short = Base64.encode([UInt8](repeating: 7, count: 24))
        #expect(throws: SRTPError.invalidKeyLength(suite: .aesCM128HMACSHA1_80, actual: 24)) {
            try SRTPKeyingMaterial(base64: short, suite: .aesCM128HMACSHA1_80)
        }
        #expect(
            SRTPError.invalidKeyLength(suite: .aesCM128HMACSHA1_80, actual: 24).description
                == "SRTP key for AES_CM_128_HMAC_SHA1_80 must be 30 bytes (16 key + 14 salt), got 24"
        )
        #expect(
            SRTPError.invalidKeyLength(suite: .aeadAES256GCM, actual: 30).description
                == "SRTP key for AEAD_AES_256_GCM must be 44 bytes (32 key + 12 salt), got 30"
        )
        #expect(throws: SRTPError.invalidKeyLength(suite: .aeadAES128GCM, actual: 30)) {
            try SRTPKeyingMaterial(masterKey: Array(repeating: 1, count: 16), masterSalt: Array(repeating: 2, count: 14), suite: .aeadAES128GCM)
        }
    }

    @Test("bad base64 and MKIs are clear errors")
    func badText() {
        #expect(throws: SRTPError.invalidKeyEncoding(.invalidCharacter("!", offset: 3))) {
            try SRTPKeyingMaterial(base64: "abc!", suite: .aesCM128HMACSHA1_80)
        }
        #expect(SRTPError.invalidKeyEncoding(.invalidLength(1)).description == "SRTP key is not valid base64 (invalid base64: 1 characters cannot encode whole bytes)")
        #expect(throws: SRTPError.self) {
            try SRTPKeyingMaterial(base64: "inline:L4hW4UUM4+GbxYfLAr4a0TCTb8zLWzGjb7ZRAiN0|2^20|1:4", suite: .aesCM128HMACSHA1_80)
        }
    }
}

@Suite("SRTP sessions")
struct SRTPSessionTests {
    static let suites = SRTPCryptoSuite.supportedSuites

    @Test("RTP round-trips through protect and unprotect", arguments: suites)
    func rtpRoundTrip(suite: SRTPCryptoSuite) throws {
        let (sender, receiver) = try SRTPSession.pair(suite)
        for sequenceNumber in UInt16(1000)..<1100 {
            let packet = SRTPTestPackets.rtp(sequenceNumber: sequenceNumber, payloadLength: Int(sequenceNumber % 200))
            let protected = try sender.protectRTP(packet)
            #expect(protected.count == packet.count + suite.authenticationTagLength)
            #expect(protected[12...] != packet[12...] || packet.count == 12)
            #expect(try receiver.unprotectRTP(protected) == packet)
        }
        #expect(sender.statistics.packetsProtected == 100)
        #expect(receiver.statistics.packetsUnprotected == 100)
        #expect(receiver.statistics.authFailures == 0)
    }

    /// A receiver that joins a stream minutes in (a fanned-out viewer, a multicast member): the
    /// sender's sequence number wrapped before, so its rollover counter is not 0. Seen as one viewer
    /// of 250 failing "every SRTP packet fails authentication" in a swarm run.
    @Test("a stream joined after its sender's sequence number wrapped (once, twice) authenticates from its first packet, and keeps following wraps", arguments: suites, [1, 2])
    func lateJoiner(suite: SRTPCryptoSuite, wraps: Int) throws {
        let (sender, receiver) = try SRTPSession.pair(suite)
        // The sender protects from sequence number 65,000 on; the receiver sees packets only after
        // `wraps` wraps, then across one more.
        var joined = false
        var received = 0
        for index in 0..<(65_536 * wraps + 1_000) {
            let sequenceNumber = UInt16(truncatingIfNeeded: 65_000 + index)
            let packet = SRTPTestPackets.rtp(sequenceNumber: sequenceNumber, payloadLength: 40)
            let protected = try sender.protectRTP(packet)
            guard index >= 65_536 * wraps - 600 else { continue }  // joins at ROC `wraps`, 1,136 packets before the next wrap
            joined = true
            let unprotected = try? receiver.unprotectRTP(protected)
            #expect(unprotected == packet, "packet \(index), sequence number \(sequenceNumber), after \(received) received")
            if unprotected == nil { break }
            received += 1
        }
        #expect(joined && received == 1_600)
        #expect(receiver.statistics.authFailures == 0 && receiver.statistics.rolloverCountersRecovered == 1)
    }

    @Test("a wrong key still fails, after a bounded number of rollover counters tried", arguments: suites)
    func wrongKeyLateJoiner(suite: SRTPCryptoSuite) throws {
        let sender = try SRTPSession(keyingMaterial: .random(for: suite), direction: .outbound)
        let receiver = try SRTPSession(keyingMaterial: .random(for: suite), direction: .inbound)
        for sequenceNumber in UInt16(0)..<2_000 {
            let protected = try sender.protectRTP(SRTPTestPackets.rtp(sequenceNumber: sequenceNumber, payloadLength: 40))
            #expect(throws: SRTPError.authenticationFailed) { try receiver.unprotectRTP(protected) }
        }
        #expect(receiver.statistics.authFailures == 2_000 && receiver.statistics.rolloverCountersRecovered == 0)
    }

    @Test("RTCP round-trips through protect and unprotect", arguments: suites)
    func rtcpRoundTrip(suite: SRTPCryptoSuite) throws {
        let (sender, receiver) = try SRTPSession.pair(suite)
        for words in 0..<20 {
            let packet = SRTPTestPackets.rtcp(words: words)
            let protected = try sender.protectRTCP(packet)
            #expect(protected.count == packet.count + suite.rtcpOverhead)
            #expect(try receiver.unprotectRTCP(protected) == packet)
        }
        #expect(receiver.statistics.packetsUnprotected == 20)
    }

    @Test("in place on a caller-owned buffer: the lengths grow by the tag and shrink back")
    func inPlace() throws {
        let (sender, receiver) = try SRTPSession.pair(.aesCM128HMACSHA1_80)
        let packet = SRTPTestPackets.rtp(sequenceNumber: 7, payloadLength: 1_000)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1_500 + SRTPSession.maximumTrailerLength, alignment: 16)
        defer { buffer.deallocate() }
        buffer.copyBytes(from: packet)
        let protectedLength = try sender.protectRTP(buffer, length: packet.count)
        #expect(protectedLength == packet.count + 10)
        let plainLength = try receiver.unprotectRTP(buffer, length: protectedLength)
        #expect(plainLength == packet.count)
        #expect(Array(buffer[..<plainLength]) == packet)
        // Protecting needs room for libsrtp2's maximum trailer.
        #expect(throws: SRTPError.bufferTooSmall(needed: 100 + SRTPSession.maximumTrailerLength, capacity: 120)) {
            try sender.protectRTP(UnsafeMutableRawBufferPointer(rebasing: buffer[..<120]), length: 100)
        }
    }

    @Test("a wrong key counts an authentication failure, not a replay", arguments: suites)
    func wrongKey(suite: SRTPCryptoSuite) throws {
        let sender = try SRTPSession(keyingMaterial: .random(for: suite), direction: .outbound)
        let receiver = try SRTPSession(keyingMaterial: .random(for: suite), direction: .inbound)
        let protected = try sender.protectRTP(SRTPTestPackets.rtp(sequenceNumber: 1))
        #expect(throws: SRTPError.authenticationFailed) { try receiver.unprotectRTP(protected) }
        let protectedRTCP = try sender.protectRTCP(SRTPTestPackets.rtcp())
        #expect(throws: SRTPError.authenticationFailed) { try receiver.unprotectRTCP(protectedRTCP) }
        var expected = SRTPSession.Statistics()
        expected.authFailures = 2
        expected.consecutiveAuthFailures = 2
        #expect(receiver.statistics == expected)
    }

    @Test("a flipped bit anywhere fails authentication", arguments: suites)
    func tampered(suite: SRTPCryptoSuite) throws {
        let (sender, receiver) = try SRTPSession.pair(suite)
        let protected = try sender.protectRTP(SRTPTestPackets.rtp(sequenceNumber: 1, payloadLength: 20))
        for index in protected.indices where index != 0 && index != 8 {  // not the version or the SSRC
            var copy = protected
            copy[index] ^= 0x10
            #expect(throws: SRTPError.authenticationFailed) { try receiver.unprotectRTP(copy) }
        }
        #expect(try receiver.unprotectRTP(protected).count == 32)
    }

    @Test("a duplicate packet is dropped and counted as a replay", arguments: suites)
    func duplicate(suite: SRTPCryptoSuite) throws {
        let (sender, receiver) = try SRTPSession.pair(suite)
        let protected = try sender.protectRTP(SRTPTestPackets.rtp(sequenceNumber: 42))
        _ = try receiver.unprotectRTP(protected)
        #expect(throws: SRTPError.replay(.duplicate)) { try receiver.unprotectRTP(protected) }
        let protectedRTCP = try sender.protectRTCP(SRTPTestPackets.rtcp())
        _ = try receiver.unprotectRTCP(protectedRTCP)
        #expect(throws: SRTPError.replay(.duplicate)) { try receiver.unprotectRTCP(protectedRTCP) }
        #expect(receiver.statistics.replayDrops == 2)
        #expect(receiver.statistics.authFailures == 0)
        #expect(receiver.statistics.packetsUnprotected == 2)
    }

    @Test("libsrtp2 2.5 accepts a replay window of 64…32767 and refuses 32768", arguments: [
        (64, true), (128, true), (32_767, true), (63, false), (32_768, false), (65_536, false), (0, false), (-1, false),
    ])
    func replayWindowLimits(size: Int, accepted: Bool) {
        let result = Result { () throws(SRTPError) in
            try SRTPSession(
                keyingMaterial: .random(for: .aesCM128HMACSHA1_80),
                direction: .inbound,
                configuration: .init(replayWindowSize: size)
            )
        }
        switch result {
        case .success:
            #expect(accepted)
        case .failure(let error):
            #expect(!accepted)
            #expect(error.isBadParameter)
            #expect(error.description.contains("replayWindowSize must be 64...32767, got \(size)"))
        }
        #expect(SRTPSession.Configuration().replayWindowSize == 32_767)
    }

    /// Sender order 0..<count; a delivery order in which every 97th packet (not the first) arrives
    /// `delay` packets late, with delays cycling through 1,000 … 20,000.
    static func reordered(count: Int) -> (order: [Int], delayed: Set<Int>) {
        var release: [Int: [Int]] = [:]
        var delayed: Set<Int> = []
        var step = 0
        for index in stride(from: 97, to: count, by: 97) {
            let delay = 1_000 + (step * 7_919) % 19_001  // 1,000 … 20,000
            step += 1
            guard index + delay < count else { continue }
            release[index + delay, default: []].append(index)
            delayed.insert(index)
        }
        var order: [Int] = []
        for index in 0..<count {
            if !delayed.contains(index) { order.append(index) }
            order += release[index] ?? []
        }
        return (order, delayed)
    }

    @Test("packets delayed by 1,000…20,000 sequence numbers pass the default window; libsrtp2's 128 drops them")
    func deepReordering() throws {
        let keys = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
        let sender = try SRTPSession(keyingMaterial: keys, direction: .outbound)
        let count = 20_000
        let protected = try (0..<count).map { index in
            try sender.protectRTP(SRTPTestPackets.rtp(sequenceNumber: UInt16(100 + index), payloadLength: 40))
        }
        let (order, delayed) = Self.reordered(count: count)
        #expect(order.count == count)
        #expect(delayed.count > 100)

        let wide = try SRTPSession(keyingMaterial: keys, direction: .inbound)  // default: 32,767
        let narrow = try SRTPSession(keyingMaterial: keys, direction: .inbound, configuration: .init(replayWindowSize: 128))
        var narrowRefused: Set<Int> = []
        for index in order {
            #expect(try wide.unprotectRTP(protected[index]) == SRTPTestPackets.rtp(sequenceNumber: UInt16(100 + index), payloadLength: 40))
            do {
                _ = try narrow.unprotectRTP(protected[index])
            } catch {
                #expect(error == .replay(.tooOld))
                narrowRefused.insert(index)
            }
        }
        #expect(wide.statistics.packetsUnprotected == count)
        #expect(wide.statistics.replayDrops == 0)
        #expect(narrowRefused == delayed)
        #expect(narrow.statistics.replayDrops == delayed.count)
        #expect(narrow.statistics.packetsUnprotected == count - delayed.count)
    }

    @Test("sequence numbers wrap 65535 → 0 (rollover counter) with reordering around the wrap", arguments: suites)
    func wrap(suite: SRTPCryptoSuite) throws {
        let (sender, receiver) = try SRTPSession.pair(suite)
        let start: UInt16 = 65_535 - 3_000
        let count = 6_000  // crosses 0 once, at index 3,001
        let packets = (0..<count).map { SRTPTestPackets.rtp(sequenceNumber: start &+ UInt16($0), payloadLength: 24) }
        let protected = try packets.map { try sender.protectRTP($0) }
        // Around the wrap: packets before 0 arrive after packets after it, and the other way round.
        var order = Array(0..<count)
        order.swapAt(2_990, 3_010)        // 65525 arrives after 9; 9 arrives early
        order.swapAt(2_000, 3_500)        // 64535 arrives 1,500 later, after the wrap
        order.swapAt(3_001, 3_002)        // 0 and 1 swapped
        order.remove(at: order.firstIndex(of: 3_000)!)  // 65535 arrives 2,000 packets late
        order.insert(3_000, at: 5_000)
        for index in order {
            #expect(try receiver.unprotectRTP(protected[index]) == packets[index])
        }
        #expect(receiver.statistics.packetsUnprotected == count)
        // A replay of a pre-wrap packet is still recognized after the wrap.
        #expect(throws: SRTPError.replay(.duplicate)) { try receiver.unprotectRTP(protected[2_999]) }
    }
}

@Suite("SRTP: one clear error for a run of authentication failures")
struct SRTPFailureReportTests {
    @Test("50 packets with a wrong key give exactly one error, with the message a user can act on")
    func oneError() throws {
        let sender = try SRTPSession(keyingMaterial: .random(for: .aesCM128HMACSHA1_80), direction: .outbound)
        let receiver = try SRTPSession(keyingMaterial: .random(for: .aesCM128HMACSHA1_80), direction: .inbound)
        var reports: [SRTPError] = []
        for sequenceNumber in UInt16(0)..<200 {
            let protected = try sender.protectRTP(SRTPTestPackets.rtp(sequenceNumber: sequenceNumber))
            #expect(throws: SRTPError.authenticationFailed) { try receiver.unprotectRTP(protected) }
            if let report = receiver.takeAuthenticationFailureReport() {
                #expect(sequenceNumber == 49)
                reports.append(report)
            }
        }
        #expect(reports == [.authenticationFailureRun(failures: 50, packets: 50)])
        #expect(reports.first?.description == "SRTP authentication failed for 50 of 50 packets: check the key")
        #expect(receiver.statistics.authFailures == 200)
        #expect(receiver.statistics.consecutiveAuthFailures == 200)
    }

    @Test("a success ends the run; the next run reports again")
    func successResets() throws {
        let keys = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
        let good = try SRTPSession(keyingMaterial: keys, direction: .outbound)
        let bad = try SRTPSession(keyingMaterial: .random(for: .aesCM128HMACSHA1_80), direction: .outbound)
        let receiver = try SRTPSession(keyingMaterial: keys, direction: .inbound, configuration: .init(authenticationFailureReportThreshold: 10))
        var sequenceNumber: UInt16 = 0
        func send(_ session: SRTPSession) throws -> [UInt8] {
            sequenceNumber += 1
            return try session.protectRTP(SRTPTestPackets.rtp(sequenceNumber: sequenceNumber))
        }

        // 9 failures, a success, 9 failures: never 10 in a row, so no report.
        for _ in 0..<9 { _ = try? receiver.unprotectRTP(send(bad)) }
        _ = try receiver.unprotectRTP(send(good))
        #expect(receiver.statistics.consecutiveAuthFailures == 0)
        for _ in 0..<9 { _ = try? receiver.unprotectRTP(send(bad)) }
        #expect(receiver.takeAuthenticationFailureReport() == nil)

        // A replay inside the run is counted apart and does not end it.
        let replayed = try send(good)
        _ = try receiver.unprotectRTP(replayed)
        _ = try? receiver.unprotectRTP(replayed)
        for _ in 0..<10 { _ = try? receiver.unprotectRTP(send(bad)) }
        #expect(receiver.takeAuthenticationFailureReport() == .authenticationFailureRun(failures: 10, packets: 11))
        #expect(receiver.takeAuthenticationFailureReport() == nil)

        // A success, then another run: one more report.
        _ = try receiver.unprotectRTP(send(good))
        for _ in 0..<25 { _ = try? receiver.unprotectRTP(send(bad)) }
        #expect(receiver.takeAuthenticationFailureReport() == .authenticationFailureRun(failures: 10, packets: 10))
        #expect(receiver.takeAuthenticationFailureReport() == nil)
        #expect(receiver.statistics.authFailures == 9 + 9 + 10 + 25)
        #expect(receiver.statistics.replayDrops == 1)
    }
}
