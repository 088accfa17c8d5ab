/// One media section of an SDP: the `m=` line and the lines after it.
///
/// ```text
/// m=video 5004 RTP/AVP 96
/// c=IN IP4 127.0.0.1
/// a=rtpmap:96 H264/90000
/// a=fmtp:96 packetization-mode=1
/// ```
///
/// ``connection`` and ``direction`` are the *effective* values: the section's own, or the
/// session's when the section has none.
public struct MediaDescription: Sendable, Equatable {
    /// The media type: `audio`, `video`, `application`…
    public var kind: SDPMediaType
    /// The transport port (RTP's port for RTP protocols).
    public var port: UInt16
    /// The number of ports (`m=video 5004/2 …`), 1 when not given.
    public var portCount: UInt16
    /// The transport protocol, e.g. `RTP/AVP`.
    public var proto: TransportProtocol
    /// The RTP payload types of the `m=` line, in order (empty when ``proto`` is not RTP).
    public var payloadTypes: [UInt8]
    /// The format list of a non-RTP `m=` line (e.g. `webrtc-datachannel`), verbatim.
    public var otherFormats: [String]
    /// The effective `c=` line: the section's own, or the session's.
    public var connection: ConnectionData?
    /// The section's `b=` lines, in order.
    public var bandwidths: [SDPBandwidth]
    /// The `a=rtpmap` lines as written, in order. Static payload types usually have none: use
    /// ``rtpMap(for:)``, which falls back to the RFC 3551 defaults.
    public var rtpMaps: [RTPMap]
    /// The `a=fmtp` lines, in order.
    public var formatParameters: [FormatParameters]
    /// The `a=crypto` lines (RFC 4568), in order. They count whatever ``proto`` says: ffmpeg
    /// writes `RTP/AVP` together with `a=crypto` for an `srtp://` output.
    public var crypto: [CryptoAttribute]
    /// The section's `a=extmap` lines (RFC 8285).
    public var extensionMaps: [ExtensionMap]
    /// The `a=rtcp` line (RFC 3605), when RTCP does not use port + 1.
    public var rtcp: RTCPAttribute?
    /// Whether `a=rtcp-mux` (RFC 5761) is present: RTCP shares the RTP port.
    public var rtcpMux: Bool
    /// The effective direction: the section's attribute, or the session's.
    public var direction: SDPDirection
    /// The `a=ssrc` lines (RFC 5576), in order (ffmpeg writes none).
    public var ssrcAttributes: [SSRCAttribute]
    /// `a=control` (RTSP, RFC 7826), verbatim.
    public var control: String?
    /// `a=framerate`, in frames per second.
    public var frameRate: Double?
    /// `a=ptime`: the media duration of one packet.
    public var packetTime: Duration?
    /// The other `a=` lines, verbatim and in order (unknown attributes are never an error).
    public var attributes: [SDPAttribute]
    /// Lines this type does not model (`i=`, `k=`, unknown letters), in order: `i=` first.
    public var otherFields: [SDPField]

    /// Creates a media section.
    public init(
        kind: SDPMediaType,
        port: UInt16,
        portCount: UInt16 = 1,
        proto: TransportProtocol = .rtpAVP,
        payloadTypes: [UInt8] = [],
        otherFormats: [String] = [],
        connection: ConnectionData? = nil,
        bandwidths: [SDPBandwidth] = [],
        rtpMaps: [RTPMap] = [],
        formatParameters: [FormatParameters] = [],
        crypto: [CryptoAttribute] = [],
        extensionMaps: [ExtensionMap] = [],
        rtcp: RTCPAttribute? = nil,
        rtcpMux: Bool = false,
        direction: SDPDirection = .sendrecv,
        ssrcAttributes: [SSRCAttribute] = [],
        control: String? = nil,
        frameRate: Double? = nil,
        packetTime: Duration? = nil,
        attributes: [SDPAttribute] = [],
        otherFields: [SDPField] = []
    ) {
        self.kind = kind
        self.port = port
        self.portCount = portCount
        self.proto = proto
        self.payloadTypes = payloadTypes
        self.otherFormats = otherFormats
        self.connection = connection
        self.bandwidths = bandwidths
        self.rtpMaps = rtpMaps
        self.formatParameters = formatParameters
        self.crypto = crypto
        self.extensionMaps = extensionMaps
        self.rtcp = rtcp
        self.rtcpMux = rtcpMux
        self.direction = direction
        self.ssrcAttributes = ssrcAttributes
        self.control = control
        self.frameRate = frameRate
        self.packetTime = packetTime
        self.attributes = attributes
        self.otherFields = otherFields
    }

    /// The `a=rtpmap` of `payloadType`, or its RFC 3551 default for a static payload type
    /// without one (0 → PCMU/8000/1, 8 → PCMA/8000/1, 26 → JPEG/90000…); `nil` when neither.
    public func rtpMap(for payloadType: UInt8) -> RTPMap? {
        rtpMaps.first { $0.payloadType == payloadType } ?? RTPMap.staticPayloadType(payloadType)
    }

    /// ``rtpMap(for:)`` of every payload type of the `m=` line that has one, in `m=` order.
    public var resolvedRTPMaps: [RTPMap] {
        payloadTypes.compactMap { rtpMap(for: $0) }
    }

    /// The `a=fmtp` parameters of `payloadType`, or `nil` when it has none.
    public func formatParameters(for payloadType: UInt8) -> FormatParameters? {
        formatParameters.first { $0.payloadType == payloadType }
    }

    /// The header-extension element id the first `a=extmap` with `uri` gives it, as packets carry
    /// it (1…255); nil when no `a=extmap` names `uri` with such an id.
    public func extensionID(uri: String) -> UInt8? {
        extensionMaps.first { $0.uri == uri && (1...255).contains($0.id) }.map { UInt8($0.id) }
    }

    /// The value of the first attribute called `name` (compared case-insensitively) among
    /// ``attributes``; `""` for a flag attribute; `nil` when there is none.
    public func attribute(_ name: String) -> String? {
        attributes.first { $0.name.lowercased() == name.lowercased() }.map { $0.value ?? "" }
    }
}

/// The media type of an `m=` line. Open-ended: any token is kept as written.
public struct SDPMediaType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The token as written, e.g. `video`.
    public var rawValue: String

    /// Wraps a media type token.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `audio`.
    public static let audio = SDPMediaType(rawValue: "audio")
    /// `video`.
    public static let video = SDPMediaType(rawValue: "video")
    /// `text`.
    public static let text = SDPMediaType(rawValue: "text")
    /// `application`.
    public static let application = SDPMediaType(rawValue: "application")
    /// `message`.
    public static let message = SDPMediaType(rawValue: "message")

    public var description: String { rawValue }
}

/// The transport protocol of an `m=` line. Open-ended: any token is kept as written.
public struct TransportProtocol: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The token as written, e.g. `RTP/AVP`.
    public var rawValue: String

    /// Wraps a protocol token.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `RTP/AVP` (RFC 3551).
    public static let rtpAVP = TransportProtocol(rawValue: "RTP/AVP")
    /// `RTP/SAVP` (RFC 3711).
    public static let rtpSAVP = TransportProtocol(rawValue: "RTP/SAVP")
    /// `RTP/AVPF` (RFC 4585).
    public static let rtpAVPF = TransportProtocol(rawValue: "RTP/AVPF")
    /// `RTP/SAVPF` (RFC 5124).
    public static let rtpSAVPF = TransportProtocol(rawValue: "RTP/SAVPF")

    /// Whether the format list holds RTP payload types (any profile containing `RTP/`, such as
    /// `RTP/AVP` or `UDP/TLS/RTP/SAVPF`).
    public var isRTP: Bool { rawValue.uppercased().contains("RTP/") }

    /// Whether the profile itself says SRTP (`SAVP`, `SAVPF`). ffmpeg's SRTP output says `RTP/AVP`
    /// with an `a=crypto` line, so look at ``MediaDescription/crypto`` too.
    public var isSecure: Bool { rawValue.uppercased().contains("SAVP") }

    public var description: String { rawValue }
}

/// An `a=rtpmap:<payload type> <encoding>/<clock rate>[/<channels>]` line.
public struct RTPMap: Sendable, Equatable {
    /// The RTP payload type, 0…127.
    public var payloadType: UInt8
    /// The encoding name as written, e.g. `H264`, `opus`, `MPEG4-GENERIC`. Compare it
    /// case-insensitively (``hasEncoding(_:)``).
    public var encodingName: String
    /// The RTP clock rate in Hz.
    public var clockRate: UInt32
    /// The encoding parameters: the number of audio channels, when given.
    public var channels: UInt16?

    /// Creates an rtpmap.
    public init(payloadType: UInt8, encodingName: String, clockRate: UInt32, channels: UInt16? = nil) {
        self.payloadType = payloadType
        self.encodingName = encodingName
        self.clockRate = clockRate
        self.channels = channels
    }

    /// Whether ``encodingName`` is `name`, compared case-insensitively as RFC 4855 says.
    public func hasEncoding(_ name: String) -> Bool {
        encodingName.uppercased() == name.uppercased()
    }

    /// The RFC 3551 (table 4 and 5) default for a static payload type, or `nil` for a dynamic or
    /// unassigned one.
    public static func staticPayloadType(_ payloadType: UInt8) -> RTPMap? {
        guard let entry = staticPayloadTypes.first(where: { $0.0 == payloadType }) else { return nil }
        return RTPMap(payloadType: entry.0, encodingName: entry.1, clockRate: entry.2, channels: entry.3)
    }

    /// RFC 3551 §6, tables 4 and 5.
    private static let staticPayloadTypes: [(UInt8, String, UInt32, UInt16?)] = [
        (0, "PCMU", 8000, 1), (3, "GSM", 8000, 1), (4, "G723", 8000, 1), (5, "DVI4", 8000, 1),
        (6, "DVI4", 16000, 1), (7, "LPC", 8000, 1), (8, "PCMA", 8000, 1), (9, "G722", 8000, 1),
        (10, "L16", 44100, 2), (11, "L16", 44100, 1), (12, "QCELP", 8000, 1), (13, "CN", 8000, 1),
        (14, "MPA", 90000, nil), (15, "G728", 8000, 1), (16, "DVI4", 11025, 1), (17, "DVI4", 22050, 1),
        (18, "G729", 8000, 1), (25, "CelB", 90000, nil), (26, "JPEG", 90000, nil), (28, "nv", 90000, nil),
        (31, "H261", 90000, nil), (32, "MPV", 90000, nil), (33, "MP2T", 90000, nil), (34, "H263", 90000, nil),
    ]
}

/// An `a=extmap:<id>[/<direction>] <uri> [<attributes>]` line (RFC 8285): which RTP header
/// extension the id carries.
public struct ExtensionMap: Sendable, Equatable {
    /// The local identifier: 1…14 for one-byte headers, up to 255 for two-byte headers
    /// (4096…4351 in offers).
    public var id: UInt16
    /// The direction, when given.
    public var direction: SDPDirection?
    /// The extension's URI, e.g. `urn:ietf:params:rtp-hdrext:ssrc-audio-level`.
    public var uri: String
    /// Extension attributes after the URI, verbatim.
    public var extensionAttributes: String?

    /// Creates an extmap.
    public init(id: UInt16, direction: SDPDirection? = nil, uri: String, extensionAttributes: String? = nil) {
        self.id = id
        self.direction = direction
        self.uri = uri
        self.extensionAttributes = extensionAttributes
    }
}

/// An `a=rtcp:<port> [IN IP4 <address>]` line (RFC 3605): where RTCP goes when not to port + 1.
public struct RTCPAttribute: Sendable, Equatable {
    /// The RTCP port.
    public var port: UInt16
    /// The RTCP address, when it differs from the media's.
    public var connection: ConnectionData?

    /// Creates an rtcp attribute.
    public init(port: UInt16, connection: ConnectionData? = nil) {
        self.port = port
        self.connection = connection
    }
}

/// An `a=ssrc:<ssrc> <attribute>[:<value>]` line (RFC 5576).
public struct SSRCAttribute: Sendable, Equatable {
    /// The synchronization source.
    public var ssrc: UInt32
    /// The source attribute's name, e.g. `cname`.
    public var name: String
    /// The source attribute's value, when it has one.
    public var value: String?

    /// Creates an ssrc attribute.
    public init(ssrc: UInt32, name: String, value: String? = nil) {
        self.ssrc = ssrc
        self.name = name
        self.value = value
    }
}
