import ArgumentParser

/// One repeatable option (`--tag`, `--telemetry`, `--override`, `--limit-bandwidth`) as the
/// command line is scanned for it before swift-argument-parser parses the rest.
///
/// swift-argument-parser merges the positions of every repetition into the next one, so its time
/// grows with the square of the count (10,000 `--tag`s took 8.6 s, 20,000 over 40 s).
/// ``RepeatedOptionScan`` takes every repetition after the first out of the arguments in one
/// linear pass; the parser sees each option once, and the command gets all the values back in
/// order (``ReceivesRepeatedOptions``).
struct RepeatedOption: Sendable {
    /// The option as typed, e.g. `--tag`.
    var name: String
    /// Whether the next argument is its value whatever it looks like (`parsing: .unconditionalSingleValue`,
    /// so `--override -1s@1s` is a refused value, not a missing one).
    var unconditional: Bool
    /// Whether `value` parses (a value that does not is left for the parser, so its message is
    /// the parser's own, word for word).
    var accepts: @Sendable (String) -> Bool

    /// The option `name` whose values are `Value`s.
    init<Value: ArgumentValue>(_ name: String, _ type: Value.Type, unconditional: Bool = false) {
        self.name = name
        self.unconditional = unconditional
        accepts = { Value.reason(rejecting: $0) == nil }
    }
}

/// A command with repeatable options that ``PlayoutCommand/parse(_:)`` collects before parsing.
protocol ReceivesRepeatedOptions: ParsableCommand {
    /// Its repeatable options.
    static var repeatedOptions: [RepeatedOption] { get }
    /// Its options that take the next argument as their value whatever it looks like
    /// (`parsing: .unconditional`): an argument after one of them is a value, not an option.
    static var unconditionalOptions: Set<String> { get }
    /// Takes every value of every repeatable option, in the order given (an option absent from
    /// `values` was given at most once: the parser's value stands), and validates the whole.
    ///
    /// - Throws: `ValidationError` as the command's `validate()` throws it.
    mutating func receive(_ values: [String: [String]]) throws
}

/// The command line with every repetition of the repeatable options after the first taken out,
/// and the values of those options, in one linear pass.
///
/// What stays in ``arguments`` for the parser: the first occurrence of each option in place, and
/// any later one whose value is missing or does not parse — so every error reads as the parser
/// writes it, for the same argument. `--` ends the options.
///
/// ```swift
/// let scan = RepeatedOptionScan(["x.sdp", "--tag", "a=1", "--tag=b=2"], options: SubscribeCommand.repeatedOptions, unconditional: [])
/// // scan.arguments == ["x.sdp", "--tag", "a=1"], scan.values == ["--tag": ["a=1", "b=2"]]
/// ```
///
/// - Complexity: O(n) in the number of arguments.
struct RepeatedOptionScan: Equatable {
    /// What the parser parses.
    var arguments: [String]
    /// The values of each repeatable option given more than once, in order (the first included).
    var values: [String: [String]]

    init(_ arguments: [String], options: [RepeatedOption], unconditional: Set<String>) {
        var byName: [Substring: RepeatedOption] = [:]
        for option in options { byName[Substring(option.name)] = option }
        var kept: [String] = []
        kept.reserveCapacity(arguments.count)
        var found: [String: [String]] = [:]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" {
                kept.append(contentsOf: arguments[index...])
                break
            }
            let name = argument.prefix { $0 != "=" }
            guard argument.hasPrefix("--"), let option = byName[name] else {
                kept.append(argument)
                // An option that takes the next argument whatever it is: that one is its value.
                if name.count == argument.count, unconditional.contains(argument), index + 1 < arguments.count {
                    kept.append(arguments[index + 1])
                    index += 1
                }
                index += 1
                continue
            }
            // The value: after '=', or the next argument (when it is not an option, unless
            // the option takes it whatever it is).
            var value: String?
            var width = 1
            if name.count < argument.count {
                value = String(argument[argument.index(after: name.endIndex)...])
            } else if index + 1 < arguments.count, option.unconditional || !arguments[index + 1].hasPrefix("-") {
                value = arguments[index + 1]
                width = 2
            }
            let first = found[option.name] == nil
            if let value, option.accepts(value) {
                found[option.name, default: []].append(value)
                if first { kept.append(contentsOf: arguments[index..<(index + width)]) }
            } else {
                // Missing or refused: the parser says so, in its words.
                kept.append(contentsOf: arguments[index..<(index + width)])
            }
            index += width
        }
        self.arguments = kept
        values = found.filter { $0.value.count > 1 }
    }
}

extension SubscriptionOptions {
    /// The repeatable options of every command that subscribes.
    static var repeatedOptions: [RepeatedOption] {
        [
            RepeatedOption("--override", OverrideArgument.self, unconditional: true),
            RepeatedOption("--limit-bandwidth", BandwidthLimitArgument.self, unconditional: true),
            RepeatedOption("--telemetry", TelemetrySpec.self),
            RepeatedOption("--tag", TagArgument.self),
        ]
    }

    /// The options here that take their value whatever it looks like.
    static var unconditionalOptions: Set<String> { ["--playout-delay", "--duration", "--qos-interval", "--telemetry-linger"] }

    /// Every value of the repeatable options (``ReceivesRepeatedOptions/receive(_:)``), then
    /// ``validate()`` again on the whole.
    mutating func receive(_ values: [String: [String]]) throws {
        func all<Value: ArgumentValue>(_ name: String, _: Value.Type) throws -> [Value]? {
            try values[name].map { try $0.map { text throws(ValidationError) in try Value(parsing: text) } }
        }
        if let all = try all("--override", OverrideArgument.self) { overrides = all }
        if let all = try all("--limit-bandwidth", BandwidthLimitArgument.self) { limitBandwidth = all }
        if let all = try all("--telemetry", TelemetrySpec.self) { telemetry = all }
        if let all = try all("--tag", TagArgument.self) { tag = all }
        try validate()
    }
}

extension ImpairmentOptions {
    /// The options here that take their value whatever it looks like.
    static var unconditionalOptions: Set<String> { ["--loss", "--burst-loss", "--jitter", "--reorder", "--duplicate", "--bandwidth"] }
}

extension VideoOptions {
    /// The options here that take their value whatever it looks like.
    static var unconditionalOptions: Set<String> { ["--fps", "--bitrate"] }
}

extension SubscribeCommand: ReceivesRepeatedOptions {
    static var repeatedOptions: [RepeatedOption] { SubscriptionOptions<SubscribeDefaults>.repeatedOptions }
    static var unconditionalOptions: Set<String> { SubscriptionOptions<SubscribeDefaults>.unconditionalOptions }
    mutating func receive(_ values: [String: [String]]) throws { try subscription.receive(values) }
}

extension DemoCommand: ReceivesRepeatedOptions {
    static var repeatedOptions: [RepeatedOption] { SubscriptionOptions<DemoDefaults>.repeatedOptions }
    static var unconditionalOptions: Set<String> {
        SubscriptionOptions<DemoDefaults>.unconditionalOptions.union(ImpairmentOptions.unconditionalOptions).union(VideoOptions.unconditionalOptions)
    }
    mutating func receive(_ values: [String: [String]]) throws { try subscription.receive(values) }
}

extension PlayoutCommand {
    /// Parses `arguments` (the command line without the program's name) into the command to run:
    /// the repetitions of repeatable options collected in one linear pass
    /// (``RepeatedOptionScan``), the rest by swift-argument-parser, every other option refused
    /// beyond ``maximumRepetitions``.
    ///
    /// - Throws: what `parseAsRoot` throws, or `ValidationError` (exit 64).
    static func parse(_ arguments: [String]) throws -> any ParsableCommand {
        let type = arguments.first.flatMap { name in configuration.subcommands.first { $0._commandName == name } }
        guard let repeating = type as? any ReceivesRepeatedOptions.Type else {
            try checkRepetitions(arguments)
            return try parseAsRoot(arguments)
        }
        let scan = RepeatedOptionScan(Array(arguments.dropFirst()), options: repeating.repeatedOptions, unconditional: repeating.unconditionalOptions)
        let parserArguments = [arguments[0]] + scan.arguments
        try checkRepetitions(parserArguments)
        let command = try parseAsRoot(parserArguments)
        guard !scan.values.isEmpty, var receiving = command as? any ReceivesRepeatedOptions else { return command }
        try receiving.receive(scan.values)
        return receiving
    }
}
