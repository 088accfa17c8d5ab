import PlayoutCore
import PlayoutRTP
import PlayoutSender
import PlayoutWebRTC
import Testing

/// One WHEP session driven without sockets or sleeps: a real DTLS client (OpenSSL) and real
/// SRTP (libsrtp2) on the subscriber's side, on instants we choose.
@Suite("WHEP session (sans-IO)")
struct WHEPSessionTests {
    static let t0 = MonotonicInstant(nanoseconds: 5_000_000_000)
    static let peer = try! SocketAddress(host: "127.0.0.1", port: 41_000)
    static let serverCertificate = try! DTLSCertificate.shared()
    static let clientCertificate = try! DTLSCertificate()
    static let mid = WHEPLiteNegotiatedTrack(
        track: 0, mid: "v", payloadType: 102, retransmissionPayloadType: 103, midExtensionID: 4, absoluteCaptureTimeExtensionID: 7,
        feedback: [.nack(102), .pictureLoss(102)], ssrc: 0x1111_1111, retransmissionSSRC: 0x2222_2222
    )
    /// The canonical packets' abs-capture-time id.
    static let captureID: UInt8 = 1

    /// The subscriber's side of one session, and the session.
    final class Harness {
        let session: WHEPSession
        let plan: WHEPSessionPlan
        let client: DTLSEndpoint
        var now = WHEPSessionTests.t0
        var keys: DTLSSRTPKeys?
        var received: [[UInt8]] = []
        var stores: [RetransmissionBuffer?] = [RetransmissionBuffer(minimumResendInterval: .zero)]
        /// Whether the client's DTLS may fail (a refused handshake), and how it did.
        var toleratesClientFailure = false
        var clientFailure: DTLSError?

        init(
            impairment: NetworkImpairment.Configuration = .init(), agreed: WHEPLiteNegotiatedTrack = WHEPSessionTests.mid,
            clientCertificate: DTLSCertificate = WHEPSessionTests.clientCertificate
        ) throws {
            plan = WHEPSessionPlan(
                id: "s1", number: 1, credentials: ICECredentials(ufrag: "srv1", password: "0123456789abcdefghijklmn"),
                remoteUsernameFragment: "peer", remoteFingerprint: WHEPSessionTests.clientCertificate.fingerprint, tracks: [agreed]
            )
            session = try WHEPSession(
                plan: plan, kinds: [.video], codecs: [.h264], certificate: WHEPSessionTests.serverCertificate, impairment: impairment, now: now
            )
            client = try DTLSEndpoint(role: .client, certificate: clientCertificate, remoteFingerprint: WHEPSessionTests.serverCertificate.fingerprint)
        }

        /// The subscriber's nominating check.
        func check(useCandidate: Bool = true, password: String? = nil) {
            var request = STUNMessage(class: .request, transactionID: STUNTransactionID(high: 9, low: UInt64(now.nanoseconds)))
            request.attributes = [.username("srv1:peer"), .priority(100), .iceControlling(1)]
            if useCandidate { request.attributes.append(.useCandidate) }
            let bytes = request.encoded(integrityKey: Array((password ?? plan.credentials.password).utf8), fingerprint: true)
            bytes.withUnsafeBytes { session.receiveSTUN($0, from: WHEPSessionTests.peer, now: now) }
        }

        /// Runs the session and hands what it sends to the client (DTLS) or `received` (the rest).
        @discardableResult
        func pump() -> MonotonicInstant? {
            var toClient: [[UInt8]] = []
            let next = session.poll(now: now) { bytes, address in
                #expect(address == WHEPSessionTests.peer)
                toClient.append(Array(bytes))
            }
            for datagram in toClient {
                if DatagramDemultiplexer.kind(of: datagram.withUnsafeBytes { $0 }) == .dtls {
                    client.receive(datagram, now: now)
                } else {
                    received.append(datagram)
                }
            }
            while let action = client.poll(now: now) {
                switch action {
                case .send(let datagram): datagram.withUnsafeBytes { session.receiveDTLS($0, now: now) }
                case .connected(let keys): self.keys = keys
                case .failed(let error):
                    clientFailure = error
                    if !toleratesClientFailure { Issue.record("client DTLS failed: \(error)") }
                case .closed: break
                }
            }
            return next
        }

        /// ICE, then the DTLS handshake, until both sides are connected.
        func connect() throws {
            handshake()
            #expect(session.state == .connected)
            _ = try #require(keys)
            received.removeAll()  // the STUN answer
        }

        /// ICE, then the DTLS handshake, for at most 20 rounds.
        func handshake() {
            check()
            client.start(now: now)
            for _ in 0..<20 where session.state == .connecting || keys == nil {
                pump()
                now = now.advanced(by: .milliseconds(5))
            }
            pump()
        }

        /// A canonical packet as the publisher's track sender writes it (plain RTP).
        func canonical(sequence: UInt16, marker: Bool = false, capture: Bool = true) -> [UInt8] {
            let builder = RTPPacketBuilder(
                marker: marker, payloadType: 96, sequenceNumber: SequenceNumber(rawValue: sequence), timestamp: RTPTimestamp(rawValue: 90_000),
                ssrc: 0x5555_5555, extensions: capture ? [.init(id: WHEPSessionTests.captureID, bytes: [1, 2, 3, 4, 5, 6, 7, 8])] : []
            )
            return try! builder.serialized(payload: [0x65, UInt8(truncatingIfNeeded: sequence), 0xAA, 0xBB])
        }

        func send(_ packet: [UInt8]) {
            packet.withUnsafeBytes { bytes in
                stores[0]!.store(bytes, sequenceNumber: try! RTPPacket(parsing: bytes).sequenceNumber.rawValue, now: now)
                session.send(canonical: bytes, track: 0, captureTimeID: WHEPSessionTests.captureID, now: now)
            }
        }

        /// What the subscriber decrypts of `received` (RTP).
        func decrypted() throws -> [[UInt8]] {
            let inbound = try SRTPSession(keyingMaterial: try #require(keys).inbound, direction: .inbound)
            return try received.filter { DatagramDemultiplexer.kind(of: $0.withUnsafeBytes { $0 }) == .rtp }.map { try inbound.unprotectRTP($0) }
        }

        /// An SRTCP compound from the subscriber.
        func rtcp(_ messages: [RTCPFeedback.Message]) throws {
            let outbound = try SRTPSession(keyingMaterial: try #require(keys).outbound, direction: .outbound)
            let packets = messages.map { RTCPPacket.feedback(RTCPFeedback(senderSSRC: 77, mediaSSRC: WHEPSessionTests.mid.ssrc, message: $0)) }
            var protected = try outbound.protectRTCP(RTCPPacket.serializeCompound(packets))
            protected.withUnsafeMutableBytes { bytes in
                session.receiveRTCP(bytes, length: bytes.count, now: now, arrivalNTP: 0, stores: &stores)
            }
        }
    }

    @Test("ICE-lite then DTLS (we are the server): the session connects and asks for a key frame for its new viewer")
    func connects() throws {
        let harness = try Harness()
        #expect(harness.session.state == .connecting)
        try harness.connect()
        #expect(harness.session.mediaAddress == Self.peer)
        #expect(harness.session.takeKeyFrameRequest())
        #expect(!harness.session.takeKeyFrameRequest())
        #expect(harness.session.statistics.connectTime != nil)
    }

    @Test("a DTLS client whose certificate is not the offer's fingerprint is refused: the session ends dtlsFailed, no media")
    func wrongFingerprint() throws {
        let harness = try Harness(clientCertificate: try DTLSCertificate())
        harness.toleratesClientFailure = true
        harness.handshake()
        #expect(harness.session.state == .ended(.dtlsFailed))
        #expect(harness.session.statistics.end == .dtlsFailed)
        harness.received.removeAll()
        harness.send(harness.canonical(sequence: 1))
        harness.pump()
        #expect(harness.received.allSatisfy { DatagramDemultiplexer.kind(of: $0.withUnsafeBytes { $0 }) != .rtp })
    }

    @Test("nothing is sent before DTLS connects, nor to a peer that never nominated")
    func silentBeforeConnected() throws {
        let harness = try Harness()
        harness.check(useCandidate: false)
        harness.send(harness.canonical(sequence: 1))
        harness.pump()
        // Only the STUN answer.
        #expect(harness.received.count == 1)
        #expect(harness.session.mediaAddress == nil)
        #expect(harness.session.statistics.tracks[.video]?.packetsSent == 0)
    }

    @Test("each canonical packet becomes the session's own: its SSRC, payload type, one sequence offset, mid and abs-capture-time under the offer's ids")
    func rewritesPackets() throws {
        let harness = try Harness()
        try harness.connect()
        for sequence in UInt16(65_530)...UInt16(65_535) { harness.send(harness.canonical(sequence: sequence, marker: sequence == 65_535)) }
        harness.send(harness.canonical(sequence: 0, capture: false))
        harness.pump()
        let packets = try harness.decrypted()
        #expect(packets.count == 7)
        var offsets: Set<UInt16> = []
        for (index, bytes) in packets.enumerated() {
            try bytes.withUnsafeBytes { raw in
                let packet = try RTPPacket(parsing: raw)
                #expect(packet.ssrc == Self.mid.ssrc)
                #expect(packet.payloadType == 102)
                let canonical = index < 6 ? UInt16(65_530 + index) : 0
                offsets.insert(packet.sequenceNumber.rawValue &- canonical)
                #expect(packet.marker == (canonical == 65_535))
                let mid: [UInt8]? = packet.headerExtension(id: 4).map { Array($0) }
            #expect(mid == Array("v".utf8))
                #expect(packet.headerExtension(id: 7).map(Array.init) == (index < 6 ? [1, 2, 3, 4, 5, 6, 7, 8] : nil))
                #expect(packet.headerExtension(id: Self.captureID) == nil)
                #expect(Array(packet.payload) == [0x65, UInt8(truncatingIfNeeded: canonical), 0xAA, 0xBB])
            }
        }
        #expect(offsets.count == 1)  // one offset, wrapping with the canonical numbers
        #expect(harness.session.statistics.tracks[.video]?.packetsSent == 7)
    }

    @Test("a NACK in the session's numbers is answered with RTX (its SSRC, payload type, OSN) from the shared store; PLI asks a key frame")
    func nackAndPLI() throws {
        let harness = try Harness()
        try harness.connect()
        _ = harness.session.takeKeyFrameRequest()
        for sequence in UInt16(100)..<110 { harness.send(harness.canonical(sequence: sequence)) }
        harness.pump()
        let media = try harness.decrypted()
        let lost = try media[3].withUnsafeBytes { try RTPPacket(parsing: $0).sequenceNumber.rawValue }
        harness.received.removeAll()
        harness.now = harness.now.advanced(by: .milliseconds(20))
        try harness.rtcp([.nack([lost]), .pictureLoss])
        harness.pump()
        let rtx = try #require(try harness.decrypted().first)
        try rtx.withUnsafeBytes { raw in
            let packet = try RTPPacket(parsing: raw)
            #expect(packet.ssrc == Self.mid.retransmissionSSRC)
            #expect(packet.payloadType == 103)
            #expect(Array(packet.payload.prefix(2)) == [UInt8(lost >> 8), UInt8(lost & 0xFF)])
            #expect(Array(packet.payload.dropFirst(2)) == [0x65, 103, 0xAA, 0xBB])
            let mid: [UInt8]? = packet.headerExtension(id: 4).map { Array($0) }
            #expect(mid == Array("v".utf8))
        }
        #expect(harness.session.takeKeyFrameRequest())
        let statistics = try #require(harness.session.statistics.tracks[.video])
        #expect(statistics.feedback.nacksReceived == 1)
        #expect(statistics.retransmittedPacketsSent == 1)
        #expect(statistics.feedback.pliReceived == 1)
        // The same NACK at once again: within the limiter's bounds, not resent twice.
        harness.received.removeAll()
        try harness.rtcp([.nack([lost])])
        harness.pump()
        #expect(try harness.decrypted().isEmpty)
    }

    @Test("REMB limits the bit rate only where the answer agreed goog-remb; PLI asks a key frame only where it agreed nack pli")
    func agreedFeedbackOnly() throws {
        var withREMB = Self.mid
        withREMB.feedback = [.nack(102), .receiverEstimatedMaximumBitrate(102)]
        let agreed = try Harness(agreed: withREMB)
        try agreed.connect()
        _ = agreed.session.takeKeyFrameRequest()
        try agreed.rtcp([.receiverEstimatedMaximumBitrate(bitrate: 800_000, ssrcs: [Self.mid.ssrc]), .pictureLoss])
        #expect(agreed.session.takeBitrateLimitChange())
        #expect(agreed.session.bitrateLimit == 800_000)
        #expect(!agreed.session.takeKeyFrameRequest())  // no nack pli agreed
        let plain = try Harness()
        try plain.connect()
        try plain.rtcp([.receiverEstimatedMaximumBitrate(bitrate: 800_000, ssrcs: [Self.mid.ssrc])])
        #expect(!plain.session.takeBitrateLimitChange())
        #expect(plain.session.bitrateLimit == nil)
    }

    @Test("RTCP that fails SRTCP authentication is counted and not acted on")
    func badRTCP() throws {
        let harness = try Harness()
        try harness.connect()
        var garbage: [UInt8] = [0x81, 0xCD, 0x00, 0x02] + [UInt8](repeating: 7, count: 30)
        garbage.withUnsafeMutableBytes { harness.session.receiveRTCP($0, length: $0.count, now: harness.now, arrivalNTP: 0, stores: &harness.stores) }
        #expect(harness.session.statistics.rtcpUndecodable == 1)
        _ = harness.session.takeKeyFrameRequest()
        #expect(!harness.session.takeKeyFrameRequest())
    }

    @Test("consent: 30 s without an authenticated check ends the session with close_notify; checks keep it alive")
    func consent() throws {
        let harness = try Harness()
        try harness.connect()
        harness.now = harness.now.advanced(by: .seconds(25))
        harness.check()
        harness.pump()
        harness.now = harness.now.advanced(by: .seconds(25))
        harness.pump()
        #expect(harness.session.state == .connected)
        // A check with the wrong password does not count.
        harness.check(password: "wrongwrongwrongwrongwrong")
        harness.now = harness.now.advanced(by: .seconds(6))
        harness.pump()
        #expect(harness.session.state == .ended(.consentExpired))
        #expect(harness.session.statistics.end == .consentExpired)
        // No media after the end.
        harness.received.removeAll()
        harness.send(harness.canonical(sequence: 1))
        harness.pump()
        #expect(try harness.decrypted().isEmpty)
    }

    @Test("a session that never gets a check ends after 30 s")
    func neverChecked() throws {
        let harness = try Harness()
        harness.now = harness.now.advanced(by: .seconds(30))
        harness.pump()
        #expect(harness.session.state == .ended(.consentExpired))
    }

    @Test("DELETE ends the session: the client sees close_notify, media stops")
    func deleted() throws {
        let harness = try Harness()
        try harness.connect()
        harness.session.end(.deleted, now: harness.now)
        harness.pump()
        #expect(harness.client.state == .closed)
        harness.received.removeAll()
        harness.send(harness.canonical(sequence: 5))
        harness.pump()
        #expect(harness.received.isEmpty)
    }

    @Test("the subscriber's close_notify ends the session")
    func closedByPeer() throws {
        let harness = try Harness()
        try harness.connect()
        harness.client.close(now: harness.now)
        harness.pump()
        harness.pump()
        #expect(harness.session.state == .ended(.closed))
    }

    @Test("the session's simulated network drops media by its seed (the configured seed plus the session number)")
    func impaired() throws {
        let harness = try Harness(impairment: .init(loss: 0.5))
        try harness.connect()
        for sequence in UInt16(0)..<200 { harness.send(harness.canonical(sequence: sequence)) }
        harness.pump()
        let count = try harness.decrypted().count
        #expect(count > 60 && count < 140)
        #expect(harness.session.statistics.network.datagramsLost == 200 - count)
    }
}

/// Playout's own subscriber parts — its WHEP offer, its full controlling ICE agent, a DTLS client —
/// against the endpoint's answer and a session, all in memory on instants we choose: the
/// halves of issue 29 meet before any socket does.
@Suite("WHEP session against Playout's own offer, ICE agent and DTLS client (sans-IO)")
struct WHEPOwnSubscriberTests {
    @Test("offer → answer → ICE (controlling, lite peer, nomination, consent) → DTLS → SRTP media with the mid extension")
    func ownSubscriber() throws {
        var now = MonotonicInstant(nanoseconds: 1_000_000_000)
        let subscriberAddress = try SocketAddress(host: "127.0.0.1", port: 42_000)
        let mediaAddress = try SocketAddress(host: "127.0.0.1", port: 43_000)
        let clientCertificate = try DTLSCertificate()
        let serverCertificate = try DTLSCertificate.shared()
        var agent = ICEAgent(credentials: .generate())
        agent.addLocalCandidate(.host(subscriberAddress), socket: ICESocketID(0))
        let offer = WHEPOffer(
            iceUsernameFragment: agent.localCredentials.ufrag, icePassword: agent.localCredentials.password,
            candidates: [ICECandidate.host(subscriberAddress).sdpAttribute], fingerprint: clientCertificate.fingerprint
        ).serialized()
        // The endpoint's side of the POST.
        let reader = try WHEPOfferReader(parsing: offer)
        let credentials = ICECredentials.generate()
        let built = try WHEPAnswerBuilder(
            offer: reader, tracks: [WHEPLiteTrack(codec: .h264, clockRate: 90_000, feedback: [.nack(nil), .pictureLoss(nil)], retransmission: true, ssrc: 0xABCD, retransmissionSSRC: 0xBCDE)],
            credentials: credentials, fingerprint: serverCertificate.fingerprint, candidates: [mediaAddress], h264ProfileLevelID: "640c1f"
        ).build()
        let plan = WHEPSessionPlan(
            id: "own", number: 1, credentials: credentials, remoteUsernameFragment: reader.iceUsernameFragment,
            remoteFingerprint: reader.fingerprint, tracks: built.tracks
        )
        let session = try WHEPSession(plan: plan, kinds: [.video], codecs: [.h264], certificate: serverCertificate, impairment: .init(), now: now)
        // The subscriber's side of the answer.
        let answer = try WHEPAnswer(parsing: built.sessionDescription.serialized())
        #expect(answer.iceLite)
        agent.setRemote(
            credentials: ICECredentials(ufrag: answer.iceUsernameFragment, password: answer.icePassword),
            candidates: answer.candidates.compactMap { try? ICECandidate(sdp: $0) }, isLite: true
        )
        agent.gather(now: now)
        agent.start(now: now)
        let dtls = try DTLSEndpoint(role: try DTLSEndpoint.Role(answerSetup: answer.setup.rawValue), certificate: clientCertificate, remoteFingerprint: answer.fingerprint)
        var keys: DTLSSRTPKeys?
        var media: [[UInt8]] = []
        var connectedICE = false
        // A few seconds of both sides exchanging datagrams.
        for _ in 0..<4_000 {
            while let action = agent.poll(now: now) {
                switch action {
                case .send(let transmit):
                    #expect(transmit.destination == mediaAddress)
                    transmit.bytes.withUnsafeBytes { session.receiveSTUN($0, from: subscriberAddress, now: now) }
                case .selectedPair:
                    connectedICE = true
                    dtls.start(now: now)
                case .failed(let error), .consentLost(let error):
                    Issue.record("ICE: \(error)")
                default: break
                }
            }
            while let action = dtls.poll(now: now) {
                switch action {
                case .send(let datagram): datagram.withUnsafeBytes { session.receiveDTLS($0, now: now) }
                case .connected(let negotiated): keys = negotiated
                case .failed(let error): Issue.record("DTLS: \(error)")
                case .closed: break
                }
            }
            if keys != nil, media.count < 5 {
                let canonical = try RTPPacketBuilder(payloadType: 96, sequenceNumber: SequenceNumber(rawValue: UInt16(media.count)), ssrc: 1)
                    .serialized(payload: [0x65, 1, 2, 3])
                canonical.withUnsafeBytes { session.send(canonical: $0, track: 0, captureTimeID: nil, now: now) }
            }
            _ = session.poll(now: now) { bytes, address in
                #expect(address == subscriberAddress)
                let datagram = Array(bytes)
                switch DatagramDemultiplexer.kind(of: bytes) {
                case .stun: agent.receive(datagram, from: mediaAddress, on: ICESocketID(0), now: now)
                case .dtls: dtls.receive(datagram, now: now)
                case .rtp: media.append(datagram)
                default: break
                }
            }
            now = now.advanced(by: .milliseconds(10))
        }
        #expect(connectedICE)
        #expect(agent.state == .connected)
        #expect(session.state == .connected)
        #expect(session.mediaAddress == subscriberAddress)
        let inbound = try SRTPSession(keyingMaterial: try #require(keys).inbound, direction: .inbound)
        #expect(media.count == 5)
        for datagram in media {
            let plain = try inbound.unprotectRTP(datagram)
            try plain.withUnsafeBytes { raw in
                let packet = try RTPPacket(parsing: raw)
                #expect(packet.ssrc == 0xABCD)
                #expect(packet.payloadType == 106)  // the offer's 640c1f payload type
                let mid = try #require(answer.media.first?.extensionID(WHEPOffer.midExtensionURI))
                #expect(packet.headerExtension(id: UInt8(mid)).map(Array.init) == Array("0".utf8))
            }
        }
        // 40 s of consent checks (every 4–6 s) keep the session alive past the 30 s timeout.
        #expect(session.ice.statistics.requestsAnswered >= 6)
        #expect(!session.hasEnded)
    }
}
