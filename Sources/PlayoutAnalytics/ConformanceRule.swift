/// The rules one adapter checks, as its SDK's guide states them: what a ``ConformanceLog`` needs
/// to export itself (``ConformanceLog/export()``) — every rule checked, not only the broken ones,
/// each with the guide's section that states it.
///
/// The four adapters' rule enums conform: ``MuxRule`` (``MuxCore``), ``HeartbeatRule``
/// (``HeartbeatTracker``), ``NielsenRule`` (``NielsenAppSDK``) and ``OpenAVTRule``
/// (``OpenAVTInstrument``).
///
/// ```swift
/// let log = ConformanceLog<MuxRule>()
/// let mux = MuxCore(instrument: instrument, options: .init(conformance: log))
/// // … the run …
/// let xml = log.export().junitXML     // one <testcase> per MuxRule case, a <failure> per finding
/// ```
public protocol ConformanceRule: Hashable, Sendable, CaseIterable, RawRepresentable where RawValue == String {
    /// The adapter that checks these rules (a JUnit `classname`): `"MuxCore"`.
    static var adapter: String { get }
    /// The guide the rules come from (the one in `shared/seeds/`).
    static var guide: String { get }
    /// The section of ``guide`` that states this rule.
    var guideSection: String { get }
}

extension MuxRule: ConformanceRule {
    /// `"MuxCore"`.
    public static var adapter: String { "MuxCore" }
    /// The Mux Data custom Objective-C integration guide (core SDK v5).
    public static var guide: String { "Mux Data: custom Objective-C integration (core SDK v5)" }
}

extension HeartbeatRule: ConformanceRule {
    /// `"HeartbeatTracker"`.
    public static var adapter: String { "HeartbeatTracker" }
    /// Adobe's video heartbeat SDK 1.4 for iOS guide.
    public static var guide: String { "Adobe Primetime video heartbeat SDK 1.4 for iOS" }
}

extension NielsenRule: ConformanceRule {
    /// `"NielsenAppSDK"`.
    public static var adapter: String { "NielsenAppSDK" }
    /// Nielsen's DCR video iOS App SDK guide.
    public static var guide: String { "Nielsen DCR video iOS App SDK" }
}

extension OpenAVTRule: ConformanceRule {
    /// `"OpenAVTInstrument"`.
    public static var adapter: String { "OpenAVTInstrument" }
    /// The OpenAVT-iOS README.
    public static var guide: String { "OpenAVT-iOS: Instrument, trackers, hub, metricalc, backends" }
}
