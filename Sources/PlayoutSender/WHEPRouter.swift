#if canImport(Glibc)
import Glibc
#endif
import Playout
public import PlayoutCore
import PlayoutRTP
import PlayoutWebRTC

/// The media side of a ``WHEPEndpoint``, driven by the publisher's thread (and nothing else):
/// the one UDP socket of all sessions, RFC 7983 demultiplexing (STUN by the USERNAME's ufrag,
/// DTLS and SRTCP by the address a session's checks came from), the sessions, and the shared
/// store of canonical packets NACKs are answered from.
///
/// ```swift
/// router.service(now: now)                         // new sessions, DELETEs, received datagrams
/// router.distribute(packet, track: 0, now: now)    // each canonical packet, to every session
/// let next = router.poll(now: now)                 // timers, what the simulated networks release
/// router.wait(until: next)                         // the socket, or the deadline
/// ```
///
/// Not `Sendable`: the publisher's thread owns it.
public final class WHEPRouter {
    /// What ``service(now:wallClock:)`` found the subscribers asking for.
    public struct Requests: Sendable, Equatable {
        /// A subscriber asked for a key frame (PLI/FIR, or a session just connected).
        public var keyFrame = false
        /// The lowest bit-rate limit across sessions changed: the new one (nil inside: none).
        public var bitrateLimit: UInt64??
    }

    private unowned let endpoint: WHEPEndpoint
    private let socket: UDPReceiver
    private let kinds: [MediaKind]
    private let codecs: [Codec]
    private let impairment: NetworkImpairment.Configuration
    private var sessions: [String: WHEPSession] = [:]
    private var byUsernameFragment: [String: String] = [:]
    private var demultiplexer = DatagramDemultiplexer()
    private var stores: [RetransmissionBuffer?]
    private var requests = Requests()
    private var lowestLimit: UInt64?
    /// Which session an address's checks belong to (filled on first use).
    private var byAddress: [SocketAddress: String] = [:]
    private var nextPublish: MonotonicInstant?

    /// The `abs-capture-time` id of the canonical packets (nil: they carry none).
    public var captureTimeID: UInt8?

    init(endpoint: WHEPEndpoint, socket: UDPReceiver, kinds: [MediaKind], codecs: [Codec], impairment: NetworkImpairment.Configuration, retransmission: [Bool]) {
        self.endpoint = endpoint
        self.socket = socket
        self.kinds = kinds
        self.codecs = codecs
        self.impairment = impairment
        stores = retransmission.map { $0 ? RetransmissionBuffer(minimumResendInterval: .zero) : nil }
    }

    /// The media socket's descriptor (to wait on).
    public var fileDescriptor: Int32 { socket.fileDescriptor }
    /// Live sessions.
    public var sessionCount: Int { sessions.count }

    /// Opens and closes the sessions the HTTP side asked for, and takes every datagram waiting
    /// on the socket. Returns what the subscribers asked for since the last call.
    public func service(now: MonotonicInstant, wallClock: Int64) -> Requests {
        for command in endpoint.inbox.withLock({ value in defer { value.removeAll() }; return value }) {
            switch command {
            case .open(let plan):
                do {
                    let session = try WHEPSession(plan: plan, kinds: kinds, codecs: codecs, certificate: endpoint.certificate, impairment: impairment, now: now)
                    sessions[plan.id] = session
                    byUsernameFragment[plan.credentials.ufrag] = plan.id
                } catch {
                    var statistics = WHEPSession.Statistics(id: plan.id)
                    statistics.end = .dtlsFailed
                    endpoint.sessionEnded(statistics)
                }
            case .close(let id):
                sessions[id]?.end(.deleted, now: now)
            }
        }
        var withoutSession = 0
        var dropped = 0
        while true {
            let received = (try? socket.receive(timeout: .zero) { datagram in
                guard let source = datagram.source?.normalized else {
                    dropped += 1
                    return
                }
                switch demultiplexer.classify(datagram.bytes) {
                case .stun:
                    guard let ufrag = ICELiteResponder.localUsernameFragment(ofRequest: datagram.bytes),
                          let id = byUsernameFragment[ufrag], let session = sessions[id]
                    else {
                        withoutSession += 1
                        return
                    }
                    session.receiveSTUN(datagram.bytes, from: source, now: datagram.arrival)
                case .dtls:
                    guard let session = session(at: source) else {
                        withoutSession += 1
                        return
                    }
                    session.receiveDTLS(datagram.bytes, now: datagram.arrival)
                case .rtcp:
                    guard let session = session(at: source) else {
                        withoutSession += 1
                        return
                    }
                    let wall = wallClock + now.duration(to: datagram.arrival).nanoseconds
                    session.receiveRTCP(datagram.mutableBytes, length: datagram.bytes.count, now: datagram.arrival, arrivalNTP: NTPTime.ntp(unixNanoseconds: wall), stores: &stores)
                case .rtp, .unknown:
                    dropped += 1
                }
            }) ?? 0
            if received == 0 { break }
        }
        if withoutSession + dropped > 0 {
            endpoint.statisticsValue.withLock { values in
                values.datagramsWithoutSession += withoutSession
                values.datagramsDropped += dropped
            }
        }
        var limitChanged = false
        for session in sessions.values {
            if session.takeKeyFrameRequest() { requests.keyFrame = true }
            if session.takeBitrateLimitChange() { limitChanged = true }
        }
        if limitChanged {
            let lowest = sessions.values.compactMap(\.bitrateLimit).min()
            if lowest != lowestLimit {
                lowestLimit = lowest
                requests.bitrateLimit = .some(lowest)
            }
        }
        defer { requests = Requests() }
        return requests
    }

    /// The live session whose checks came from `address`.
    private func session(at address: SocketAddress) -> WHEPSession? {
        if let id = byAddress[address], let session = sessions[id], !session.hasEnded, session.ice.isValidated(address) { return session }
        guard let (id, session) = sessions.first(where: { !$0.value.hasEnded && $0.value.ice.isValidated(address) }) else { return nil }
        if byAddress.count > 4 * max(sessions.count, 16) { byAddress.removeAll() }
        byAddress[address] = id
        return session
    }

    /// Hands the canonical packet `packet` of track `track` to every connected session (and
    /// keeps it for NACKs when the track retransmits).
    public func distribute(_ packet: [UInt8], track: Int, now: MonotonicInstant) {
        guard let parsed = packet.withUnsafeBytes({ try? RTPPacket(parsing: $0).sequenceNumber.rawValue }) else { return }
        if stores.indices.contains(track), stores[track] != nil {
            packet.withUnsafeBytes { stores[track]!.store($0, sequenceNumber: parsed, now: now) }
        }
        packet.withUnsafeBytes { bytes in
            // Parsed once for every session.
            guard let parsed = try? RTPPacket(parsing: bytes) else { return }
            let captureTime = captureTimeID.flatMap { parsed.headerExtension(id: $0) }
            for session in sessions.values { session.send(canonical: parsed, track: track, captureTime: captureTime, now: now) }
        }
    }

    /// Every connected session's sender reports.
    public func sendReports(wallClock: Int64, canonicalTimestamp: (Int) -> UInt32?, now: MonotonicInstant) {
        for session in sessions.values { session.sendReports(wallClock: wallClock, canonicalTimestamp: canonicalTimestamp, now: now) }
    }

    /// Runs every session's timers and sends what is due; ends sessions that are over (consent,
    /// close_notify, DTLS failure, DELETE). Returns when to run again.
    @discardableResult
    public func poll(now: MonotonicInstant) -> MonotonicInstant? {
        var next: MonotonicInstant?
        var ended: [String] = []
        for (id, session) in sessions {
            let due = session.poll(now: now) { bytes, address in
                try? socket.send(bytes, to: address)
            }
            if let due { next = min(next ?? due, due) }
            if session.hasEnded { ended.append(id) }
        }
        for id in ended {
            guard let session = sessions.removeValue(forKey: id) else { continue }
            byUsernameFragment[session.plan.credentials.ufrag] = nil
            endpoint.sessionEnded(session.statistics)
        }
        // Live statistics, once a second.
        if nextPublish.map({ now >= $0 }) ?? true {
            nextPublish = now.advanced(by: .seconds(1))
            let snapshot = sessions.values.map(\.statistics)
            endpoint.statisticsValue.withLock { values in
                var positions: [String: Int] = [:]
                for (index, session) in values.sessions.enumerated() { positions[session.id] = index }
                for statistics in snapshot {
                    if let index = positions[statistics.id] {
                        values.sessions[index] = statistics
                    } else {
                        values.sessions.append(statistics)
                    }
                }
            }
        }
        return next
    }

    /// Waits until the socket has a datagram or `deadline` (at most `limit`).
    public func wait(until deadline: MonotonicInstant, now: MonotonicInstant, limit: Duration) {
        var descriptor = pollfd(fd: socket.fileDescriptor, events: Int16(POLLIN), revents: 0)
        let wait = min(now.duration(to: deadline), limit)
        guard wait > .zero else { return }
        _ = Glibc.poll(&descriptor, 1, Int32(clamping: (wait.nanoseconds + 999_999) / 1_000_000))
    }

    /// Ends every session (the publisher stops): close_notify to each.
    public func endAll(now: MonotonicInstant) {
        for session in sessions.values { session.end(.publisherStopped, now: now) }
        poll(now: now)
    }
}
