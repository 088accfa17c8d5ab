import PlayoutCore
import PlayoutRTP
import PlayoutWebRTC
import Testing

@Suite("DTLS-SRTP endpoint on a manual clock")
struct DTLSEndpointTests {
    static let setups = ["passive", "active"]  // the answer's a=setup: we are client, then server
    static let profiles = DTLSSRTPProfile.allCases

    @Test("two endpoints handshake and export keys that protect and unprotect across", arguments: setups, profiles)
    func handshake(answerSetup: String, profile: DTLSSRTPProfile) throws {
        try #require(profile.suite.isSupported, "libsrtp2 lacks \(profile.suite)")
        let role = try DTLSEndpoint.Role(answerSetup: answerSetup)
        let (ours, theirs, _, _) = try makeEndpoints(roleA: role, profilesA: [profile], profilesB: [profile])
        var link = DTLSLink(a: ours, b: theirs)
        ours.start(now: link.now)
        theirs.start(now: link.now)
        link.run()
        #expect(link.bothConnected)
        #expect(link.now == .zero, "no loss: nothing waits for a timer")
        let keysA = try #require(DTLSLink.keys(link.eventsA))
        let keysB = try #require(DTLSLink.keys(link.eventsB))
        #expect(keysA.profile == profile && keysB.profile == profile)
        #expect(keysA.inbound == keysB.outbound && keysA.outbound == keysB.inbound)
        #expect(keysA.inbound != keysA.outbound)
        #expect(ours.keys == keysA)
        #expect(ours.statistics.retransmissions == 0 && theirs.statistics.retransmissions == 0)

        // Media one way, RTCP both ways, through real libsrtp2 sessions.
        let media = rtpPacket(sequence: 7, payload: Array(0..<100))
        let protected = try SRTPSession(keyingMaterial: keysB.outbound, direction: .outbound).protectRTP(media)
        #expect(protected.count == media.count + profile.suite.authenticationTagLength)
        #expect(try SRTPSession(keyingMaterial: keysA.inbound, direction: .inbound).unprotectRTP(protected) == media)
        let report = rtcpReceiverReport()
        let protectedReport = try SRTPSession(keyingMaterial: keysA.outbound, direction: .outbound).protectRTCP(report)
        #expect(try SRTPSession(keyingMaterial: keysB.inbound, direction: .inbound).unprotectRTCP(protectedReport) == report)
        // The wrong key fails authentication: the keys really differ per direction.
        #expect(throws: SRTPError.self) {
            try SRTPSession(keyingMaterial: keysA.outbound, direction: .inbound).unprotectRTP(protected)
        }
    }

    @Test("both offering the default profiles, AES-GCM is chosen; otherwise the server's preference decides")
    func prefersGCM() throws {
        try #require(DTLSSRTPProfile.aeadAES128GCM.suite.isSupported)
        let (a, b, _, _) = try makeEndpoints(roleA: .client)
        var link = DTLSLink(a: a, b: b)
        a.start(now: link.now)
        b.start(now: link.now)
        link.run()
        #expect(a.keys?.profile == .aeadAES128GCM && b.keys?.profile == .aeadAES128GCM)

        let (c, d, _, _) = try makeEndpoints(roleA: .client, profilesB: [.aes128CMSHA1_80, .aeadAES128GCM])
        var other = DTLSLink(a: c, b: d)
        c.start(now: other.now)
        d.start(now: other.now)
        other.run()
        #expect(c.keys?.profile == .aes128CMSHA1_80 && d.keys?.profile == .aes128CMSHA1_80)
    }

    @Test("no common SRTP profile fails the handshake clearly")
    func noCommonProfile() throws {
        try #require(DTLSSRTPProfile.aeadAES128GCM.suite.isSupported)
        let (a, b, _, _) = try makeEndpoints(roleA: .client, profilesA: [.aeadAES128GCM], profilesB: [.aes128CMSHA1_80])
        var link = DTLSLink(a: a, b: b)
        a.start(now: link.now)
        b.start(now: link.now)
        link.run { $0.a.state == .failed || $0.a.state == .connected }
        #expect(a.state == .failed)
        let error = try #require(DTLSLink.failure(link.eventsA))
        if case .noSRTPProfile(let offered) = error {
            #expect(offered == ["SRTP_AEAD_AES_128_GCM"])
        } else {
            Issue.record("expected noSRTPProfile, got \(error)")
        }
    }

    @Test("a lost first flight is resent at our deadline and the handshake completes")
    func lostClientHello() throws {
        let (client, server, _, _) = try makeEndpoints(roleA: .client)
        var link = DTLSLink(a: client, b: server)
        link.drop = { side, index, _ in side == .a && index == 0 }
        client.start(now: link.now)
        server.start(now: link.now)
        #expect(client.nextDeadline == MonotonicInstant.zero.advanced(by: .milliseconds(250)))
        link.run()
        #expect(link.bothConnected)
        let clientSends = link.sends(of: .a)
        #expect(clientSends[0].dropped && clientSends[0].at == .zero)
        #expect(clientSends[1].at == MonotonicInstant.zero.advanced(by: .milliseconds(250)))
        #expect(clientSends[1].bytes != clientSends[0].bytes, "OpenSSL's own retransmission: fresh record sequence numbers")
        #expect(client.statistics.retransmissions == 1)
        #expect(link.now == MonotonicInstant.zero.advanced(by: .milliseconds(250)))
    }

    @Test("nothing is resent before our deadline, however often OpenSSL is made to read")
    func nothingBeforeDeadline() throws {
        let (client, _, _, _) = try makeEndpoints(roleA: .client)
        client.start(now: .zero)
        guard case .send(let hello) = client.poll(now: .zero) else { Issue.record("no ClientHello"); return }
        #expect(client.poll(now: .zero) == nil)
        // Records OpenSSL reads and drops (next epoch, random): each read ends in a failed read,
        // the path where OpenSSL 3.0 retransmits by its own (real-time) timer.
        var random = SeededRandom(seed: 6347)
        for millisecond in stride(from: 0, to: 250, by: 10) {
            let now = MonotonicInstant.zero.advanced(by: .milliseconds(millisecond))
            client.receive([23, 0xFE, 0xFD, 0x00, 0x01] + random.bytes(6) + [0x00, 0x20] + random.bytes(32), now: now)
            #expect(client.poll(now: now) == nil, "nothing sent at \(now)")
        }
        let deadline = MonotonicInstant.zero.advanced(by: .milliseconds(250))
        #expect(client.nextDeadline == deadline)
        guard case .send(let copy) = client.poll(now: deadline) else { Issue.record("no retransmission at the deadline"); return }
        #expect(copy != hello && copy.count == hello.count)
        #expect(client.nextDeadline == deadline.advanced(by: .milliseconds(500)))
        #expect(client.statistics.retransmissions == 1 && client.statistics.datagramsSent == 2)
    }

    @Test("a lost server flight is resent by the server at its deadline", arguments: [DTLSEndpoint.Role.client, .server])
    func lostServerFlight(roleA: DTLSEndpoint.Role) throws {
        let (a, b, _, _) = try makeEndpoints(roleA: roleA)
        var link = DTLSLink(a: a, b: b)
        let server: DTLSLink.Side = roleA == .server ? .a : .b
        link.drop = { side, index, _ in side == server && index == 0 }
        a.start(now: link.now)
        b.start(now: link.now)
        link.run()
        #expect(link.bothConnected)
        let serverEndpoint = server == .a ? a : b
        let clientEndpoint = server == .a ? b : a
        #expect(serverEndpoint.statistics.retransmissions == 1)
        // The client's ClientHello got no answer either until the server's copy at 250 ms; the
        // client's own copy at 250 ms may cross it: either way the handshake is done by then.
        #expect(link.now == MonotonicInstant.zero.advanced(by: .milliseconds(250)))
        #expect(clientEndpoint.state == .connected)
    }

    @Test("a lost final flight: the client's retransmission makes the server resend it")
    func lostFinalFlight() throws {
        let (client, server, _, _) = try makeEndpoints(roleA: .client)
        var link = DTLSLink(a: client, b: server)
        var serverConnectedAt: Int?
        link.drop = { side, index, _ in
            // Every server datagram written once the server is connected, the first time: its
            // final flight (ChangeCipherSpec, Finished).
            guard side == .b else { return false }
            if server.state == .connected, serverConnectedAt == nil { serverConnectedAt = index }
            return index == serverConnectedAt
        }
        client.start(now: link.now)
        server.start(now: link.now)
        link.run()
        #expect(link.bothConnected)
        #expect(serverConnectedAt != nil)
        #expect(client.statistics.retransmissions == 1)
        #expect(server.statistics.retransmissions == 0, "the server answers the client's copy, not a timer")
        #expect(link.now == MonotonicInstant.zero.advanced(by: .milliseconds(250)))
        #expect(DTLSLink.keys(link.eventsA) == DTLSLink.keys(link.eventsB).map {
            DTLSSRTPKeys(profile: $0.profile, inbound: $0.outbound, outbound: $0.inbound)
        })
    }

    @Test("retransmissions back off exponentially and the handshake fails after a bounded time")
    func backOffAndGiveUp() throws {
        let (client, server, _, _) = try makeEndpoints(roleA: .client)
        var link = DTLSLink(a: client, b: server)
        link.drop = { side, _, _ in side == .a }  // the server never hears the client
        client.start(now: link.now)
        server.start(now: link.now)
        link.run(limit: .seconds(60)) { $0.a.state == .failed && $0.b.state == .failed }
        let times = link.sends(of: .a).map { MonotonicInstant.zero.duration(to: $0.at) }
        let expected: [Duration] = [0, 250, 750, 1_750, 3_750, 7_750, 11_750].map { .milliseconds($0) }
        #expect(times == expected, "250 ms doubling to the 4 s ceiling")
        let clientError = try #require(DTLSLink.failure(link.eventsA))
        #expect(clientError == .handshakeTimeout(elapsed: .seconds(15), retransmissions: 6))
        #expect(clientError.description.contains("did not complete within 15s"))
        #expect(DTLSLink.failure(link.eventsB) == .handshakeTimeout(elapsed: .seconds(15), retransmissions: 0))
        #expect(client.nextDeadline == nil && server.nextDeadline == nil)
        #expect(link.now == MonotonicInstant.zero.advanced(by: .seconds(15)))
    }

    @Test("when the copies run out before the time limit, the handshake fails at the next deadline")
    func copiesRunOut() throws {
        let configuration = DTLSEndpoint.Configuration(
            initialRetransmissionTimeout: .milliseconds(100), maximumRetransmissionTimeout: .milliseconds(100),
            handshakeTimeout: .seconds(30), maximumRetransmissions: 3
        )
        let (client, server, _, _) = try makeEndpoints(roleA: .client, configuration: configuration)
        var link = DTLSLink(a: client, b: server)
        link.drop = { side, _, _ in side == .a }
        client.start(now: link.now)
        link.run { $0.a.state == .failed }
        #expect(link.sends(of: .a).count == 4)  // the flight and three copies
        #expect(DTLSLink.failure(link.eventsA) == .handshakeTimeout(elapsed: .milliseconds(400), retransmissions: 3))
    }

    @Test("a certificate that does not match the answer's fingerprint is refused, naming both digests")
    func fingerprintMismatch() throws {
        let impostor = try DTLSCertificate()
        let (client, server, _, certificateB) = try makeEndpoints(roleA: .client, expectedByA: impostor.fingerprint)
        var link = DTLSLink(a: client, b: server)
        client.start(now: link.now)
        server.start(now: link.now)
        link.run { $0.a.state == .failed && $0.b.state == .failed }
        #expect(client.keys == nil && server.state != .connected)
        let error = try #require(DTLSLink.failure(link.eventsA))
        #expect(error == .fingerprintMismatch(expected: impostor.fingerprint, actual: certificateB.fingerprint))
        #expect(error.description.contains("fingerprint mismatch"))
        #expect(error.description.contains(impostor.fingerprint.hexDigest))
        #expect(error.description.contains(certificateB.fingerprint.hexDigest))
        // The server learns from the client's alert, long before any timer.
        #expect(DTLSLink.failure(link.eventsB) != nil)
        #expect(link.now == .zero)
    }

    @Test("the server refuses a client whose certificate does not match")
    func serverSideMismatch() throws {
        let impostor = try DTLSCertificate()
        let (server, client, _, certificateB) = try makeEndpoints(roleA: .server, expectedByA: impostor.fingerprint)
        var link = DTLSLink(a: server, b: client)
        server.start(now: link.now)
        client.start(now: link.now)
        link.run { $0.a.state == .failed && $0.b.state == .failed }
        #expect(DTLSLink.failure(link.eventsA) == .fingerprintMismatch(expected: impostor.fingerprint, actual: certificateB.fingerprint))
        #expect(client.state == .failed && client.keys == nil)
    }

    @Test("garbage, truncated, foreign and oversized datagrams are counted and dropped; the handshake completes")
    func hostileDatagrams() throws {
        let (client, server, _, _) = try makeEndpoints(roleA: .client)
        var link = DTLSLink(a: client, b: server)
        var random = SeededRandom(seed: 29)
        var lastReal: [DTLSLink.Side: [UInt8]] = [:]
        var injected = 0
        link.inject = { side, _ in
            var extra: [[UInt8]] = []
            extra.append(random.bytes(Int.random(in: 1...300, using: &random)))                  // random
            var record = [UInt8](repeating: 0, count: 13) + random.bytes(40)                       // a record header's shape
            record[0] = 22; record[1] = 0xFE; record[2] = 0xFD; record[11] = 0; record[12] = 200  // claims 200 bytes, has 40
            extra.append(record)
            extra.append([0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xA4, 0x42] + random.bytes(12))     // STUN
            extra.append(rtpPacket(sequence: 1, payload: random.bytes(50)))                        // RTP
            extra.append([UInt8](repeating: 23, count: 20_000))                                    // oversized
            extra.append([])                                                                        // empty
            if let previous = lastReal[side], previous.count > 20 {
                extra.append(Array(previous.prefix(previous.count / 2)))                           // truncated real one
            }
            injected += extra.count
            return extra
        }
        let realDrop = link.drop
        link.drop = { side, index, bytes in
            lastReal[side] = bytes
            return realDrop(side, index, bytes)
        }
        client.start(now: link.now)
        server.start(now: link.now)
        link.run()
        #expect(link.bothConnected)
        #expect(link.now == .zero)
        let dropped = [client, server].map {
            $0.statistics.datagramsDroppedMalformed + $0.statistics.datagramsDroppedOversized
        }.reduce(0, +)
        #expect(injected > 10)
        #expect(dropped == injected)
        #expect(client.statistics.datagramsDroppedOversized + server.statistics.datagramsDroppedOversized >= 2)
    }

    @Test("a flood of next-epoch records during the handshake is dropped within OpenSSL's bounds; the handshake completes")
    func floodOfFutureRecords() throws {
        let (client, server, _, _) = try makeEndpoints(roleA: .client)
        var link = DTLSLink(a: client, b: server)
        var random = SeededRandom(seed: 5764)
        link.inject = { side, index in
            // Before the client's second flight reaches the server: 5,000 application-data and
            // handshake records of epoch 1 with random bodies and sequence numbers.
            guard side == .a, index == 1 else { return [] }
            return (0..<5_000).map { n in
                var record: [UInt8] = [n % 2 == 0 ? 23 : 22, 0xFE, 0xFD, 0x00, 0x01] + random.bytes(6) + [0x00, 0x40]
                record += random.bytes(0x40)
                return record
            }
        }
        client.start(now: link.now)
        server.start(now: link.now)
        link.run()
        #expect(link.bothConnected)
        #expect(server.statistics.datagramsProcessed >= 5_000)
        #expect(server.statistics.bytesDiscardedUnread == 0)
    }

    @Test("a record from another session after the handshake is dropped; the session stays up")
    func foreignRecordAfterHandshake() throws {
        let (client, server, _, _) = try makeEndpoints(roleA: .client)
        var link = DTLSLink(a: client, b: server)
        client.start(now: link.now)
        server.start(now: link.now)
        link.run()
        let (otherClient, otherServer, _, _) = try makeEndpoints(roleA: .client)
        var other = DTLSLink(a: otherClient, b: otherServer)
        otherClient.start(now: other.now)
        otherServer.start(now: other.now)
        other.run()
        // Every datagram of the other session, replayed into this one's server.
        for datagram in other.sent.filter({ $0.side == .a }) { server.receive(datagram.bytes, now: link.now) }
        for datagram in other.sent.filter({ $0.side == .b }) { client.receive(datagram.bytes, now: link.now) }
        link.run { _ in false }
        #expect(client.state == .connected && server.state == .connected)
        #expect(DTLSLink.failure(link.eventsA) == nil && DTLSLink.failure(link.eventsB) == nil)
    }

    @Test("close sends close_notify and the peer reports it closed", arguments: [DTLSEndpoint.Role.client, .server])
    func closeNotify(closingRole: DTLSEndpoint.Role) throws {
        let (a, b, _, _) = try makeEndpoints(roleA: closingRole)
        var link = DTLSLink(a: a, b: b)
        a.start(now: link.now)
        b.start(now: link.now)
        link.run()
        #expect(link.bothConnected)
        let sentBefore = a.statistics.datagramsSent
        a.close(now: link.now)
        #expect(a.state == .closed)
        link.run { $0.b.state != .connected }
        #expect(a.statistics.datagramsSent == sentBefore + 1)
        #expect(b.state == .closed)
        #expect(link.eventsB.last == .closed)
        #expect(a.nextDeadline == nil && b.nextDeadline == nil)
        // After the end, datagrams are counted and dropped.
        a.receive(link.sent.last!.bytes, now: link.now)
        #expect(a.statistics.datagramsDroppedAfterEnd == 1)
    }

    @Test("configurations out of range are refused with a reason")
    func configurationBounds() throws {
        let certificate = try DTLSCertificate.shared()
        let bad: [DTLSEndpoint.Configuration] = [
            DTLSEndpoint.Configuration(maximumRetransmissions: 0),
            DTLSEndpoint.Configuration(maximumRetransmissions: 11),
            DTLSEndpoint.Configuration(mtu: 100),
            DTLSEndpoint.Configuration(initialRetransmissionTimeout: .zero),
            DTLSEndpoint.Configuration(initialRetransmissionTimeout: .seconds(5), maximumRetransmissionTimeout: .seconds(1)),
            DTLSEndpoint.Configuration(srtpProfiles: []),
        ]
        for configuration in bad {
            #expect(throws: DTLSError.self) {
                try DTLSEndpoint(role: .client, certificate: certificate, remoteFingerprint: certificate.fingerprint, configuration: configuration)
            }
        }
    }

    @Test("the role follows the answer's a=setup")
    func roleFromSetup() throws {
        #expect(try DTLSEndpoint.Role(answerSetup: "passive") == .client)
        #expect(try DTLSEndpoint.Role(answerSetup: "ACTIVE") == .server)
        #expect(throws: DTLSError.invalidSetup("actpass")) { try DTLSEndpoint.Role(answerSetup: "actpass") }
    }

    @Test("a server receiving a ClientHello before start() begins at once")
    func receiveBeforeStart() throws {
        let (client, server, _, _) = try makeEndpoints(roleA: .client)
        var link = DTLSLink(a: client, b: server)
        client.start(now: link.now)
        link.run()
        #expect(link.bothConnected)
    }
}
