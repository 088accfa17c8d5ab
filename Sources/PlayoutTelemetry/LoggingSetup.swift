public import Logging
import PlayoutCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How an application sets up Playout's logging: console output (standard error) at the level
/// named by `PLAYOUT_LOG_LEVEL`, and a ``LogCollector`` that collects at its own level.
///
/// The library never bootstraps logging itself; the application (the `playout` CLI, a sample, a
/// test) does, with one call that is safe to repeat:
///
/// ```swift
/// import Playout
///
/// let collector = LoggingSetup.bootstrap(collector: LogCollector())
/// Logger(label: "my.app").warning("hello")   // on stderr at PLAYOUT_LOG_LEVEL, and collected
/// print(collector.collectLogMessages())
/// ```
///
/// To build the handlers yourself (another console handler, your own `LoggingSystem.bootstrap`
/// call), use ``makeFactory(collector:console:)``.
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

    /// Reads `PLAYOUT_LOG_LEVEL` from this process's environment, as ``init(environment:)`` does.
    public init() {
        var environment: [String: String] = [:]
        if let value = getenv(Self.environmentVariable) {
            environment[Self.environmentVariable] = String(cString: value)
        }
        self.init(environment: environment)
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

extension LoggingSetup {
    /// The collector of the process's bootstrap, once there was one.
    private static let bootstrapped = LockedValue<LogCollector?>(nil)

    /// Bootstraps swift-log for the whole process, once: every `Logger` created afterwards writes
    /// to standard error from `setup`'s ``consoleLevel`` up, and into `collector` at the
    /// collector's own level. An invalid `PLAYOUT_LOG_LEVEL` is reported once, as a warning.
    ///
    /// Idempotent and thread safe: only the first call bootstraps; every later call (from another
    /// test, another thread, another library) changes nothing and returns the first call's
    /// collector, so each caller can use what it gets back. Call it before creating loggers:
    /// a `Logger` keeps the handler it was created with.
    ///
    /// swift-log allows one `LoggingSystem.bootstrap` per process: do not call it yourself as
    /// well (use ``makeFactory(collector:console:)`` instead of this method if you need to).
    ///
    /// ```swift
    /// let collector = LoggingSetup.bootstrap(collector: LogCollector())
    /// ```
    ///
    /// - Parameters:
    ///   - collector: The collector to install, used only by the first call.
    ///   - setup: The console level; by default read from this process's `PLAYOUT_LOG_LEVEL`.
    ///     Used only by the first call.
    /// - Returns: The collector in effect: `collector` on the first call, the first call's
    ///   collector on every later one.
    @discardableResult
    public static func bootstrap(collector: LogCollector = LogCollector(), setup: LoggingSetup = LoggingSetup()) -> LogCollector {
        let (inEffect, isFirst) = bootstrapped.withLock { installed -> (LogCollector, Bool) in
            if let installed { return (installed, false) }
            LoggingSystem.bootstrap(setup.makeFactory(collector: collector))
            installed = collector
            return (collector, true)
        }
        if isFirst, let problem = setup.problem {
            Logger(label: "playout").warning("\(problem)")
        }
        return inEffect
    }
}
