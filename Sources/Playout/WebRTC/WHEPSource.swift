import Logging
public import PlayoutCore
import PlayoutRTP
import PlayoutWebRTC

/// How a subscriber asks a WHEP endpoint for its stream (``Subscriber/Options/whep``).
public struct WHEPSourceOptions: Sendable, Equatable {
    /// The bearer token (`Authorization: Bearer`), if the endpoint wants one.
    public var token: String?
    /// A STUN server (`host:port`) to learn this host's public address from; without one, only
    /// host candidates are offered.
    public var stunServer: String?
    /// The interface to gather host candidates on (nil: every interface that is up, loopback
    /// included when the endpoint is on loopback).
    public var iceInterface: String?
    /// Skip the https certificate check (said loudly in the log).
    public var insecure: Bool
    /// The kinds asked for, in m-line order.
    public var kinds: [MediaKind]
    /// Take any `http://` or `https://` source as a WHEP endpoint; by default only one whose path
    /// says `whep` is (other URLs go to libavformat).
    public var always: Bool

    /// Options with the defaults: no token, no STUN server, every interface, certificates
    /// checked, video and audio.
    public init(
        token: String? = nil, stunServer: String? = nil, iceInterface: String? = nil, insecure: Bool = false, kinds: [MediaKind] = [.video, .audio],
        always: Bool = false
    ) {
        self.token = token
        self.stunServer = stunServer
        self.iceInterface = iceInterface
        self.insecure = insecure
        self.kinds = kinds
        self.always = always
    }

    /// Whether `source` names a WHEP endpoint: an `http(s)://` URL whose path says `whep`
    /// (case-insensitively), or any `http(s)://` URL with ``always``.
    func isEndpoint(_ source: String) -> Bool {
        let lower = source.lowercased()
        let rest: Substring
        if lower.hasPrefix("http://") {
            rest = lower.dropFirst(7)
        } else if lower.hasPrefix("https://") {
            rest = lower.dropFirst(8)
        } else {
            return false
        }
        guard !always else { return true }
        guard let slash = rest.firstIndex(of: "/") else { return false }
        return rest[slash...].contains("whep")
    }
}

/// A WHEP endpoint a subscription connects to when it opens (draft-ietf-wish-whep): gathers host
/// (and server-reflexive) candidates on sockets of its own, posts the offer, reads the answer,
/// starts ICE and makes the tracks of the answer's m-lines, whose SRTP keys the DTLS handshake
/// gives once ICE connected. ``cancel()`` abandons an offer under way; the session is deleted at
/// the subscription's end.
final class WHEPConnector: @unchecked Sendable {
    let url: String
    let options: WHEPSourceOptions
    private let endpoint: WHEPURL
    private let client: WHEPClient
    private let logger = Logger(label: "playout.whep")

    /// A connector for `url` (checked now, nothing sent).
    ///
    /// - Throws: ``PlayoutError`` (`invalidSource`) for a URL that is not one.
    init(url: String, options: Subscriber.Options) throws {
        do throws(WHEPError) {
            endpoint = try WHEPURL(url)
        } catch {
            throw PlayoutError(.invalidSource, "\(url): \(error.message)")
        }
        self.url = url
        self.options = options.whep
        if options.whep.insecure, endpoint.scheme == .https {
            logger.warning("--insecure: the certificate of \(endpoint.host) is NOT checked; anyone on the path can read and change the session")
        }
        var session = WHEPSessionStateMachine.Configuration()
        if let duration = options.duration { session.retryWindow = min(session.retryWindow, duration) }
        client = WHEPClient(
            endpoint: endpoint, token: options.whep.token.flatMap { $0.isEmpty ? nil : $0 },
            configuration: .init(session: session, tls: .init(insecure: options.whep.insecure))
        )
    }

    /// The kinds asked for.
    var mediaKinds: Set<MediaKind> { Set(options.kinds) }

    /// Abandons an offer under way, or deletes the session (within 2 s). Idempotent.
    func cancel() {
        client.close()
    }

    /// Connects: sockets and candidates, the offer, the answer, ICE started, the tracks made.
    /// `milestones` hears the offer and the answer; `events` everything the transport says
    /// later. On a failure after the offer, the session is deleted before this throws.
    ///
    /// - Throws: ``PlayoutError`` naming what failed (no address to gather on, the server's
    ///   refusal, an answer Playout cannot take).
    func connect(
        clock: any PlayoutClock, delay: Duration, switchAfterSilence: Duration, feedback: Bool, seed: UInt64?,
        events: @escaping @Sendable (WebRTCConnection.Event) -> Void
    ) throws -> WebRTCConnection {
        var random = seed.map { SeededRandomNumberGenerator(seed: $0) } ?? SeededRandomNumberGenerator(seed: .random(in: 1...UInt64.max))
        let sockets = try bindSockets()
        var configuration = ICEAgent.Configuration(role: .controlling)
        configuration.seed = seed
        if let stun = options.stunServer { configuration.stunServer = try Self.resolve(stun) }
        var agent = ICEAgent(configuration: configuration, credentials: .generate(using: &random))
        for (index, candidate) in ICEHostInterfaces.candidates(for: sockets.map(\.localAddress)).enumerated() {
            agent.addLocalCandidate(candidate, socket: ICESocketID(index))
        }
        let candidates = try gather(&agent, sockets: sockets, clock: clock)
        let certificate: DTLSCertificate
        do throws(DTLSError) {
            certificate = try DTLSCertificate.shared()
        } catch {
            throw PlayoutError(.invalidState, "the DTLS certificate could not be made: \(error)")
        }
        let offer = WHEPOffer(
            iceUsernameFragment: agent.localCredentials.ufrag, icePassword: agent.localCredentials.password,
            candidates: candidates.map(\.sdpAttribute), fingerprint: certificate.fingerprint(.sha256),
            kinds: options.kinds.map { $0 == .video ? .video : .audio }
        )
        events(.milestone(.offerSent, clock.now))
        let info: WHEPSessionInfo
        do throws(WHEPError) {
            info = try client.open(offer: offer.serialized())
        } catch {
            throw PlayoutError(.invalidSource, "WHEP \(endpoint): \(error.message)")
        }
        events(.milestone(.answerReceived, clock.now))
        do {
            for server in info.unsupportedICEServers { logger.notice("WHEP: ICE server \(server) offered; TURN is not supported (host and STUN candidates only)") }
            // Vanilla ICE gathered before the offer: a STUN server the answer names comes too late.
            for server in info.stunServers where options.stunServer == nil {
                logger.info("WHEP: the server names STUN server \(server); candidates were gathered before the offer: give it with --stun to use it")
            }
            return try accept(
                info, agent: agent, sockets: sockets, certificate: certificate, clock: clock, delay: delay, switchAfterSilence: switchAfterSilence,
                feedback: feedback, random: &random, events: events
            )
        } catch {
            client.close()
            throw error
        }
    }

    /// The answer taken: the peer's candidates and credentials to the agent, the DTLS endpoint in
    /// the role the answer leaves, a track per m-line Playout decodes.
    private func accept(
        _ info: WHEPSessionInfo, agent: ICEAgent, sockets: [UDPReceiver], certificate: DTLSCertificate, clock: any PlayoutClock, delay: Duration,
        switchAfterSilence: Duration, feedback: Bool, random: inout SeededRandomNumberGenerator, events: @escaping @Sendable (WebRTCConnection.Event) -> Void
    ) throws -> WebRTCConnection {
        let answer: WHEPAnswer
        do throws(WHEPAnswerError) {
            answer = try WHEPAnswer(parsing: info.answer)
        } catch {
            throw PlayoutError(.invalidSource, "WHEP \(endpoint): the answer cannot be used: \(error)")
        }
        var agent = agent
        var remotes: [ICECandidate] = []
        for line in answer.candidates {
            do {
                remotes.append(try ICECandidate(sdp: line))
            } catch {
                logger.debug("WHEP: answer candidate '\(line)' left out: \(error)")
            }
        }
        agent.setRemote(credentials: ICECredentials(ufrag: answer.iceUsernameFragment, password: answer.icePassword), candidates: remotes, isLite: answer.iceLite)
        let dtls: DTLSEndpoint
        do throws(DTLSError) {
            dtls = try DTLSEndpoint(role: .init(answerSetup: answer.setup.rawValue), certificate: certificate, remoteFingerprint: answer.fingerprint)
        } catch {
            throw PlayoutError(.invalidSource, "WHEP \(endpoint): \(error)")
        }
        let cname = "playout-\(String(UInt64.random(in: 1...UInt64.max, using: &random), radix: 16))@whep"
        var tracks: [SubscribedTrack] = []
        var routes: [BundleRouter.Route] = []
        var midExtensionID: UInt8?
        for (index, media) in answer.media.enumerated() {
            guard !media.isRejected, let codec = media.codecs.first, let kind = Self.kind(media.kind), !tracks.contains(where: { $0.kind == kind }) else { continue }
            var section = answer.sessionDescription.media[index]
            section.payloadTypes = [codec.payloadType] + (codec.retransmissionPayloadType.map { [$0] } ?? [])
            section.crypto = []
            let track = try SubscribedTrack(
                index: tracks.count, kind: kind, media: section, session: nil, delay: delay, switchAfterSilence: switchAfterSilence,
                feedback: feedback ? TrackReceiver.FeedbackSettings(ssrc: UInt32.random(in: 1...UInt32.max, using: &random), cname: cname) : nil,
                bind: false, keysFromDTLS: true
            )
            tracks.append(track)
            routes.append(BundleRouter.Route(mid: media.mid, payloadTypes: section.payloadTypes, ssrcs: media.ssrcs))
            if midExtensionID == nil, let id = media.extensionID(WHEPOffer.midExtensionURI), id < 256 { midExtensionID = UInt8(id) }
            logger.info("WHEP: \(kind.rawValue) \(codec.name)/\(codec.clockRate) (payload type \(codec.payloadType)\(codec.retransmissionPayloadType.map { ", RTX \($0)" } ?? ""))")
        }
        guard !tracks.isEmpty else {
            throw PlayoutError(.unsupportedMedia, "WHEP \(endpoint): the answer has no audio or video m-line with a codec Playout decodes")
        }
        agent.start(now: clock.now)
        return WebRTCConnection(
            sockets: sockets, agent: agent, dtls: dtls, router: BundleRouter(routes: routes, midExtensionID: midExtensionID), tracks: tracks,
            events: events, endSession: { [client] in client.close() }
        )
    }

    private static func kind(_ type: SDPMediaType) -> MediaKind? {
        type == .video ? .video : type == .audio ? .audio : nil
    }

    /// One socket per local address to gather on (an ephemeral port each).
    private func bindSockets() throws -> [UDPReceiver] {
        let loopback = ["127.0.0.1", "localhost", "::1", "[::1]"].contains(endpoint.host.lowercased())
        let addresses: [ICEHostInterfaces.Address]
        do throws(ICEError) {
            addresses = try ICEHostInterfaces.addresses(.init(includeLoopback: loopback || options.iceInterface == "lo", interface: options.iceInterface))
        } catch {
            throw PlayoutError(.invalidSource, "WHEP: \(error.message)")
        }
        var sockets: [UDPReceiver] = []
        for address in addresses {
            do {
                sockets.append(try UDPReceiver(bindingTo: SocketAddress(host: address.host, port: 0)))
            } catch {
                logger.debug("WHEP: no socket on \(address.host) (\(address.interface)): \(error)")
            }
        }
        guard !sockets.isEmpty else {
            throw PlayoutError(.invalidSource, "WHEP: no local address to receive on\(options.iceInterface.map { " on interface \($0)" } ?? "")")
        }
        return sockets
    }

    /// Gathers: host candidates at once; with a STUN server, its answers (at most the gathering
    /// timeout) — before the offer, which carries every candidate (vanilla ICE).
    private func gather(_ agent: inout ICEAgent, sockets: [UDPReceiver], clock: any PlayoutClock) throws -> [ICECandidate] {
        agent.gather(now: clock.now)
        while true {
            while let action = agent.poll(now: clock.now) {
                switch action {
                case .gatheringComplete(let candidates): return candidates
                case .send(let transmit):
                    try? transmit.bytes.withUnsafeBytes { try sockets[transmit.socket.rawValue].send($0, to: transmit.destination) }
                default: break
                }
            }
            let wait = agent.nextDeadline.map { max(.zero, min(clock.now.duration(to: $0), .milliseconds(20))) } ?? .milliseconds(20)
            for (index, socket) in sockets.enumerated() {
                _ = try? socket.receive(timeout: index == 0 ? wait : .zero) { datagram in
                    guard let source = datagram.source else { return }
                    agent.receive(datagram.bytes, from: source, on: ICESocketID(index), now: clock.now)
                }
            }
        }
    }

    /// `host:port` of a STUN server.
    private static func resolve(_ text: String) throws -> SocketAddress {
        let colon = text.lastIndex(of: ":")
        guard let colon, let port = UInt16(text[text.index(after: colon)...]), port > 0 else {
            throw PlayoutError(.invalidOption, "--stun \(text): give HOST:PORT, e.g. stun.example.org:3478")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        do {
            return try SocketAddress(host: host, port: port)
        } catch {
            throw PlayoutError(.invalidOption, "--stun \(text): \(error)")
        }
    }
}
