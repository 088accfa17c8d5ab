import PlayoutCore
import PlayoutRTP
import PlayoutTesting
import Testing

@testable import PlayoutWebRTC

/// A simulated network for ICE agents on a manual clock: datagrams in flight with a delay,
/// seeded loss, NAT-like source rewriting, unreachable addresses, and scripted peers (an
/// ICE-lite peer, a STUN server) written from the STUN types.
final class ICETestNetwork {
    struct Datagram {
        var deliverAt: MonotonicInstant
        var bytes: [UInt8]
        var source: SocketAddress
        var destination: SocketAddress
    }

    /// A peer that is not an ``ICEAgent``: answers datagrams to its address.
    typealias Peer = (_ bytes: [UInt8], _ source: SocketAddress, _ now: MonotonicInstant) -> [UInt8]?

    let clock = ManualClock()
    var agents: [ICEAgent] = []
    /// Per agent: socket → the address it is bound to.
    var sockets: [[ICESocketID: SocketAddress]] = []
    /// Per agent: every action but sends, with when it came.
    var events: [[(MonotonicInstant, ICEAgent.Action)]] = []
    /// Per agent: every datagram it sent.
    var sent: [[(MonotonicInstant, ICEAgent.Transmit)]] = []
    var peers: [SocketAddress: Peer] = [:]
    /// NAT: a private source address → the public address the far side sees (and back).
    var nat: [SocketAddress: SocketAddress] = [:]
    /// Destinations that drop everything (a private address seen from outside, a dead peer).
    var unreachable: Set<SocketAddress> = []
    var inFlight: [Datagram] = []
    var delay: Duration = .milliseconds(10)
    var loss = 0.0
    var random = SeededRandomNumberGenerator(seed: 29)
    var delivered = 0
    var dropped = 0

    var now: MonotonicInstant { clock.now }

    @discardableResult
    func add(_ agent: ICEAgent, sockets: [ICESocketID: SocketAddress]) -> Int {
        agents.append(agent)
        self.sockets.append(sockets)
        events.append([])
        sent.append([])
        return agents.count - 1
    }

    /// Queues a datagram as if `source` sent it now.
    func inject(_ bytes: [UInt8], from source: SocketAddress, to destination: SocketAddress) {
        inFlight.append(Datagram(deliverAt: now.advanced(by: delay), bytes: bytes, source: source, destination: destination))
    }

    private func route(_ bytes: [UInt8], from source: SocketAddress, to destination: SocketAddress) {
        if loss > 0, random.nextFraction() < loss {
            dropped += 1
            return
        }
        let visibleSource = nat[source] ?? source
        inFlight.append(Datagram(deliverAt: now.advanced(by: delay), bytes: bytes, source: visibleSource, destination: destination))
    }

    /// Polls every agent until it has nothing to do, routing what they send.
    func pump() {
        var busy = true
        while busy {
            busy = false
            for index in agents.indices {
                while let action = agents[index].poll(now: now) {
                    busy = true
                    if case .send(let transmit) = action {
                        sent[index].append((now, transmit))
                        guard let source = sockets[index][transmit.socket] else {
                            Issue.record("agent \(index) sent from unknown \(transmit.socket)")
                            continue
                        }
                        route(transmit.bytes, from: source, to: transmit.destination)
                    } else {
                        events[index].append((now, action))
                    }
                }
            }
        }
        // Once drained, an agent has nothing left to do now: a deadline at or before now would
        // make its driver spin.
        for (index, agent) in agents.enumerated() {
            if let deadline = agent.nextDeadline, deadline <= now {
                Issue.record("agent \(index) (\(agent.state), \(agent.role)) has nothing to do at \(now) yet asks to wake at \(deadline)")
                spun = true
            }
        }
    }

    /// Set when an agent asked to wake in the past: ``run(until:stop:)`` stops instead of spinning.
    var spun = false

    private func deliver(_ datagram: Datagram) {
        if unreachable.contains(datagram.destination) {
            dropped += 1
            return
        }
        // Through the NAT: a public address maps back to the private one.
        let destination = nat.first { $0.value == datagram.destination }?.key ?? datagram.destination
        if let peer = peers[destination] {
            delivered += 1
            if let reply = peer(datagram.bytes, datagram.source, now) { route(reply, from: destination, to: datagram.source) }
            return
        }
        for index in agents.indices {
            if let socket = sockets[index].first(where: { $0.value == destination })?.key {
                delivered += 1
                agents[index].receive(datagram.bytes, from: datagram.source, on: socket, now: now)
                return
            }
        }
        dropped += 1
    }

    /// Runs the network until `deadline` or until `stop` holds, jumping from one event to the next.
    func run(until deadline: MonotonicInstant, stop: (ICETestNetwork) -> Bool = { _ in false }) {
        pump()
        while !stop(self), !spun {
            var next: MonotonicInstant? = inFlight.map(\.deliverAt).min()
            for agent in agents {
                if let deadline = agent.nextDeadline { next = next.map { min($0, deadline) } ?? deadline }
            }
            guard let target = next, target <= deadline else {
                if now < deadline { clock.advance(to: deadline) }
                pump()
                return
            }
            if target > now { clock.advance(to: target) }
            let due = inFlight.filter { $0.deliverAt <= now }
            inFlight.removeAll { $0.deliverAt <= now }
            for datagram in due { deliver(datagram) }
            pump()
        }
    }

    func run(for duration: Duration, stop: (ICETestNetwork) -> Bool = { _ in false }) {
        run(until: now.advanced(by: duration), stop: stop)
    }

    /// The first event of agent `index` that `match` picks, with its time.
    func first<T>(_ index: Int, _ match: (ICEAgent.Action) -> T?) -> (MonotonicInstant, T)? {
        for (time, action) in events[index] {
            if let value = match(action) { return (time, value) }
        }
        return nil
    }
}

/// An ICE-lite peer (RFC 8445 §2.5) written from the STUN types: it answers authenticated
/// Binding requests with XOR-MAPPED-ADDRESS, MESSAGE-INTEGRITY and FINGERPRINT, sends no
/// checks of its own, and remembers what it saw.
final class ICELitePeer {
    let credentials: ICECredentials
    let address: SocketAddress
    var remoteUfrag: String?
    var answering = true
    var requests = 0
    var nominations = 0
    var rejected = 0
    var requestTimes: [MonotonicInstant] = []

    init(credentials: ICECredentials, address: SocketAddress) {
        self.credentials = credentials
        self.address = address
    }

    var candidate: ICECandidate { .host(address) }

    func handle(_ bytes: [UInt8], from source: SocketAddress, now: MonotonicInstant) -> [UInt8]? {
        guard answering else { return nil }
        guard let request = try? STUNMessage(parsing: bytes), request.messageClass == .request,
            STUNMessage.verifyFingerprint(bytes), STUNMessage.verifyIntegrity(bytes, key: Array(credentials.password.utf8)),
            let username = request.username, username.hasPrefix(credentials.ufrag + ":"), request.iceControlling != nil,
            request.priority != nil
        else {
            rejected += 1
            return nil
        }
        if let remoteUfrag { #expect(username == credentials.ufrag + ":" + remoteUfrag) }
        requests += 1
        requestTimes.append(now)
        if request.useCandidate { nominations += 1 }
        var response = STUNMessage(class: .successResponse, transactionID: request.transactionID)
        response.attributes = [.xorMappedAddress(source)]
        return response.encoded(integrityKey: Array(credentials.password.utf8), fingerprint: true)
    }
}

/// Fixed addresses and credentials for the tests.
enum ICEFixture {
    static func address(_ text: String) -> SocketAddress {
        try! SocketAddress(parsing: text)
    }

    static func credentials(_ seed: UInt64) -> ICECredentials {
        var random = SeededRandomNumberGenerator(seed: seed)
        return ICECredentials.generate(using: &random)
    }

    static func configuration(_ role: ICEAgent.Role = .controlling, seed: UInt64, stun: SocketAddress? = nil) -> ICEAgent.Configuration {
        ICEAgent.Configuration(role: role, stunServer: stun, seed: seed)
    }
}
