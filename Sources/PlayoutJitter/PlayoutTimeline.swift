public import PlayoutCore

/// Maps a track's media time to the local monotonic clock along the fastest observed path, and
/// tracks the sender's clock drift, so that `localTime(mediaTime) + playoutDelay` keeps the
/// achieved delay within a few milliseconds of the target for hours.
///
/// Every arrival gives a *transit*: arrival instant − media time. Network queuing only ever adds
/// to it, so the smallest transit seen in a window is the fastest path. The timeline keeps the
/// minimum of each window (default 1 s of arrivals) for the last ``Configuration/windowCount``
/// windows and fits a line through them: the line's slope is the drift between the sender's
/// media clock and ours (±100 ppm is typical, ±1000 ppm is tolerated), its value at a media time
/// is that time's fastest-path transit. A burst after a stall arrives late, so it raises no
/// minimum and moves nothing. The fit changes once a window, so render times move smoothly; a
/// path that gets faster shows within a window and is fully followed after the history rolls.
///
/// Sans-IO: instants come in as values. Audio and video share one timeline when the caller maps
/// both to one media clock (e.g. through RTCP sender reports); otherwise each track has its own.
///
/// - Complexity: `observe` O(1) amortized; `localTime` O(1) (the fit is updated once a window).
public struct PlayoutTimeline: Sendable {
    /// Window length and history.
    public struct Configuration: Equatable, Sendable {
        /// The length of one window of arrivals (default 1 s).
        public var windowDuration: Duration
        /// How many window minima the drift fit uses (default 30: the last 30 s).
        public var windowCount: Int
        /// A transit this much below the fitted path means the sender's media clock jumped ahead
        /// (not that the network got faster): the timeline starts afresh from that arrival
        /// (default 1 s). Transits above the path are queuing and never reset it.
        public var discontinuityThreshold: Duration
        /// The largest drift the fit may conclude, in parts per million (default 1000: real
        /// clocks stay within ±100 ppm, cheap ones within ±1000). A few windows of a jittery path
        /// fit any slope — two minima 10 ms apart are 10,000 ppm — and extrapolating it moves
        /// render times by tens of milliseconds when the next window corrects it; bounded, a
        /// window change moves them by at most this × the history's span.
        public var maximumDriftPPM: Double

        /// A configuration; the defaults track drift over 30 one-second windows.
        public init(
            windowDuration: Duration = .seconds(1), windowCount: Int = 30, discontinuityThreshold: Duration = .seconds(1), maximumDriftPPM: Double = 1_000
        ) {
            self.windowDuration = windowDuration
            self.windowCount = max(2, windowCount)
            self.discontinuityThreshold = discontinuityThreshold
            self.maximumDriftPPM = max(0, maximumDriftPPM)
        }
    }

    /// One window's fastest arrival: its media time and its transit, in nanoseconds.
    struct Sample {
        var media: Int64
        let transit: Int64
    }

    /// The tunables it was created with.
    public let configuration: Configuration
    /// Window minima, oldest first (a ring of at most `windowCount`).
    private var history: [Sample] = []
    private var historyStart = 0
    /// The window being filled: when it ends (local) and its fastest arrival.
    private var windowEnd: Int64?
    private var windowMinimum: Sample?
    /// The fitted line: transit(m) = intercept + slope × (m − origin).
    private var origin: Int64 = 0
    private var intercept: Double = 0
    private var slope: Double = 0
    private var hasFit = false

    /// An empty timeline.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        history.reserveCapacity(configuration.windowCount)
    }

    /// Whether any arrival has been observed.
    public var isEmpty: Bool {
        windowMinimum == nil && history.isEmpty
    }

    /// The estimated drift of the sender's media clock against the local clock, in parts per
    /// million (positive: the sender's clock runs slow, transit grows).
    public var driftPPM: Double {
        slope * 1e6
    }

    /// How many times the media clock jumped ahead and the timeline started afresh.
    public private(set) var discontinuities = 0

    /// Records that media time `mediaTime` arrived at `arrival`.
    public mutating func observe(mediaTime: Duration, arrival: MonotonicInstant) {
        let media = mediaTime.nanoseconds
        let sample = Sample(media: media, transit: arrival.nanoseconds &- media)
        if !isEmpty, localTime(for: mediaTime).nanoseconds - arrival.nanoseconds > configuration.discontinuityThreshold.nanoseconds {
            let count = discontinuities + 1
            reset()
            discontinuities = count
        }
        let window = configuration.windowDuration.nanoseconds
        if let end = windowEnd, arrival.nanoseconds >= end {
            if let minimum = windowMinimum { push(minimum) }
            windowMinimum = nil
            windowEnd = arrival.nanoseconds + window
        } else if windowEnd == nil {
            windowEnd = arrival.nanoseconds + window
        }
        if let minimum = windowMinimum, minimum.transit <= sample.transit { return }
        windowMinimum = sample
    }

    /// The local instant at which media time `mediaTime` arrives along the fastest path.
    /// Before any arrival, the media time itself on the local timeline.
    public func localTime(for mediaTime: Duration) -> MonotonicInstant {
        let media = mediaTime.nanoseconds
        let transit: Int64
        if hasFit {
            // Updated once a window, so render times move smoothly rather than with each arrival.
            transit = Int64((intercept + slope * Double(media &- origin)).rounded())
        } else if let minimum = windowMinimum ?? history.last {
            transit = minimum.transit
        } else {
            transit = 0
        }
        return MonotonicInstant(nanoseconds: media &+ transit)
    }

    /// Forgets everything (e.g. after a sender restart).
    public mutating func reset() {
        self = PlayoutTimeline(configuration: configuration)
    }

    private mutating func push(_ sample: Sample) {
        if history.count < configuration.windowCount {
            history.append(sample)
        } else {
            history[historyStart] = sample
            historyStart = (historyStart + 1) % configuration.windowCount
        }
        fit()
    }

    /// Least squares through the window minima (media time → transit), its slope bounded by
    /// ``Configuration/maximumDriftPPM`` (the line then passes through the minima's centroid).
    /// With one point, a flat line through it.
    private mutating func fit() {
        guard let first = history.first else { return }
        origin = first.media
        let count = Double(history.count)
        var sumX = 0.0, sumY = 0.0, sumXX = 0.0, sumXY = 0.0
        for sample in history {
            let x = Double(sample.media &- origin)
            let y = Double(sample.transit)
            sumX += x
            sumY += y
            sumXX += x * x
            sumXY += x * y
        }
        let denominator = count * sumXX - sumX * sumX
        if history.count >= 2, abs(denominator) > 1e-9 {
            let bound = configuration.maximumDriftPPM / 1e6
            slope = min(bound, max(-bound, (count * sumXY - sumX * sumY) / denominator))
            intercept = (sumY - slope * sumX) / count
        } else {
            slope = 0
            intercept = sumY / count
        }
        hasFit = true
    }
}
