public import PlayoutCore

/// Why an SDP media section cannot be received over RTP. Each case carries what to act on; the
/// description says it in a sentence.
public enum RTPMediaError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The section lists no payload type, or the payload type has no `a=rtpmap` (nor a static
    /// assignment), or its encoding is not one Playout depacketizes.
    case noSupportedCodec(kind: SDPMediaType, port: UInt16, encodingName: String?)
    /// The clock rate is not an RTP clock rate (0, or above ``DepacketizerFactory/maximumClockRate``).
    case invalidClockRate(kind: SDPMediaType, port: UInt16, clockRate: UInt32)
    /// The codec is known, but Playout has no depacketizer for it yet.
    case unsupportedCodec(Codec)

    public var description: String {
        switch self {
        case .noSupportedCodec(let kind, let port, _):
            return "cannot receive \(kind) on port \(port): no supported codec (H264, H265, VP8, VP9, opus, PCMU, PCMA, MPEG4-GENERIC)"
        case .invalidClockRate(let kind, let port, let clockRate):
            return "cannot receive \(kind) on port \(port): clock rate \(clockRate) Hz is not an RTP clock rate"
        case .unsupportedCodec(let codec):
            return "\(codec.rawValue) over RTP is not supported yet"
        }
    }
}

/// Makes the depacketizer of one SDP media section's payload type: the codec and clock rate from
/// its `a=rtpmap`, the parameter sets and AAC field sizes from its `a=fmtp`. Validates once, when
/// created; a stream restart makes a fresh depacketizer with ``makeDepacketizer()``.
///
/// ```swift
/// let factory = try DepacketizerFactory(media: section, track: 1)
/// var depacketizer = factory.makeDepacketizer()
/// ```
public struct DepacketizerFactory: Sendable {
    /// The largest clock rate accepted: RTP clock rates are at most a few hundred kHz, so a larger
    /// one is a broken SDP.
    public static let maximumClockRate: UInt32 = 10_000_000

    /// The track the frames are tagged with.
    public let track: TrackID
    /// The payload type received.
    public let payloadType: UInt8
    public let codec: Codec
    /// The RTP clock rate, in Hz (1…``maximumClockRate``).
    public let clockRate: Int32
    private let parameters: Parameters

    /// What the payload formats take from `a=fmtp`.
    private enum Parameters: Sendable {
        case none
        case parameterSets([[UInt8]])
        case aac(sizeLength: Int, indexLength: Int, indexDeltaLength: Int)
    }

    /// Reads `payloadType` of `media` (by default its first payload type) and checks that Playout
    /// can receive it.
    ///
    /// - Throws: ``RTPMediaError`` for a payload type without a supported codec, a codec without
    ///   a depacketizer, or a clock rate that is not an RTP clock rate.
    public init(media: MediaDescription, payloadType: UInt8? = nil, track: TrackID) throws(RTPMediaError) {
        guard let payloadType = payloadType ?? media.payloadTypes.first, let map = media.rtpMap(for: payloadType) else {
            throw .noSupportedCodec(kind: media.kind, port: media.port, encodingName: nil)
        }
        guard let codec = Codec(encodingName: map.encodingName) else {
            throw .noSupportedCodec(kind: media.kind, port: media.port, encodingName: map.encodingName)
        }
        guard (1...Self.maximumClockRate).contains(map.clockRate), let clockRate = Int32(exactly: map.clockRate) else {
            throw .invalidClockRate(kind: media.kind, port: media.port, clockRate: map.clockRate)
        }
        let fmtp = media.formatParameters(for: payloadType)
        switch codec {
        case .h264:
            parameters = .parameterSets(fmtp?.spropParameterSets ?? [])
        case .h265:
            parameters = .parameterSets((fmtp?.spropVPS ?? []) + (fmtp?.spropSPS ?? []) + (fmtp?.spropPPS ?? []))
        case .vp8, .vp9, .opus, .pcmu, .pcma:
            parameters = .none
        case .aac:
            parameters = .aac(
                sizeLength: fmtp?.sizeLength ?? AACDepacketizer.defaultSizeLength,
                indexLength: fmtp?.indexLength ?? AACDepacketizer.defaultIndexLength,
                indexDeltaLength: fmtp?.indexDeltaLength ?? AACDepacketizer.defaultIndexDeltaLength
            )
        case .av1:
            throw .unsupportedCodec(codec)
        }
        self.track = track
        self.payloadType = payloadType
        self.codec = codec
        self.clockRate = clockRate
    }

    /// A new depacketizer, in its initial state.
    public func makeDepacketizer() -> any Depacketizer {
        switch (codec, parameters) {
        case (.h264, .parameterSets(let sets)):
            return H264Depacketizer(track: track, clockRate: clockRate, parameterSets: sets)
        case (.h265, .parameterSets(let sets)):
            return H265Depacketizer(track: track, clockRate: clockRate, parameterSets: sets)
        case (.vp8, _):
            return VP8Depacketizer(track: track, clockRate: clockRate)
        case (.vp9, _):
            return VP9Depacketizer(track: track, clockRate: clockRate)
        case (.opus, _):
            return OpusDepacketizer(track: track, clockRate: clockRate)
        case (.pcmu, _):
            return G711Depacketizer(track: track, law: .muLaw, clockRate: clockRate)
        case (.pcma, _):
            return G711Depacketizer(track: track, law: .aLaw, clockRate: clockRate)
        case (.aac, .aac(let sizeLength, let indexLength, let indexDeltaLength)):
            return AACDepacketizer(
                track: track, clockRate: clockRate, sizeLength: sizeLength, indexLength: indexLength, indexDeltaLength: indexDeltaLength
            )
        case (.h264, _), (.h265, _), (.aac, _), (.av1, _):
            preconditionFailure("\(codec) was validated with other parameters")
        }
    }
}
