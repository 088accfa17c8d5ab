import ArgumentParser

/// A typed option value: parsed from what a user types, shown in `--help` as a user writes it
/// (`230ms`, `1280x720`, `null`), and, when it cannot be parsed, an error that says what to type.
///
/// swift-argument-parser reports a value that `init?(argument:)` refuses as "The value 'X' is
/// invalid for '--name <value-name>'" without a reason; ``PlayoutCommand/userMessage(for:)``
/// finds the type by its ``valueName`` and replaces that with `--name X: <reason>`, the reason
/// coming from ``init(parsing:)``. Declare each option with ``help(_:)`` so the option carries
/// the value name.
protocol ArgumentValue: ExpressibleByArgument, Sendable {
    /// The placeholder in help and errors, e.g. `duration` for `--playout-delay <duration>`.
    /// Types that share one must parse alike.
    static var valueName: String { get }
    /// Whether messages must not repeat the value typed (keys).
    static var isSecret: Bool { get }
    /// Parses `text`, or throws an error that says what to type.
    init(parsing text: String) throws(ValidationError)
}

extension ArgumentValue {
    static var isSecret: Bool { false }

    init?(argument: String) {
        guard let value = try? Self(parsing: argument) else { return nil }
        self = value
    }

    /// Option help that carries ``valueName``.
    static func help(_ abstract: String) -> ArgumentHelp {
        ArgumentHelp(abstract, valueName: valueName)
    }

    /// Why `text` is refused, or nil when it parses.
    static func reason(rejecting text: String) -> String? {
        do {
            _ = try Self(parsing: text)
            return nil
        } catch {
            return error.message
        }
    }
}

extension PlayoutCommand {
    /// Every ``ArgumentValue`` type the commands use, for ``userMessage(for:)``.
    static let argumentValueTypes: [any ArgumentValue.Type] = [
        DurationArgument.self, RunLength.self, PercentageArgument.self, BitRateArgument.self, BurstLossArgument.self,
        VideoCodecArgument.self, PictureSizeArgument.self, SinkArgument.self, OverrideArgument.self, BandwidthLimitArgument.self, SRTPKeyArgument.self,
        DestinationArgument.self, TelemetrySpec.self, TagArgument.self, ScheduleArgument.self, TransitionArgument.self,
        OutputPathArgument.self, SVGPathArgument.self, SDPPathArgument.self, AnalyticsAdapterArgument.self, AnalyticsReportArgument.self,
    ]

    /// The one-line message for a command-line error: swift-argument-parser's own, except that
    /// "The value 'X' is invalid for '--name <value-name>'" for an ``ArgumentValue`` becomes
    /// "--name X: <why, and what to type>" (without X for a secret, `''` for an empty value), and
    /// its "Missing value for '--name <value-name>'" for `--name=` in `arguments` (an empty value
    /// after '=', which the parser takes for none) becomes the same as for `--name ''`.
    static func userMessage(for error: any Error, arguments: [String] = []) -> String {
        let message = message(for: error)
        if let (option, valueName) = missingValue(in: message), arguments.prefix(while: { $0 != "--" }).contains(option + "=") {
            guard let type = argumentValueTypes.first(where: { $0.valueName == valueName }), let reason = type.reason(rejecting: "") else {
                return "\(option)= gives an empty value: write \(option) <\(valueName)>"
            }
            return "\(option) '': \(reason)"
        }
        guard let (option, valueName, value) = invalidValue(in: message),
              let type = argumentValueTypes.first(where: { $0.valueName == valueName }),
              let reason = type.reason(rejecting: value)
        else { return message }
        return type.isSecret ? "\(option): \(reason)" : "\(option) \(value.isEmpty ? "''" : value): \(reason)"
    }

    /// The option and value name of swift-argument-parser's "Missing value for '--name <value-name>'".
    static func missingValue(in message: String) -> (option: String, valueName: String)? {
        let prefix = "Missing value for '"
        guard message.hasPrefix(prefix) else { return nil }
        let rest = message.dropFirst(prefix.count)
        guard let end = rest.firstIndex(of: "'") else { return nil }
        let synopsis = rest[..<end]  // --name <value-name>
        guard let open = synopsis.firstIndex(of: "<"), synopsis.last == ">" else { return nil }
        let option = String(synopsis[..<open].filter { $0 != " " })
        guard option.hasPrefix("--") else { return nil }
        return (option, String(synopsis[synopsis.index(after: open)..<synopsis.index(before: synopsis.endIndex)]))
    }

    /// The option, value name and value of swift-argument-parser's "The value 'X' is invalid for
    /// '--name <value-name>'…".
    static func invalidValue(in message: String) -> (option: String, valueName: String, value: String)? {
        let prefix = "The value '"
        let middle = "' is invalid for '"
        guard message.hasPrefix(prefix), let split = message.ranges(of: middle).last else { return nil }
        let value = String(message[message.index(message.startIndex, offsetBy: prefix.count)..<split.lowerBound])
        let rest = message[split.upperBound...]
        guard let end = rest.firstIndex(of: "'") else { return nil }
        let synopsis = rest[..<end]  // --name <value-name>
        guard let open = synopsis.firstIndex(of: "<"), synopsis.last == ">" else { return nil }
        let option = String(synopsis[..<open].filter { $0 != " " })
        let valueName = synopsis[synopsis.index(after: open)..<synopsis.index(before: synopsis.endIndex)]
        guard option.hasPrefix("-") else { return nil }
        return (option, String(valueName), value)
    }
}
