internal import COpenSSL
public import PlayoutCore
import PlayoutRTP

/// One side of a DTLS-SRTP handshake (RFC 5763/5764) on OpenSSL, as a sans-IO state machine:
/// it takes datagrams and the time, and returns datagrams to send, the SRTP keys, or why it failed.
///
/// ```swift
/// let dtls = try DTLSEndpoint(role: .client, certificate: .shared(), remoteFingerprint: answerFingerprint)
/// dtls.start(now: clock.now)                        // once ICE is connected
/// loop {
///     while let action = dtls.poll(now: clock.now) {
///         switch action {
///         case .send(let datagram): socket.send(datagram)
///         case .connected(let keys): startSRTP(keys)        // keys.inbound unprotects media
///         case .failed(let error): end(error)
///         case .closed: end(nil)                            // the peer sent close_notify
///         }
///     }
///     wait for a DTLS datagram (dtls.receive(datagram, now:)) or dtls.nextDeadline
/// }
/// dtls.close(now: clock.now)   // close_notify, then drain poll once more
/// ```
///
/// OpenSSL runs over two memory BIOs: a received datagram is written into the read BIO and
/// OpenSSL driven until it wants more; what OpenSSL writes is cut at record boundaries and packed
/// into datagrams of at most ``Configuration/mtu`` bytes.
///
/// ## Retransmission on the injected clock
/// OpenSSL 3.0's DTLS timer reads the real clock (`gettimeofday` in `dtls1_start_timer` and
/// `dtls1_is_timer_expired`), so `DTLSv1_handle_timeout` at a manual-clock deadline does nothing,
/// and a read that finds no data while that timer is expired retransmits on the spot. The timer
/// callback (`DTLS_set_timer_cb`) is the one lever OpenSSL gives: it is asked for a duration when
/// a new flight starts (previous duration 0) and on each timeout. This endpoint uses it so that
/// OpenSSL *prepares* the retransmissions and our `now` decides when they leave:
/// - when a flight starts, the callback answers 1 µs: OpenSSL's timer is expired at once, so the
///   failed read that ends the same `SSL_do_handshake` runs OpenSSL's own timeout path, which
///   writes a retransmission of the flight (new record sequence numbers, re-encrypted Finished,
///   exactly what OpenSSL would send later);
/// - each such timeout asks the callback again; it marks where the copy starts in the write BIO
///   and answers 1 µs until ``Configuration/maximumRetransmissions`` copies exist, then `UInt32.max`
///   (71 minutes), so OpenSSL never retransmits on its own afterwards;
/// - the endpoint sends the new flight now and keeps the copies; at each of *its* deadlines
///   (initial ``Configuration/initialRetransmissionTimeout``, doubling up to
///   ``Configuration/maximumRetransmissionTimeout``) it sends the next copy. When OpenSSL stops the
///   timer (the peer's answer arrived) or the handshake completes, the copies are dropped.
///
/// Fresh sequence numbers matter: a verbatim resend of a flight whose first copy *was* received
/// (its answer was lost) is dropped by the peer's replay window, and a server that never sees the
/// client's Finished again never resends its own (RFC 6347 §4.2.4).
/// The handshake fails with ``DTLSError/handshakeTimeout(elapsed:retransmissions:)`` after
/// ``Configuration/handshakeTimeout`` or when the copies are used up without an answer.
///
/// ## Input that is not a handshake
/// A datagram that is not whole DTLS records of a known type and version, or longer than
/// ``Configuration/maximumDatagramSize``, is counted and dropped before OpenSSL sees it; OpenSSL
/// itself drops records that fail its checks (bad MAC, replay, wrong epoch). The read BIO is
/// emptied after every datagram and OpenSSL's own buffering is bounded, so memory stays bounded.
///
/// Not `Sendable`: owned by the one task that drives the connection.
public final class DTLSEndpoint {
    /// Which side of the handshake this endpoint plays.
    public enum Role: Sendable, Hashable {
        /// The DTLS client: sends the ClientHello. We are `a=setup:active` (the answer said passive).
        case client
        /// The DTLS server: waits for the ClientHello. We are `a=setup:passive` (the answer said active).
        case server

        /// The role that an answer's `a=setup` value leaves us (RFC 5763 §5): `passive` → client,
        /// `active` → server.
        ///
        /// - Throws: ``DTLSError/invalidSetup(_:)`` for `actpass`, `holdconn` or anything else.
        public init(answerSetup value: some StringProtocol) throws(DTLSError) {
            switch value.lowercased() {
            case "passive": self = .client
            case "active": self = .server
            default: throw .invalidSetup(String(value.prefix(32)))
            }
        }
    }

    /// Tunables, with documented defaults.
    public struct Configuration: Sendable, Hashable {
        /// Default first retransmission timeout: 250 ms (RFC 6347 suggests 1 s; WebRTC stacks start
        /// lower so that one lost datagram does not cost a second of start-up).
        public static let defaultInitialRetransmissionTimeout: Duration = .milliseconds(250)
        /// Default ceiling of the doubling retransmission timeout: 4 s.
        public static let defaultMaximumRetransmissionTimeout: Duration = .seconds(4)
        /// Default bound on the whole handshake, from ``DTLSEndpoint/start(now:)``: 15 s.
        public static let defaultHandshakeTimeout: Duration = .seconds(15)
        /// Default number of retransmissions of one flight: 7.
        public static let defaultMaximumRetransmissions = 7
        /// The most retransmissions of one flight allowed: OpenSSL fails a flight after 12 timeouts.
        public static let maximumRetransmissionsLimit = 10
        /// Default largest datagram sent: 1,200 bytes (fits any path with IPv6 and TURN headroom).
        public static let defaultMTU = 1_200
        /// Default largest datagram accepted: one full record (2^14 + 2,048 + 13 bytes).
        public static let defaultMaximumDatagramSize = DTLSRecords.maximumRecordLength + DTLSRecords.headerLength
        /// Default bound on actions waiting for ``DTLSEndpoint/poll(now:)``: 256 (oldest dropped, counted).
        public static let defaultMaximumPendingActions = 256

        /// The first retransmission timeout of a flight.
        public var initialRetransmissionTimeout: Duration
        /// The ceiling of the doubling retransmission timeout.
        public var maximumRetransmissionTimeout: Duration
        /// The bound on the whole handshake.
        public var handshakeTimeout: Duration
        /// Retransmissions of one flight before the handshake fails (1…``maximumRetransmissionsLimit``).
        public var maximumRetransmissions: Int
        /// The largest datagram sent (OpenSSL fragments handshake messages to fit).
        public var mtu: Int
        /// The largest datagram accepted.
        public var maximumDatagramSize: Int
        /// The `use_srtp` profiles offered, best first.
        public var srtpProfiles: [DTLSSRTPProfile]
        /// Bound on actions queued for ``DTLSEndpoint/poll(now:)``.
        public var maximumPendingActions: Int

        /// A configuration; every parameter has the documented default.
        public init(
            initialRetransmissionTimeout: Duration = Configuration.defaultInitialRetransmissionTimeout,
            maximumRetransmissionTimeout: Duration = Configuration.defaultMaximumRetransmissionTimeout,
            handshakeTimeout: Duration = Configuration.defaultHandshakeTimeout,
            maximumRetransmissions: Int = Configuration.defaultMaximumRetransmissions,
            mtu: Int = Configuration.defaultMTU,
            maximumDatagramSize: Int = Configuration.defaultMaximumDatagramSize,
            srtpProfiles: [DTLSSRTPProfile] = DTLSSRTPProfile.defaultOffer,
            maximumPendingActions: Int = Configuration.defaultMaximumPendingActions
        ) {
            self.initialRetransmissionTimeout = initialRetransmissionTimeout
            self.maximumRetransmissionTimeout = maximumRetransmissionTimeout
            self.handshakeTimeout = handshakeTimeout
            self.maximumRetransmissions = maximumRetransmissions
            self.mtu = mtu
            self.maximumDatagramSize = maximumDatagramSize
            self.srtpProfiles = srtpProfiles
            self.maximumPendingActions = maximumPendingActions
        }
    }

    /// Where the session is.
    public enum State: Sendable, Hashable {
        /// Created; ``DTLSEndpoint/start(now:)`` (or a first datagram) begins the handshake.
        case idle
        /// Handshake under way.
        case handshaking
        /// Handshake done, peer verified, keys exported.
        case connected
        /// Ended by ``DTLSEndpoint/close(now:)`` or the peer's close_notify.
        case closed
        /// Ended on an error (reported once as ``Action/failed(_:)``).
        case failed
    }

    /// What the caller must do, in order.
    public enum Action: Sendable, Equatable {
        /// Send this datagram to the peer.
        case send([UInt8])
        /// The handshake completed and the peer's certificate matched: start SRTP with these keys.
        case connected(DTLSSRTPKeys)
        /// The session failed (handshake timeout, fingerprint mismatch, alert); nothing more comes.
        case failed(DTLSError)
        /// The peer closed the session (close_notify).
        case closed
    }

    /// Counters, read as one snapshot.
    public struct Statistics: Sendable, Hashable {
        /// Datagrams given to ``DTLSEndpoint/receive(_:now:)``.
        public var datagramsReceived = 0
        /// Datagrams handed to OpenSSL (well-formed records while the session was live).
        public var datagramsProcessed = 0
        /// Dropped: not whole DTLS records of a known type and version (garbage, truncated, foreign).
        public var datagramsDroppedMalformed = 0
        /// Dropped: longer than ``Configuration/maximumDatagramSize``.
        public var datagramsDroppedOversized = 0
        /// Dropped: arrived after the session closed or failed.
        public var datagramsDroppedAfterEnd = 0
        /// Bytes OpenSSL left unread in the read BIO (emptied after each datagram).
        public var bytesDiscardedUnread = 0
        /// Application data records received and discarded (DTLS-SRTP carries no data here).
        public var applicationDataBytesDiscarded = 0
        /// Datagrams returned as ``Action/send(_:)``.
        public var datagramsSent = 0
        /// Flights retransmitted at our deadlines.
        public var retransmissions = 0
        /// Actions dropped because ``Configuration/maximumPendingActions`` were waiting.
        public var actionsDropped = 0

        /// All zero.
        public init() {}
    }

    /// The side this endpoint plays.
    public let role: Role
    /// The tunables.
    public let configuration: Configuration
    /// The fingerprint the peer's certificate must have (from the SDP answer).
    public let remoteFingerprint: DTLSFingerprint
    /// The session's state.
    public private(set) var state: State = .idle
    /// The counters.
    public private(set) var statistics = Statistics()
    /// The negotiated keys, once ``State/connected``.
    public private(set) var keys: DTLSSRTPKeys?

    private let context: SSLContextHandle
    private let callbacks: DTLSCallbackContext
    private var actions: [Action] = []
    private var actionsHead = 0

    // Handshake timing, all on the caller's clock.
    private var handshakeStartedAt: MonotonicInstant?
    private var retransmissionCopies: [[[UInt8]]] = []
    private var nextRetransmission: MonotonicInstant?
    private var retransmissionTimeout: Duration = .zero
    private var flightRetransmissions = 0

    /// An endpoint ready to ``start(now:)``.
    ///
    /// - Parameters:
    ///   - role: client when the answer said `setup:passive`, server when it said `setup:active`.
    ///   - certificate: our certificate, whose fingerprint went into the offer.
    ///   - remoteFingerprint: the answer's `a=fingerprint`.
    /// - Throws: ``DTLSError/openSSL(_:)`` when OpenSSL cannot be set up, or for a configuration
    ///   out of range (no profile, a retransmission count outside 1…10, an MTU under 256).
    public init(
        role: Role,
        certificate: DTLSCertificate,
        remoteFingerprint: DTLSFingerprint,
        configuration: Configuration = Configuration()
    ) throws(DTLSError) {
        guard !configuration.srtpProfiles.isEmpty else { throw .openSSL("no SRTP profile to offer: the linked libsrtp2 supports none") }
        guard (1...Configuration.maximumRetransmissionsLimit).contains(configuration.maximumRetransmissions) else {
            throw .openSSL("maximumRetransmissions must be 1…\(Configuration.maximumRetransmissionsLimit), got \(configuration.maximumRetransmissions)")
        }
        guard configuration.mtu >= 256, configuration.maximumDatagramSize >= configuration.mtu else {
            throw .openSSL("mtu must be at least 256 and at most maximumDatagramSize, got \(configuration.mtu)")
        }
        guard configuration.initialRetransmissionTimeout > .zero,
              configuration.maximumRetransmissionTimeout >= configuration.initialRetransmissionTimeout,
              configuration.handshakeTimeout > .zero
        else {
            throw .openSSL("retransmission and handshake timeouts must be positive, the maximum at least the initial one")
        }
        self.role = role
        self.configuration = configuration
        self.remoteFingerprint = remoteFingerprint
        callbacks = DTLSCallbackContext(expected: remoteFingerprint, copies: configuration.maximumRetransmissions)
        context = try SSLContextHandle(
            role: role, certificate: certificate, profiles: configuration.srtpProfiles, mtu: configuration.mtu, callbacks: callbacks
        )
    }

    /// When ``poll(now:)`` must next be called if nothing is received: the next retransmission or
    /// the handshake's time limit; nil when no timer runs.
    public var nextDeadline: MonotonicInstant? {
        guard state == .handshaking, let started = handshakeStartedAt else { return nil }
        let limit = started.advanced(by: configuration.handshakeTimeout)
        guard let nextRetransmission else { return limit }
        return min(limit, nextRetransmission)
    }

    /// Begins the handshake: a client writes its ClientHello (see ``poll(now:)``), a server waits
    /// for one. Call once the path to the peer works (ICE connected). Later calls do nothing.
    public func start(now: MonotonicInstant) {
        guard state == .idle else { return }
        state = .handshaking
        handshakeStartedAt = now
        driveHandshake(now: now)
    }

    /// Feeds one received datagram (one that RFC 7983 classifies as DTLS).
    public func receive(_ datagram: UnsafeRawBufferPointer, now: MonotonicInstant) {
        statistics.datagramsReceived += 1
        guard datagram.count <= configuration.maximumDatagramSize else {
            statistics.datagramsDroppedOversized += 1
            return
        }
        guard DTLSRecords.isWellFormed(datagram) else {
            statistics.datagramsDroppedMalformed += 1
            return
        }
        switch state {
        case .closed, .failed:
            statistics.datagramsDroppedAfterEnd += 1
            return
        case .idle:
            start(now: now)
        case .handshaking, .connected:
            break
        }
        guard state == .handshaking || state == .connected else {
            statistics.datagramsDroppedAfterEnd += 1
            return
        }
        statistics.datagramsProcessed += 1
        let written = BIO_write(context.readBIO, datagram.baseAddress, Int32(datagram.count))
        precondition(written == Int32(datagram.count), "a memory BIO takes every byte")
        if state == .handshaking {
            driveHandshake(now: now)
        }
        if state == .connected {
            readConnected(now: now)
        }
        let unread = BIO_ctrl_pending(context.readBIO)
        if unread > 0 {
            statistics.bytesDiscardedUnread += Int(unread)
            _ = playout_dtls_bio_reset(context.readBIO)
        }
    }

    /// Feeds one received datagram.
    public func receive(_ datagram: [UInt8], now: MonotonicInstant) {
        datagram.withUnsafeBytes { receive($0, now: now) }
    }

    /// Runs the timers due at `now` and returns the next action, or nil when there is none. Call
    /// until nil after every ``start(now:)``, ``receive(_:now:)``, ``close(now:)`` and deadline.
    public func poll(now: MonotonicInstant) -> Action? {
        runTimers(now: now)
        guard actionsHead < actions.count else { return nil }
        let action = actions[actionsHead]
        actionsHead += 1
        if actionsHead == actions.count {
            actions.removeAll(keepingCapacity: true)
            actionsHead = 0
        }
        return action
    }

    /// Ends the session: sends close_notify when a handshake was under way or done. Drain
    /// ``poll(now:)`` afterwards for the datagram. Later calls do nothing.
    public func close(now: MonotonicInstant) {
        switch state {
        case .handshaking, .connected:
            ERR_clear_error()
            _ = SSL_shutdown(context.ssl)
            ERR_clear_error()
            collectOutput(now: now)
            endTimers()
            state = .closed
        case .idle:
            state = .closed
        case .closed, .failed:
            break
        }
    }

    // MARK: Driving OpenSSL

    private func driveHandshake(now: MonotonicInstant) {
        ERR_clear_error()
        let result = SSL_do_handshake(context.ssl)
        if result == 1 {
            collectOutput(now: now)
            endTimers()
            finishHandshake()
            return
        }
        let error = SSL_get_error(context.ssl, result)
        if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE {
            collectOutput(now: now)
            return
        }
        let reason = OpenSSLErrors.drain()
        collectOutput(now: now)  // the alert OpenSSL wrote, so the peer learns why
        if let mismatch = callbacks.mismatch {
            fail(.fingerprintMismatch(expected: remoteFingerprint, actual: mismatch))
        } else {
            fail(.handshakeFailed(reason))
        }
    }

    private func finishHandshake() {
        guard callbacks.verified else {
            fail(.handshakeFailed("the peer presented no certificate"))
            return
        }
        guard let selected = SSL_get_selected_srtp_profile(context.ssl) else {
            fail(.noSRTPProfile(offered: configuration.srtpProfiles.map(\.name)))
            return
        }
        guard let profile = DTLSSRTPProfile(rawValue: UInt(selected.pointee.id)), configuration.srtpProfiles.contains(profile) else {
            fail(.unsupportedSRTPProfile(UInt(selected.pointee.id)))
            return
        }
        let suite = profile.suite
        var material = [UInt8](repeating: 0, count: 2 * suite.keyingMaterialLength)
        let label = "EXTRACTOR-dtls_srtp"
        ERR_clear_error()
        let exported = SSL_export_keying_material(context.ssl, &material, material.count, label, label.utf8.count, nil, 0, 0)
        guard exported == 1 else {
            fail(.keyExportFailed(OpenSSLErrors.drain()))
            return
        }
        do {
            let keys = try DTLSSRTPKeys(exporterOutput: material, profile: profile, role: role)
            for index in material.indices { material[index] = 0 }
            self.keys = keys
            state = .connected
            enqueue(.connected(keys))
        } catch {
            fail(.keyExportFailed(error.description))
        }
    }

    private func readConnected(now: MonotonicInstant) {
        var buffer = [UInt8](repeating: 0, count: 2_048)
        while state == .connected {
            ERR_clear_error()
            let result = SSL_read(context.ssl, &buffer, Int32(buffer.count))
            if result > 0 {
                statistics.applicationDataBytesDiscarded += Int(result)
                continue
            }
            let error = SSL_get_error(context.ssl, result)
            collectOutput(now: now)  // e.g. the final flight again for a peer that lost it
            switch error {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return
            case SSL_ERROR_ZERO_RETURN:
                state = .closed
                enqueue(.closed)
                return
            default:
                let reason = OpenSSLErrors.drain()
                state = .failed
                enqueue(.failed(.connectionFailed(reason)))
                return
            }
        }
    }

    /// Moves what OpenSSL wrote into send actions now and retransmission copies for later.
    private func collectOutput(now: MonotonicInstant) {
        let pending = Int(BIO_ctrl_pending(context.writeBIO))
        let boundaries = callbacks.takeBoundaries()
        let freshFlight = callbacks.takeFreshFlight()
        if pending > 0 {
            var bytes = [UInt8](repeating: 0, count: pending)
            let read = BIO_read(context.writeBIO, &bytes, Int32(pending))
            precondition(read == Int32(pending), "a memory BIO gives back what it holds")
            // Before the first boundary: what goes out now. From each boundary to the next (or
            // the end): one retransmission copy of the flight, prepared by OpenSSL.
            let cuts = boundaries.map { min(max($0, 0), pending) }
            let sendNow = bytes[0..<(cuts.first ?? pending)]
            for datagram in DTLSRecords.pack(sendNow, mtu: configuration.mtu) { send(datagram) }
            if freshFlight { retransmissionCopies.removeAll() }
            for (index, cut) in cuts.enumerated() {
                let end = index + 1 < cuts.count ? cuts[index + 1] : pending
                guard end > cut else { continue }
                retransmissionCopies.append(DTLSRecords.pack(bytes[cut..<end], mtu: configuration.mtu))
            }
        }
        if freshFlight {
            flightRetransmissions = 0
            retransmissionTimeout = configuration.initialRetransmissionTimeout
            nextRetransmission = now.advanced(by: retransmissionTimeout)
            if boundaries.isEmpty { retransmissionCopies.removeAll() }
        }
        if playout_dtls_timer_running(context.ssl) == 0 || SSL_is_init_finished(context.ssl) == 1 {
            retransmissionCopies.removeAll()
            nextRetransmission = nil
        }
    }

    private func runTimers(now: MonotonicInstant) {
        guard state == .handshaking, let started = handshakeStartedAt else { return }
        if let due = nextRetransmission, due <= now {
            if retransmissionCopies.isEmpty, flightRetransmissions < configuration.maximumRetransmissions {
                // No copy prepared (OpenSSL returned before reading): its timer is expired, so
                // its timeout path writes one now.
                ERR_clear_error()
                if playout_dtls_handle_timeout(context.ssl) < 0 {
                    fail(.handshakeTimeout(elapsed: started.duration(to: now), retransmissions: flightRetransmissions))
                    return
                }
                let pendingFlight = nextRetransmission
                collectOutput(now: now)
                nextRetransmission = pendingFlight
            }
            if flightRetransmissions < configuration.maximumRetransmissions, !retransmissionCopies.isEmpty {
                let copy = retransmissionCopies.removeFirst()
                for datagram in copy { send(datagram) }
                flightRetransmissions += 1
                statistics.retransmissions += 1
                retransmissionTimeout = min(retransmissionTimeout * 2, configuration.maximumRetransmissionTimeout)
                nextRetransmission = now.advanced(by: retransmissionTimeout)
            } else {
                fail(.handshakeTimeout(elapsed: started.duration(to: now), retransmissions: flightRetransmissions))
                return
            }
        }
        if state == .handshaking, started.advanced(by: configuration.handshakeTimeout) <= now {
            fail(.handshakeTimeout(elapsed: started.duration(to: now), retransmissions: statistics.retransmissions))
        }
    }

    private func endTimers() {
        retransmissionCopies.removeAll()
        nextRetransmission = nil
    }

    private func fail(_ error: DTLSError) {
        endTimers()
        state = .failed
        enqueue(.failed(error))
    }

    private func send(_ datagram: [UInt8]) {
        statistics.datagramsSent += 1
        enqueue(.send(datagram))
    }

    private func enqueue(_ action: Action) {
        if actions.count - actionsHead >= configuration.maximumPendingActions {
            actionsHead += 1
            statistics.actionsDropped += 1
        }
        actions.append(action)
    }
}
