public import PlayoutRTP

/// Why an SDP answer cannot be used.
public enum WHEPAnswerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text is not SDP (RFC 8866) within the parser's bounds.
    case sdp(SDPParseError)
    /// The answer has no m-line.
    case noMedia
    /// An accepted m-line (or the session) has no `a=ice-ufrag`/`a=ice-pwd`.
    case missingICECredentials(mid: String?)
    /// An ICE credential is not 4–256 (ufrag) or 22–256 (pwd) ice-chars.
    case invalidICECredentials(mid: String?)
    /// No `a=fingerprint` for an accepted m-line, nor at session level.
    case missingFingerprint(mid: String?)
    /// A fingerprint that is not `<hash> <hex pairs separated by colons>` of a hash DTLS-SRTP
    /// uses (sha-1, sha-256, sha-384, sha-512; ``DTLSFingerprint``).
    case invalidFingerprint(String)
    /// Two m-lines with the same `a=mid`.
    case duplicateMid(String)
    /// Every m-line is rejected (port 0), or none has a codec Playout decodes.
    case noSupportedCodec
    /// An `a=setup` value other than active, passive or actpass.
    case invalidSetup(String)

    /// What is wrong, in a user's words.
    public var description: String {
        switch self {
        case .sdp(let error): "the WHEP answer is not valid SDP: \(error)"
        case .noMedia: "the WHEP answer has no media section"
        case .missingICECredentials(let mid): "the WHEP answer has no ICE credentials (a=ice-ufrag, a=ice-pwd)\(Self.section(mid))"
        case .invalidICECredentials(let mid): "the WHEP answer's ICE credentials are not valid (ufrag 4–256, pwd 22–256 characters of [A-Za-z0-9+/])\(Self.section(mid))"
        case .missingFingerprint(let mid): "the WHEP answer has no DTLS fingerprint (a=fingerprint)\(Self.section(mid))"
        case .invalidFingerprint(let value): "the WHEP answer's fingerprint '\(value.prefix(120))' is not '<hash> <hex:hex:…>'"
        case .duplicateMid(let mid): "the WHEP answer uses mid '\(mid.prefix(64))' twice"
        case .noSupportedCodec: "the WHEP answer accepts no codec Playout decodes (H.264, H.265, VP8, VP9, Opus)"
        case .invalidSetup(let value): "the WHEP answer's a=setup:\(value.prefix(40)) is not active, passive or actpass"
        }
    }

    private static func section(_ mid: String?) -> String { mid.map { " for mid '\($0.prefix(64))'" } ?? "" }
}

/// A WHEP server's SDP answer, read into what ICE, DTLS and the receive pipeline need.
///
/// ICE and DTLS parameters are those of the first accepted m-line (BUNDLE: one transport),
/// falling back to session-level attributes. Codecs are kept only when Playout decodes them
/// (H.264, H.265, VP8, VP9, Opus), each with its RTX payload type and feedback; anything else is
/// listed in ``Media/otherPayloadTypes``.
///
/// ```swift
/// let answer = try WHEPAnswer(parsing: session.answer)
/// answer.iceUsernameFragment, answer.icePassword, answer.fingerprint, answer.setup
/// for media in answer.media where !media.isRejected {
///     media.mid, media.codecs.first?.name, media.extensionID(WHEPOffer.midExtensionURI)
/// }
/// ```
public struct WHEPAnswer: Sendable, Equatable {
    /// The DTLS role the answerer takes (`a=setup`, RFC 4145/5763).
    public enum Setup: String, Sendable, Equatable {
        /// The answerer starts the DTLS handshake: we are the server.
        case active
        /// The answerer waits: we start the handshake.
        case passive
        /// Either (not valid in an answer by RFC 5763; reported as written).
        case actpass
    }

    /// One codec the answer kept.
    public struct Codec: Sendable, Equatable {
        /// The payload type.
        public var payloadType: UInt8
        /// The encoding name as written (`H264`, `VP8`, `opus` …).
        public var name: String
        /// The RTP clock rate.
        public var clockRate: UInt32
        /// The channel count (audio), when given.
        public var channels: UInt16?
        /// The `a=fmtp` parameters, when given.
        public var formatParameters: FormatParameters?
        /// The `a=rtcp-fb` lines that apply to it (its own and `*`).
        public var feedback: [RTCPFeedbackCapability]
        /// The RTX payload type that retransmits it (`a=fmtp:RTX apt=PT`), if any.
        public var retransmissionPayloadType: UInt8?
    }

    /// One m-line of the answer.
    public struct Media: Sendable, Equatable {
        /// `video`, `audio`, …
        public var kind: SDPMediaType
        /// `a=mid`, if any.
        public var mid: String?
        /// The answerer's direction (`sendonly` for a WHEP server that sends).
        public var direction: SDPDirection
        /// Whether the server rejected the m-line (port 0).
        public var isRejected: Bool
        /// The codecs kept, in the answer's order of preference.
        public var codecs: [Codec]
        /// The payload types the answer lists that Playout does not decode (RTX excluded).
        public var otherPayloadTypes: [UInt8]
        /// Header extension ids by URI (`a=extmap`).
        public var extensionIDs: [String: UInt16]
        /// The SSRCs announced with `a=ssrc`, in order, without repeats.
        public var ssrcs: [UInt32]
        /// `a=ssrc-group:FID` pairs: (media SSRC, RTX SSRC).
        public var retransmissionSSRCs: [(media: UInt32, rtx: UInt32)]
        /// `a=rtcp-mux` present.
        public var rtcpMux: Bool

        /// The id of the header extension with `uri`, if negotiated.
        public func extensionID(_ uri: String) -> UInt16? { extensionIDs[uri] }

        public static func == (lhs: Media, rhs: Media) -> Bool {
            lhs.kind == rhs.kind && lhs.mid == rhs.mid && lhs.direction == rhs.direction && lhs.isRejected == rhs.isRejected
                && lhs.codecs == rhs.codecs && lhs.otherPayloadTypes == rhs.otherPayloadTypes && lhs.extensionIDs == rhs.extensionIDs
                && lhs.ssrcs == rhs.ssrcs && lhs.rtcpMux == rhs.rtcpMux
                && lhs.retransmissionSSRCs.map(\.media) == rhs.retransmissionSSRCs.map(\.media)
                && lhs.retransmissionSSRCs.map(\.rtx) == rhs.retransmissionSSRCs.map(\.rtx)
        }
    }

    /// The encoding names Playout decodes (compared case-insensitively).
    public static let supportedEncodings: Set<String> = ["h264", "h265", "vp8", "vp9", "opus"]

    /// The parsed description, for anything not modelled here.
    public var sessionDescription: SessionDescription
    /// The remote ICE username fragment.
    public var iceUsernameFragment: String
    /// The remote ICE password.
    public var icePassword: String
    /// `a=ice-lite`: the server does not check; we are controlling and nominate.
    public var iceLite: Bool
    /// The remote candidates: the values of the `a=candidate:` lines of the transport's m-line
    /// (as written, without the `candidate:` prefix), for the ICE agent to parse.
    public var candidates: [String]
    /// `a=end-of-candidates` present.
    public var endOfCandidates: Bool
    /// The remote DTLS certificate's fingerprint.
    public var fingerprint: DTLSFingerprint
    /// The DTLS role the server takes (`active` when the answer says nothing, RFC 4145).
    public var setup: Setup
    /// The mids of the answer's `a=group:BUNDLE`, in order (empty without BUNDLE).
    public var bundle: [String]
    /// The m-lines, in order.
    public var media: [Media]

    /// Reads an answer.
    ///
    /// - Throws: ``WHEPAnswerError``: not SDP (also when over 64 KiB or 32 m-lines), no media,
    ///   missing or invalid ICE credentials or fingerprint, duplicate mids, no supported codec.
    public init(parsing text: String) throws(WHEPAnswerError) {
        let sdp: SessionDescription
        do throws(SDPParseError) {
            sdp = try SessionDescription(parsing: text)
        } catch {
            throw .sdp(error)
        }
        sessionDescription = sdp
        guard !sdp.media.isEmpty else { throw .noMedia }
        var mids: Set<String> = []
        for section in sdp.media {
            if let mid = section.attribute("mid") {
                guard mids.insert(mid).inserted else { throw .duplicateMid(mid) }
            }
        }
        media = sdp.media.map(Self.readMedia)
        guard let transportIndex = sdp.media.indices.first(where: { sdp.media[$0].port != 0 }),
              media.contains(where: { !$0.isRejected && !$0.codecs.isEmpty })
        else { throw .noSupportedCodec }
        let transport = sdp.media[transportIndex]
        let mid = transport.attribute("mid")
        guard let ufrag = transport.attribute("ice-ufrag") ?? sdp.attribute("ice-ufrag"),
              let password = transport.attribute("ice-pwd") ?? sdp.attribute("ice-pwd")
        else { throw .missingICECredentials(mid: mid) }
        guard Self.isICEString(ufrag, minimum: 4), Self.isICEString(password, minimum: 22) else { throw .invalidICECredentials(mid: mid) }
        iceUsernameFragment = ufrag
        icePassword = password
        iceLite = sdp.attribute("ice-lite") != nil || transport.attribute("ice-lite") != nil
        guard let fingerprintText = transport.attribute("fingerprint") ?? sdp.attribute("fingerprint") else { throw .missingFingerprint(mid: mid) }
        fingerprint = try Self.readFingerprint(fingerprintText)
        let setupText = (transport.attribute("setup") ?? sdp.attribute("setup") ?? "active").lowercased()
        guard let setup = Setup(rawValue: setupText) else { throw .invalidSetup(setupText) }
        self.setup = setup
        candidates = transport.attributes.filter { $0.name.lowercased() == "candidate" }.compactMap(\.value)
            + sdp.attributes.filter { $0.name.lowercased() == "candidate" }.compactMap(\.value)
        endOfCandidates = transport.attribute("end-of-candidates") != nil || sdp.attribute("end-of-candidates") != nil
        bundle = sdp.bundleMids
    }

    /// ice-char = ALPHA / DIGIT / "+" / "/" (RFC 8839 §5.4), `minimum`…256 of them.
    static func isICEString(_ text: String, minimum: Int) -> Bool {
        (minimum...256).contains(text.utf8.count)
            && text.utf8.allSatisfy { $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "/") }
    }

    static func readFingerprint(_ text: String) throws(WHEPAnswerError) -> DTLSFingerprint {
        do {
            return try DTLSFingerprint(sdpValue: text)
        } catch {
            throw .invalidFingerprint(text)
        }
    }

    static func readMedia(_ section: MediaDescription) -> Media {
        let feedback = section.rtcpFeedback
        let rtx = section.retransmissionPayloadTypes
        var codecs: [Codec] = []
        var other: [UInt8] = []
        for payloadType in section.payloadTypes {
            guard let map = section.rtpMap(for: payloadType) else {
                other.append(payloadType)
                continue
            }
            if map.encodingName.lowercased() == "rtx" { continue }
            guard supportedEncodings.contains(map.encodingName.lowercased()) else {
                other.append(payloadType)
                continue
            }
            codecs.append(Codec(
                payloadType: payloadType, name: map.encodingName, clockRate: map.clockRate, channels: map.channels,
                formatParameters: section.formatParameters(for: payloadType),
                feedback: feedback.filter { $0.payloadType == nil || $0.payloadType == payloadType },
                retransmissionPayloadType: rtx.first { $0.original == payloadType }?.rtx
            ))
        }
        var extensions: [String: UInt16] = [:]
        for map in section.extensionMaps where extensions[map.uri] == nil { extensions[map.uri] = map.id }
        var ssrcs: [UInt32] = []
        for attribute in section.ssrcAttributes where !ssrcs.contains(attribute.ssrc) { ssrcs.append(attribute.ssrc) }
        var groups: [(media: UInt32, rtx: UInt32)] = []
        for attribute in section.attributes where attribute.name.lowercased() == "ssrc-group" {
            let words = (attribute.value ?? "").split(separator: " ")
            guard words.count == 3, words[0].uppercased() == "FID", let primary = UInt32(words[1]), let repair = UInt32(words[2]) else { continue }
            groups.append((primary, repair))
        }
        return Media(
            kind: section.kind, mid: section.attribute("mid"), direction: section.direction, isRejected: section.port == 0,
            codecs: section.port == 0 ? [] : codecs, otherPayloadTypes: other, extensionIDs: extensions,
            ssrcs: ssrcs, retransmissionSSRCs: groups, rtcpMux: section.rtcpMux
        )
    }
}

extension SessionDescription {
    /// The mids of the first `a=group:BUNDLE`, in order (empty without one).
    var bundleMids: [String] {
        attributes.first { $0.name.lowercased() == "group" && ($0.value ?? "").uppercased().hasPrefix("BUNDLE") }
            .map { $0.value!.split(separator: " ").dropFirst().map(String.init) } ?? []
    }
}

extension UInt8 {
    /// `A`–`Z`, `a`–`z`, `0`–`9`.
    var isASCIIAlphanumeric: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
    }
}
