public import PlayoutCore
public import PlayoutRTP

/// A full ICE agent (RFC 8445) with consent freshness (RFC 7675), sans-IO: it takes datagrams
/// and the time, and returns what to send, from which socket, and when to wake.
///
/// The driver owns the sockets and the clock. It gives the agent the local candidates (each
/// with the socket it is on), the remote credentials and candidates from the answer, then feeds
/// every STUN datagram to ``receive(_:from:on:now:)-(UnsafeRawBufferPointer,_,_,_)`` and drains
/// ``poll(now:)`` until nil, sleeping until ``nextDeadline``:
///
/// ```swift
/// var agent = ICEAgent(configuration: .init(stunServer: stun), credentials: .generate())
/// agent.addLocalCandidate(.host(socket.localAddress), socket: ICESocketID(0))
/// agent.gather(now: clock.now)                       // → .gatheringComplete(candidates) for the offer
/// agent.setRemote(credentials: answer.ice, candidates: answer.candidates, isLite: answer.iceLite)
/// agent.start(now: clock.now)
/// while let action = agent.poll(now: clock.now) {
///     switch action {
///     case .send(let transmit): try sockets[transmit.socket].send(transmit.bytes, to: transmit.destination)
///     case .selectedPair(let pair): media.use(pair)
///     case .failed(let error), .consentLost(let error): session.end(error)
///     default: break
///     }
/// }
/// ```
///
/// Checks go out in pair-priority order, one new transaction every Ta (``Configuration/pacing``),
/// each retransmitted with a doubling, capped timeout a bounded number of times. The peer's
/// checks are answered (and teach peer-reflexive candidates) and trigger checks back. The
/// controlling agent nominates the best valid pair with USE-CANDIDATE (regular nomination;
/// also with an ICE-lite peer, which never checks). Once connected, a consent check every 4–6 s;
/// no authenticated answer for 30 s and consent is lost. Every message carries
/// MESSAGE-INTEGRITY and FINGERPRINT; inbound messages that fail either, or name another
/// username, are counted in ``statistics`` and dropped.
public struct ICEAgent: Sendable {
    /// The settings the agent was made with.
    public let configuration: Configuration
    /// This side's ufrag and password (for the offer).
    public let localCredentials: ICECredentials
    /// The peer's ufrag and password, from the answer.
    public internal(set) var remoteCredentials: ICECredentials?
    /// Whether the peer is an ICE-lite agent (`a=ice-lite`).
    public internal(set) var remoteIsLite = false
    /// The role now (a role conflict may have switched it).
    public internal(set) var role: Role
    /// The connection state.
    public internal(set) var state: State = .new
    /// Counters of checks, answers and drops.
    public internal(set) var statistics = Statistics()
    /// The pair media flows on, once connected.
    public internal(set) var selectedPair: ICECandidatePair?
    /// The tie-breaker for role conflicts.
    public let tieBreaker: UInt64

    struct LocalCandidate: Sendable {
        var candidate: ICECandidate
        var socket: ICESocketID
    }

    enum PairState: Sendable { case frozen, waiting, inProgress, succeeded, failed }

    struct Pair: Sendable {
        var local: Int
        var remote: Int
        var state: PairState
        var nominatedByPeer = false
        var valid = false
    }

    enum TransactionKind: Sendable {
        case check(pair: Int, nominate: Bool)
        case consent(pair: Int)
        case server(local: Int)
    }

    struct Transaction: Sendable {
        var kind: TransactionKind
        var bytes: [UInt8]
        var destination: SocketAddress
        var socket: ICESocketID
        var nextSend: MonotonicInstant
        var timeout: Duration
        var retransmissionsLeft: Int
        /// Sent by the role we had then: a 487 switches only if we still have it.
        var role: Role
        var priority: UInt32
    }

    var random: SeededRandomNumberGenerator
    var locals: [LocalCandidate] = []
    var remotes: [ICECandidate] = []
    var pairs: [Pair] = []
    var triggered: [Int] = []
    var transactions: [STUNTransactionID: Transaction] = [:]
    var outbox: [Action] = []
    var outboxHead = 0

    var startedAt: MonotonicInstant?
    var nextCheckAt: MonotonicInstant?
    var firstValidAt: MonotonicInstant?
    var nominating: Int?
    var gatheringDeadline: MonotonicInstant?
    var gatheringDone = false
    var selectedIndex: Int?
    var lastConsent: MonotonicInstant?
    var nextConsentAt: MonotonicInstant?

    /// Creates an agent with this side's credentials (use ``ICECredentials/generate()``).
    public init(configuration: Configuration = Configuration(), credentials: ICECredentials) {
        self.configuration = configuration
        localCredentials = credentials
        role = configuration.role
        var system = SystemRandomNumberGenerator()
        random = SeededRandomNumberGenerator(seed: configuration.seed ?? system.next())
        tieBreaker = random.next()
    }

    // MARK: Setting up

    /// Every local candidate: host candidates as added, server-reflexive and peer-reflexive ones as learned.
    public var localCandidates: [ICECandidate] { locals.map(\.candidate) }
    /// Every remote candidate: from the answer and learned from the peer's checks.
    public var remoteCandidates: [ICECandidate] { remotes }

    /// Adds a host candidate on `socket` (bound to the candidate's address). Pairs with the
    /// known remote candidates are formed at once.
    public mutating func addLocalCandidate(_ candidate: ICECandidate, socket: ICESocketID) {
        guard !locals.contains(where: { $0.candidate.address == candidate.address && $0.socket == socket }) else { return }
        locals.append(LocalCandidate(candidate: candidate, socket: socket))
        if candidate.kind == .host {
            for remote in remotes.indices { formPair(local: locals.count - 1, remote: remote) }
        }
    }

    /// Starts gathering server-reflexive candidates (when a STUN server is configured); poll
    /// until ``Action/gatheringComplete(_:)``, which comes at once without a server and at most
    /// ``Configuration/gatheringTimeout`` later with one.
    public mutating func gather(now: MonotonicInstant) {
        guard gatheringDeadline == nil, !gatheringDone else { return }
        gatheringDeadline = now.advanced(by: configuration.gatheringTimeout)
        if let server = configuration.stunServer {
            for (index, local) in locals.enumerated() where local.candidate.kind == .host && local.candidate.address.isIPv6 == server.isIPv6 {
                var request = STUNMessage(class: .request, transactionID: .random(using: &random))
                if let software = configuration.software { request.attributes.append(.software(software)) }
                let bytes = request.encoded(integrityKey: nil, fingerprint: true)
                transactions[request.transactionID] = Transaction(
                    kind: .server(local: index), bytes: bytes, destination: server, socket: local.socket,
                    nextSend: now.advanced(by: configuration.initialRetransmissionTimeout),
                    timeout: configuration.initialRetransmissionTimeout, retransmissionsLeft: configuration.maximumRetransmissions,
                    role: role, priority: 0)
                emit(.send(Transmit(bytes: bytes, destination: server, socket: local.socket)))
            }
        }
        finishGatheringIfDone(now: now)
    }

    /// Sets what the answer says of the peer: its credentials, candidates and whether it is
    /// ICE-lite (then this agent is controlling, RFC 8445 §6.1.1). Candidates that are not
    /// usable are left out by the caller (``ICECandidate/init(sdp:)`` throws for them).
    public mutating func setRemote(credentials: ICECredentials, candidates: [ICECandidate], isLite: Bool = false) {
        remoteCredentials = credentials
        remoteIsLite = isLite
        if isLite { role = .controlling }
        for candidate in candidates { addRemoteCandidate(candidate) }
    }

    /// Adds one remote candidate (a trickled one, or one more from the answer).
    public mutating func addRemoteCandidate(_ candidate: ICECandidate) {
        guard candidate.component == 1 else { return }
        var candidate = candidate
        candidate.address = candidate.address.normalized
        if let existing = remotes.firstIndex(where: { $0.address == candidate.address }) {
            if remotes[existing].kind == .peerReflexive && candidate.kind != .peerReflexive { remotes[existing] = candidate }
            return
        }
        guard remotes.count < configuration.maximumRemoteCandidates else {
            statistics.overLimitDropped += 1
            return
        }
        remotes.append(candidate)
        for local in locals.indices where locals[local].candidate.kind == .host { formPair(local: local, remote: remotes.count - 1) }
    }

    /// Starts connectivity checks: the highest-priority pair of each foundation waits, the rest
    /// are frozen; the first check goes out at the next poll.
    public mutating func start(now: MonotonicInstant) {
        guard state == .new else { return }
        startedAt = now
        nextCheckAt = now
        var seenFoundations = Set<String>()
        for index in orderedPairs() where pairs[index].state == .frozen {
            if seenFoundations.insert(foundation(of: pairs[index])).inserted { pairs[index].state = .waiting }
        }
        setState(.checking)
    }

    /// Stops: no more checks, consent checks or actions.
    public mutating func close() {
        guard state != .closed else { return }
        transactions.removeAll()
        triggered.removeAll()
        state = .closed
        outbox.removeAll()
        outboxHead = 0
    }

    // MARK: Driving

    /// The next action, or nil when there is none until ``nextDeadline`` (or the next datagram).
    public mutating func poll(now: MonotonicInstant) -> Action? {
        if outboxHead == outbox.count {
            outbox.removeAll(keepingCapacity: true)
            outboxHead = 0
            runTimers(now: now)
        }
        guard outboxHead < outbox.count else { return nil }
        defer { outboxHead += 1 }
        return outbox[outboxHead]
    }

    /// When ``poll(now:)`` has something to do without a datagram arriving; nil for never.
    public var nextDeadline: MonotonicInstant? {
        guard state != .closed, state != .failed || !transactions.isEmpty else { return nil }
        var deadline: MonotonicInstant?
        func consider(_ instant: MonotonicInstant?) {
            guard let instant else { return }
            deadline = deadline.map { min($0, instant) } ?? instant
        }
        for transaction in transactions.values { consider(transaction.nextSend) }
        if !gatheringDone { consider(gatheringDeadline) }
        if state == .checking {
            if hasCheckToSend { consider(nextCheckAt) }
            if let startedAt { consider(startedAt.advanced(by: configuration.connectivityTimeout)) }
            // The controlling agent nominates at the first check slot after the nomination delay.
            if role == .controlling, selectedPair == nil, nominating == nil, let firstValidAt, let nextCheckAt {
                consider(max(nextCheckAt, firstValidAt.advanced(by: configuration.nominationDelay)))
            }
        }
        if state == .connected {
            consider(nextConsentAt)
            if let lastConsent { consider(lastConsent.advanced(by: configuration.consentTimeout)) }
        }
        return deadline
    }

    /// Feeds one datagram that arrived on `socket` from `source`. What is not a STUN message, or
    /// fails authentication, is counted and dropped; everything else may queue actions.
    public mutating func receive(_ datagram: UnsafeRawBufferPointer, from source: SocketAddress, on socket: ICESocketID, now: MonotonicInstant) {
        guard state != .closed else { return }
        guard STUNMessage.looksLikeSTUN(datagram), let message = try? STUNMessage(parsing: datagram), message.method == .binding else {
            statistics.malformedDropped += 1
            return
        }
        let source = source.normalized
        switch message.messageClass {
        case .request: handleRequest(message, bytes: datagram, from: source, on: socket, now: now)
        case .successResponse, .errorResponse: handleResponse(message, bytes: datagram, from: source, on: socket, now: now)
        case .indication: break  // Binding indications are keepalives: nothing to do
        }
    }

    /// ``receive(_:from:on:now:)-(UnsafeRawBufferPointer,_,_,_)`` for an array.
    public mutating func receive(_ datagram: [UInt8], from source: SocketAddress, on socket: ICESocketID, now: MonotonicInstant) {
        datagram.withUnsafeBytes { receive($0, from: source, on: socket, now: now) }
    }

    /// The pairs and their states, for diagnostics (`checking 3 pairs: 1 succeeded, 2 waiting`).
    public var checklistDescription: String {
        orderedPairs().map { index in
            let pair = pairs[index]
            return "\(locals[pair.local].candidate.address) → \(remotes[pair.remote].address): \(pair.state)"
        }.joined(separator: "\n")
    }

    // MARK: Internals shared by the extensions

    mutating func emit(_ action: Action) {
        outbox.append(action)
    }

    mutating func setState(_ new: State) {
        guard state != new else { return }
        state = new
        emit(.stateChanged(new))
    }

    func foundation(of pair: Pair) -> String {
        locals[pair.local].candidate.foundation + ":" + remotes[pair.remote].foundation
    }

    func pairPriority(_ pair: Pair) -> UInt64 {
        let local = locals[pair.local].candidate.priority
        let remote = remotes[pair.remote].priority
        return role == .controlling
            ? ICECandidatePair.priority(controlling: local, controlled: remote)
            : ICECandidatePair.priority(controlling: remote, controlled: local)
    }

    /// Pair indices by priority, highest first.
    func orderedPairs() -> [Int] {
        pairs.indices.sorted { pairPriority(pairs[$0]) > pairPriority(pairs[$1]) }
    }

    func publicPair(_ index: Int) -> ICECandidatePair {
        let pair = pairs[index]
        return ICECandidatePair(local: locals[pair.local].candidate, remote: remotes[pair.remote], socket: locals[pair.local].socket, priority: pairPriority(pair))
    }

    @discardableResult
    mutating func formPair(local: Int, remote: Int) -> Int? {
        if let existing = pairs.firstIndex(where: { $0.local == local && $0.remote == remote }) { return existing }
        guard locals[local].candidate.address.isIPv6 == remotes[remote].address.isIPv6 else { return nil }
        guard pairs.count < configuration.maximumPairs else {
            statistics.overLimitDropped += 1
            return nil
        }
        pairs.append(Pair(local: local, remote: remote, state: state == .new ? .frozen : .waiting))
        return pairs.count - 1
    }
}
