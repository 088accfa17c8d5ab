/// The rules of the OpenAVT-iOS guide (`seeds/001`) and of OpenAVT's core hub that
/// ``OpenAVTInstrument``'s conformance mode checks. A broken one becomes a
/// ``ConformanceFinding`` whose detail ends with `(guide: <section>)`; the session goes on. An
/// action the hub refuses is never dropped silently: it is counted
/// (``OpenAVTInstrument/rejectedActions``), logged, and reported.
public enum OpenAVTRule: String, Sendable, Hashable, CaseIterable {
    /// `ready()` is called once every component is in place, before the trackers emit ("Creating
    /// the Instrument"). An action emitted before is still processed.
    case readyBeforeEmit
    /// After any change on the instrument — a tracker added, a hub, metric calculator or backend
    /// set — `ready()` is called again before the next action ("Custom Components").
    case readyAfterChange
    /// Actions, getters and removals name a tracker that was added and not removed ("Custom
    /// Components": `addTracker` returns the id, `removeTracker` takes it).
    case knownTracker
    /// `MediaRequest`, `PlayerSet`, `StreamLoad` and `Start` happen once per playback (a playback
    /// ends with `End`, `Stop` or `Next`; `PlayerSet` once per tracker) — the core hub's rule
    /// ("Choosing a Hub": `OAVTHubCore`).
    case oncePerPlayback
    /// `PauseBegin` only after `Start` and while not paused; `PauseFinish` only while paused
    /// ("Custom Hubs": the pause logic example).
    case pauseBlock
    /// `BufferBegin` only while not buffering; `BufferFinish` only while buffering ("Choosing a
    /// Hub").
    case bufferBlock
    /// `SeekBegin` only while not seeking; `SeekFinish` only while seeking ("Choosing a Hub").
    case seekBlock
    /// `End`, `Stop` and `Next` only after `Start`, once per playback ("Choosing a Hub").
    case finishAfterStart
    /// Action names are in upper camel case: `CustomAction` ("Custom Actions").
    case actionNameCase
    /// Attribute names are in lower camel case: `customAttribute` ("Custom Attributes").
    case attributeNameCase
    /// Metric names are in upper camel case, like action names: `CustomMetric` ("Custom
    /// Metrics").
    case metricNameCase
}

extension OpenAVTRule {
    /// The section of the guide that states the rule; every finding's detail ends with it.
    public var guideSection: String {
        switch self {
        case .readyBeforeEmit: "Creating the Instrument"
        case .readyAfterChange, .knownTracker: "Custom Components"
        case .oncePerPlayback, .bufferBlock, .seekBlock, .finishAfterStart: "Choosing a Hub (OAVTHubCore)"
        case .pauseBlock: "Custom Hubs"
        case .actionNameCase: "Custom Actions"
        case .attributeNameCase: "Custom Attributes"
        case .metricNameCase: "Custom Metrics"
        }
    }

    /// Whether `name` keeps the case convention of this naming rule (upper camel case for
    /// actions and metrics, lower camel case for attributes: an ASCII letter of that case, then
    /// ASCII letters and digits). Nil for rules that are not about names.
    func acceptsName(_ name: String) -> Bool? {
        let upper: Bool
        switch self {
        case .actionNameCase, .metricNameCase: upper = true
        case .attributeNameCase: upper = false
        default: return nil
        }
        guard let first = name.utf8.first, upper ? first.isASCIIUppercase : first.isASCIILowercase else { return false }
        return name.utf8.allSatisfy { $0.isASCIIUppercase || $0.isASCIILowercase || $0.isASCIIDigit }
    }
}

extension UInt8 {
    /// `A` … `Z`.
    var isASCIIUppercase: Bool { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self) }
    /// `a` … `z`.
    var isASCIILowercase: Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) }
    /// `0` … `9`.
    var isASCIIDigit: Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) }
}

/// An OpenAVT conformance finding.
public typealias OpenAVTFinding = ConformanceFinding<OpenAVTRule>
