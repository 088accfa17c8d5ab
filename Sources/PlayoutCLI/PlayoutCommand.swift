import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import Playout

/// `playout`: subscribe to live test streams, render them on time, and report QoS.
@main
struct PlayoutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playout",
        abstract: "A real-time stream subscriber and renderer simulator: subscribe, hold for a playout delay, decode, render on time, report QoS.",
        discussion: """
            Logging: set PLAYOUT_LOG_LEVEL to trace, debug, info, warning (default) or error. FFmpeg's own \
            lines (libx264's among them) appear from debug on.
            """,
        version: PlayoutVersion.current,
        subcommands: [SubscribeCommand.self, PublishCommand.self, DemoCommand.self, BenchCommand.self, VersionCommand.self]
    )

    /// Sets up logging, then parses and runs the command line. A mistake in it is one line on
    /// stderr, naming the help to read, and a non-zero exit; help and version go to stdout as
    /// usual.
    static func main() {
        unblockInterrupts()
        bootstrapLogging()
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            if error is ExitCode || exitCode(for: error) == .success { exit(withError: error) }
            let subcommands = configuration.subcommands.map { $0._commandName }
            let arguments = CommandLine.arguments.dropFirst()
            let help = arguments.first.flatMap { subcommands.contains($0) ? "playout \($0) --help" : nil } ?? "playout --help"
            let reason = userMessage(for: error).split(whereSeparator: \.isNewline).joined(separator: " ")
            writeError("playout: \(reason) (see \(help))\n")
            exit(withError: ExitCode(exitCode(for: error).rawValue))
        }
    }

    /// Ctrl-C and SIGTERM reach the process whatever its parent blocked (a blocked mask is
    /// inherited across exec): the run stops with its summary, or the process ends while a source
    /// is still being opened.
    static func unblockInterrupts() {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
    }

    /// Logging for the process, before anything opens a codec: the console at PLAYOUT_LOG_LEVEL
    /// plus collection, and FFmpeg's own lines routed into it (shown from debug on; collected at
    /// any console level).
    @discardableResult
    static func bootstrapLogging() -> LogCollector {
        let setup = LoggingSetup()
        let collector = LoggingSetup.bootstrap(collector: LogCollector(), setup: setup)
        FFmpegLibrary.setLogLevel(setup.consoleLevel == .trace ? .verbose : .warning)
        return collector
    }

    /// A one-line reason on stderr and a non-zero exit, no stack trace.
    static func failure(_ error: any Error) -> any Error {
        if error is ExitCode { return error }
        writeError("playout: \(error)\n")
        return ExitCode.failure
    }
}
