public import PlayoutRTP

/// Why a WHEP subscriber's offer cannot be answered (the endpoint answers 400 with ``description``).
public enum WHEPOfferError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text is not SDP (RFC 8866) within the parser's bounds (64 KiB, 32 m-lines).
    case sdp(SDPParseError)
    /// The offer has no m-line.
    case noMedia
    /// An m-line without `a=mid` (WHEP offers are JSEP offers: every m-line has one).
    case missingMid(index: Int)
    /// Two m-lines with the same `a=mid`.
    case duplicateMid(String)
    /// No `a=ice-ufrag`/`a=ice-pwd` for the transport, nor at session level.
    case missingICECredentials
    /// An ICE credential is not 4–256 (ufrag) or 22–256 (pwd) ice-chars.
    case invalidICECredentials
    /// No `a=fingerprint` for the transport, nor at session level.
    case missingFingerprint
    /// A fingerprint that is not `<hash> <hex:hex:…>` of a hash DTLS-SRTP uses.
    case invalidFingerprint(String)
    /// `a=setup` other than `actpass` or `active`: this endpoint is the DTLS server.
    case invalidSetup(String)
    /// Several m-lines to answer but no `a=group:BUNDLE` holding them: one socket serves a session.
    case notBundled
    /// An m-line to answer without `a=rtcp-mux`: RTCP shares the one socket.
    case noRTCPMux(mid: String)
    /// No m-line asks for what the publisher sends (kind, codec and direction).
    case noCommonCodec(String)

    /// What is wrong, in the subscriber's words (the text of the 400 answer).
    public var description: String {
        switch self {
        case .sdp(let error): "the offer is not valid SDP: \(error)"
        case .noMedia: "the offer has no media section"
        case .missingMid(let index): "m-line \(index) of the offer has no a=mid"
        case .duplicateMid(let mid): "the offer uses mid '\(mid.prefix(64))' twice"
        case .missingICECredentials: "the offer has no ICE credentials (a=ice-ufrag, a=ice-pwd)"
        case .invalidICECredentials: "the offer's ICE credentials are not valid (ufrag 4–256, pwd 22–256 characters of [A-Za-z0-9+/])"
        case .missingFingerprint: "the offer has no DTLS fingerprint (a=fingerprint)"
        case .invalidFingerprint(let value): "the offer's fingerprint '\(value.prefix(120))' is not '<hash> <hex:hex:…>'"
        case .invalidSetup(let value): "the offer's a=setup:\(value.prefix(40)) cannot be answered: this endpoint is the DTLS server, offer actpass or active"
        case .notBundled: "the offer has several m-lines but no a=group:BUNDLE holding them: this endpoint serves a session on one socket"
        case .noRTCPMux(let mid): "m-line '\(mid.prefix(64))' of the offer has no a=rtcp-mux: RTCP shares the one socket"
        case .noCommonCodec(let what): "no codec in common: \(what)"
        }
    }
}

/// A WHEP subscriber's SDP offer, read into what the ICE-lite endpoint needs to answer it: the
/// peer's ICE credentials and DTLS fingerprint (of the BUNDLE transport, else the session), its
/// `a=setup`, the BUNDLE group, and per m-line its mid, direction, `rtcp-mux`, codecs (with RTX
/// and feedback; only those Playout sends) and header extension ids.
///
/// ```swift
/// let offer = try WHEPOfferReader(parsing: body)
/// offer.iceUsernameFragment, offer.fingerprint, offer.bundle
/// for media in offer.media { media.mid, media.codecs, media.extensionID(WHEPOffer.midExtensionURI) }
/// ```
public struct WHEPOfferReader: Sendable, Equatable {
    /// The parsed description.
    public var sessionDescription: SessionDescription
    /// The peer's ICE username fragment.
    public var iceUsernameFragment: String
    /// The peer's ICE password (unused by a lite agent, which only answers; kept for completeness).
    public var icePassword: String
    /// The peer's DTLS certificate fingerprint.
    public var fingerprint: DTLSFingerprint
    /// The offer's `a=setup` (`actpass` or `active`).
    public var setup: String
    /// The mids of `a=group:BUNDLE`, in order (empty without one).
    public var bundle: [String]
    /// The m-lines, in order (the shape ``WHEPAnswer`` reads an answer into).
    public var media: [WHEPAnswer.Media]

    /// Reads an offer.
    ///
    /// - Throws: ``WHEPOfferError`` for anything that cannot be answered.
    public init(parsing text: String) throws(WHEPOfferError) {
        let sdp: SessionDescription
        do throws(SDPParseError) {
            sdp = try SessionDescription(parsing: text)
        } catch {
            throw .sdp(error)
        }
        sessionDescription = sdp
        guard !sdp.media.isEmpty else { throw .noMedia }
        var mids: Set<String> = []
        for (index, section) in sdp.media.enumerated() {
            guard let mid = section.attribute("mid"), !mid.isEmpty else { throw .missingMid(index: index) }
            guard mids.insert(mid).inserted else { throw .duplicateMid(mid) }
        }
        media = sdp.media.map(WHEPAnswer.readMedia)
        let bundle = sdp.bundleMids
        self.bundle = bundle
        // The transport: the first m-line of the BUNDLE group (its tag), else the first open one.
        let tag = bundle.first
        let transport = sdp.media.first { tag != nil && tag == $0.attribute("mid") } ?? sdp.media.first { $0.port != 0 } ?? sdp.media[0]
        guard let ufrag = transport.attribute("ice-ufrag") ?? sdp.attribute("ice-ufrag"),
              let password = transport.attribute("ice-pwd") ?? sdp.attribute("ice-pwd")
        else { throw .missingICECredentials }
        guard WHEPAnswer.isICEString(ufrag, minimum: 4), WHEPAnswer.isICEString(password, minimum: 22) else { throw .invalidICECredentials }
        iceUsernameFragment = ufrag
        icePassword = password
        guard let fingerprintText = transport.attribute("fingerprint") ?? sdp.attribute("fingerprint") else { throw .missingFingerprint }
        do {
            fingerprint = try DTLSFingerprint(sdpValue: fingerprintText)
        } catch {
            throw .invalidFingerprint(fingerprintText)
        }
        let setup = (transport.attribute("setup") ?? sdp.attribute("setup") ?? "actpass").lowercased()
        guard setup == "actpass" || setup == "active" else { throw .invalidSetup(setup) }
        self.setup = setup
    }

    /// Whether the m-line `media` asks to receive (recvonly or sendrecv, not rejected).
    public static func wantsMedia(_ media: WHEPAnswer.Media) -> Bool {
        !media.isRejected && (media.direction == .recvonly || media.direction == .sendrecv)
    }
}
