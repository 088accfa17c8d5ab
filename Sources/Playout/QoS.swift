public import PlayoutCore
public import PlayoutJitter

/// The states of a subscription.
public enum SubscriberState: Equatable, Sendable, CustomStringConvertible {
    /// Created, not started.
    case idle
    /// Opening sockets or the source (again, after a failure).
    case connecting
    /// Receiving, nothing rendered yet (or again, after the stream restarted).
    case buffering
    /// Frames are rendered on time.
    case playing
    /// Nothing rendered for a while: the sender stopped or the network dropped everything.
    case stalled
    /// Stopped (duration reached, ``Subscriber/stop()``, or the source ended).
    case ended
    /// Cannot go on, with the reason (e.g. every packet fails SRTP authentication).
    case failed(reason: String)

    /// The state's name as the JSON output and the live view show it.
    public var name: String {
        switch self {
        case .idle: "idle"
        case .connecting: "connecting"
        case .buffering: "buffering"
        case .playing: "playing"
        case .stalled: "stalled"
        case .ended: "ended"
        case .failed: "failed"
        }
    }

    public var description: String {
        if case .failed(let reason) = self { return "failed: \(reason)" }
        return name
    }
}

/// A QoS sample of one track, with DESIGN.md's names (W3C webrtc-stats `inbound-rtp` where one
/// exists).
public struct TrackQoS: Equatable, Sendable {
    public var kind: MediaKind
    public var codec: Codec
    /// Network, jitter-buffer and scheduler counters, and the playout delay in effect.
    public var statistics: TrackPlayoutStatistics
    /// Complete frames assembled from packets.
    public var framesReceived = 0
    public var framesDecoded = 0
    public var keyFramesDecoded = 0
    public var totalDecodeTime: Duration = .zero
    /// Frames the decoder rejected (corrupt or undecodable).
    public var decodeErrors = 0
    /// Frames discarded because a packet of theirs was lost.
    public var framesIncomplete = 0
    /// Video frames dropped after a loss or at the start until a key frame came.
    public var framesDroppedWaitingForKeyframe = 0
    public var frameWidth = 0
    public var frameHeight = 0
    /// SRTP authentication failures and replays (nil when not encrypted).
    public var authFailures: Int?
    public var replayDrops: Int?
    /// Times the stream restarted (new SSRC, sequence or timestamp base).
    public var restarts = 0
    /// How late each frame was presented against its render time.
    public var renderError = DurationHistogram()
    /// Capture to presentation: the frame's capture time from its `abs-capture-time` extension
    /// when the stream carries one, else the sender's wall clock from RTCP sender reports.
    public var endToEndLatency = DurationHistogram()
    /// Capture to the arrival of each rendered frame's first packet: what the network and the
    /// sender's encoding added before the playout delay (latency ≈ transit's minimum + delay).
    public var transit = DurationHistogram()

    /// Copies of packets received: those the jitter buffer saw again, and those SRTP's replay
    /// protection dropped before it (an exact copy of an SRTP packet is a replay).
    public var packetsDuplicated: Int {
        statistics.network.packetsDuplicated + (replayDrops ?? 0)
    }

    /// Adobe's droppedFrames: skipped (late or by a delay decrease), undecodable, incomplete,
    /// dropped waiting for a key frame, dropped for buffer overflow or when the stream restarted.
    public var framesDropped: Int {
        statistics.frames.framesSkipped + statistics.frames.framesDroppedOverflow + statistics.frames.framesDroppedOnRestart
            + decodeErrors + framesIncomplete + framesDroppedWaitingForKeyframe
    }

    public init(kind: MediaKind, codec: Codec, statistics: TrackPlayoutStatistics) {
        self.kind = kind
        self.codec = codec
        self.statistics = statistics
    }
}

/// One QoS sample of a subscription.
public struct SubscriberQoS: Equatable, Sendable {
    /// Time since the subscription started.
    public var elapsed: Duration
    public var state: SubscriberState
    public var playoutDelay: EffectivePlayoutDelay
    public var tracks: [MediaKind: TrackQoS]

    public init(elapsed: Duration, state: SubscriberState, playoutDelay: EffectivePlayoutDelay, tracks: [MediaKind: TrackQoS] = [:]) {
        self.elapsed = elapsed
        self.state = state
        self.playoutDelay = playoutDelay
        self.tracks = tracks
    }
}
