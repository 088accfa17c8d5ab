import PlayoutCore
import PlayoutRTP

// The agent's timers, checks, answers and consent (RFC 8445 §6–8, RFC 7675).

extension ICEAgent {
    var hasCheckToSend: Bool {
        if !triggered.isEmpty { return true }
        if nominationCandidate() != nil { return true }
        guard selectedPair == nil, nominating == nil else { return false }
        return pairs.contains { $0.state == .waiting || $0.state == .frozen }
    }

    mutating func runTimers(now: MonotonicInstant) {
        guard state != .closed else { return }
        runTransactions(now: now)
        finishGatheringIfDone(now: now)
        switch state {
        case .checking:
            if let nextCheckAt, now >= nextCheckAt, let check = nextCheck(now: now) {
                sendCheck(pair: check.pair, nominate: check.nominate, now: now)
                self.nextCheckAt = now.advanced(by: configuration.pacing)
            }
            checkFailure(now: now)
        case .connected:
            runConsent(now: now)
        case .new, .failed, .closed:
            break
        }
    }

    // MARK: Transactions

    mutating func runTransactions(now: MonotonicInstant) {
        for (id, transaction) in transactions where now >= transaction.nextSend {
            if transaction.retransmissionsLeft > 0 {
                var next = transaction
                next.retransmissionsLeft -= 1
                next.timeout = min(transaction.timeout * 2, configuration.maximumRetransmissionTimeout)
                next.nextSend = now.advanced(by: next.timeout)
                transactions[id] = next
                statistics.retransmissions += 1
                emit(.send(Transmit(bytes: transaction.bytes, destination: transaction.destination, socket: transaction.socket)))
            } else {
                transactions[id] = nil
                switch transaction.kind {
                case .check(let pair, let nominate):
                    if nominate, nominating == pair { nominating = nil }  // nominate again, until the connectivity timeout
                    failPair(pair)
                case .consent, .server:
                    break  // consent is judged on its own deadline; a silent server leaves no srflx candidate
                }
            }
        }
    }

    mutating func failPair(_ index: Int) {
        guard pairs[index].state != .succeeded, pairs[index].state != .failed else { return }
        pairs[index].state = .failed
        statistics.pairsFailed += 1
        if nominating == index { nominating = nil }
    }

    // MARK: Choosing and sending checks

    /// The pair the controlling agent should nominate now, if any: the best valid pair, once no
    /// better pair is still to be checked or the nomination delay has passed.
    func nominationCandidate() -> Int? {
        guard role == .controlling, selectedPair == nil, nominating == nil, firstValidAt != nil else { return nil }
        let ordered = orderedPairs()
        guard let best = ordered.first(where: { pairs[$0].valid }) else { return nil }
        let betterPending = ordered.prefix { $0 != best }.contains { [.waiting, .frozen, .inProgress].contains(pairs[$0].state) }
        return betterPending ? nil : best
    }

    mutating func nextCheck(now: MonotonicInstant) -> (pair: Int, nominate: Bool)? {
        if role == .controlling, selectedPair == nil, nominating == nil {
            if let best = nominationCandidate() { return (best, true) }
            if let firstValidAt, now >= firstValidAt.advanced(by: configuration.nominationDelay),
                let best = orderedPairs().first(where: { pairs[$0].valid })
            {
                return (best, true)
            }
        }
        while !triggered.isEmpty {
            let index = triggered.removeFirst()
            if pairs[index].state == .waiting || pairs[index].state == .failed || pairs[index].state == .frozen { return (index, false) }
        }
        guard selectedPair == nil, nominating == nil else { return nil }
        let ordered = orderedPairs()
        if let waiting = ordered.first(where: { pairs[$0].state == .waiting }) { return (waiting, false) }
        if let frozen = ordered.first(where: { pairs[$0].state == .frozen }) { return (frozen, false) }
        return nil
    }

    /// The PRIORITY a check from `local` carries: that of a peer-reflexive candidate with the
    /// same local preference (RFC 8445 §7.1.1).
    func checkPriority(local: Int) -> UInt32 {
        let candidate = locals[local].candidate
        let localPreference = (candidate.priority >> 8) & 0xFFFF
        return ICECandidate.priority(kind: .peerReflexive, localPreference: localPreference, component: candidate.component)
    }

    func checkRequest(pair index: Int, nominate: Bool, id: STUNTransactionID) -> (bytes: [UInt8], priority: UInt32)? {
        guard let remoteCredentials else { return nil }
        let pair = pairs[index]
        let priority = checkPriority(local: pair.local)
        var request = STUNMessage(class: .request, transactionID: id)
        request.attributes.append(.username(remoteCredentials.ufrag + ":" + localCredentials.ufrag))
        request.attributes.append(.priority(priority))
        request.attributes.append(role == .controlling ? .iceControlling(tieBreaker) : .iceControlled(tieBreaker))
        if nominate { request.attributes.append(.useCandidate) }
        return (request.encoded(integrityKey: remoteCredentials.key, fingerprint: true), priority)
    }

    mutating func sendCheck(pair index: Int, nominate: Bool, now: MonotonicInstant) {
        let id = STUNTransactionID.random(using: &random)
        guard let request = checkRequest(pair: index, nominate: nominate, id: id) else { return }
        let (bytes, priority) = request
        let local = locals[pairs[index].local]
        let destination = remotes[pairs[index].remote].address
        if !nominate { pairs[index].state = .inProgress }
        if nominate { nominating = index }
        transactions[id] = Transaction(
            kind: .check(pair: index, nominate: nominate), bytes: bytes, destination: destination, socket: local.socket,
            nextSend: now.advanced(by: configuration.initialRetransmissionTimeout), timeout: configuration.initialRetransmissionTimeout,
            retransmissionsLeft: configuration.maximumRetransmissions, role: role, priority: priority)
        statistics.checksSent += 1
        emit(.send(Transmit(bytes: bytes, destination: destination, socket: local.socket)))
    }

    // MARK: Failure

    mutating func checkFailure(now: MonotonicInstant) {
        guard state == .checking, let startedAt else { return }
        let elapsed = startedAt.duration(to: now)
        let pending = transactions.values.contains { if case .check = $0.kind { true } else { false } }
        let allFailed = !pairs.isEmpty && pairs.allSatisfy { $0.state == .failed } && !pending && triggered.isEmpty
        guard elapsed >= configuration.connectivityTimeout || allFailed else { return }
        let seconds = elapsed.seconds.iceOneDecimal
        let message: String
        if pairs.isEmpty {
            message = remotes.isEmpty
                ? "no ICE candidate pairs to check after \(seconds) s: the answer had no usable remote candidate (UDP, numeric IPv4/IPv6)"
                : "no ICE candidate pairs to check after \(seconds) s: no local candidate shares an address family with the \(remotes.count) remote ones"
        } else if pairs.contains(where: { $0.valid }) {
            message = "ICE nomination not answered in \(seconds) s (\(pairs.count) pairs checked)"
        } else {
            message = "no ICE connectivity check answered in \(seconds) s from \(pairs.count) pair\(pairs.count == 1 ? "" : "s") (\(statistics.checksSent) checks, \(statistics.retransmissions) retransmissions): the peer is unreachable over UDP from here"
        }
        fail(ICEError(.iceFailed, message))
    }

    mutating func fail(_ error: ICEError) {
        transactions = transactions.filter { if case .server = $0.value.kind { true } else { false } }
        triggered.removeAll()
        setState(.failed)
        emit(.failed(error))
    }

    // MARK: Answering the peer's checks

    mutating func handleRequest(_ message: STUNMessage, bytes: UnsafeRawBufferPointer, from source: SocketAddress, on socket: ICESocketID, now: MonotonicInstant) {
        let expectedPrefix = localCredentials.ufrag + ":"
        guard STUNMessage.verifyFingerprint(bytes), let username = message.username, username.hasPrefix(expectedPrefix),
            remoteCredentials.map({ username == expectedPrefix + $0.ufrag }) ?? true,
            STUNMessage.verifyIntegrity(bytes, key: localCredentials.key)
        else {
            statistics.unauthenticatedDropped += 1
            return
        }
        statistics.requestsReceived += 1
        guard let localIndex = locals.firstIndex(where: { $0.socket == socket && $0.candidate.kind == .host }) else {
            statistics.overLimitDropped += 1  // a socket the agent was not told of
            return
        }
        if !message.unknownComprehensionRequired.isEmpty {
            respondError(to: message, code: 420, reason: "Unknown Attribute", extra: [.unknownAttributes(message.unknownComprehensionRequired)], destination: source, socket: socket)
            return
        }
        // Role conflicts (RFC 8445 §7.3.1.1).
        if role == .controlling, let theirs = message.iceControlling {
            statistics.roleConflicts += 1
            if tieBreaker >= theirs {
                respondError(to: message, code: 487, reason: "Role Conflict", extra: [], destination: source, socket: socket)
                return
            }
            role = .controlled
        } else if role == .controlled, let theirs = message.iceControlled {
            statistics.roleConflicts += 1
            if tieBreaker >= theirs {
                role = .controlling
            } else {
                respondError(to: message, code: 487, reason: "Role Conflict", extra: [], destination: source, socket: socket)
                return
            }
        }
        respondSuccess(to: message, destination: source, socket: socket)
        guard state == .new || state == .checking || state == .connected else { return }

        // The remote candidate: signalled, or learned here (peer-reflexive, RFC 8445 §7.3.1.3).
        var remoteIndex = remotes.firstIndex { $0.address == source }
        if remoteIndex == nil {
            guard remotes.count < configuration.maximumRemoteCandidates else {
                statistics.overLimitDropped += 1
                return
            }
            let priority = message.priority ?? ICECandidate.priority(kind: .peerReflexive)
            remotes.append(ICECandidate(foundation: "prflx\(statistics.peerReflexiveRemoteCandidates)", priority: priority, address: source, kind: .peerReflexive))
            statistics.peerReflexiveRemoteCandidates += 1
            remoteIndex = remotes.count - 1
        }
        guard let remoteIndex, let pairIndex = formPair(local: localIndex, remote: remoteIndex) else { return }
        if message.useCandidate, role == .controlled {
            pairs[pairIndex].nominatedByPeer = true
            if pairs[pairIndex].valid { select(pairIndex, now: now) }
        }
        // Triggered check (RFC 8445 §7.3.1.4).
        switch pairs[pairIndex].state {
        case .frozen, .waiting, .failed:
            if pairs[pairIndex].state == .failed { pairs[pairIndex].state = .waiting }
            if pairs[pairIndex].state == .frozen { pairs[pairIndex].state = .waiting }
            if !triggered.contains(pairIndex) { triggered.append(pairIndex) }
            if state == .checking, nextCheckAt == nil || nextCheckAt! > now.advanced(by: configuration.pacing) { nextCheckAt = now }
        case .inProgress, .succeeded:
            break
        }
    }

    mutating func respondSuccess(to request: STUNMessage, destination: SocketAddress, socket: ICESocketID) {
        var response = STUNMessage(class: .successResponse, transactionID: request.transactionID)
        response.attributes.append(.xorMappedAddress(destination))
        if let software = configuration.software { response.attributes.append(.software(software)) }
        statistics.responsesSent += 1
        emit(.send(Transmit(bytes: response.encoded(integrityKey: localCredentials.key, fingerprint: true), destination: destination, socket: socket)))
    }

    mutating func respondError(to request: STUNMessage, code: Int, reason: String, extra: [STUNAttribute], destination: SocketAddress, socket: ICESocketID) {
        var response = STUNMessage(class: .errorResponse, transactionID: request.transactionID)
        response.attributes.append(.errorCode(code: code, reason: reason))
        response.attributes.append(contentsOf: extra)
        statistics.responsesSent += 1
        emit(.send(Transmit(bytes: response.encoded(integrityKey: localCredentials.key, fingerprint: true), destination: destination, socket: socket)))
    }

    // MARK: Responses to our checks

    mutating func handleResponse(_ message: STUNMessage, bytes: UnsafeRawBufferPointer, from source: SocketAddress, on socket: ICESocketID, now: MonotonicInstant) {
        guard let transaction = transactions[message.transactionID] else {
            statistics.unmatchedResponsesDropped += 1
            return
        }
        if case .server(let local) = transaction.kind {
            handleServerResponse(message, bytes: bytes, transaction: transaction, local: local, from: source, on: socket, now: now)
            return
        }
        guard let remoteCredentials, STUNMessage.verifyFingerprint(bytes), STUNMessage.verifyIntegrity(bytes, key: remoteCredentials.key) else {
            statistics.unauthenticatedDropped += 1  // the transaction stays: a forged answer must not end a real one
            return
        }
        guard source == transaction.destination.normalized, socket == transaction.socket else {
            statistics.asymmetricResponsesDropped += 1
            transactions[message.transactionID] = nil
            if case .check(let pair, _) = transaction.kind { failPair(pair) }
            return
        }
        transactions[message.transactionID] = nil
        switch transaction.kind {
        case .consent(let pair):
            guard message.messageClass == .successResponse else {
                statistics.errorResponses += 1
                return
            }
            statistics.consentResponses += 1
            if selectedPairIndex == pair { lastConsent = now }
        case .check(let pair, let nominate):
            if message.messageClass == .errorResponse {
                statistics.errorResponses += 1
                handleErrorResponse(message, transaction: transaction, pair: pair, nominate: nominate, now: now)
                return
            }
            statistics.successResponses += 1
            checkSucceeded(pair: pair, nominate: nominate, mapped: message.mappedAddress, priority: transaction.priority, now: now)
        case .server:
            break
        }
    }

    var selectedPairIndex: Int? { selectedIndex }

    mutating func handleErrorResponse(_ message: STUNMessage, transaction: Transaction, pair: Int, nominate: Bool, now: MonotonicInstant) {
        if nominating == pair { nominating = nil }
        if message.errorCode == 487 {
            statistics.roleConflicts += 1
            if role == transaction.role { role = role == .controlling ? .controlled : .controlling }
            pairs[pair].state = .waiting
            if !triggered.contains(pair) { triggered.append(pair) }
            return
        }
        failPair(pair)
    }

    mutating func checkSucceeded(pair index: Int, nominate: Bool, mapped: SocketAddress?, priority: UInt32, now: MonotonicInstant) {
        let wasValid = pairs[index].valid
        pairs[index].state = .succeeded
        pairs[index].valid = true
        if !wasValid, firstValidAt == nil { firstValidAt = now }
        // A mapped address that is no local candidate is a peer-reflexive local candidate (RFC 8445 §7.2.5.3.1).
        let local = locals[pairs[index].local]
        if let mapped = mapped?.normalized, !locals.contains(where: { $0.candidate.address == mapped }),
            statistics.peerReflexiveLocalCandidates < configuration.maximumRemoteCandidates
        {
            let base = local.candidate.address
            locals.append(LocalCandidate(
                candidate: ICECandidate(
                    foundation: ICECandidate.foundation(kind: .peerReflexive, baseHost: base.host), priority: priority, address: mapped,
                    kind: .peerReflexive, relatedAddress: base),
                socket: local.socket))
            statistics.peerReflexiveLocalCandidates += 1
        }
        // Unfreeze the pairs of the same foundation (RFC 8445 §7.2.5.3.3).
        let foundation = foundation(of: pairs[index])
        for other in pairs.indices where pairs[other].state == .frozen && self.foundation(of: pairs[other]) == foundation {
            pairs[other].state = .waiting
        }
        if selectedPairIndex == index { lastConsent = now }
        if nominate, role == .controlling {
            nominating = nil
            select(index, now: now)
        } else if role == .controlled, pairs[index].nominatedByPeer {
            select(index, now: now)
        }
    }

    mutating func select(_ index: Int, now: MonotonicInstant) {
        guard selectedPair == nil, state == .checking || state == .new else { return }
        let pair = publicPair(index)
        selectedPair = pair
        selectedIndex = index
        lastConsent = now
        nextConsentAt = now.advanced(by: consentDelay())
        // Ordinary checks stop (RFC 8445 §8.1.2); triggered ones already queued are dropped.
        triggered.removeAll()
        for other in pairs.indices where pairs[other].state == .waiting || pairs[other].state == .frozen { pairs[other].state = .failed }
        transactions = transactions.filter { id, transaction in
            if case .check(let other, _) = transaction.kind { return other == index }
            return true
        }
        emit(.selectedPair(pair))
        setState(.connected)
    }

    // MARK: Consent freshness (RFC 7675)

    mutating func consentDelay() -> Duration {
        let range = configuration.consentInterval
        let low = range.lowerBound.nanoseconds
        let high = range.upperBound.nanoseconds
        guard high > low else { return range.lowerBound }
        return .nanoseconds(low + Int64(random.next() % UInt64(high - low + 1)))
    }

    mutating func runConsent(now: MonotonicInstant) {
        guard let lastConsent else { return }
        if lastConsent.duration(to: now) >= configuration.consentTimeout {
            let seconds = lastConsent.duration(to: now).seconds.iceOneDecimal
            let pair = selectedPair.map { " on \($0)" } ?? ""
            transactions.removeAll()
            setState(.failed)
            emit(.consentLost(ICEError(.iceConsentLost, "ICE consent lost\(pair): no authenticated answer to consent checks for \(seconds) s (the peer went away or the path broke)")))
            return
        }
        guard let nextConsentAt, now >= nextConsentAt, let index = selectedPairIndex else { return }
        self.nextConsentAt = now.advanced(by: consentDelay())
        let id = STUNTransactionID.random(using: &random)
        guard let request = checkRequest(pair: index, nominate: false, id: id) else { return }
        let (bytes, priority) = request
        let local = locals[pairs[index].local]
        let destination = remotes[pairs[index].remote].address
        // One transmission and one retransmission; an unanswered check is forgotten before the next.
        transactions[id] = Transaction(
            kind: .consent(pair: index), bytes: bytes, destination: destination, socket: local.socket,
            nextSend: now.advanced(by: configuration.initialRetransmissionTimeout), timeout: configuration.initialRetransmissionTimeout,
            retransmissionsLeft: 1, role: role, priority: priority)
        statistics.consentChecksSent += 1
        emit(.send(Transmit(bytes: bytes, destination: destination, socket: local.socket)))
    }

    // MARK: Server-reflexive gathering

    mutating func handleServerResponse(
        _ message: STUNMessage, bytes: UnsafeRawBufferPointer, transaction: Transaction, local: Int, from source: SocketAddress, on socket: ICESocketID,
        now: MonotonicInstant
    ) {
        // No credentials with a public STUN server: the answer must come from the server, to the
        // socket asked from, with the transaction ID we chose; FINGERPRINT, when present, must match.
        guard source == transaction.destination.normalized, socket == transaction.socket,
            !message.hasFingerprint || STUNMessage.verifyFingerprint(bytes)
        else {
            statistics.unauthenticatedDropped += 1
            return
        }
        transactions[message.transactionID] = nil
        if message.messageClass == .successResponse, let mapped = message.mappedAddress?.normalized {
            let base = locals[local]
            if mapped != base.candidate.address, !locals.contains(where: { $0.candidate.address == mapped && $0.candidate.kind == .serverReflexive }) {
                let localPreference = (base.candidate.priority >> 8) & 0xFFFF
                locals.append(LocalCandidate(
                    candidate: ICECandidate(
                        foundation: ICECandidate.foundation(kind: .serverReflexive, baseHost: base.candidate.address.host, server: transaction.destination),
                        priority: ICECandidate.priority(kind: .serverReflexive, localPreference: localPreference), address: mapped,
                        kind: .serverReflexive, relatedAddress: base.candidate.address),
                    socket: base.socket))
                statistics.serverReflexiveCandidates += 1
            }
        }
        finishGatheringIfDone(now: now)
    }

    mutating func finishGatheringIfDone(now: MonotonicInstant) {
        guard !gatheringDone, let gatheringDeadline else { return }
        let pending = transactions.values.contains { if case .server = $0.kind { true } else { false } }
        guard !pending || now >= gatheringDeadline else { return }
        gatheringDone = true
        transactions = transactions.filter { if case .server = $0.value.kind { false } else { true } }
        emit(.gatheringComplete(localCandidates))
    }
}

extension Double {
    /// One decimal: 8.0, 9.5.
    var iceOneDecimal: String {
        let tenths = (self * 10).rounded()
        return "\(Int(tenths) / 10).\(abs(Int(tenths) % 10))"
    }
}
