public import PlayoutCore

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
    /// Stopped (duration reached, `stop()`, or the source ended).
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

/// One QoS sample of one track: every counter at one level, by DESIGN.md's names (W3C
/// webrtc-stats `inbound-rtp` where one exists). Counters are cumulative since the start;
/// ``framesPerSecond`` and ``bitrate`` cover the sample's window (the time since the previous
/// periodic sample; the whole run in a final sample).
///
/// ```swift
/// let video = subscriber.qos.value.video
/// print(video?.framesRendered ?? 0, video?.framesPerSecond ?? 0, video?.packetsLost ?? 0)
/// ```
public struct TrackQoS: Equatable, Sendable {
    /// Audio or video.
    public var kind: MediaKind
    /// The codec received.
    public var codec: Codec

    // MARK: Network (the played source only)

    /// RTP packets received (each distinct sequence number once).
    public var packetsReceived = 0
    /// Packets never received (RFC 3550: expected − received, per gap).
    public var packetsLost = 0
    /// Packets that arrived too late to be played (W3C `packetsDiscarded`).
    public var packetsDiscarded = 0
    /// Copies of packets already received: those the jitter buffer saw again, and those SRTP's
    /// replay protection dropped (an exact copy of an SRTP packet is a replay).
    public var packetsDuplicated = 0
    /// RTP payload bytes received (for a libavformat input: the bytes of the frames it read).
    public var bytesReceived = 0
    /// Interarrival jitter (RFC 3550 A.8).
    public var jitter: Duration = .zero
    /// SRTP authentication failures (nil when not encrypted).
    public var authFailures: Int?
    /// SRTP replays dropped (nil when not encrypted).
    public var replayDrops: Int?
    /// Times the stream restarted (new SSRC, sequence or timestamp base, a reopened source).
    public var restarts = 0

    // MARK: Network: sources on the port, and what was turned away (RFC 3550 §6.2.1, A.1)

    /// RTP packets of sources not played: ``packetsFromUnvalidatedSources`` +
    /// ``packetsFromSourcesNotPlayed``. Never in ``packetsReceived``.
    public var packetsFromOtherSources = 0
    /// Packets of sources that did not pass probation (no run of in-sequence packets).
    public var packetsFromUnvalidatedSources = 0
    /// Packets of valid sources other than the one played (a second sender on the port).
    public var packetsFromSourcesNotPlayed = 0
    /// Packets of the played source dropped for a sequence jump the next packet did not confirm.
    public var packetsOutOfSequence = 0
    /// Packets of the played source dropped because their RTP time did not fit the stream's.
    public var packetsImplausibleTimestamp = 0
    /// RTP packets of another payload type than the track's.
    public var packetsWrongPayloadType = 0
    /// Datagrams that are not RTP or RTCP of any kind, by reason below.
    public var datagramsUndecodable = 0
    /// … too short or not version 2 to be RTP or RTCP at all.
    public var datagramsNotRTP = 0
    /// … RTP whose version is not 2.
    public var datagramsBadVersion = 0
    /// … shorter than the header or CSRC list they declare.
    public var datagramsTruncated = 0
    /// … whose header extension runs past the end.
    public var datagramsBadExtension = 0
    /// … whose padding count does not fit.
    public var datagramsBadPadding = 0
    /// RTCP sender reports and BYEs from sources not played (ignored: they never move the timeline).
    public var rtcpFromOtherSources = 0
    /// RTCP datagrams that failed SRTCP authentication or did not parse.
    public var rtcpUndecodable = 0
    /// Times the track moved to another source (after a BYE or silence).
    public var sourceSwitches = 0
    /// Times the played source's sequence or timeline was resynchronized (RFC 3550 A.1 `bad_seq`).
    public var sourceResyncs = 0
    /// The SSRC played (nil before a source passed probation, and for a libavformat input).
    public var playedSSRC: UInt32?
    // MARK: Feedback to the sender (RFC 4585/4588/5104; W3C names where they exist)

    /// Generic NACK messages sent (W3C `nackCount`).
    public var nackCount = 0
    /// Picture loss indications sent (W3C `pliCount`).
    public var pliCount = 0
    /// Full intra requests sent (W3C `firCount`).
    public var firCount = 0
    /// Compound RTCP packets sent to the sender (reports, and feedback sent early), one datagram each.
    public var rtcpPacketsSent = 0
    /// Compound RTCP packets decided but not sent: no sender report told where yet, or the
    /// socket refused them.
    public var rtcpPacketsUnsent = 0
    /// The latest round-trip time to the sender (W3C `remote-inbound-rtp` `roundTripTime`; nil
    /// until the sender answered a receiver reference time, or with feedback off).
    public var roundTripTime: Duration?
    /// Retransmitted (RTX) packets that filled a gap (W3C `retransmittedPacketsReceived`; in
    /// ``packetsReceived``), and their payload bytes (`retransmittedBytesReceived`).
    public var retransmittedPacketsReceived = 0
    public var retransmittedBytesReceived = 0
    /// Retransmissions that came after their packet was given up on (not in the above).
    public var retransmittedPacketsLate = 0
    /// Retransmissions of packets already received (not in the above).
    public var retransmittedPacketsDuplicated = 0
    /// RTX packets dropped: foreign SSRC, nothing played yet, no original sequence number, malformed.
    public var retransmittedPacketsDropped = 0

    /// Frames not rendered because they were complete only after their render time, with no
    /// delay change (in ``framesDropped``; ``framesSkipped`` counts a delay decrease's skips only,
    /// so that it agrees with ``totalSkippedDuration``).
    public var framesLate = 0

    // MARK: Frames

    /// Complete frames assembled from packets (or read from a libavformat input).
    public var framesReceived = 0
    /// Whether the track's frames are decoded (``Subscriber/Options/decoding``). False: every
    /// timing statistic is exact, and the decode statistics — ``framesDecoded``,
    /// ``keyFramesDecoded``, ``decodeErrors``, ``totalDecodeTime``, the frame size — are unknown:
    /// 0 here, `null` in the JSON lines, left out of telemetry records.
    public var decoded = true
    /// Frames the decoder decoded (whether rendered or decoded to keep references).
    public var framesDecoded = 0
    /// Key frames decoded.
    public var keyFramesDecoded = 0
    /// Frames presented to the sink at their render time.
    public var framesRendered = 0
    /// Frames rendered more than 20 ms after their render time because decoding them did not
    /// finish in time: decoding cannot keep up (a picture too large for the machine).
    public var framesRenderedLate = 0
    /// Adobe's droppedFrames: skipped (late or by a delay decrease), undecodable, incomplete,
    /// dropped waiting for a key frame, dropped for buffer overflow or when the stream restarted.
    public var framesDropped = 0
    /// Frames not rendered because a delay decrease put their render time in the past (late
    /// frames are ``framesLate``).
    public var framesSkipped = 0
    /// Media time of the skipped frames.
    public var totalSkippedDuration: Duration = .zero
    /// Frames discarded because a packet of theirs was lost.
    public var framesIncomplete = 0
    /// Video frames dropped after a loss or at the start until a key frame came.
    public var framesDroppedWaitingForKeyframe = 0
    /// Those of ``framesDroppedWaitingForKeyframe`` that came before the first key frame: a viewer
    /// that joined between two key frames could never render them (not frames it was due).
    public var framesDroppedBeforeFirstKeyframe = 0
    /// Frames dropped because the buffer's byte budget was full.
    public var framesDroppedOverflow = 0
    /// Frames still queued when the stream restarted.
    public var framesDroppedOnRestart = 0
    /// Frames the decoder rejected (corrupt or undecodable).
    public var decodeErrors = 0
    /// Frames rendered per second over the sample's window.
    public var framesPerSecond: Double = 0
    /// The size of the last picture rendered (0 before the first, and for audio).
    public var frameWidth = 0
    /// The height of the last picture rendered.
    public var frameHeight = 0
    /// Time spent decoding.
    public var totalDecodeTime: Duration = .zero
    /// Sum of the gaps between consecutive renders, and of their squares (seconds, seconds²).
    public var totalInterFrameDelay: Double = 0
    /// Sum of the squared gaps between consecutive renders (seconds²).
    public var totalSquaredInterFrameDelay: Double = 0

    // MARK: Smoothness (W3C rules; gaps the user asked for are counted apart)

    /// Render gaps ≥ max(3 × mean frame gap, mean + 150 ms) that nobody asked for.
    public var freezeCount = 0
    /// Total duration of those freezes.
    public var totalFreezesDuration: Duration = .zero
    /// Render gaps > 5 s that nobody asked for.
    public var pauseCount = 0
    /// Total duration of those pauses.
    public var totalPausesDuration: Duration = .zero
    /// Pauses caused by a playout-delay increase.
    public var delayPauseCount = 0
    /// Total duration of the delay pauses.
    public var totalDelayPausesDuration: Duration = .zero

    // MARK: Buffer

    /// The playout delay in effect for this track.
    public var playoutDelay = EffectivePlayoutDelay(delay: .zero, source: .configured)
    /// W3C jitter-buffer counters: total hold time of emitted frames, their count, and the
    /// target and minimum delay (these read the delay in effect, overrides included).
    public var jitterBufferDelay: Duration = .zero
    /// Frames emitted from the jitter buffer (the divisor of the three delays).
    public var jitterBufferEmittedCount = 0
    /// Sum over emitted frames of the delay in effect when each was emitted.
    public var jitterBufferTargetDelay: Duration = .zero
    /// Sum over emitted frames of the least delay each could have had (its network jitter).
    public var jitterBufferMinimumDelay: Duration = .zero
    /// What the scheduler holds now.
    public var bufferedDuration: Duration = .zero
    /// Frames held now.
    public var bufferedFrames = 0
    /// Bytes of the frames held now.
    public var bufferedBytes = 0

    // MARK: Rates and distributions

    /// Received media bits per second over the sample's window.
    public var bitrate: Double = 0
    /// How late each frame was presented against its render time.
    public var renderError = DurationHistogram()
    /// Capture to presentation: from the frame's `abs-capture-time` extension when the stream
    /// carries one, else the sender's wall clock from RTCP sender reports.
    public var endToEndLatency = DurationHistogram()
    /// Capture to the arrival of each rendered frame's first packet: what the network and the
    /// sender's encoding added before the playout delay (latency ≈ transit's minimum + delay).
    public var transit = DurationHistogram()

    /// A sample of a track of `kind` received as `codec`, every counter zero.
    public init(kind: MediaKind, codec: Codec) {
        self.kind = kind
        self.codec = codec
    }

    /// Sets the windowed rates from the counters of `previous` (the same track's earlier sample)
    /// over `window`; the whole run when `previous` is nil.
    public mutating func measureRates(since previous: TrackQoS?, window: Duration) {
        let seconds = window.seconds
        guard seconds > 0 else {
            framesPerSecond = 0
            bitrate = 0
            return
        }
        framesPerSecond = Double(framesRendered - (previous?.framesRendered ?? 0)) / seconds
        bitrate = Double(bytesReceived - (previous?.bytesReceived ?? 0)) * 8 / seconds
    }
}

/// One QoS sample of a subscription: its state, the delay in effect, each track and their sum.
public struct SubscriberQoS: Equatable, Sendable {
    /// Time since the subscription started.
    public var elapsed: Duration
    /// The state when the sample was taken.
    public var state: SubscriberState
    /// The playout delay in effect, and whether it is the configured one or an override.
    public var playoutDelay: EffectivePlayoutDelay
    /// Each track's sample, by kind.
    public var tracks: [MediaKind: TrackQoS]

    /// A sample with the given tracks.
    public init(elapsed: Duration, state: SubscriberState, playoutDelay: EffectivePlayoutDelay, tracks: [MediaKind: TrackQoS] = [:]) {
        self.elapsed = elapsed
        self.state = state
        self.playoutDelay = playoutDelay
        self.tracks = tracks
    }

    /// The video track's sample, if the subscription has video.
    public var video: TrackQoS? { tracks[.video] }
    /// The audio track's sample, if the subscription has audio.
    public var audio: TrackQoS? { tracks[.audio] }

    /// The rendition's bitrate (bits/s) over the last window: the video track's — the audio is no
    /// part of a rendition —, or the total without video. What the analytics bridges and the
    /// `renditionchange` event report.
    public var renditionBitrate: Double { video?.bitrate ?? total.bitrate }

    /// Video frames the viewer lost: the video's dropped frames less those skipped on purpose on a
    /// playout-delay decrease (counted apart as `framesSkipped`); audio frames are not pictures.
    public var videoFramesLost: Int { video.map { max(0, $0.framesDropped - $0.framesSkipped) } ?? 0 }

    /// The counters that add up across tracks, summed (rates too); `nil` fields of one track
    /// count as 0.
    public var total: TotalQoS {
        TotalQoS(tracks.values)
    }
}

/// The sum over tracks of the counters that add up.
public struct TotalQoS: Equatable, Sendable {
    /// RTP packets received, all tracks.
    public var packetsReceived = 0
    /// Packets lost, all tracks.
    public var packetsLost = 0
    /// Packets that came too late, all tracks.
    public var packetsDiscarded = 0
    /// Duplicate packets, all tracks.
    public var packetsDuplicated = 0
    /// Payload bytes received, all tracks.
    public var bytesReceived = 0
    /// Frames received, all tracks.
    public var framesReceived = 0
    /// Frames decoded, all tracks (unknown — `null` in the JSON lines — when no track decodes:
    /// ``decoded``).
    public var framesDecoded = 0
    /// Whether a track's frames are decoded, or there is no track (false: ``framesDecoded`` is
    /// unknown).
    public var decoded = true
    /// Frames rendered, all tracks.
    public var framesRendered = 0
    /// Frames dropped (every reason), all tracks.
    public var framesDropped = 0
    /// Frames skipped, all tracks.
    public var framesSkipped = 0
    /// Freezes, all tracks.
    public var freezeCount = 0
    /// Pauses, all tracks.
    public var pauseCount = 0
    /// Delay pauses, all tracks.
    public var delayPauseCount = 0
    /// Bits per second over the sample's window, all tracks.
    public var bitrate: Double = 0

    /// The sum of `tracks` (the fields ``TrackQoS`` marks as adding up).
    public init(_ tracks: some Sequence<TrackQoS>) {
        var tracksDecoded: Bool?
        for track in tracks {
            tracksDecoded = (tracksDecoded ?? false) || track.decoded
            for field in TrackQoS.totalFields { field.total?.add(&self, track) }
        }
        decoded = tracksDecoded ?? true
    }
}
