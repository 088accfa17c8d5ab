public import PlayoutCore
public import PlayoutTelemetry

/// An OpenAVT action: what a tracker says happened (`StreamLoad`, `Start`, `BufferBegin` …), by
/// name. Every accepted action becomes a telemetry event (see ``OpenAVTInstrument``); any other
/// name is a user's own action.
public struct OpenAVTAction: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The action's name, as OpenAVT spells it.
    public let name: String

    /// An action called `name`.
    public init(name: String) { self.name = name }
    public init(stringLiteral value: String) { name = value }
    public var description: String { name }

    /// The tracker started.
    public static let trackerInit = OpenAVTAction(name: "TrackerInit")
    /// A stream was requested.
    public static let mediaRequest = OpenAVTAction(name: "MediaRequest")
    /// A player was handed to the tracker.
    public static let playerSet = OpenAVTAction(name: "PlayerSet")
    /// The player can take commands.
    public static let playerReady = OpenAVTAction(name: "PlayerReady")
    /// An item is being prepared.
    public static let prepareItem = OpenAVTAction(name: "PrepareItem")
    /// The manifest was loaded.
    public static let manifestLoad = OpenAVTAction(name: "ManifestLoad")
    /// A stream was loaded: a playback begins.
    public static let streamLoad = OpenAVTAction(name: "StreamLoad")
    /// The stream started playing.
    public static let start = OpenAVTAction(name: "Start")
    /// Buffering began.
    public static let bufferBegin = OpenAVTAction(name: "BufferBegin")
    /// Buffering finished.
    public static let bufferFinish = OpenAVTAction(name: "BufferFinish")
    /// A seek began.
    public static let seekBegin = OpenAVTAction(name: "SeekBegin")
    /// The seek finished.
    public static let seekFinish = OpenAVTAction(name: "SeekFinish")
    /// Playback was paused.
    public static let pauseBegin = OpenAVTAction(name: "PauseBegin")
    /// Playback resumed.
    public static let pauseFinish = OpenAVTAction(name: "PauseFinish")
    /// The quality went up.
    public static let qualityChangeUp = OpenAVTAction(name: "QualityChangeUp")
    /// The quality went down.
    public static let qualityChangeDown = OpenAVTAction(name: "QualityChangeDown")
    /// The user stopped the stream.
    public static let stop = OpenAVTAction(name: "Stop")
    /// The stream ended.
    public static let end = OpenAVTAction(name: "End")
    /// A playlist moved to the next stream.
    public static let next = OpenAVTAction(name: "Next")
    /// An error happened.
    public static let error = OpenAVTAction(name: "Error")
    /// A periodic sample.
    public static let ping = OpenAVTAction(name: "Ping")
}

/// The rules of OpenAVT's instrument chain (its core hub's, with its defects fixed) that
/// ``OpenAVTInstrument``'s conformance mode checks. A rejected action is never dropped
/// silently: it is counted (``OpenAVTInstrument/rejectedActions``), logged, and — in
/// conformance mode — reported as a finding naming the rule.
public enum OpenAVTRule: String, Sendable, Hashable, CaseIterable {
    /// `ready()` tells the chain everything is set up; actions come after it. (An action emitted
    /// before is still processed.)
    case readyBeforeEmit
    /// Actions, getters and removals name a tracker that was added and not removed.
    case knownTracker
    /// `MediaRequest`, `PlayerSet`, `StreamLoad` and `Start` happen once per playback (a playback
    /// ends with `End`, `Stop` or `Next`; `PlayerSet` once per tracker).
    case oncePerPlayback
    /// `PauseBegin` only after `Start` and while not paused; `PauseFinish` only while paused.
    case pauseBlock
    /// `BufferBegin` only while not buffering; `BufferFinish` only while buffering.
    case bufferBlock
    /// `SeekBegin` only while not seeking; `SeekFinish` only while seeking.
    case seekBlock
    /// `End`, `Stop` and `Next` only after `Start`, once per playback.
    case finishAfterStart
}

/// An OpenAVT conformance finding.
public typealias OpenAVTFinding = ConformanceFinding<OpenAVTRule>

/// One action on its way through the chain: the hub accepts it (adding attributes) or rejects
/// it; the metric calculator turns accepted ones into metrics.
public struct OpenAVTEvent: Sendable {
    /// The action.
    public var action: OpenAVTAction
    /// The tracker that emitted it.
    public var trackerId: Int
    /// When it was emitted (the instrument's clock).
    public var time: MonotonicInstant
    /// Attributes the hub adds (`streamId`, `deltaPlayTime` in ms, `inPauseBlock` …), sent as the
    /// fields of a user's own action.
    public var attributes: [TelemetryField] = []
    /// An `Error` action's context.
    public var error: TelemetryError?

    /// An event.
    public init(action: OpenAVTAction, trackerId: Int, time: MonotonicInstant, attributes: [TelemetryField] = [], error: TelemetryError? = nil) {
        self.action = action
        self.trackerId = trackerId
        self.time = time
        self.attributes = attributes
        self.error = error
    }

    /// The attribute called `name`.
    public subscript(attribute name: String) -> TelemetryValue? { attributes.first { $0.name == name }?.value }
}

/// A metric from the metric calculator (`StartTime` in ms, `NumPlays` …), sent to the engine as
/// a metric record of the tracker's session.
public struct OpenAVTMetric: Sendable, Hashable {
    /// The metric's name.
    public var name: String
    /// Its value.
    public var value: TelemetryValue

    /// A metric.
    public init(_ name: String, _ value: TelemetryValue) {
        self.name = name
        self.value = value
    }
}
