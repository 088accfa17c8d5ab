import PlayoutCore
import PlayoutRTP
import PlayoutTesting
import Testing

@testable import PlayoutWebRTC

/// Two agents (or an agent and a scripted peer) on a simulated network and a manual clock.
@Suite("ICE agent on a simulated network")
struct ICEAgentTests {
    static let hostA = ICEFixture.address("10.0.0.1:5000")
    static let hostA6 = ICEFixture.address("[2001:db8::1]:5000")
    static let hostB = ICEFixture.address("192.0.2.10:6000")
    static let hostB6 = ICEFixture.address("[2001:db8::2]:6000")
    static let natA = ICEFixture.address("203.0.113.7:40000")

    /// A (controlling unless told) and B (controlled unless told), each with an IPv4 and an IPv6 host candidate.
    static func twoAgents(roleA: ICEAgent.Role = .controlling, roleB: ICEAgent.Role = .controlled, natOnA: Bool = false, loss: Double = 0) -> ICETestNetwork {
        let network = ICETestNetwork()
        network.loss = loss
        var a = ICEAgent(configuration: ICEFixture.configuration(roleA, seed: 1), credentials: ICEFixture.credentials(1))
        var b = ICEAgent(configuration: ICEFixture.configuration(roleB, seed: 2), credentials: ICEFixture.credentials(2))
        let candidatesA = ICEHostInterfaces.candidates(for: [hostA, hostA6])
        let candidatesB = ICEHostInterfaces.candidates(for: [hostB, hostB6])
        for (index, candidate) in candidatesA.enumerated() { a.addLocalCandidate(candidate, socket: ICESocketID(index)) }
        for (index, candidate) in candidatesB.enumerated() { b.addLocalCandidate(candidate, socket: ICESocketID(index)) }
        a.setRemote(credentials: b.localCredentials, candidates: candidatesB)
        b.setRemote(credentials: a.localCredentials, candidates: candidatesA)
        a.start(now: network.now)
        b.start(now: network.now)
        network.add(a, sockets: [ICESocketID(0): hostA, ICESocketID(1): hostA6])
        network.add(b, sockets: [ICESocketID(0): hostB, ICESocketID(1): hostB6])
        if natOnA {
            network.nat[hostA] = natA
            network.unreachable = [hostA, hostA6]  // A's private addresses are not reachable from B
        }
        return network
    }

    /// An agent (index 0) against an ICE-lite peer.
    static func agentAndLitePeer(loss: Double = 0) -> (ICETestNetwork, ICELitePeer) {
        let network = ICETestNetwork()
        network.loss = loss
        let lite = ICELitePeer(credentials: ICEFixture.credentials(9), address: hostB)
        var a = ICEAgent(configuration: ICEFixture.configuration(.controlled, seed: 1), credentials: ICEFixture.credentials(1))
        a.addLocalCandidate(.host(hostA), socket: ICESocketID(0))
        a.setRemote(credentials: lite.credentials, candidates: [lite.candidate], isLite: true)
        lite.remoteUfrag = a.localCredentials.ufrag
        a.start(now: network.now)
        network.add(a, sockets: [ICESocketID(0): hostA])
        network.peers[hostB] = { [unowned lite] bytes, source, now in lite.handle(bytes, from: source, now: now) }
        return (network, lite)
    }

    static func allConnected(_ network: ICETestNetwork) -> Bool {
        network.agents.allSatisfy { $0.state == .connected }
    }

    /// A Binding request to an agent with `credentials`, as its peer `peerUfrag` would send it.
    static func request(
        to credentials: ICECredentials, from peerUfrag: String, id: STUNTransactionID, key: [UInt8]? = nil, fingerprint: Bool = true,
        extra: [STUNAttribute] = [.priority(1_862_270_975), .iceControlled(1)]
    ) -> [UInt8] {
        var message = STUNMessage(class: .request, transactionID: id)
        message.attributes = [.username(credentials.ufrag + ":" + peerUfrag)] + extra
        return message.encoded(integrityKey: key ?? Array(credentials.password.utf8), fingerprint: fingerprint)
    }

    @Test("two full agents connect, agree on the pair and pace their checks by Ta")
    func twoAgentsConnect() throws {
        let network = Self.twoAgents()
        network.run(for: .seconds(5), stop: Self.allConnected)
        let a = network.agents[0]
        let b = network.agents[1]
        #expect(a.state == .connected && b.state == .connected)
        #expect(network.now < MonotonicInstant.zero.advanced(by: .seconds(1)))
        let pairA = try #require(a.selectedPair)
        let pairB = try #require(b.selectedPair)
        #expect(pairA.local.address == pairB.remote.address && pairA.remote.address == pairB.local.address)
        #expect(pairA.remote.address == Self.hostB)  // IPv4 first: its candidates have the higher priority
        #expect(a.role == .controlling && b.role == .controlled)
        #expect(network.first(0, { if case .selectedPair(let pair) = $0 { pair } else { nil } })?.1 == pairA)
        #expect(network.first(0, { if case .stateChanged(.connected) = $0 { true } else { nil } }) != nil)
        #expect(a.statistics.checksSent >= 2 && b.statistics.requestsReceived >= 2 && a.statistics.successResponses >= 2)
        #expect(a.statistics.unauthenticatedDropped == 0 && b.statistics.unauthenticatedDropped == 0)

        // New checks (first transmissions) leave A at least Ta apart.
        var firstSends: [STUNTransactionID: MonotonicInstant] = [:]
        for (time, transmit) in network.sent[0] {
            guard let message = try? STUNMessage(parsing: transmit.bytes), message.messageClass == .request else { continue }
            if firstSends[message.transactionID] == nil { firstSends[message.transactionID] = time }
            #expect(message.hasMessageIntegrity && message.hasFingerprint)
        }
        let times = firstSends.values.sorted()
        #expect(times.count == a.statistics.checksSent)
        for (earlier, later) in zip(times, times.dropFirst()) { #expect(earlier.duration(to: later) >= ICEAgent.Configuration.defaultPacing) }
        // The nomination carried USE-CANDIDATE.
        #expect(network.sent[0].contains { (try? STUNMessage(parsing: $0.1.bytes))?.useCandidate == true })
    }

    @Test("behind a NAT: B learns A's peer-reflexive address from its checks, A its own from the answers")
    func peerReflexive() throws {
        let network = Self.twoAgents(natOnA: true)
        network.run(for: .seconds(5), stop: Self.allConnected)
        let a = network.agents[0]
        let b = network.agents[1]
        #expect(a.state == .connected && b.state == .connected)
        #expect(b.statistics.peerReflexiveRemoteCandidates == 1)
        #expect(b.remoteCandidates.contains { $0.kind == .peerReflexive && $0.address == Self.natA })
        #expect(a.statistics.peerReflexiveLocalCandidates == 1)
        #expect(a.localCandidates.contains { $0.kind == .peerReflexive && $0.address == Self.natA && $0.relatedAddress == Self.hostA })
        #expect(try #require(b.selectedPair).remote.address == Self.natA)
        #expect(try #require(a.selectedPair).remote.address == Self.hostB)
    }

    @Test("an ICE-lite peer: the controlling agent nominates, the peer never checks, consent keeps it connected")
    func iceLite() throws {
        let (network, lite) = Self.agentAndLitePeer()
        network.run(for: .seconds(5), stop: Self.allConnected)
        let a = network.agents[0]
        #expect(a.state == .connected)
        #expect(a.role == .controlling)  // the lite peer makes this side controlling
        #expect(lite.nominations == 1)
        #expect(a.statistics.requestsReceived == 0)
        #expect(try #require(a.selectedPair).remote.address == Self.hostB)

        let connectedAt = network.now
        network.run(for: .seconds(60))
        #expect(network.agents[0].state == .connected)
        let consent = network.agents[0].statistics.consentChecksSent
        #expect((10...15).contains(consent), "\(consent) consent checks in 60 s")
        #expect(network.agents[0].statistics.consentResponses == consent)
        let consentTimes = lite.requestTimes.filter { $0 > connectedAt }
        for (earlier, later) in zip(consentTimes, consentTimes.dropFirst()) {
            let gap = earlier.duration(to: later)
            #expect(gap >= .seconds(4) && gap <= .seconds(6), "consent gap \(gap)")
        }
        #expect(Set(consentTimes.dropFirst().enumerated().map { consentTimes[$0.offset].duration(to: $0.element) }).count > 1, "randomised")
    }

    @Test("consent lost: the peer stops answering, the session ends with that reason within 30 s")
    func consentLost() throws {
        let (network, lite) = Self.agentAndLitePeer()
        network.run(for: .seconds(20))
        #expect(network.agents[0].state == .connected)
        lite.answering = false
        let stoppedAt = network.now
        network.run(for: .seconds(40))
        let (time, error) = try #require(network.first(0) { if case .consentLost(let error) = $0 { error } else { nil } })
        #expect(stoppedAt.duration(to: time) <= .seconds(30))
        #expect(stoppedAt.duration(to: time) >= .seconds(23))
        #expect(error.code == .iceConsentLost)
        #expect(error.message.contains("consent lost"))
        #expect(network.agents[0].state == .failed)
        #expect(network.agents[0].nextDeadline == nil)
        // Nothing more is sent after consent is lost.
        #expect(network.sent[0].allSatisfy { $0.0 <= time })
    }

    @Test("under 40 % loss the checks are retransmitted and the agents still connect")
    func retransmissionUnderLoss() {
        let network = Self.twoAgents(loss: 0.4)
        network.run(for: .seconds(10), stop: Self.allConnected)
        #expect(Self.allConnected(network))
        #expect(network.dropped > 0)
        #expect(network.agents[0].statistics.retransmissions + network.agents[1].statistics.retransmissions > 0)
    }

    @Test("an ICE-lite peer behind 20 % loss: the nomination is retransmitted and consent holds for two minutes")
    func liteUnderLoss() {
        let (network, lite) = Self.agentAndLitePeer(loss: 0.2)
        network.run(for: .seconds(8), stop: Self.allConnected)
        #expect(network.agents[0].state == .connected)
        #expect(lite.nominations >= 1)
        network.run(for: .seconds(120))
        #expect(network.agents[0].state == .connected)
        #expect(network.agents[0].statistics.retransmissions > 0)
        #expect(network.dropped > 0)
        // Some consent checks went unanswered, yet consent held.
        #expect(network.agents[0].statistics.consentResponses < network.agents[0].statistics.consentChecksSent)
    }

    @Test("retransmissions of one check double up to the cap and stop at the bound")
    func retransmissionSchedule() throws {
        let network = ICETestNetwork()
        var a = ICEAgent(configuration: ICEFixture.configuration(seed: 4), credentials: ICEFixture.credentials(1))
        a.addLocalCandidate(.host(Self.hostA), socket: ICESocketID(0))
        a.setRemote(credentials: ICEFixture.credentials(2), candidates: [.host(Self.hostB)])
        a.start(now: network.now)
        network.add(a, sockets: [ICESocketID(0): Self.hostA])
        network.unreachable = [Self.hostB]
        network.run(for: .seconds(12))
        let times = network.sent[0].map { $0.0.nanoseconds / 1_000_000 }
        // 0, +0.5, +1, +1.6 (capped) … : 1 + 6 retransmissions at most, cut by the 8 s timeout.
        #expect(Array(times.prefix(5)) == [0, 500, 1_500, 3_100, 4_700])
        #expect(times.count <= 1 + ICEAgent.Configuration.defaultMaximumRetransmissions)
        #expect(Set(network.sent[0].map { (try? STUNMessage(parsing: $0.1.bytes))?.transactionID }).count == 1)
    }

    @Test("nothing answers: failed with a clear reason within 10 s, and then quiet")
    func failsWhenNothingAnswers() throws {
        let network = Self.twoAgents()
        network.unreachable = [Self.hostB, Self.hostB6, Self.hostA, Self.hostA6]
        network.run(for: .seconds(15))
        let (time, error) = try #require(network.first(0) { if case .failed(let error) = $0 { error } else { nil } })
        #expect(time <= MonotonicInstant.zero.advanced(by: .seconds(10)))
        #expect(error.code == .iceFailed)
        #expect(error.message.contains("no ICE connectivity check answered in 8.0 s from 2 pairs"), "\(error.message)")
        #expect(network.agents[0].state == .failed)
        #expect(network.agents[0].nextDeadline == nil)
        let sends = network.sent[0].count
        #expect(sends <= 2 * (1 + ICEAgent.Configuration.defaultMaximumRetransmissions))
        network.run(for: .seconds(30))
        #expect(network.sent[0].count == sends)
    }

    @Test("an answer without usable candidates fails with that reason")
    func noPairs() throws {
        let network = ICETestNetwork()
        var a = ICEAgent(configuration: ICEFixture.configuration(seed: 4), credentials: ICEFixture.credentials(1))
        a.addLocalCandidate(.host(Self.hostA), socket: ICESocketID(0))
        a.setRemote(credentials: ICEFixture.credentials(2), candidates: [])
        a.start(now: network.now)
        network.add(a, sockets: [ICESocketID(0): Self.hostA])
        network.run(for: .seconds(12))
        let (_, error) = try #require(network.first(0) { if case .failed(let error) = $0 { error } else { nil } })
        #expect(error.message.contains("no usable remote candidate"))
    }

    @Test("role conflict: two controlling agents (or two controlled) settle on one of each and connect", arguments: [ICEAgent.Role.controlling, .controlled])
    func roleConflict(role: ICEAgent.Role) throws {
        let network = Self.twoAgents(roleA: role, roleB: role)
        network.run(for: .seconds(8), stop: Self.allConnected)
        let a = network.agents[0]
        let b = network.agents[1]
        #expect(a.state == .connected && b.state == .connected)
        #expect(a.role != b.role)
        #expect(a.statistics.roleConflicts + b.statistics.roleConflicts > 0)
        // The larger tie-breaker controls (RFC 8445 §7.3.1.1).
        #expect((a.tieBreaker > b.tieBreaker) == (a.role == .controlling))
        #expect(try #require(a.selectedPair).remote.address == (try #require(b.selectedPair)).local.address)
    }

    @Test("a 487 answer switches the role, the check goes again in the new role, and the peer's nomination is followed")
    func roleConflictResponse() throws {
        let network = ICETestNetwork()
        let peerCredentials = ICEFixture.credentials(9)
        var a = ICEAgent(configuration: ICEFixture.configuration(seed: 1), credentials: ICEFixture.credentials(1))
        a.addLocalCandidate(.host(Self.hostA), socket: ICESocketID(0))
        a.setRemote(credentials: peerCredentials, candidates: [.host(Self.hostB)])
        a.start(now: network.now)
        network.add(a, sockets: [ICESocketID(0): Self.hostA])
        var seen: [STUNMessage] = []
        // A peer that insists on controlling: 487 to a controlling check, success to a controlled one.
        network.peers[Self.hostB] = { bytes, source, _ in
            guard let request = try? STUNMessage(parsing: bytes), request.messageClass == .request else { return nil }
            seen.append(request)
            let conflict = request.iceControlling != nil
            var response = STUNMessage(class: conflict ? .errorResponse : .successResponse, transactionID: request.transactionID)
            response.attributes = conflict ? [.errorCode(code: 487, reason: "Role Conflict")] : [.xorMappedAddress(source)]
            return response.encoded(integrityKey: Array(peerCredentials.password.utf8), fingerprint: true)
        }
        network.run(for: .seconds(1))
        let agent = network.agents[0]
        #expect(agent.role == .controlled)
        #expect(agent.statistics.roleConflicts == 1 && agent.statistics.errorResponses == 1 && agent.statistics.successResponses == 1)
        #expect(seen.count == 2 && seen[0].iceControlling != nil && seen[1].iceControlled != nil)
        #expect(agent.state == .checking)  // controlled: it waits for the nomination

        var random = SeededRandomNumberGenerator(seed: 80)
        let nomination = Self.request(
            to: agent.localCredentials, from: peerCredentials.ufrag, id: .random(using: &random),
            extra: [.priority(1_862_270_975), .iceControlling(1), .useCandidate])
        network.inject(nomination, from: Self.hostB, to: Self.hostA)
        network.run(for: .milliseconds(20))
        #expect(network.agents[0].state == .connected)
        #expect(network.agents[0].selectedPair?.remote.address == Self.hostB)
    }

    @Test("unauthenticated, forged, unknown and malformed datagrams are counted and dropped, unanswered")
    func hostileDatagrams() throws {
        let (network, lite) = Self.agentAndLitePeer()
        // Before each real answer, a forged one: right transaction ID and FINGERPRINT, wrong key.
        network.peers[Self.hostB] = { [unowned lite, unowned network] bytes, source, now in
            if let request = try? STUNMessage(parsing: bytes) {
                var forged = STUNMessage(class: .successResponse, transactionID: request.transactionID)
                forged.attributes = [.xorMappedAddress(source)]
                network.inject(forged.encoded(integrityKey: Array("not-the-password-at-all".utf8), fingerprint: true), from: Self.hostB, to: source)
            }
            return lite.handle(bytes, from: source, now: now)
        }
        network.run(for: .seconds(5), stop: Self.allConnected)
        #expect(network.agents[0].state == .connected)
        let forgedDropped = network.agents[0].statistics.unauthenticatedDropped
        #expect(forgedDropped >= 1)

        let before = network.agents[0].statistics
        let sentBefore = network.sent[0].count
        let me = network.agents[0].localCredentials
        var random = SeededRandomNumberGenerator(seed: 77)
        let peer = ICEFixture.address("192.0.2.99:7000")
        // A wrong password, a wrong username, no FINGERPRINT, no MESSAGE-INTEGRITY.
        network.inject(Self.request(to: me, from: lite.credentials.ufrag, id: .random(using: &random), key: Array("wrong-password-0123456789".utf8)), from: peer, to: Self.hostA)
        network.inject(Self.request(to: ICECredentials(ufrag: "someone", password: me.password), from: lite.credentials.ufrag, id: .random(using: &random)), from: peer, to: Self.hostA)
        network.inject(Self.request(to: me, from: lite.credentials.ufrag, id: .random(using: &random), fingerprint: false), from: peer, to: Self.hostA)
        var noIntegrity = STUNMessage(class: .request, transactionID: .random(using: &random))
        noIntegrity.attributes = [.username(me.ufrag + ":" + lite.credentials.ufrag), .priority(1)]
        network.inject(noIntegrity.encoded(integrityKey: nil, fingerprint: true), from: peer, to: Self.hostA)
        // A response nobody asked for.
        var unsolicited = STUNMessage(class: .successResponse, transactionID: .random(using: &random))
        unsolicited.attributes = [.xorMappedAddress(Self.hostA)]
        network.inject(unsolicited.encoded(integrityKey: Array(lite.credentials.password.utf8), fingerprint: true), from: Self.hostB, to: Self.hostA)
        // Garbage: random bytes, RTP-looking, DTLS-looking, truncated STUN.
        for _ in 0..<100 {
            network.inject((0..<Int.random(in: 0...200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }, from: peer, to: Self.hostA)
        }
        network.inject([0x80, 0x60] + [UInt8](repeating: 1, count: 30), from: peer, to: Self.hostA)
        network.inject([22, 0xFE, 0xFD] + [UInt8](repeating: 0, count: 30), from: peer, to: Self.hostA)
        network.inject(Array(RFC5769.request.prefix(40)), from: peer, to: Self.hostA)
        network.run(for: .milliseconds(100))

        let after = network.agents[0].statistics
        #expect(after.unauthenticatedDropped - before.unauthenticatedDropped == 4)
        #expect(after.unmatchedResponsesDropped - before.unmatchedResponsesDropped == 1)
        #expect(after.malformedDropped - before.malformedDropped == 103)
        #expect(after.responsesSent == before.responsesSent)
        #expect(network.sent[0].count == sentBefore)  // nothing answered
        #expect(network.agents[0].state == .connected)
        #expect(!network.agents[0].remoteCandidates.contains { $0.address == peer })
    }

    @Test("an authenticated check is answered with XOR-MAPPED-ADDRESS and teaches a peer-reflexive candidate; unknown comprehension-required gets 420")
    func answersChecks() throws {
        let (network, lite) = Self.agentAndLitePeer()
        network.run(for: .seconds(2), stop: Self.allConnected)
        let me = network.agents[0].localCredentials
        var random = SeededRandomNumberGenerator(seed: 78)
        let peer = ICEFixture.address("192.0.2.99:7000")
        let sentBefore = network.sent[0].count
        network.inject(Self.request(to: me, from: lite.credentials.ufrag, id: .random(using: &random)), from: peer, to: Self.hostA)
        network.inject(Self.request(to: me, from: lite.credentials.ufrag, id: .random(using: &random), extra: [.priority(5), .other(type: 0x0031, value: [1])]), from: peer, to: Self.hostA)
        network.run(for: .milliseconds(20))
        let replies = network.sent[0].dropFirst(sentBefore).compactMap { try? STUNMessage(parsing: $0.1.bytes) }
        let success = try #require(replies.first { $0.messageClass == .successResponse })
        #expect(success.mappedAddress == peer)
        #expect(STUNMessage.verifyIntegrity(network.sent[0][sentBefore].1.bytes, key: Array(me.password.utf8)))
        let error = try #require(replies.first { $0.messageClass == .errorResponse })
        #expect(error.errorCode == 420)
        #expect(error.attributes.contains(.unknownAttributes([0x0031])))
        #expect(network.agents[0].remoteCandidates.contains { $0.address == peer && $0.kind == .peerReflexive && $0.priority == 1_862_270_975 })
    }

    @Test("thousands of random and mutated checks: no crash, only the intact ones answered, the session unharmed")
    func mutatedChecks() throws {
        let (network, lite) = Self.agentAndLitePeer()
        network.run(for: .seconds(2), stop: Self.allConnected)
        #expect(network.agents[0].state == .connected)
        let me = network.agents[0].localCredentials
        var random = SeededRandomNumberGenerator(seed: 79)
        let original = Self.request(to: me, from: lite.credentials.ufrag, id: .random(using: &random))
        let before = network.agents[0].statistics
        var intact = 0
        for round in 0..<4_000 {
            var bytes = original
            if round.isMultiple(of: 4) {
                bytes = (0..<Int.random(in: 0...120, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            } else {
                for _ in 0..<Int.random(in: 1...3, using: &random) {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
                if Bool.random(using: &random) { bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &random))) }
            }
            if bytes == original { intact += 1 }
            network.agents[0].receive(bytes, from: lite.address, on: ICESocketID(0), now: network.now)
        }
        let after = network.agents[0].statistics
        #expect(after.responsesSent - before.responsesSent == intact)
        let dropped = (after.malformedDropped - before.malformedDropped) + (after.unauthenticatedDropped - before.unauthenticatedDropped)
            + (after.unmatchedResponsesDropped - before.unmatchedResponsesDropped)
        #expect(dropped + intact <= 4_000 && dropped >= 3_900 - intact)
        network.run(for: .seconds(20))
        #expect(network.agents[0].state == .connected)
    }

    @Test("server-reflexive gathering through a STUN server; a silent server ends gathering at the timeout")
    func serverReflexive() throws {
        let server = ICEFixture.address("198.51.100.1:3478")
        for silent in [false, true] {
            let network = ICETestNetwork()
            var a = ICEAgent(configuration: ICEFixture.configuration(seed: 5, stun: server), credentials: ICEFixture.credentials(1))
            a.addLocalCandidate(.host(Self.hostA), socket: ICESocketID(0))
            a.addLocalCandidate(.host(Self.hostA6), socket: ICESocketID(1))  // no IPv6 server: not asked
            network.add(a, sockets: [ICESocketID(0): Self.hostA, ICESocketID(1): Self.hostA6])
            network.nat[Self.hostA] = Self.natA
            var asked = 0
            network.peers[server] = { bytes, source, _ in
                asked += 1
                guard !silent, let request = try? STUNMessage(parsing: bytes), request.messageClass == .request else { return nil }
                var response = STUNMessage(class: .successResponse, transactionID: request.transactionID)
                response.attributes = [.xorMappedAddress(source)]
                return response.encoded(integrityKey: nil, fingerprint: true)
            }
            network.agents[0].gather(now: network.now)
            network.run(for: .seconds(5)) { network in network.first(0) { if case .gatheringComplete(let list) = $0 { list } else { nil } } != nil }
            let (time, candidates) = try #require(network.first(0) { if case .gatheringComplete(let list) = $0 { list } else { nil } })
            if silent {
                #expect(candidates.map(\.kind) == [.host, .host])
                #expect(time == MonotonicInstant.zero.advanced(by: ICEAgent.Configuration.defaultGatheringTimeout))
                #expect(asked > 1)  // retransmitted
            } else {
                #expect(candidates.count == 3)
                let srflx = try #require(candidates.first { $0.kind == .serverReflexive })
                #expect(srflx.address == Self.natA && srflx.relatedAddress == Self.hostA)
                #expect(srflx.priority == ICECandidate.priority(kind: .serverReflexive))
                #expect(network.agents[0].statistics.serverReflexiveCandidates == 1)
                #expect(time < MonotonicInstant.zero.advanced(by: .milliseconds(100)))
                #expect(asked == 1)
            }
        }
    }

    @Test("without a STUN server gathering completes at once with the host candidates")
    func gatheringWithoutServer() throws {
        var a = ICEAgent(configuration: ICEFixture.configuration(seed: 6), credentials: ICEFixture.credentials(1))
        a.addLocalCandidate(.host(Self.hostA), socket: ICESocketID(0))
        a.gather(now: .zero)
        #expect(a.poll(now: .zero) == .gatheringComplete([.host(Self.hostA)]))
        #expect(a.poll(now: .zero) == nil)
        #expect(a.nextDeadline == nil)
    }
}
