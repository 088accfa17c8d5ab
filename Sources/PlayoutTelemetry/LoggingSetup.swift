public import Logging

/// How an application sets up Playout's logging: console output at the level named by
/// `PLAYOUT_LOG_LEVEL`, and a ``LogCollector`` that collects at its own level.
///
/// The library never bootstraps logging itself; the application (the `playout` CLI, a sample, a
/// test) does, once:
///
/// ```swift
/// let collector = LogCollector()
/// let setup = LoggingSetup(environment: ProcessInfo.processInfo.environment)
/// LoggingSystem.bootstrap(setup.makeFactory(collector: collector))
/// if let problem = setup.problem { Logger(label: "playout").warning("\(problem)") }
/// ```
public struct LoggingSetup: Sendable, Equatable {
    /// The environment variable naming the console level.
    public static let environmentVariable = "PLAYOUT_LOG_LEVEL"
    /// The console level when the variable is unset or invalid: warning.
    public static let defaultConsoleLevel: Logger.Level = .warning

    /// The level from which log lines reach the console (standard error).
    public var consoleLevel: Logger.Level
    /// Why the environment's value was ignored, if it was; report it once.
    public var problem: String?

    /// Reads `PLAYOUT_LOG_LEVEL` (trace|debug|info|warning|error, any case; also notice and
    /// critical) from `environment`. An invalid value is ignored and described in ``problem``.
    public init(environment: [String: String]) {
        guard let raw = environment[Self.environmentVariable], !raw.isEmpty else {
            self.init(consoleLevel: Self.defaultConsoleLevel)
            return
        }
        if let level = Logger.Level(rawValue: raw.lowercased()) {
            self.init(consoleLevel: level)
        } else {
            self.init(consoleLevel: Self.defaultConsoleLevel)
            problem = "ignoring \(Self.environmentVariable)=\(raw): use one of trace, debug, info, warning, error"
        }
    }

    /// A setup with an explicit console level.
    public init(consoleLevel: Logger.Level) {
        self.consoleLevel = consoleLevel
        self.problem = nil
    }

    /// A `LoggingSystem.bootstrap` factory: each logger writes to `console` at ``consoleLevel``
    /// and to `collector` at the collector's own level.
    public func makeFactory(
        collector: LogCollector,
        console: @escaping @Sendable (String) -> any LogHandler = { StreamLogHandler.standardError(label: $0) }
    ) -> @Sendable (String) -> any LogHandler {
        let consoleLevel = self.consoleLevel
        return { label in
            var consoleHandler = console(label)
            consoleHandler.logLevel = consoleLevel
            return MultiplexLogHandler([consoleHandler, collector.makeHandler(label: label)])
        }
    }
}
