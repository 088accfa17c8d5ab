/// Audio or video.
public enum MediaKind: String, Sendable, Hashable, CaseIterable {
    case audio
    case video
}

/// The codecs Playout receives, depacketizes and decodes.
public enum Codec: String, Sendable, Hashable, CaseIterable {
    case h264 = "H264"
    case h265 = "H265"
    case vp8 = "VP8"
    case vp9 = "VP9"
    case av1 = "AV1"
    case opus = "opus"
    case aac = "MPEG4-GENERIC"
    case pcmu = "PCMU"
    case pcma = "PCMA"

    /// Whether this is an audio or a video codec.
    public var kind: MediaKind {
        switch self {
        case .h264, .h265, .vp8, .vp9, .av1: .video
        case .opus, .aac, .pcmu, .pcma: .audio
        }
    }

    /// The codec for an SDP `a=rtpmap` encoding name (case-insensitive), e.g. `"H264"`, `"opus"`.
    public init?(encodingName: String) {
        let name = encodingName.uppercased()
        guard let codec = Codec.allCases.first(where: { $0.rawValue.uppercased() == name }) ?? (name == "HEVC" ? .h265 : nil) else {
            return nil
        }
        self = codec
    }
}

/// Identifies one track of a stream (for RTP, one media section / SSRC).
public struct TrackID: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    public var rawValue: UInt32

    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    public init(integerLiteral value: UInt32) {
        rawValue = value
    }

    public var description: String {
        "track \(rawValue)"
    }
}

/// A point on a track's media timeline: `ticks` of `1 / clockRate` seconds, extended to 64 bits
/// (RTP timestamps unwrapped, demuxer timestamps as they are).
public struct MediaTime: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var ticks: Int64
    /// Ticks per second, e.g. 90,000 for video, 48,000 for Opus.
    public var clockRate: Int32

    public init(ticks: Int64, clockRate: Int32) {
        precondition(clockRate > 0, "a clock rate is positive")
        self.ticks = ticks
        self.clockRate = clockRate
    }

    /// The time as a `Duration` from the timeline's origin.
    public var duration: Duration {
        let seconds = ticks / Int64(clockRate)
        let remainder = ticks % Int64(clockRate)
        return .seconds(seconds) + .nanoseconds(remainder * 1_000_000_000 / Int64(clockRate))
    }

    /// Compares times on the same timeline (same clock rate) by ticks; across clock rates by
    /// duration.
    public static func < (lhs: MediaTime, rhs: MediaTime) -> Bool {
        lhs.clockRate == rhs.clockRate ? lhs.ticks < rhs.ticks : lhs.duration < rhs.duration
    }

    public var description: String {
        "\(ticks)/\(clockRate)"
    }
}

/// One complete encoded frame (a video access unit or an audio frame), as produced by an RTP
/// depacketizer or a demuxer and consumed by the jitter buffer and the decoder.
///
/// Video bytes are in the decoder's native framing: H.264/H.265 as an Annex B byte stream (start
/// codes), VP8/VP9/AV1 as the raw frame; audio as the codec's raw frame.
public struct EncodedFrame: Sendable {
    public var track: TrackID
    public var codec: Codec
    /// The frame's time on its track's timeline: its presentation time, or its decoding time
    /// when a demuxer stamps frames in decoding order (see ``presentationOffset``).
    public var mediaTime: MediaTime
    /// When the first and the last byte of the frame arrived (equal for demuxed input).
    public var firstArrival: MonotonicInstant
    public var lastArrival: MonotonicInstant
    /// Whether the decoder can start here (IDR / key frame; every audio frame).
    public var isKeyframe: Bool
    /// The encoded bytes (empty when the depacketizer elided them: ``elidedByteCount``).
    public var bytes: [UInt8]
    /// Bytes the frame carried that were not kept: a depacketizer told that nothing will decode
    /// or write its frames (`Depacketizer.elidePayloads()`) counts the payload instead of copying
    /// it. 0 otherwise.
    public var elidedByteCount = 0
    /// The frame's size in bytes, kept or elided.
    public var byteCount: Int { bytes.count + elidedByteCount }
    /// RTP only: the extended sequence numbers of the first and last packet.
    public var sequenceRange: ClosedRange<Int64>?
    /// Whether packets were lost between the previous frame of this track and this one: the
    /// decoder may need a key frame before it can use this frame.
    public var followsLoss: Bool
    /// Audio samples (per channel) to drop from the start and end of the decoded frame: an
    /// encoder's priming and padding, as containers signal them (e.g. Opus pre-skip and the last
    /// packet's end trim). Nil when there is nothing to drop.
    public var trimmedSamples: SampleTrim?
    /// How much later than ``mediaTime`` the frame is presented, in the same clock's ticks: a
    /// B-frame stream's composition offset when ``mediaTime`` is the decoding time; 0 otherwise.
    public var presentationOffset: Int64 = 0

    public init(
        track: TrackID, codec: Codec, mediaTime: MediaTime, firstArrival: MonotonicInstant, lastArrival: MonotonicInstant,
        isKeyframe: Bool, bytes: [UInt8], sequenceRange: ClosedRange<Int64>? = nil, followsLoss: Bool = false
    ) {
        self.track = track
        self.codec = codec
        self.mediaTime = mediaTime
        self.firstArrival = firstArrival
        self.lastArrival = lastArrival
        self.isKeyframe = isKeyframe
        self.bytes = bytes
        self.sequenceRange = sequenceRange
        self.followsLoss = followsLoss
        self.trimmedSamples = nil
    }
}

/// Samples per channel to drop from the start and end of a decoded audio frame.
public struct SampleTrim: Equatable, Sendable {
    public var start: Int
    public var end: Int

    public init(start: Int, end: Int) {
        self.start = start
        self.end = end
    }
}
