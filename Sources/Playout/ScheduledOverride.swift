public import PlayoutCore

/// A playout-delay override planned ahead: `delay` from `at` after start, released `hold` later
/// (or held to the end). The command line writes it `DELAY@AT[/FOR]`, e.g. `2s@5s/10s`.
public struct ScheduledOverride: Equatable, Sendable, CustomStringConvertible {
    /// The absolute delay to set.
    public var delay: Duration
    /// When, after the start.
    public var at: Duration
    /// How long it is held (nil: until the end).
    public var hold: Duration?
    /// How rendering moves to the delay and back (default immediate: pause or skip).
    public var transition: PlayoutDelayTransition

    /// An override of `delay` set `at` after the start and released `hold` later (nil: held to
    /// the end), reached by `transition`.
    public init(delay: Duration, at: Duration, hold: Duration? = nil, transition: PlayoutDelayTransition = .immediate) {
        self.delay = delay
        self.at = at
        self.hold = hold
        self.transition = transition
    }

    /// Parses `DELAY@AT[/FOR]` (durations with `ms` or `s`).
    ///
    /// - Throws: ``PlayoutError`` with code `invalidOption` and an example of the right form,
    ///   e.g. "'soon' is not an override: write DELAY@AT[/FOR], e.g. 2s@5s/10s …".
    public init(parsing text: String) throws(PlayoutError) {
        let (value, at, hold) = try Self.timetableEntry(text, what: "an override", example: "write DELAY@AT[/FOR], e.g. 2s@5s/10s (2 s, 5 s after start, for 10 s) or 500ms@12s")
        guard let delay = try? Duration(parsing: String(value)), delay >= .zero else {
            throw PlayoutError(.invalidOption, "'\(text)' is not an override: DELAY '\(value)' is not a duration ≥ 0; write DELAY@AT[/FOR], e.g. 2s@5s/10s (2 s, 5 s after start, for 10 s) or 500ms@12s")
        }
        self.delay = delay
        self.at = at
        self.hold = hold
        transition = .immediate
    }

    /// Splits one entry of a timetable option, `VALUE@AT[/FOR]` (`--override`, `--limit-bandwidth`):
    /// the value as typed, when after the start, and for how long (nil: to the end).
    ///
    /// - Throws: ``PlayoutError`` (`invalidOption`) naming `what` the text is not, with `example`.
    package static func timetableEntry(_ text: String, what: String, example: String) throws(PlayoutError) -> (value: Substring, at: Duration, hold: Duration?) {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw PlayoutError(.invalidOption, "'\(text)' is not \(what): \(example)") }
        let timing = parts[1].split(separator: "/", omittingEmptySubsequences: false)
        guard timing.count <= 2 else { throw PlayoutError(.invalidOption, "'\(text)' is not \(what): \(example)") }
        func duration(_ part: Substring, _ name: String) throws(PlayoutError) -> Duration {
            guard let value = try? Duration(parsing: String(part)), value >= .zero else {
                throw PlayoutError(.invalidOption, "'\(text)' is not \(what): \(name) '\(part)' is not a duration ≥ 0; \(example)")
            }
            return value
        }
        return (parts[0], try duration(timing[0], "AT"), timing.count == 2 ? try duration(timing[1], "FOR") : nil)
    }

    public var description: String {
        "\(delay.compactDescription)@\(at.compactDescription)" + (hold.map { "/\($0.compactDescription)" } ?? "")
    }
}

extension PlayoutError.Code {
    /// An option or its value is wrong (in the API or on the command line).
    public static let invalidOption = Self("invalidOption")
}
