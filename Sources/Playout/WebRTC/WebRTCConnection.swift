import Logging
import PlayoutCore
import PlayoutRTP
package import PlayoutWebRTC

/// One WebRTC transport of a subscription (a WHEP session): its UDP sockets (one per local
/// address, each carrying STUN, DTLS, SRTP and SRTCP, RFC 7983), its ICE agent and DTLS endpoint,
/// and the BUNDLE router that hands each SRTP/SRTCP datagram to its track — whose receive path
/// (SRTP, source validation, jitter buffer, decode, feedback, QoS) is the one every RTP source
/// takes. The driver's worker hands it each readable socket (``receive(on:)``) and polls it on
/// the subscription's clock (``poll(now:)``); the subscription's end closes it (``close(now:)``).
///
/// One lock guards the ICE agent, the DTLS endpoint and the router; it is taken before a track's
/// own lock, never the other way round.
package final class WebRTCConnection: @unchecked Sendable {
    /// Counters of what the transport did, for the summary and tests.
    package struct Statistics: Equatable, Sendable {
        /// Datagrams by kind (RFC 7983), and those of no kind.
        package var demultiplexed = DatagramDemultiplexer.Statistics()
        /// How SRTP and SRTCP found their tracks, and what found none.
        package var routing = BundleRouter.Statistics()
        /// The ICE agent's counters (checks, consent, unauthenticated STUN dropped).
        package var ice = ICEAgent.Statistics()
        /// The DTLS endpoint's counters.
        package var dtls = DTLSEndpoint.Statistics()
        /// DTLS datagrams that came after the end, or had no source address.
        package var dtlsDropped = 0
        /// Datagrams that could not be sent (a socket error).
        package var sendFailures = 0
    }

    /// What the transport tells its subscription.
    enum Event: Sendable {
        /// A start-up step was reached.
        case milestone(StartupTimeline.Milestone, MonotonicInstant)
        /// The session cannot go on (ICE failed, consent lost, DTLS failed or closed).
        case failed(String)
    }

    /// The sockets, one per local address: what a driver waits on (``ICESocketID`` = index).
    let sockets: [UDPReceiver]
    /// The tracks, in the router's order.
    let tracks: [SubscribedTrack]
    private let lock = ConditionLock()
    private var agent: ICEAgent  // lock
    private let dtls: DTLSEndpoint  // lock
    // Touched only under the lock: no run-time exclusivity check per packet (≈ 270 instructions of
    // the ≈ 600 the BUNDLE path adds to plain SRTP, Docs/Performance.md).
    @exclusivity(unchecked) private var router: BundleRouter  // lock
    @exclusivity(unchecked) private var demultiplexer = DatagramDemultiplexer()  // lock
    private var selected: ICECandidatePair?  // lock
    /// Where DTLS goes before ICE selected a pair: where the peer's DTLS came from.
    private var dtlsPeer: (address: SocketAddress, socket: Int)?  // lock
    private var dtlsStarted = false  // lock
    private var connected = false  // lock
    private var ended = false  // lock
    private var statistics = Statistics()  // lock
    private let logger = Logger(label: "playout.webrtc")
    /// Told of milestones and failures (never under the lock).
    private let events: @Sendable (Event) -> Void
    private var pending: [Event] = []  // lock
    /// Ends the signalled session (the WHEP DELETE), once, at ``close(now:)``.
    private let endSession: @Sendable () -> Void

    /// A connection over `sockets` (bound; the agent knows their host candidates, the peer's
    /// answer is set and the checks started), whose DTLS endpoint is `dtls`, routing into
    /// `tracks` by `router`; `endSession` ends the session the signalling made (after
    /// close_notify, off the lock).
    init(
        sockets: [UDPReceiver], agent: ICEAgent, dtls: DTLSEndpoint, router: BundleRouter, tracks: [SubscribedTrack],
        events: @escaping @Sendable (Event) -> Void, endSession: @escaping @Sendable () -> Void = {}
    ) {
        self.endSession = endSession
        self.sockets = sockets
        self.agent = agent
        self.dtls = dtls
        self.router = router
        self.tracks = tracks
        self.events = events
    }

    /// A snapshot of the counters.
    package var snapshot: Statistics {
        lock.withLock {
            var snapshot = statistics
            snapshot.demultiplexed = demultiplexer.statistics
            snapshot.routing = router.statistics
            snapshot.ice = agent.statistics
            snapshot.dtls = dtls.statistics
            return snapshot
        }
    }

    /// The pair carrying the media (nil before ICE connected).
    var selectedPair: ICECandidatePair? { lock.withLock { selected } }

    /// Receives one batch from socket `index` (the driver's worker): STUN to the ICE agent, DTLS
    /// to the endpoint, SRTP and SRTCP to their tracks; then sends what ICE and DTLS decided.
    func receive(on index: Int) throws {
        let socket = sockets[index]
        var latest: MonotonicInstant?
        lock.lock()
        do {
            try socket.receive(timeout: .zero) { datagram in
                latest = datagram.arrival
                take(datagram, socket: index)
            }
        } catch {
            lock.unlock()
            throw error
        }
        if let latest { drive(now: latest) }
        let events = takePending()
        lock.unlock()
        for event in events { self.events(event) }
    }

    /// Handles what is due at `now` (retransmissions, checks, consent, the handshake's timers);
    /// returns when to call again (nil: nothing is timed).
    func poll(now: MonotonicInstant) -> MonotonicInstant? {
        let (next, events) = lock.withLock {
            drive(now: now)
            return (nextDeadline, takePending())
        }
        for event in events { self.events(event) }
        return next
    }

    /// When ``poll(now:)`` is next due (nil: nothing is timed).
    var nextWake: MonotonicInstant? { lock.withLock { nextDeadline } }

    /// Ends the transport: DTLS close_notify to the peer, no more checks, then the session
    /// (``init(sockets:agent:dtls:router:tracks:events:endSession:)``). Idempotent.
    func close(now: MonotonicInstant) {
        let first = lock.withLock {
            guard !ended else { return false }
            ended = true
            dtls.close(now: now)
            while let action = dtls.poll(now: now) {
                if case .send(let bytes) = action { sendDTLS(bytes) }
            }
            agent.close()
            return true
        }
        if first { endSession() }
    }

    // MARK: Under the lock

    private var nextDeadline: MonotonicInstant? {
        guard !ended else { return nil }
        return [agent.nextDeadline, dtls.nextDeadline].compactMap(\.self).min()
    }

    private func takePending() -> [Event] {
        defer { pending.removeAll() }
        return pending
    }

    private func take(_ datagram: UDPReceiver.Datagram, socket: Int) {
        switch demultiplexer.classify(datagram.bytes) {
        case .rtp:
            guard let route = router.route(rtp: datagram.bytes) else { return }
            tracks[route].deliver(datagram.mutableBytes, length: datagram.bytes.count, arrival: datagram.arrival)
        case .rtcp:
            guard let route = router.route(rtcp: datagram.bytes) else { return }
            tracks[route].deliver(datagram.mutableBytes, length: datagram.bytes.count, arrival: datagram.arrival, control: true)
        case .stun:
            guard !ended, let source = datagram.source else { return }
            agent.receive(datagram.bytes, from: source, on: ICESocketID(socket), now: datagram.arrival)
        case .dtls:
            guard !ended, let source = datagram.source else {
                statistics.dtlsDropped += 1
                return
            }
            // The peer's DTLS may come before this side's checks concluded (it is the client and
            // saw a check succeed first): answered where it came from until a pair is selected.
            if selected == nil { dtlsPeer = (source.normalized, socket) }
            if !dtlsStarted {
                dtlsStarted = true
                dtls.start(now: datagram.arrival)
            }
            dtls.receive(datagram.bytes, now: datagram.arrival)
        default:
            return
        }
    }

    private func drive(now: MonotonicInstant) {
        guard !ended else { return }
        while let action = agent.poll(now: now) {
            switch action {
            case .send(let transmit):
                send(transmit.bytes, to: transmit.destination, socket: transmit.socket.rawValue)
            case .selectedPair(let pair):
                let first = selected == nil
                selected = pair
                logger.info("ICE: media on \(pair)")
                for track in tracks { track.sendFeedback(from: sockets[pair.socket.rawValue], to: pair.remote.address) }
                if first {
                    pending.append(.milestone(.iceConnected, now))
                    if !dtlsStarted {
                        dtlsStarted = true
                        dtls.start(now: now)
                    }
                }
            case .failed(let error):
                pending.append(.failed("ICE failed: \(error.message)"))
            case .consentLost(let error):
                pending.append(.failed("ICE consent lost: \(error.message)"))
            case .stateChanged(let state):
                logger.debug("ICE: \(state.rawValue)")
            case .gatheringComplete:
                break
            }
        }
        while let action = dtls.poll(now: now) {
            switch action {
            case .send(let bytes):
                sendDTLS(bytes)
            case .connected(let keys):
                do {
                    for track in tracks { try track.setKeys(inbound: keys.inbound, outbound: keys.outbound) }
                    connected = true
                    logger.info("DTLS: connected (\(keys.profile))")
                    pending.append(.milestone(.dtlsConnected, now))
                } catch {
                    pending.append(.failed("SRTP refused the keys DTLS exported: \(error)"))
                }
            case .failed(let error):
                pending.append(.failed("DTLS failed: \(error)"))
            case .closed:
                pending.append(.failed("the peer closed the DTLS session (close_notify)"))
            }
        }
    }

    private func sendDTLS(_ bytes: [UInt8]) {
        if let selected {
            send(bytes, to: selected.remote.address, socket: selected.socket.rawValue)
        } else if let dtlsPeer {
            send(bytes, to: dtlsPeer.address, socket: dtlsPeer.socket)
        } else {
            statistics.dtlsDropped += 1
        }
    }

    private func send(_ bytes: [UInt8], to destination: SocketAddress, socket: Int) {
        guard sockets.indices.contains(socket) else {
            statistics.sendFailures += 1
            return
        }
        do {
            try bytes.withUnsafeBytes { try sockets[socket].send($0, to: destination) }
        } catch {
            statistics.sendFailures += 1
        }
    }
}
