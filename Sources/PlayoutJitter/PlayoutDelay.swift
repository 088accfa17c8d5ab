public import PlayoutCore

/// How long content is held before it is rendered, and the limits a requested delay must meet.
///
/// A frame renders at `localTime(mediaTime) + playoutDelay`. The configured delay applies unless
/// an override is in effect. Values must be finite and non-negative; values above
/// ``warningThreshold`` are accepted with a warning (memory grows with delay × bitrate); values
/// above ``Configuration/maximum`` are refused.
public enum PlayoutDelay {
    /// The default playout delay: 230 ms.
    public static let defaultDelay: Duration = .milliseconds(230)
    /// Above this a requested delay is accepted with a warning: 10 s.
    public static let warningThreshold: Duration = .seconds(10)
    /// The default hard cap: 30 s.
    public static let defaultMaximum: Duration = .seconds(30)

    /// The configured playout delay and its cap.
    public struct Configuration: Equatable, Sendable {
        /// The delay used when no override is in effect (default ``PlayoutDelay/defaultDelay``).
        public var delay: Duration
        /// The largest delay accepted (default ``PlayoutDelay/defaultMaximum``).
        public var maximum: Duration

        /// Creates a configuration; see ``validate(_:)`` for what is accepted.
        public init(delay: Duration = PlayoutDelay.defaultDelay, maximum: Duration = PlayoutDelay.defaultMaximum) {
            self.delay = delay
            self.maximum = maximum
        }

        /// Checks `requested` against the rules: returns it with whether it deserves a warning,
        /// or throws why it is refused.
        public func validate(_ requested: Duration) throws(PlayoutDelayError) -> (delay: Duration, warn: Bool) {
            if requested < .zero { throw .negative(requested) }
            if requested > maximum { throw .aboveMaximum(requested, maximum: maximum) }
            return (requested, requested > PlayoutDelay.warningThreshold)
        }

        /// Like ``validate(_:)`` for a delay given in seconds, which may be NaN or infinite.
        public func validate(seconds: Double) throws(PlayoutDelayError) -> (delay: Duration, warn: Bool) {
            guard seconds.isFinite else { throw .notFinite(seconds) }
            guard let duration = Duration(exactlySeconds: seconds) else { throw .notFinite(seconds) }
            return try validate(duration)
        }
    }
}

/// Why a requested playout delay was refused.
public enum PlayoutDelayError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Delays are 0 or more.
    case negative(Duration)
    /// NaN or infinite.
    case notFinite(Double)
    /// Above the configured cap.
    case aboveMaximum(Duration, maximum: Duration)
    /// A gradual transition whose rate is not in (0, 90 %].
    case invalidTransition(PlayoutDelayTransition)

    public var description: String {
        switch self {
        case .negative(let delay):
            return "playout delay \(delay.compactDescription) is negative: give 0s or more"
        case .notFinite(let seconds):
            return "playout delay \(seconds) is not a finite number of seconds"
        case .aboveMaximum(let delay, let maximum):
            return "playout delay \(delay.compactDescription) is above the cap of \(maximum.compactDescription): "
                + "raise the cap in the configuration or ask for less (memory grows with delay × bitrate)"
        case .invalidTransition(let transition):
            return "playout-delay transition \(transition) is not usable: a gradual rate is more than 0 % and at most 90 %, e.g. gradual:10%"
        }
    }
}
