public import PlayoutCore
public import PlayoutRTP

/// An ICE error: a ``PlayoutError`` with one of the ICE codes below.
public typealias ICEError = PlayoutError

extension PlayoutError.Code {
    /// No candidate pair was answered: the peer is unreachable over UDP from here.
    public static let iceFailed = Self("iceFailed")
    /// The selected pair stopped answering consent checks (RFC 7675).
    public static let iceConsentLost = Self("iceConsentLost")
    /// Local addresses could not be listed, or the interface asked for has none.
    public static let iceGathering = Self("iceGathering")
}

/// Which local socket a candidate is on: an opaque number the driver chose, handed back in
/// every ``ICEAgent/Transmit`` so the bytes leave from the right socket.
public struct ICESocketID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The driver's number for the socket.
    public var rawValue: Int
    /// Creates an ID.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// Creates an ID.
    public init(_ rawValue: Int) { self.rawValue = rawValue }
    public var description: String { "socket \(rawValue)" }
}

/// A local and a remote candidate the agent checks (or has selected), and the socket between them.
public struct ICECandidatePair: Hashable, Sendable, CustomStringConvertible {
    /// This side's candidate.
    public var local: ICECandidate
    /// The peer's candidate.
    public var remote: ICECandidate
    /// The socket the local candidate (its base) is on.
    public var socket: ICESocketID
    /// The pair priority (RFC 8445 §6.1.2.3) for the agent's role.
    public var priority: UInt64

    public var description: String { "\(local.address) → \(remote.address) (\(local.kind.rawValue)/\(remote.kind.rawValue))" }

    /// The pair priority: `2^32 × min(G, D) + 2 × max(G, D) + (G > D ? 1 : 0)`, with G the
    /// controlling agent's candidate priority and D the controlled agent's.
    public static func priority(controlling g: UInt32, controlled d: UInt32) -> UInt64 {
        (UInt64(min(g, d)) << 32) + 2 * UInt64(max(g, d)) + (g > d ? 1 : 0)
    }
}

extension ICEAgent {
    /// The agent's role (RFC 8445 §6.1.1): the controlling agent nominates.
    public enum Role: String, Hashable, Sendable {
        /// Nominates the pair (a WHEP client, a full agent facing ICE-lite).
        case controlling
        /// Follows the peer's nomination.
        case controlled
    }

    /// The connection state.
    public enum State: String, Hashable, Sendable {
        /// Not started.
        case new
        /// Checks are running.
        case checking
        /// A pair is selected; consent is being refreshed.
        case connected
        /// No pair succeeded in time, or consent was lost.
        case failed
        /// ``ICEAgent/close()`` was called.
        case closed
    }

    /// Bytes to send from a socket to an address.
    public struct Transmit: Hashable, Sendable {
        /// The datagram.
        public var bytes: [UInt8]
        /// Where it goes.
        public var destination: SocketAddress
        /// The socket it leaves from.
        public var socket: ICESocketID
    }

    /// What the driver does next (``ICEAgent/poll(now:)``).
    public enum Action: Hashable, Sendable {
        /// Send these bytes.
        case send(Transmit)
        /// Gathering ended: every local candidate (host and server-reflexive) for the offer.
        case gatheringComplete([ICECandidate])
        /// The state changed.
        case stateChanged(State)
        /// This pair carries the media from now on.
        case selectedPair(ICECandidatePair)
        /// The selected pair stopped answering for ``Configuration/consentTimeout``: the session ends with this error.
        case consentLost(ICEError)
        /// No pair succeeded: the session ends with this error.
        case failed(ICEError)
    }

    /// The agent's settings; defaults are named constants.
    public struct Configuration: Hashable, Sendable {
        /// Ta, the pacing of new checks (RFC 8445 §14.2): 50 ms.
        public static let defaultPacing: Duration = .milliseconds(50)
        /// The first retransmission timeout of a check: 500 ms (RFC 8445 §14.3's floor).
        public static let defaultInitialRetransmissionTimeout: Duration = .milliseconds(500)
        /// The cap of the doubling retransmission timeout: 1.6 s.
        public static let defaultMaximumRetransmissionTimeout: Duration = .milliseconds(1_600)
        /// Retransmissions of one check before it fails (Rc − 1 = 6).
        public static let defaultMaximumRetransmissions = 6
        /// When no check is answered by then, ICE fails: 8 s (within the 10 s a user waits).
        public static let defaultConnectivityTimeout: Duration = .seconds(8)
        /// How long the controlling agent waits for better pairs after the first valid one: 200 ms.
        public static let defaultNominationDelay: Duration = .milliseconds(200)
        /// Consent checks every 4–6 s (RFC 7675 §5.1: 5 s ± 20 %).
        public static let defaultConsentInterval: ClosedRange<Duration> = .seconds(4) ... .seconds(6)
        /// Consent expires 30 s after the last authenticated response (RFC 7675 §5.1).
        public static let defaultConsentTimeout: Duration = .seconds(30)
        /// How long server-reflexive gathering may take: 2 s.
        public static let defaultGatheringTimeout: Duration = .seconds(2)
        /// Remote candidates kept at most (signalled and peer-reflexive); also bounds the peer-reflexive local candidates learned. 64.
        public static let defaultMaximumRemoteCandidates = 64
        /// Candidate pairs kept at most (RFC 8445 §6.1.2.5 suggests 100).
        public static let defaultMaximumPairs = 100

        /// The role to start in (a WHEP client is controlling; an ICE-lite peer makes it so anyway).
        public var role: Role
        /// Ta: the time between two new checks.
        public var pacing: Duration
        /// The first retransmission timeout of a request; it doubles after each retransmission.
        public var initialRetransmissionTimeout: Duration
        /// The cap of the doubling retransmission timeout.
        public var maximumRetransmissionTimeout: Duration
        /// Retransmissions of one request before it is given up.
        public var maximumRetransmissions: Int
        /// ICE fails when no pair is selected this long after ``ICEAgent/start(now:)``.
        public var connectivityTimeout: Duration
        /// How long the controlling agent waits, after the first valid pair, for a better one to succeed.
        public var nominationDelay: Duration
        /// The range consent checks are drawn from, uniformly, each time.
        public var consentInterval: ClosedRange<Duration>
        /// Consent is lost when no authenticated response came for this long.
        public var consentTimeout: Duration
        /// A STUN server for server-reflexive candidates (`--stun HOST:PORT`, a WHEP `ice-server` Link).
        public var stunServer: SocketAddress?
        /// Server-reflexive gathering ends at the latest this long after ``ICEAgent/gather(now:)``.
        public var gatheringTimeout: Duration
        /// Remote candidates kept at most (signalled and peer-reflexive); also bounds the peer-reflexive local candidates learned.
        public var maximumRemoteCandidates: Int
        /// Candidate pairs kept at most.
        public var maximumPairs: Int
        /// The SOFTWARE attribute of responses; nil for none.
        public var software: String?
        /// The seed of the agent's random numbers (tie-breaker, transaction IDs, consent jitter);
        /// nil draws one from the system (what a real session does: transaction IDs must not be guessable).
        public var seed: UInt64?

        /// Creates a configuration with the defaults above.
        public init(
            role: Role = .controlling, pacing: Duration = defaultPacing,
            initialRetransmissionTimeout: Duration = defaultInitialRetransmissionTimeout,
            maximumRetransmissionTimeout: Duration = defaultMaximumRetransmissionTimeout,
            maximumRetransmissions: Int = defaultMaximumRetransmissions, connectivityTimeout: Duration = defaultConnectivityTimeout,
            nominationDelay: Duration = defaultNominationDelay, consentInterval: ClosedRange<Duration> = defaultConsentInterval,
            consentTimeout: Duration = defaultConsentTimeout, stunServer: SocketAddress? = nil, gatheringTimeout: Duration = defaultGatheringTimeout,
            maximumRemoteCandidates: Int = defaultMaximumRemoteCandidates, maximumPairs: Int = defaultMaximumPairs,
            software: String? = "Playout", seed: UInt64? = nil
        ) {
            self.role = role
            self.pacing = pacing
            self.initialRetransmissionTimeout = initialRetransmissionTimeout
            self.maximumRetransmissionTimeout = maximumRetransmissionTimeout
            self.maximumRetransmissions = maximumRetransmissions
            self.connectivityTimeout = connectivityTimeout
            self.nominationDelay = nominationDelay
            self.consentInterval = consentInterval
            self.consentTimeout = consentTimeout
            self.stunServer = stunServer
            self.gatheringTimeout = gatheringTimeout
            self.maximumRemoteCandidates = maximumRemoteCandidates
            self.maximumPairs = maximumPairs
            self.software = software
            self.seed = seed
        }
    }

    /// Counters, read as one snapshot.
    public struct Statistics: Hashable, Sendable {
        /// Connectivity checks sent (first transmissions, nominations included, consent excluded).
        public var checksSent = 0
        /// Retransmissions of checks and of server-reflexive requests.
        public var retransmissions = 0
        /// Authenticated success responses to checks.
        public var successResponses = 0
        /// Authenticated error responses (487 included).
        public var errorResponses = 0
        /// Authenticated checks from the peer.
        public var requestsReceived = 0
        /// Responses sent to the peer's checks.
        public var responsesSent = 0
        /// Messages dropped for a bad or missing MESSAGE-INTEGRITY or FINGERPRINT, or a wrong USERNAME.
        public var unauthenticatedDropped = 0
        /// Datagrams dropped because they are not a well-formed STUN message.
        public var malformedDropped = 0
        /// Responses dropped because no transaction of ours has their ID (late or forged).
        public var unmatchedResponsesDropped = 0
        /// Responses dropped because they came from another address than the request went to.
        public var asymmetricResponsesDropped = 0
        /// Role conflicts resolved (487 sent or received, or a switch of role).
        public var roleConflicts = 0
        /// Consent checks sent on the selected pair.
        public var consentChecksSent = 0
        /// Authenticated responses to consent checks.
        public var consentResponses = 0
        /// Remote candidates learned from the peer's checks.
        public var peerReflexiveRemoteCandidates = 0
        /// Local candidates learned from XOR-MAPPED-ADDRESS in responses.
        public var peerReflexiveLocalCandidates = 0
        /// Server-reflexive candidates from the STUN server.
        public var serverReflexiveCandidates = 0
        /// Pairs whose checks failed (timeout, error response, asymmetric response).
        public var pairsFailed = 0
        /// Peer checks or candidates not kept because a bound (remote candidates, pairs) was reached.
        public var overLimitDropped = 0

        /// All zero.
        public init() {}
    }
}
