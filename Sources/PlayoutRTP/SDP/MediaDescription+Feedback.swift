/// One `a=rtcp-fb` line (RFC 4585 §4.2): a kind of feedback the sender of a media section accepts,
/// for one payload type or all (`*`).
public struct RTCPFeedbackCapability: Sendable, Hashable, CustomStringConvertible {
    /// The payload type it applies to (nil: `*`, every payload type of the section).
    public var payloadType: UInt8?
    /// The feedback type: `nack`, `ccm`, `goog-remb`, `trr-int`, `ack`, `transport-cc` …
    public var type: String
    /// Its parameter, if any: `pli` (with `nack`), `fir` or `tmmbr` (with `ccm`) …
    public var parameter: String?

    public init(payloadType: UInt8?, type: String, parameter: String? = nil) {
        self.payloadType = payloadType
        self.type = type
        self.parameter = parameter
    }

    /// Generic NACK (`nack` with no parameter).
    public static func nack(_ payloadType: UInt8?) -> Self { .init(payloadType: payloadType, type: "nack") }
    /// Picture loss indication (`nack pli`).
    public static func pictureLoss(_ payloadType: UInt8?) -> Self { .init(payloadType: payloadType, type: "nack", parameter: "pli") }
    /// Full intra request (`ccm fir`).
    public static func fullIntraRequest(_ payloadType: UInt8?) -> Self { .init(payloadType: payloadType, type: "ccm", parameter: "fir") }
    /// Temporary maximum bit rate request (`ccm tmmbr`).
    public static func temporaryMaximumBitrate(_ payloadType: UInt8?) -> Self { .init(payloadType: payloadType, type: "ccm", parameter: "tmmbr") }
    /// Receiver estimated maximum bitrate (`goog-remb`).
    public static func receiverEstimatedMaximumBitrate(_ payloadType: UInt8?) -> Self { .init(payloadType: payloadType, type: "goog-remb") }

    /// Reads the value of an `a=rtcp-fb` attribute (`96 nack pli`, `* ccm fir`); nil when it is
    /// not of that form.
    public init?(attributeValue: String) {
        let words = attributeValue.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard words.count >= 2, words.count <= 3 else { return nil }
        if words[0] == "*" {
            payloadType = nil
        } else if let type = UInt8(words[0]), type < 128 {
            payloadType = type
        } else {
            return nil
        }
        type = words[1].lowercased()
        parameter = words.count == 3 ? words[2].lowercased() : nil
    }

    /// The attribute's value as an SDP writes it.
    public var attributeValue: String {
        "\(payloadType.map(String.init) ?? "*") \(type)" + (parameter.map { " \($0)" } ?? "")
    }

    public var description: String { "a=rtcp-fb:\(attributeValue)" }
}

extension MediaDescription {
    /// The `a=rtcp-fb` lines of the section, in order (lines not of the RFC 4585 form skipped).
    public var rtcpFeedback: [RTCPFeedbackCapability] {
        attributes.filter { $0.name.lowercased() == "rtcp-fb" }.compactMap { $0.value.flatMap(RTCPFeedbackCapability.init(attributeValue:)) }
    }

    /// Whether the sender accepts `capability` for payload type `payloadType` (a line for that
    /// payload type or for `*`).
    public func acceptsFeedback(_ capability: RTCPFeedbackCapability, payloadType: UInt8) -> Bool {
        rtcpFeedback.contains { line in
            (line.payloadType == nil || line.payloadType == payloadType) && line.type == capability.type && line.parameter == capability.parameter
        }
    }

    /// Whether the sender answers RFC 3611 receiver reference times with DLRR
    /// (`a=rtcp-xr:rcvr-rtt=all`, RFC 3611 §5.1): a receiver that sends no RTP learns its
    /// round-trip time only so.
    public var acceptsReceiverReferenceTime: Bool {
        attributes.contains { attribute in
            attribute.name.lowercased() == "rtcp-xr"
                && (attribute.value ?? "").lowercased().split(separator: " ").contains { $0.hasPrefix("rcvr-rtt=") && !$0.hasSuffix("=sender") }
        }
    }

    /// The RTX payload types of the section (RFC 4588 §8: `a=rtpmap:PT rtx/RATE` with
    /// `a=fmtp:PT apt=ORIGINAL`), each with the payload type it retransmits.
    public var retransmissionPayloadTypes: [(rtx: UInt8, original: UInt8)] {
        resolvedRTPMaps.filter { $0.encodingName.lowercased() == "rtx" }.compactMap { map in
            guard let parameters = formatParameters.first(where: { $0.payloadType == map.payloadType }),
                  let value = parameters.parameters.first(where: { $0.name.lowercased() == "apt" })?.value,
                  let original = UInt8(value), original < 128
            else { return nil }
            return (map.payloadType, original)
        }
    }
}
