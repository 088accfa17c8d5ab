import PlayoutCore

/// One session's key performance indicators, by Mux's metric names and published formulas, plus
/// Playout's own. A KPI that is undefined for the session (no play was requested, nothing was
/// shown, no sample carried the numbers) is nil, never 0.
///
/// Watch time is startup + playing + rebuffering time (Mux); stalls the viewer asked for (a
/// playout-delay increase, a seek) are neither rebuffering nor watch time.
public struct TelemetryKPIs: Sendable, Equatable {
    /// `video_startup_time`: from the first `play` to the first `playing`.
    public var videoStartupTime: Duration?
    /// `player_startup_time`: from `viewinit` to `playerready`.
    public var playerStartupTime: Duration?
    /// `exits_before_video_start`: play was requested, the view ended without a frame shown and
    /// without a fatal error (nil without a play request, or while the view goes on).
    public var exitsBeforeVideoStart: Bool?
    /// `video_startup_failure`: a fatal error before the first frame (nil while a started-up view
    /// has not shown a frame nor failed).
    public var videoStartupFailure: Bool?
    /// `playback_failure`: a fatal error at any time.
    public var playbackFailure: Bool
    /// `playing_time`: time in the playing state (nil before the first frame).
    public var playingTime: Duration?
    /// `rebuffer_count`: network stalls after the first frame (nil before the first frame).
    public var rebufferCount: Int?
    /// `rebuffer_duration`: their total time (nil before the first frame).
    public var rebufferDuration: Duration?
    /// `rebuffer_percentage`: rebuffer duration / watch time × 100.
    public var rebufferPercentage: Double?
    /// `rebuffer_frequency`: rebuffers per minute of watch time.
    public var rebufferFrequency: Double?
    /// `weighted_average_bitrate`: the renditions' bitrates (bits/s) weighted by playing time —
    /// the bitrates measured over heartbeat windows (a heartbeat's `renditionBitrate`) where the
    /// session has them, else the `renditionchange` bitrates.
    public var weightedAverageBitrate: Double?
    /// `dropped_frame_percentage`: framesDropped / (framesDropped + framesRendered) × 100, from
    /// the last heartbeat carrying both.
    public var droppedFramePercentage: Double?
    /// `freeze_percentage`: freeze time / playing time × 100.
    public var freezePercentage: Double?
    /// `playout_delay_*`: the playout delay in effect, weighted by playing time.
    public var playoutDelay: Percentiles?
    /// `end_to_end_latency_*`: the heartbeats' `endToEndLatency` samples.
    public var endToEndLatency: Percentiles?

    /// A set of KPIs (every one undefined, no failure).
    public init(playbackFailure: Bool = false) {
        self.playbackFailure = playbackFailure
    }

    /// Percentiles of a duration.
    public struct Percentiles: Sendable, Equatable {
        /// The median.
        public var p50: Duration
        /// The 95th percentile.
        public var p95: Duration
        /// The 99th percentile.
        public var p99: Duration
        /// The largest value.
        public var max: Duration

        /// Percentiles with the given values.
        public init(p50: Duration, p95: Duration, p99: Duration, max: Duration) {
            self.p50 = p50
            self.p95 = p95
            self.p99 = p99
            self.max = max
        }
    }

    /// Every KPI by its Mux-style name, in a fixed order; nil where undefined. Durations are in
    /// seconds, percentages 0–100, rates per minute, bitrates in bits/s.
    public var namedValues: [(name: String, value: TelemetryValue?)] {
        func seconds(_ value: Duration?) -> TelemetryValue? { value.map { .double($0.seconds) } }
        var values: [(String, TelemetryValue?)] = [
            ("video_startup_time", seconds(videoStartupTime)),
            ("player_startup_time", seconds(playerStartupTime)),
            ("exits_before_video_start", exitsBeforeVideoStart.map { .bool($0) }),
            ("video_startup_failure", videoStartupFailure.map { .bool($0) }),
            ("playback_failure", .bool(playbackFailure)),
            ("playing_time", seconds(playingTime)),
            ("rebuffer_count", rebufferCount.map { .int(Int64($0)) }),
            ("rebuffer_duration", seconds(rebufferDuration)),
            ("rebuffer_percentage", rebufferPercentage.map { .double($0) }),
            ("rebuffer_frequency", rebufferFrequency.map { .double($0) }),
            ("weighted_average_bitrate", weightedAverageBitrate.map { .double($0) }),
            ("dropped_frame_percentage", droppedFramePercentage.map { .double($0) }),
            ("freeze_percentage", freezePercentage.map { .double($0) }),
        ]
        for (prefix, percentiles) in [("playout_delay", playoutDelay), ("end_to_end_latency", endToEndLatency)] {
            values += [
                ("\(prefix)_p50", seconds(percentiles?.p50)), ("\(prefix)_p95", seconds(percentiles?.p95)),
                ("\(prefix)_p99", seconds(percentiles?.p99)), ("\(prefix)_max", seconds(percentiles?.max)),
            ]
        }
        return values
    }

    /// The KPI called `name` (a name of ``namedValues``); nil when undefined or unknown.
    public subscript(name: String) -> TelemetryValue? {
        namedValues.first { $0.name == name }?.value ?? nil
    }
}
