public import PlayoutCore
public import PlayoutTelemetry

/// An OpenAVT attribute: the name of a value an event carries (`OAVTAttribute`, guide "Custom
/// Attributes"). By convention names are in lower camel case (``OpenAVTRule/attributeNameCase``).
///
/// ```swift
/// let myAttr = OpenAVTAttribute(name: "customAttribute")
/// event.setAttribute(key: myAttr, value: "any value")
/// ```
public struct OpenAVTAttribute: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The attribute's name.
    public let name: String

    /// An attribute called `name`.
    public init(name: String) { self.name = name }
    /// An attribute called `value`.
    public init(stringLiteral value: String) { name = value }
    /// The name.
    public var description: String { name }

    /// The target of the tracker (the player it watches).
    public static let trackerTarget = OpenAVTAttribute(name: "trackerTarget")
    /// The stream being played (the core hub's, one per `StreamLoad`).
    public static let streamId = OpenAVTAttribute(name: "streamId")
    /// The current playback (the core hub's).
    public static let playbackId = OpenAVTAttribute(name: "playbackId")
    /// The sender: `<instrument id>-<tracker id>` (the instrument sets it on every event).
    public static let senderId = OpenAVTAttribute(name: "senderId")
    /// Errors so far on the tracker (the core hub's).
    public static let countErrors = OpenAVTAttribute(name: "countErrors")
    /// `Start`s so far on the tracker (the core hub's).
    public static let countStarts = OpenAVTAttribute(name: "countStarts")
    /// Time paused so far, ms (the core hub's).
    public static let accumPauseTime = OpenAVTAttribute(name: "accumPauseTime")
    /// Time buffering so far, ms (the core hub's).
    public static let accumBufferTime = OpenAVTAttribute(name: "accumBufferTime")
    /// Time seeking so far, ms (the core hub's).
    public static let accumSeekTime = OpenAVTAttribute(name: "accumSeekTime")
    /// Time played since the tracker's previous event, ms (the core hub's).
    public static let deltaPlayTime = OpenAVTAttribute(name: "deltaPlayTime")
    /// Paused (for a `BufferFinish`: whether its buffering began paused).
    public static let inPauseBlock = OpenAVTAttribute(name: "inPauseBlock")
    /// Seeking (for a `BufferFinish`: whether its buffering began in a seek).
    public static let inSeekBlock = OpenAVTAttribute(name: "inSeekBlock")
    /// Buffering.
    public static let inBufferBlock = OpenAVTAttribute(name: "inBufferBlock")
    /// Inside a playback (started, not finished).
    public static let inPlaybackBlock = OpenAVTAttribute(name: "inPlaybackBlock")
    /// An `Error`'s message.
    public static let errorDescription = OpenAVTAttribute(name: "errorDescription")
    /// The playback position, ms (guide "Custom Trackers": the attribute its getter example fills).
    public static let position = OpenAVTAttribute(name: "position")
    /// The stream's duration, ms.
    public static let duration = OpenAVTAttribute(name: "duration")
    /// Vertical resolution, pixels.
    public static let resolutionHeight = OpenAVTAttribute(name: "resolutionHeight")
    /// Horizontal resolution, pixels.
    public static let resolutionWidth = OpenAVTAttribute(name: "resolutionWidth")
    /// Muted.
    public static let isMuted = OpenAVTAttribute(name: "isMuted")
    /// Volume.
    public static let volume = OpenAVTAttribute(name: "volume")
    /// Frames per second.
    public static let fps = OpenAVTAttribute(name: "fps")
    /// The stream's source (a URL).
    public static let source = OpenAVTAttribute(name: "source")
    /// The stream's bitrate, bits/s.
    public static let bitrate = OpenAVTAttribute(name: "bitrate")
    /// The stream's language.
    public static let language = OpenAVTAttribute(name: "language")
    /// The subtitles' language.
    public static let subtitles = OpenAVTAttribute(name: "subtitles")
    /// The stream's title.
    public static let title = OpenAVTAttribute(name: "title")
}

/// An OpenAVT action: what a tracker says happened (`StreamLoad`, `Start`, `BufferBegin` …), by
/// name (`OAVTAction`, guide "Custom Actions"). Every action has a time attribute — by default
/// `timeSince<Name>` — that the instrument sets on the tracker's later events: the milliseconds
/// (an integer) since the last event of this action reached the end of the chain. Two actions are
/// equal when their names are. By convention names are in upper camel case
/// (``OpenAVTRule/actionNameCase``).
///
/// ```swift
/// let myAction = OpenAVTAction(name: "CustomAction")                     // timeSinceCustomAction
/// let renamed = OpenAVTAction(name: "CustomAction", timeAttribute: OpenAVTAttribute(name: "myTimeSince"))
/// instrument.emit(action: myAction, trackerId: trackerId)
/// ```
public struct OpenAVTAction: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The action's name, as OpenAVT spells it.
    public let name: String
    /// The attribute that carries the time since this action (default `timeSince<Name>`).
    public let timeAttribute: OpenAVTAttribute

    /// An action called `name` whose time since is `timeAttribute`.
    public init(name: String, timeAttribute: OpenAVTAttribute) {
        self.name = name
        self.timeAttribute = timeAttribute
    }
    /// An action called `name`, its time since in `timeSince<name>`.
    public init(name: String) { self.init(name: name, timeAttribute: OpenAVTAttribute(name: "timeSince" + name)) }
    /// An action called `value`.
    public init(stringLiteral value: String) { self.init(name: value) }
    /// The name.
    public var description: String { name }

    /// Equal names (the time attribute aside), as OpenAVT compares actions.
    public static func == (lhs: OpenAVTAction, rhs: OpenAVTAction) -> Bool { lhs.name == rhs.name }
    /// Hashes the name.
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }

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
    /// Fast forward began.
    public static let forwardBegin = OpenAVTAction(name: "ForwardBegin")
    /// Fast forward finished.
    public static let forwardFinish = OpenAVTAction(name: "ForwardFinish")
    /// Rewind began.
    public static let rewindBegin = OpenAVTAction(name: "RewindBegin")
    /// Rewind finished.
    public static let rewindFinish = OpenAVTAction(name: "RewindFinish")
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
    /// A periodic sample (the instrument sends one every ping interval while the tracker plays).
    public static let ping = OpenAVTAction(name: "Ping")
}

/// A value an attribute can take: integers, doubles, strings, booleans (what OpenAVT's `Any`
/// holds in practice), or a ``TelemetryValue``.
public protocol OpenAVTAttributeValue: Sendable {
    /// The value as the engine stores it.
    var telemetryValue: TelemetryValue { get }
}

extension Int: OpenAVTAttributeValue {
    /// The integer.
    public var telemetryValue: TelemetryValue { .int(Int64(self)) }
}
extension Int64: OpenAVTAttributeValue {
    /// The integer.
    public var telemetryValue: TelemetryValue { .int(self) }
}
extension Double: OpenAVTAttributeValue {
    /// The double.
    public var telemetryValue: TelemetryValue { .double(self) }
}
extension String: OpenAVTAttributeValue {
    /// The string.
    public var telemetryValue: TelemetryValue { .string(self) }
}
extension Bool: OpenAVTAttributeValue {
    /// The boolean.
    public var telemetryValue: TelemetryValue { .bool(self) }
}
extension TelemetryValue: OpenAVTAttributeValue {
    /// Itself.
    public var telemetryValue: TelemetryValue { self }
}

/// One event on its way through the chain (`OAVTEvent`): the instrument makes it with the
/// tracker's `senderId`, its `timeSince<Action>` attributes (ms) and its getters' attributes;
/// the tracker's ``OpenAVTTracker/initEvent(event:)`` and the hub may change it or stop it; the
/// metric calculator and the backend receive what the hub returns.
public struct OpenAVTEvent: Sendable {
    /// The action.
    public var action: OpenAVTAction
    /// The tracker that emitted it.
    public var trackerId: Int
    /// When it was emitted (the instrument's clock).
    public var time: MonotonicInstant
    /// Its attributes, in the order they were first set.
    public var attributes: [TelemetryField] = []
    /// An `Error` action's context (for the engine's `error` record).
    public var error: TelemetryError?

    /// An event.
    public init(action: OpenAVTAction, trackerId: Int, time: MonotonicInstant, attributes: [TelemetryField] = [], error: TelemetryError? = nil) {
        self.action = action
        self.trackerId = trackerId
        self.time = time
        self.attributes = attributes
        self.error = error
    }

    /// The action (OpenAVT's accessor).
    public func getAction() -> OpenAVTAction { action }

    /// Sets attribute `key` to `value` (replacing an earlier value).
    public mutating func setAttribute(key: OpenAVTAttribute, value: some OpenAVTAttributeValue) {
        let value = value.telemetryValue
        if let index = attributes.firstIndex(where: { $0.name == key.name }) {
            attributes[index].value = value
        } else {
            attributes.append(TelemetryField(key.name, value))
        }
    }

    /// The value of attribute `key` (nil: not set).
    public func getAttribute(key: OpenAVTAttribute) -> TelemetryValue? { self[attribute: key.name] }

    /// Removes attribute `key`; false when it was not set.
    @discardableResult
    public mutating func removeAttribute(key: OpenAVTAttribute) -> Bool {
        guard let index = attributes.firstIndex(where: { $0.name == key.name }) else { return false }
        attributes.remove(at: index)
        return true
    }

    /// The attributes by name (OpenAVT's `getDictionary`).
    public func getDictionary() -> [String: TelemetryValue] {
        Dictionary(attributes.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
    }

    /// The attribute called `name`.
    public subscript(attribute name: String) -> TelemetryValue? { attributes.first { $0.name == name }?.value }
}

/// An OpenAVT metric (`OAVTMetric`, guide "Custom Metrics"): a name (upper camel case by
/// convention, ``OpenAVTRule/metricNameCase``), a type and a value. The metric calculator returns
/// them; the backend receives them, and the engine records each as a metric of the tracker's
/// session.
///
/// ```swift
/// let myMetric = OpenAVTMetric(name: "CustomMetric", type: .gauge, value: 10.1)
/// ```
public struct OpenAVTMetric: Sendable, Hashable {
    /// How values of a metric combine.
    public enum MetricType: String, Sendable, Hashable {
        /// Values add up (`NumPlays`, `PlayTime`).
        case counter
        /// The last value holds (`StartTime`).
        case gauge
    }

    /// The metric's name.
    public var name: String
    /// Counter or gauge.
    public var type: MetricType
    /// Its value (an integer or a double).
    public var value: TelemetryValue

    /// A metric with a double value.
    public init(name: String, type: MetricType, value: Double) {
        self.init(name: name, type: type, telemetryValue: .double(value))
    }

    /// A metric with an integer value.
    public init(name: String, type: MetricType, value: Int) {
        self.init(name: name, type: type, telemetryValue: .int(Int64(value)))
    }

    /// A metric with `telemetryValue`.
    public init(name: String, type: MetricType, telemetryValue: TelemetryValue) {
        self.name = name
        self.type = type
        value = telemetryValue
    }
}
