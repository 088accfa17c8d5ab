/// Where the playout delay in effect comes from.
public enum PlayoutDelaySource: String, Sendable, Hashable {
    /// The configured delay (no override in effect).
    case configured
    /// An override (`overridePlayoutDelay`) is in effect.
    case override
    /// The configured delay moved into the range the sender asks for with the RTP
    /// `playout-delay` header extension (no override in effect).
    case sender
}

/// The playout delay in effect and where it comes from.
public struct EffectivePlayoutDelay: Equatable, Sendable, CustomStringConvertible {
    /// How long content is held before it renders (the target of a gradual transition).
    public var delay: Duration
    /// Whether it is the configured delay, an override, or the configured delay moved into the
    /// sender's range.
    public var source: PlayoutDelaySource
    /// How rendering moves to this delay from the previous one.
    public var transition: PlayoutDelayTransition

    public init(delay: Duration, source: PlayoutDelaySource, transition: PlayoutDelayTransition = .immediate) {
        self.delay = delay
        self.source = source
        self.transition = transition
    }

    public var description: String {
        "\(delay.compactDescription) (\(source.rawValue))"
    }
}
