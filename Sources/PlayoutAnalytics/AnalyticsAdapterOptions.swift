public import Logging

/// What every analytics adapter takes besides its SDK's own settings, in one shape: the
/// conformance log, the logger, and quiet mode. ``HeartbeatTracker``, ``MuxCore``,
/// ``NielsenAppSDK`` and ``OpenAVTInstrument`` each take one (`options:`), with their SDK's
/// ``ConformanceFinding`` rules as `Rule`.
///
/// ```swift
/// let log = ConformanceLog<NielsenRule>()
/// let nielsen = NielsenAppSDK(appInfo: ["appid": appId], instrument: instrument, options: .init(conformance: log))
/// let mux = MuxCore(instrument: instrument, options: .conformance())     // a new log: mux.conformance
/// let quiet = MuxCore(instrument: instrument, options: .init(quiet: true)) // checks calls, sends nothing
/// ```
public struct AnalyticsAdapterOptions<Rule: Hashable & Sendable>: Sendable {
    /// Where every call and every broken rule of the SDK's guide is recorded (nil: conformance
    /// mode off). Several adapters may share one log.
    public var conformance: ConformanceLog<Rule>?
    /// Where the adapter writes its lines (trace lines in debug logging, refused calls); nil: the
    /// adapter's own label (`playout.analytics.<sdk>`).
    public var logger: Logger?
    /// Quiet mode (an opt-out): every call is still checked (and recorded in conformance mode),
    /// but no event is sent to the engine.
    public var quiet: Bool

    /// Options with the given values (defaults: no conformance log, the adapter's logger, not quiet).
    public init(conformance: ConformanceLog<Rule>? = nil, logger: Logger? = nil, quiet: Bool = false) {
        self.conformance = conformance
        self.logger = logger
        self.quiet = quiet
    }

    /// Conformance mode with a new log (read it from the adapter's `conformance`).
    public static func conformance(logger: Logger? = nil, quiet: Bool = false) -> Self {
        .init(conformance: ConformanceLog(), logger: logger, quiet: quiet)
    }
}
