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
        subcommands: [SubscribeCommand.self, PublishCommand.self, DemoCommand.self, BenchCommand.self, SwarmCommand.self, VersionCommand.self]
    )

    /// Sets up logging, then parses and runs the command line. A mistake in it is one line on
    /// stderr, naming the help to read, and a non-zero exit; help and version go to stdout as
    /// usual.
    static func main() {
        reopenClosedStandardStreams()
        unblockInterrupts()
        bootstrapLogging()
        do {
            var command = try parse(Array(CommandLine.arguments.dropFirst()))
            try command.run()
        } catch {
            if error is ExitCode || exitCode(for: error) == .success { exit(withError: error) }
            let subcommands = configuration.subcommands.map { $0._commandName }
            let arguments = CommandLine.arguments.dropFirst()
            let help = arguments.first.flatMap { subcommands.contains($0) ? "playout \($0) --help" : nil } ?? "playout --help"
            let reason = userMessage(for: error, arguments: Array(arguments)).split(whereSeparator: \.isNewline).joined(separator: " ")
            writeError("playout: \(reason) (see \(help))\n")
            exit(withError: ExitCode(exitCode(for: error).rawValue))
        }
    }

    /// Ctrl-C, SIGTERM and SIGHUP reach the process whatever its parent blocked (a blocked mask
    /// is inherited across exec): the run stops with its summary, or the process ends while a
    /// source is still being opened.
    static func unblockInterrupts() {
        var signals = sigset_t()
        sigemptyset(&signals)
        for number in stopSignals { sigaddset(&signals, number) }
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
    }

    /// How often an option that is not repeatable may be given (the last one wins): 256. The
    /// repeatable ones (`--tag`, `--telemetry`, `--override`, `--limit-bandwidth`) have no limit:
    /// ``parse(_:)`` collects them itself (``RepeatedOptionScan``).
    static let maximumRepetitions = 256

    /// Refuses a command line that gives one option more than ``maximumRepetitions`` times,
    /// before parsing it: swift-argument-parser merges the positions of every repetition into
    /// the next one, so its time grows with the square of the count. ``parse(_:)`` calls it
    /// after taking the repeatable options out. Linear in the number of arguments.
    ///
    /// - Throws: `ValidationError` (exit 64) naming the option and the limit.
    static func checkRepetitions(_ arguments: [String]) throws {
        var counts: [Substring: Int] = [:]
        for argument in arguments {
            if argument == "--" { break }
            guard argument.hasPrefix("--") else { continue }
            let name = argument.prefix { $0 != "=" }
            counts[name, default: 0] += 1
            if let count = counts[name], count > maximumRepetitions {
                let total = arguments.filter { $0 == name || $0.hasPrefix(name + "=") }.count
                throw ValidationError("\(name) is given \(total) times: at most \(maximumRepetitions); give each value once")
            }
        }
    }

    /// Standard input, output and error that the parent closed (`>&-`) are opened on /dev/null
    /// before anything else opens a file: otherwise the first file opened (a sink, the SDP) would
    /// get descriptor 0, 1 or 2, and the JSON Lines or log lines would be written into it.
    static func reopenClosedStandardStreams() {
        for descriptor in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] where fcntl(descriptor, F_GETFD) < 0 && errno == EBADF {
            let opened = open("/dev/null", descriptor == STDIN_FILENO ? O_RDONLY : O_WRONLY)
            if opened >= 0, opened != descriptor {
                dup2(opened, descriptor)
                close(opened)
            }
        }
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

    /// The exit status of a run whose `--telemetry` backends lost records under
    /// `--telemetry-strict`: 3 (a bad option is 64, any other failure 1).
    static let telemetryUndeliveredExitCode: Int32 = 3

    /// The exit status of a swarm run that breached an objective of its `--slo`.
    static let sloBreachedExitCode: Int32 = 4

    /// A one-line reason on stderr and a non-zero exit, no stack trace: 1, or
    /// ``telemetryUndeliveredExitCode`` for lost telemetry under `--telemetry-strict`.
    static func failure(_ error: any Error) -> any Error {
        if error is ExitCode { return error }
        writeError("playout: \(error)\n")
        return error is TelemetryUndeliveredError ? ExitCode(telemetryUndeliveredExitCode) : ExitCode.failure
    }
}
