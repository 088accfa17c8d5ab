import ArgumentParser
import FoundationEssentials
import Logging
import Playout

/// `playout`: subscribe to live test streams, render them on time, and report QoS.
@main
struct PlayoutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playout",
        abstract: "A real-time stream subscriber and renderer simulator: subscribe, hold for a playout delay, decode, render on time, report QoS.",
        discussion: """
            Logging: set PLAYOUT_LOG_LEVEL to trace, debug, info, warning (default) or error.
            """,
        version: PlayoutVersion.current,
        subcommands: [SubscribeCommand.self, PublishCommand.self, DemoCommand.self, VersionCommand.self]
    )

    /// Parses and runs the command line. A mistake in it is one line on stderr, naming the
    /// help to read, and a non-zero exit; help and version go to stdout as usual.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            if error is ExitCode || exitCode(for: error) == .success { exit(withError: error) }
            let subcommands = configuration.subcommands.map { $0._commandName }
            let arguments = CommandLine.arguments.dropFirst()
            let help = arguments.first.flatMap { subcommands.contains($0) ? "playout \($0) --help" : nil } ?? "playout --help"
            let reason = message(for: error).split(whereSeparator: \.isNewline).joined(separator: " ")
            writeError("playout: \(reason) (see \(help))\n")
            exit(withError: ExitCode(exitCode(for: error).rawValue))
        }
    }

    /// Sets up logging for the process, once: console at PLAYOUT_LOG_LEVEL, plus collection.
    static let logCollector: LogCollector = {
        let collector = LogCollector()
        let setup = LoggingSetup(environment: ProcessInfo.processInfo.environment)
        LoggingSystem.bootstrap(setup.makeFactory(collector: collector))
        // FFmpeg's own lines only when asked for: they would break the live view.
        FFmpegLibrary.setLogLevel(setup.consoleLevel == .trace ? .verbose : setup.consoleLevel == .debug ? .warning : .quiet)
        if let problem = setup.problem {
            Logger(label: "playout").warning("\(problem)")
        }
        return collector
    }()
}
