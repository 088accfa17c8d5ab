package import Logging
public import PlayoutCore

/// Owns the playout delay of a subscription: the configured value and the overrides, with the
/// exact rules of DESIGN.md.
///
/// - An override is absolute (5 s means 5 s, not +5 s).
/// - The most recent override wins; while several are held only it is in effect.
/// - Releasing an earlier override has no effect; releasing the one in effect returns to the
///   configured delay — not to an earlier override. Releasing twice is harmless.
/// - Negative, NaN and infinite values are refused with an error; values above 10 s are accepted
///   with a warning (memory grows with delay × bitrate); values above the configured cap
///   (default 30 s) are refused.
/// - A sender's range (the RTP `playout-delay` extension, ``setSenderRange(_:)``) moves the
///   configured delay into it (source ``PlayoutDelaySource/sender``, never above the cap); an
///   override is absolute and wins over it.
///
/// The delay in effect is an ``Observable`` (``effectiveDelay``), so the scheduler, the jitter
/// buffer's loss deadline, statistics and the CLI all follow it.
///
/// ```swift
/// let controller = PlayoutDelayController()
/// let boost = try controller.overridePlayoutDelay(.seconds(5))   // 5 s (override)
/// boost.dispose()                                                // back to 230 ms (configured)
/// ```
package final class PlayoutDelayController: Sendable {
    private struct State {
        var configured: Duration
        /// The overrides held: the one in effect, by the last-wins rule.
        var overrides = LastWins<(delay: Duration, transition: PlayoutDelayTransition)>()
        /// How the last change moves rendering (a released gradual override returns gradually).
        var transition: PlayoutDelayTransition = .immediate
        /// The sender's minimum and maximum (nil: it said none).
        var senderRange: ClosedRange<Duration>?
    }

    /// The cap and the configured delay as given at creation.
    public let configuration: PlayoutDelay.Configuration
    private let state: LockedValue<State>
    private let effective: Observable<EffectivePlayoutDelay>
    private let logger: Logger

    /// Creates a controller. The configured delay must itself be valid.
    ///
    /// - Throws: ``PlayoutDelayError`` when `configuration.delay` is negative or above the cap.
    public init(configuration: PlayoutDelay.Configuration = PlayoutDelay.Configuration(), logger: Logger = Logger(label: "playout.jitter.delay")) throws(PlayoutDelayError) {
        let (delay, warn) = try configuration.validate(configuration.delay)
        self.configuration = configuration
        self.logger = logger
        state = LockedValue(State(configured: delay))
        effective = Observable(EffectivePlayoutDelay(delay: delay, source: .configured))
        if warn { Self.warnLarge(delay, logger: logger) }
    }

    /// The delay in effect and its source; observers are told of every change.
    public var effectiveDelay: ReadOnlyObservable<EffectivePlayoutDelay> {
        effective.readOnly
    }

    /// Sets an absolute playout delay until the returned handle is released (disposed or
    /// dropped). The most recent override wins. `transition` says how rendering gets there (and
    /// back, when this override is released while in effect): ``PlayoutDelayTransition/immediate``
    /// (pause on increase, skip on decrease) or ``PlayoutDelayTransition/gradual(rate:)``.
    ///
    /// - Throws: ``PlayoutDelayError`` for a negative delay, one above the cap, or a gradual rate
    ///   outside (0, 90 %]; nothing changes.
    public func overridePlayoutDelay(_ delay: Duration, transition: PlayoutDelayTransition = .immediate) throws(PlayoutDelayError) -> PlayoutDelayOverride {
        let (accepted, warn) = try configuration.validate(delay)
        do {
            try transition.validate()
        } catch {
            throw .invalidTransition(transition)
        }
        if warn { Self.warnLarge(accepted, logger: logger) }
        let id = state.withLock { state -> UInt64 in
            state.transition = transition
            return state.overrides.set((accepted, transition))
        }
        publish()
        logger.info("playout delay override set", metadata: ["delay": "\(accepted.compactDescription)", "override": "\(id)", "transition": "\(transition)"])
        return PlayoutDelayOverride(controller: self, id: id, delay: accepted)
    }

    /// Like ``overridePlayoutDelay(_:)`` for a delay in seconds, which may be NaN or infinite
    /// (refused with an error).
    public func overridePlayoutDelay(seconds: Double) throws(PlayoutDelayError) -> PlayoutDelayOverride {
        let (delay, _) = try configuration.validate(seconds: seconds)
        return try overridePlayoutDelay(delay)
    }

    /// Changes the configured delay (in effect unless an override is).
    public func setConfiguredDelay(_ delay: Duration) throws(PlayoutDelayError) {
        let (accepted, warn) = try configuration.validate(delay)
        if warn { Self.warnLarge(accepted, logger: logger) }
        state.withLock {
            $0.configured = accepted
            $0.transition = .immediate
        }
        publish()
    }

    /// The sender's playout-delay range (its `playout-delay` header extension; nil: none): the
    /// configured delay is held within it while no override is in effect.
    public func setSenderRange(_ range: ClosedRange<Duration>?) {
        let changed = state.withLock { state -> Bool in
            guard state.senderRange != range else { return false }
            state.senderRange = range
            state.transition = .immediate
            return true
        }
        guard changed else { return }
        publish()
        logger.info("sender's playout-delay range \(range.map { "\($0.lowerBound.compactDescription)…\($0.upperBound.compactDescription)" } ?? "withdrawn")")
    }

    /// Releases override `id`: returns to the configured delay if it is the one in effect,
    /// otherwise does nothing.
    func release(_ id: UInt64) {
        let released = state.withLock { state -> Bool in
            guard let released = state.overrides.release(id) else { return false }
            state.transition = released.transition
            return true
        }
        guard released else { return }
        publish()
        logger.info("playout delay override released", metadata: ["override": "\(id)"])
    }

    /// Sets the observable from the state. Computing inside `update` (the observable's lock, then
    /// the state's — never the other way round) keeps concurrent changes in order: the last
    /// change is the last value.
    private func publish() {
        effective.update { value in
            value = state.withLock { state in
                if let override = state.overrides.value {
                    return EffectivePlayoutDelay(delay: override.delay, source: .override, transition: state.transition)
                }
                if let range = state.senderRange {
                    let held = min(max(state.configured, range.lowerBound), range.upperBound, configuration.maximum)
                    if held != state.configured { return EffectivePlayoutDelay(delay: held, source: .sender, transition: state.transition) }
                }
                return EffectivePlayoutDelay(delay: state.configured, source: .configured, transition: state.transition)
            }
        }
    }

    private static func warnLarge(_ delay: Duration, logger: Logger) {
        logger.warning(
            "playout delay \(delay.compactDescription) is above \(PlayoutDelay.warningThreshold.compactDescription): memory grows with delay × bitrate"
        )
    }
}

/// A held playout-delay override. Releasing it — ``dispose()`` or dropping the last reference —
/// returns to the configured delay if it is still the override in effect.
public final class PlayoutDelayOverride: Disposable {
    /// The delay this override asked for.
    public let delay: Duration
    private let controller: PlayoutDelayController
    private let id: UInt64
    private let released = LockedValue(false)

    init(controller: PlayoutDelayController, id: UInt64, delay: Duration) {
        self.controller = controller
        self.id = id
        self.delay = delay
    }

    /// Releases the override. Idempotent.
    public func dispose() {
        let first = released.withLock { released -> Bool in
            defer { released = true }
            return !released
        }
        if first { controller.release(id) }
    }

    deinit {
        dispose()
    }
}
