public import PlayoutRTP

/// Builds the SDP offer a WHEP subscriber posts (draft-ietf-wish-whep, JSEP-shaped, vanilla
/// ICE): one `recvonly` m-line per kind asked for, all in one `a=group:BUNDLE`, with `rtcp-mux`,
/// `setup:actpass`, the ICE credentials and every candidate followed by `a=end-of-candidates`,
/// and the codecs Playout decodes with their feedback, RTX and header extensions.
///
/// Payload types (stable, so tests and logs read the same): video VP8 96 (RTX 97), VP9
/// profile 0 98 (99), H.264 packetization-mode 1 with profile-level-id 42e01f 100 (101),
/// 42001f 102 (103), 4d001f 104 (105), 640c1f 106 (107), H.265 108 (109); audio Opus 111
/// (`minptime=10;useinbandfec=1;stereo=1`). Video codecs accept `nack`, `nack pli`, `ccm fir`
/// and `goog-remb`. Header extensions: 1 `sdes:mid`, 2 `abs-capture-time`, 3 `playout-delay`
/// (video).
///
/// ```swift
/// let offer = WHEPOffer(iceUsernameFragment: "abcd", icePassword: "…22+ characters…",
///                       candidates: ["1 1 udp 2130706431 192.0.2.1 50000 typ host"],
///                       fingerprint: DTLSCertificate.shared().fingerprint)
/// let text = offer.serialized()   // POST it with Content-Type: application/sdp
/// ```
public struct WHEPOffer: Sendable, Equatable {
    /// The media kinds a subscriber can ask for.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// The video m-line (mid `0` when first).
        case video
        /// The audio m-line.
        case audio
    }

    /// The `sdes:mid` header extension (RFC 8843).
    public static let midExtensionURI = "urn:ietf:params:rtp-hdrext:sdes:mid"
    /// The absolute capture time header extension (end-to-end latency).
    public static let absoluteCaptureTimeExtensionURI = AbsoluteCaptureTime.uri
    /// The playout-delay header extension (the sender's min/max delay hint).
    public static let playoutDelayExtensionURI = PlayoutDelayLimits.uri
    /// The H.264 profile-level-ids offered, in order of preference.
    public static let h264ProfileLevelIDs = ["42e01f", "42001f", "4d001f", "640c1f"]

    /// The local ICE username fragment (`a=ice-ufrag`, 4–256 ice-chars).
    public var iceUsernameFragment: String
    /// The local ICE password (`a=ice-pwd`, 22–256 ice-chars).
    public var icePassword: String
    /// The local candidates, each the value of an `a=candidate:` line (with or without the
    /// `candidate:` or `a=candidate:` prefix).
    public var candidates: [String]
    /// The fingerprint of the local DTLS certificate.
    public var fingerprint: DTLSFingerprint
    /// The kinds asked for, in m-line order (default: video then audio).
    public var kinds: [Kind]
    /// The `o=` session id (digits).
    public var sessionID: String

    /// Creates an offer.
    public init(
        iceUsernameFragment: String,
        icePassword: String,
        candidates: [String],
        fingerprint: DTLSFingerprint,
        kinds: [Kind] = [.video, .audio],
        sessionID: String = "4611731400430051336"
    ) {
        self.iceUsernameFragment = iceUsernameFragment
        self.icePassword = icePassword
        self.candidates = candidates
        self.fingerprint = fingerprint
        self.kinds = kinds
        self.sessionID = sessionID
    }

    /// The offer as a ``SessionDescription`` (mids are `0`, `1`, … in m-line order).
    public var sessionDescription: SessionDescription {
        var kindsInOrder: [Kind] = []
        for kind in kinds where !kindsInOrder.contains(kind) { kindsInOrder.append(kind) }
        let mids = kindsInOrder.indices.map(String.init)
        var sdp = SessionDescription(
            origin: SDPOrigin(username: "-", sessionID: sessionID, sessionVersion: "2", addressType: .ip4, address: "127.0.0.1"),
            sessionName: "-",
            attributes: [SDPAttribute(name: "group", value: (["BUNDLE"] + mids).joined(separator: " "))]
        )
        for (index, kind) in kindsInOrder.enumerated() {
            sdp.media.append(mediaSection(kind, mid: mids[index]))
        }
        return sdp
    }

    /// The offer as SDP text (CRLF line ends).
    public func serialized() -> String { sessionDescription.serialized() }

    private func mediaSection(_ kind: Kind, mid: String) -> MediaDescription {
        var section = MediaDescription(kind: kind == .video ? .video : .audio, port: 9, proto: TransportProtocol(rawValue: "UDP/TLS/RTP/SAVPF"), payloadTypes: [])
        section.connection = ConnectionData(address: "0.0.0.0")
        section.rtcp = RTCPAttribute(port: 9, connection: ConnectionData(address: "0.0.0.0"))
        section.rtcpMux = true
        section.direction = .recvonly
        var attributes: [SDPAttribute] = [
            SDPAttribute(name: "ice-ufrag", value: iceUsernameFragment),
            SDPAttribute(name: "ice-pwd", value: icePassword),
            SDPAttribute(name: "ice-options", value: "ice2"),
            SDPAttribute(name: "fingerprint", value: fingerprint.sdpValue),
            SDPAttribute(name: "setup", value: "actpass"),
            SDPAttribute(name: "mid", value: mid),
        ]
        section.extensionMaps = [
            ExtensionMap(id: 1, uri: Self.midExtensionURI),
            ExtensionMap(id: 2, uri: Self.absoluteCaptureTimeExtensionURI),
        ]
        switch kind {
        case .video:
            section.extensionMaps.append(ExtensionMap(id: 3, uri: Self.playoutDelayExtensionURI))
            var codecs: [(UInt8, String, [FormatParameters.Parameter])] = [
                (96, "VP8", []),
                (98, "VP9", [.init(name: "profile-id", value: "0")]),
            ]
            for (offset, profile) in Self.h264ProfileLevelIDs.enumerated() {
                codecs.append((UInt8(100 + 2 * offset), "H264", [
                    .init(name: "level-asymmetry-allowed", value: "1"), .init(name: "packetization-mode", value: "1"),
                    .init(name: "profile-level-id", value: profile),
                ]))
            }
            codecs.append((108, "H265", []))
            for (payloadType, name, parameters) in codecs {
                let rtx = payloadType + 1
                section.payloadTypes += [payloadType, rtx]
                section.rtpMaps += [RTPMap(payloadType: payloadType, encodingName: name, clockRate: 90_000), RTPMap(payloadType: rtx, encodingName: "rtx", clockRate: 90_000)]
                if !parameters.isEmpty { section.formatParameters.append(FormatParameters(payloadType: payloadType, parameters: parameters)) }
                section.formatParameters.append(FormatParameters(payloadType: rtx, parameters: [.init(name: "apt", value: String(payloadType))]))
                for feedback in [RTCPFeedbackCapability.nack(payloadType), .pictureLoss(payloadType), .fullIntraRequest(payloadType), .receiverEstimatedMaximumBitrate(payloadType)] {
                    attributes.append(SDPAttribute(name: "rtcp-fb", value: feedback.attributeValue))
                }
            }
        case .audio:
            section.payloadTypes = [111]
            section.rtpMaps = [RTPMap(payloadType: 111, encodingName: "opus", clockRate: 48_000, channels: 2)]
            section.formatParameters = [FormatParameters(payloadType: 111, parameters: [
                .init(name: "minptime", value: "10"), .init(name: "useinbandfec", value: "1"), .init(name: "stereo", value: "1"),
            ])]
        }
        attributes.append(SDPAttribute(name: "rtcp-rsize"))
        for candidate in candidates {
            var value = Substring(candidate)
            if value.hasPrefix("a=") { value = value.dropFirst(2) }
            if value.hasPrefix("candidate:") { value = value.dropFirst("candidate:".count) }
            attributes.append(SDPAttribute(name: "candidate", value: String(value)))
        }
        attributes.append(SDPAttribute(name: "end-of-candidates"))
        section.attributes = attributes
        return section
    }
}
