/// How the delay in effect moves to a new playout delay.
///
/// - ``immediate`` (the default): the new delay applies at once. Every waiting frame is due at
///   `localTime(mediaTime) + newDelay`, so an increase pauses rendering for the difference and a
///   decrease skips what has become late.
/// - ``gradual(rate:)``: the render clock runs at most `rate` slower (increase) or faster
///   (decrease) than the media until the delay in effect reaches the new value — no pause, no
///   skip; it settles after |Δdelay| / rate. With `rate` 0.1 (10 %), 230 ms → 1.23 s takes 10 s,
///   during which 30 fps video renders every 37 ms instead of every 33 ms.
///
/// ```swift
/// let boost = try renderer.overridePlayoutDelay(.seconds(2), transition: .gradual(rate: 0.1))   // Renderer (Playout)
/// ```
public enum PlayoutDelayTransition: Sendable, Hashable, CustomStringConvertible {
    /// Pause on increase, skip on decrease.
    case immediate
    /// Play at most `rate` slower or faster (a fraction, e.g. 0.1 for 10 %) until the delay in
    /// effect reaches the new value. `rate` must be more than 0 and less than 1.
    case gradual(rate: Double)

    /// The largest rate accepted: the render clock must still run forward while it slows down.
    public static let maximumRate = 0.9

    /// Reads `immediate` or `gradual:RATE` where RATE is a percentage (`gradual:10%`) or a
    /// fraction (`gradual:0.1`).
    ///
    /// - Throws: ``PlayoutError`` (code `invalidTransition`) naming the forms accepted.
    public init(parsing text: String) throws(PlayoutError) {
        if text == "immediate" {
            self = .immediate
            return
        }
        let prefix = "gradual:"
        guard text.hasPrefix(prefix) else {
            throw PlayoutError(.invalidTransition, "transition '\(text)': write immediate or gradual:RATE, e.g. gradual:10%")
        }
        var number = String(text.dropFirst(prefix.count))
        var scale = 1.0
        if number.hasSuffix("%") {
            number.removeLast()
            scale = 0.01
        }
        guard let value = Double(number), value.isFinite else {
            throw PlayoutError(.invalidTransition, "transition '\(text)': the rate is a percentage or a fraction, e.g. gradual:10% or gradual:0.1")
        }
        let transition = PlayoutDelayTransition.gradual(rate: value * scale)
        try transition.validate()
        self = transition
    }

    /// Checks the rate of a gradual transition.
    ///
    /// - Throws: ``PlayoutError`` (code `invalidTransition`) when the rate is not in (0, 0.9].
    public func validate() throws(PlayoutError) {
        guard case .gradual(let rate) = self else { return }
        guard rate.isFinite, rate > 0, rate <= Self.maximumRate else {
            throw PlayoutError(.invalidTransition, "a gradual transition's rate must be more than 0 % and at most 90 % (got \(rate * 100) %), e.g. gradual:10%")
        }
    }

    public var description: String {
        switch self {
        case .immediate: "immediate"
        case .gradual(let rate): "gradual:\(rate * 100)%"
        }
    }
}

extension PlayoutError.Code {
    /// A playout-delay transition that cannot be used (a gradual rate outside (0, 90 %]).
    public static let invalidTransition = Self("invalidTransition")
}
