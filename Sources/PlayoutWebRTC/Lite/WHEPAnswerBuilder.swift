public import PlayoutCore
public import PlayoutRTP

/// One stream an ICE-lite WHEP endpoint sends, as its answers describe it.
public struct WHEPLiteTrack: Sendable, Equatable {
    /// H.264, VP8 (video) or Opus (audio), as the publisher encodes them.
    public var codec: Codec
    /// The RTP clock rate (90,000 video, 48,000 Opus).
    public var clockRate: UInt32
    /// Audio channels (Opus: 2).
    public var channels: UInt16?
    /// The feedback the sender answers, without payload type (`nack`, `nack pli`, `ccm fir`,
    /// `goog-remb`, `ccm tmmbr`): an answer keeps those the offer lists for the chosen codec.
    public var feedback: [RTCPFeedbackCapability]
    /// Whether NACKs are answered with RTX (RFC 4588) when the offer has an RTX payload type.
    public var retransmission: Bool
    /// The media SSRC announced with `a=ssrc`.
    public var ssrc: UInt32
    /// The RTX SSRC (`a=ssrc-group:FID`), used when RTX is negotiated.
    public var retransmissionSSRC: UInt32

    /// Creates a track description.
    public init(
        codec: Codec, clockRate: UInt32, channels: UInt16? = nil, feedback: [RTCPFeedbackCapability] = [], retransmission: Bool = false,
        ssrc: UInt32, retransmissionSSRC: UInt32 = 0
    ) {
        self.codec = codec
        self.clockRate = clockRate
        self.channels = channels
        self.feedback = feedback
        self.retransmission = retransmission
        self.ssrc = ssrc
        self.retransmissionSSRC = retransmissionSSRC
    }
}

/// What an answer agreed for one track: the offer's numbers the packets must carry.
public struct WHEPLiteNegotiatedTrack: Sendable, Equatable {
    /// The index of the track in the builder's `tracks`.
    public var track: Int
    /// The offer's `a=mid` of the m-line (written into `sdes:mid`).
    public var mid: String
    /// The offer's payload type of the codec.
    public var payloadType: UInt8
    /// The offer's RTX payload type for it (nil: no RTX).
    public var retransmissionPayloadType: UInt8?
    /// The offer's `sdes:mid` extension id (nil: not offered).
    public var midExtensionID: UInt8?
    /// The offer's `abs-capture-time` extension id (nil: not offered).
    public var absoluteCaptureTimeExtensionID: UInt8?
    /// The feedback kinds agreed (with the payload type).
    public var feedback: [RTCPFeedbackCapability]
    /// The SSRCs (media, RTX) announced.
    public var ssrc: UInt32
    /// The RTX SSRC, when RTX is agreed.
    public var retransmissionSSRC: UInt32?

    /// What was agreed for one track.
    public init(
        track: Int, mid: String, payloadType: UInt8, retransmissionPayloadType: UInt8? = nil, midExtensionID: UInt8? = nil,
        absoluteCaptureTimeExtensionID: UInt8? = nil, feedback: [RTCPFeedbackCapability] = [], ssrc: UInt32, retransmissionSSRC: UInt32? = nil
    ) {
        self.track = track
        self.mid = mid
        self.payloadType = payloadType
        self.retransmissionPayloadType = retransmissionPayloadType
        self.midExtensionID = midExtensionID
        self.absoluteCaptureTimeExtensionID = absoluteCaptureTimeExtensionID
        self.feedback = feedback
        self.ssrc = ssrc
        self.retransmissionSSRC = retransmissionSSRC
    }
}

/// The answer of an ICE-lite WHEP endpoint to one offer (draft-ietf-wish-whep, RFC 8829's
/// answerer rules): `a=ice-lite`, our credentials and fingerprint, `a=setup:passive` (we are the
/// DTLS server), `a=group:BUNDLE` of the m-lines answered, and per m-line the offer's mid,
/// `sendonly`, `rtcp-mux`, the codec the publisher sends under THE OFFER's payload type (its RTX
/// payload type when offered), the offer's `sdes:mid` and `abs-capture-time` extension ids, the
/// feedback both sides take, `a=ssrc` (and `a=ssrc-group:FID`), and the host candidates of the
/// one socket with `a=end-of-candidates`. M-lines that ask for nothing the publisher sends are
/// rejected (port 0, `inactive`).
///
/// Codec choice: H.264 needs `packetization-mode=1` (a payload type whose `profile-level-id`
/// has the publisher's profile is preferred, else the first in the offer's order); VP8 and Opus
/// by name. The offer's `a=fmtp` of the chosen payload type is echoed.
///
/// ```swift
/// let answer = try WHEPAnswerBuilder(offer: offer, tracks: tracks, credentials: ice, fingerprint: certificate.fingerprint,
///                                    candidates: [socket.localAddress]).build()
/// body = answer.sessionDescription.serialized()
/// ```
public struct WHEPAnswerBuilder: Sendable {
    /// The offer answered.
    public var offer: WHEPOfferReader
    /// What the publisher sends (one per kind).
    public var tracks: [WHEPLiteTrack]
    /// Our ICE credentials.
    public var credentials: ICECredentials
    /// Our certificate's fingerprint.
    public var fingerprint: DTLSFingerprint
    /// The host candidates (the socket's addresses).
    public var candidates: [SocketAddress]
    /// The H.264 `profile-level-id` the publisher's stream has (nil: any), preferred among the offer's.
    public var h264ProfileLevelID: String?
    /// `a=ssrc … cname:` value.
    public var canonicalName: String
    /// The `o=` session id.
    public var sessionID: String

    /// The answer and what it agreed.
    public struct Answer: Sendable, Equatable {
        /// The SDP answer.
        public var sessionDescription: SessionDescription
        /// Per answered m-line, what the packets must carry.
        public var tracks: [WHEPLiteNegotiatedTrack]
    }

    /// A builder; ``build()`` does the work.
    public init(
        offer: WHEPOfferReader, tracks: [WHEPLiteTrack], credentials: ICECredentials, fingerprint: DTLSFingerprint, candidates: [SocketAddress],
        h264ProfileLevelID: String? = nil, canonicalName: String = "playout", sessionID: String = "1"
    ) {
        self.offer = offer
        self.tracks = tracks
        self.credentials = credentials
        self.fingerprint = fingerprint
        self.candidates = candidates
        self.h264ProfileLevelID = h264ProfileLevelID
        self.canonicalName = canonicalName
        self.sessionID = sessionID
    }

    /// Chooses, per offered m-line, what to send, and writes the answer.
    ///
    /// - Throws: ``WHEPOfferError/noCommonCodec(_:)`` when no m-line asks for what the publisher
    ///   sends; ``WHEPOfferError/notBundled`` or ``WHEPOfferError/noRTCPMux(mid:)`` when the
    ///   m-lines answered cannot share the one socket.
    public func build() throws(WHEPOfferError) -> Answer {
        var used = Set<Int>()
        var agreed: [WHEPLiteNegotiatedTrack] = []
        var sections: [MediaDescription] = []
        for (index, media) in offer.media.enumerated() {
            let section = offer.sessionDescription.media[index]
            let mid = media.mid ?? String(index)
            guard WHEPOfferReader.wantsMedia(media),
                  let (trackIndex, codec) = choose(for: media, excluding: used)
            else {
                sections.append(rejected(section, mid: mid))
                continue
            }
            guard media.rtcpMux else { throw .noRTCPMux(mid: mid) }
            used.insert(trackIndex)
            let track = tracks[trackIndex]
            let rtx = track.retransmission ? codec.retransmissionPayloadType : nil
            let offered = Set(codec.feedback.map { RTCPFeedbackCapability(payloadType: nil, type: $0.type, parameter: $0.parameter) })
            // Generic NACK is answered with RTX only: without an RTX payload type it is not agreed.
            let feedback = track.feedback.filter { offered.contains(RTCPFeedbackCapability(payloadType: nil, type: $0.type, parameter: $0.parameter)) }
                .filter { rtx != nil || !($0.type == "nack" && $0.parameter == nil) }
                .map { RTCPFeedbackCapability(payloadType: codec.payloadType, type: $0.type, parameter: $0.parameter) }
            let negotiated = WHEPLiteNegotiatedTrack(
                track: trackIndex, mid: mid, payloadType: codec.payloadType, retransmissionPayloadType: rtx,
                midExtensionID: media.extensionID(WHEPOffer.midExtensionURI).flatMap(Self.oneByteID),
                absoluteCaptureTimeExtensionID: media.extensionID(WHEPOffer.absoluteCaptureTimeExtensionURI).flatMap(Self.oneByteID),
                feedback: feedback, ssrc: track.ssrc, retransmissionSSRC: rtx == nil ? nil : track.retransmissionSSRC
            )
            agreed.append(negotiated)
            sections.append(accepted(negotiated, codec: codec, kind: section.kind, proto: section.proto))
        }
        guard !agreed.isEmpty else {
            let sent = tracks.map { $0.codec == .h264 ? "H264 (packetization-mode=1)" : $0.codec.rawValue }.joined(separator: ", ")
            throw .noCommonCodec("the publisher sends \(sent); the offer asks to receive none of them")
        }
        let answeredMids = agreed.map(\.mid)
        if answeredMids.count > 1, !answeredMids.allSatisfy(offer.bundle.contains) { throw .notBundled }
        // BUNDLE in the offer's m-line order.
        let bundle = offer.media.compactMap(\.mid).filter(answeredMids.contains)
        let address = candidates.first
        let sdp = SessionDescription(
            origin: SDPOrigin(username: "playout", sessionID: sessionID, sessionVersion: "2", addressType: address?.isIPv6 == true ? .ip6 : .ip4, address: address?.host ?? "127.0.0.1"),
            sessionName: "playout publish",
            attributes: [
                SDPAttribute(name: "ice-lite"),
                SDPAttribute(name: "group", value: (["BUNDLE"] + bundle).joined(separator: " ")),
                SDPAttribute(name: "msid-semantic", value: "WMS playout"),
            ],
            media: sections
        )
        return Answer(sessionDescription: sdp, tracks: agreed)
    }

    /// The track and offered codec for an m-line: the first track of its kind not answered yet
    /// whose codec the m-line offers.
    private func choose(for media: WHEPAnswer.Media, excluding used: Set<Int>) -> (Int, WHEPAnswer.Codec)? {
        for (index, track) in tracks.enumerated() where !used.contains(index) && track.codec.kind.rawValue == media.kind.rawValue {
            let candidates = media.codecs.filter { offered in
                guard offered.name.lowercased() == track.codec.rawValue.lowercased(), offered.clockRate == track.clockRate else { return false }
                guard track.codec == .h264 else { return true }
                let mode = offered.formatParameters?.parameters.first { $0.name.lowercased() == "packetization-mode" }?.value
                return mode == "1"
            }
            if track.codec == .h264, let profile = h264ProfileLevelID?.lowercased().prefix(2),
               let preferred = candidates.first(where: { Self.profileLevelID(of: $0)?.lowercased().prefix(2) == profile }) {
                return (index, preferred)
            }
            if let first = candidates.first { return (index, first) }
        }
        return nil
    }

    private static func profileLevelID(of codec: WHEPAnswer.Codec) -> String? {
        codec.formatParameters?.parameters.first { $0.name.lowercased() == "profile-level-id" }?.value
    }

    /// One-byte header extension ids are 1…14 (RFC 8285); anything else is not used.
    private static func oneByteID(_ id: UInt16) -> UInt8? {
        (1...14).contains(id) ? UInt8(id) : nil
    }

    private func transportAttributes() -> [SDPAttribute] {
        [
            SDPAttribute(name: "ice-ufrag", value: credentials.ufrag),
            SDPAttribute(name: "ice-pwd", value: credentials.password),
            SDPAttribute(name: "fingerprint", value: fingerprint.sdpValue),
            SDPAttribute(name: "setup", value: "passive"),
        ]
    }

    private func accepted(_ agreed: WHEPLiteNegotiatedTrack, codec: WHEPAnswer.Codec, kind: SDPMediaType, proto: TransportProtocol) -> MediaDescription {
        let track = tracks[agreed.track]
        let port = candidates.first?.port ?? 9
        var section = MediaDescription(kind: kind, port: port, proto: proto, payloadTypes: [agreed.payloadType])
        section.connection = ConnectionData(addressType: candidates.first?.isIPv6 == true ? .ip6 : .ip4, address: candidates.first?.host ?? "0.0.0.0")
        section.rtcpMux = true
        section.direction = .sendonly
        section.rtpMaps = [RTPMap(payloadType: agreed.payloadType, encodingName: codec.name, clockRate: codec.clockRate, channels: codec.channels ?? track.channels)]
        if let parameters = codec.formatParameters { section.formatParameters = [parameters] }
        if let rtx = agreed.retransmissionPayloadType {
            section.payloadTypes.append(rtx)
            section.rtpMaps.append(RTPMap(payloadType: rtx, encodingName: "rtx", clockRate: codec.clockRate))
            section.formatParameters.append(FormatParameters(payloadType: rtx, parameters: [.init(name: "apt", value: String(agreed.payloadType))]))
        }
        if let id = agreed.midExtensionID { section.extensionMaps.append(ExtensionMap(id: UInt16(id), uri: WHEPOffer.midExtensionURI)) }
        if let id = agreed.absoluteCaptureTimeExtensionID {
            section.extensionMaps.append(ExtensionMap(id: UInt16(id), uri: WHEPOffer.absoluteCaptureTimeExtensionURI))
        }
        var attributes = [SDPAttribute(name: "mid", value: agreed.mid)] + transportAttributes()
        attributes += agreed.feedback.map { SDPAttribute(name: "rtcp-fb", value: $0.attributeValue) }
        let stream = "playout-\(track.codec.kind.rawValue)"
        attributes.append(SDPAttribute(name: "msid", value: "playout \(stream)"))
        if let rtxSSRC = agreed.retransmissionSSRC {
            attributes.append(SDPAttribute(name: "ssrc-group", value: "FID \(agreed.ssrc) \(rtxSSRC)"))
        }
        for ssrc in [agreed.ssrc] + (agreed.retransmissionSSRC.map { [$0] } ?? []) {
            attributes.append(SDPAttribute(name: "ssrc", value: "\(ssrc) cname:\(canonicalName)"))
            attributes.append(SDPAttribute(name: "ssrc", value: "\(ssrc) msid:playout \(stream)"))
        }
        for (index, candidate) in candidates.enumerated() {
            // RFC 8445 §5.1.2.1 host priority: type preference 126, local preference by order, component 1.
            let priority = (UInt32(126) << 24) | (UInt32(65_535 - min(index, 65_535)) << 8) | 255
            attributes.append(SDPAttribute(name: "candidate", value: "\(index + 1) 1 udp \(priority) \(candidate.host) \(candidate.port) typ host"))
        }
        attributes.append(SDPAttribute(name: "end-of-candidates"))
        section.attributes = attributes
        return section
    }

    private func rejected(_ offered: MediaDescription, mid: String) -> MediaDescription {
        var section = MediaDescription(kind: offered.kind, port: 0, proto: offered.proto, payloadTypes: Array(offered.payloadTypes.prefix(1)))
        if section.payloadTypes.isEmpty { section.otherFormats = offered.otherFormats.isEmpty ? ["0"] : Array(offered.otherFormats.prefix(1)) }
        section.connection = ConnectionData(address: "0.0.0.0")
        section.direction = .inactive
        section.attributes = [SDPAttribute(name: "mid", value: mid)]
        return section
    }
}
