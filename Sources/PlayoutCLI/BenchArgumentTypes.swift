import ArgumentParser
import Playout
import PlayoutBench

/// A schedule of playout-delay overrides, comma-separated, each in `--override`'s syntax
/// `DELAY@AT[/FOR]`: `2s@5s/5s,500ms@12s`.
struct ScheduleArgument: ArgumentValue, Equatable {
    static let valueName = "delay@at[/for],…"
    var overrides: [ScheduledOverride]

    init(_ overrides: [ScheduledOverride]) {
        self.overrides = overrides
    }

    init(parsing text: String) throws(ValidationError) {
        let form = "write DELAY@AT[/FOR] entries separated by commas, e.g. 2s@5s/5s,500ms@12s"
        guard !text.isEmpty else { throw ValidationError("the schedule is empty; \(form)") }
        var overrides: [ScheduledOverride] = []
        for (index, entry) in text.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            guard !entry.isEmpty else { throw ValidationError("entry \(index + 1) is empty; \(form)") }
            do {
                overrides.append(try ScheduledOverride(parsing: String(entry)))
            } catch {
                throw ValidationError("entry \(index + 1) '\(entry)': \(error.message)")
            }
        }
        self.overrides = overrides
    }

    var defaultValueDescription: String {
        overrides.isEmpty ? "none" : overrides.map(\.description).joined(separator: ",")
    }
}

/// How rendering moves to a new delay: `immediate` or `gradual:RATE` (`gradual:10%`).
struct TransitionArgument: ArgumentValue, Equatable {
    static let valueName = "immediate|gradual:rate"
    var transition: PlayoutDelayTransition

    init(_ transition: PlayoutDelayTransition) {
        self.transition = transition
    }

    init(parsing text: String) throws(ValidationError) {
        do {
            transition = try PlayoutDelayTransition(parsing: text)
        } catch {
            throw ValidationError(error.message.replacing("transition '\(text)': ", with: ""))
        }
    }

    var defaultValueDescription: String { PlayoutDelayBenchmark.describe(transition) }
}

/// A file to write: a path that names a file (not empty, not a directory, no control
/// characters); ``SVGPathArgument`` also ends in `.svg`.
struct OutputPathArgument: ArgumentValue, Equatable {
    static let valueName = "path"
    var path: String

    init(parsing text: String) throws(ValidationError) {
        path = try Self.check(text, example: "bench.csv")
    }

    /// `text` when it names a file, else an error that says what to write.
    static func check(_ text: String, example: String) throws(ValidationError) -> String {
        guard !text.isEmpty else { throw ValidationError("the path is empty; name a file, e.g. \(example)") }
        guard !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw ValidationError("the path contains a control character; name a file, e.g. \(example)")
        }
        guard !text.hasSuffix("/"), text != ".", text != "..", !text.hasSuffix("/."), !text.hasSuffix("/..") else {
            throw ValidationError("'\(text)' names a directory; name a file in it, e.g. \(text.hasSuffix("/") ? text : text + "/")\(example)")
        }
        return text
    }

    var defaultValueDescription: String { path }
}

/// A picture to write: a file path ending in `.svg`.
struct SVGPathArgument: ArgumentValue, Equatable {
    static let valueName = "path.svg"
    var path: String

    init(parsing text: String) throws(ValidationError) {
        path = try OutputPathArgument.check(text, example: "bench.svg")
        guard path.lowercased().hasSuffix(".svg"), path.count > 4, !path.hasSuffix("/.svg") else {
            throw ValidationError("the picture is an SVG file: name it PATH.svg, e.g. bench.svg")
        }
    }

    var defaultValueDescription: String { path }
}
