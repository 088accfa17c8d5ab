/// What a tracker tells the telemetry engine: one player event in DESIGN.md's lowercase
/// Mux/HTML5 vocabulary, a heartbeat (a QoS sample), or a user's own action, attribute or metric.
///
/// An event is a small value (no allocation to make one from literals), copied into the engine's
/// preallocated ring by ``TelemetryTracker/emit(_:)``; the engine's thread turns it into
/// ``TelemetryRecord``s.
public enum TelemetryEvent: Sendable {
    /// The view (session) begins; sent by ``TelemetryTracker/ready()``.
    case viewInit
    /// The player can take playback instructions (ends player startup).
    case playerReady
    /// Playback was requested (starts video startup, or resumes after a pause).
    case play
    /// Frames are being shown.
    case playing
    /// Playback was paused on request.
    case pause
    /// The viewer moves the play head; a rebuffer until ``seeked`` is not a rebuffer.
    case seeking
    /// The seek finished.
    case seeked
    /// Playback stalled waiting for data (or, with another cause, for a delay increase or a seek).
    case rebufferStart(TelemetryRebufferCause)
    /// Playback resumed after a stall.
    case rebufferEnd
    /// The rendition (bitrate, size) changed.
    case renditionChange(bitrate: Int64, width: Int32, height: Int32)
    /// The playout delay in effect changed to `delay` (`requested`: an override or the configured
    /// delay, not the player's own adaptation).
    case playoutDelayChange(delay: Duration, requested: Bool)
    /// Frames stopped changing although playback did not stall on purpose.
    case freezeStart
    /// The freeze ended; `duration` when the player measured it (else the time since
    /// ``freezeStart``).
    case freezeEnd(duration: Duration?)
    /// An error: `fatal` ones put the session in the error state until a new load
    /// (``videoChange(videoId:)``), unless ``TelemetryError/stopsTracking`` is false.
    case error(TelemetryError)
    /// The video ended.
    case ended
    /// Another video is loaded in the same session (also the "new load" after a fatal error).
    case videoChange(videoId: String)
    /// The view ends (sent by ``TelemetryTracker/endOfService()`` and at shutdown).
    case viewEnd
    /// A QoS sample: its fields by their QoS names (`framesRendered`, `framesDropped`, `bitrate`,
    /// `endToEndLatency` in seconds …).
    case heartbeat([TelemetryField])
    /// A user's own action (`adstart`, `quality-menu-opened` …); gets a `timeSince<Action>`.
    case action(String, [TelemetryField])
    /// A user metric `name` = `value`.
    case metric(String, TelemetryValue)
    /// Sets (or, with nil, removes) a session attribute added to every later record.
    case attribute(String, TelemetryValue?)

    /// The classification of ``name`` (``TelemetryVocabulary/other`` for actions and metrics).
    var vocabulary: TelemetryVocabulary {
        switch self {
        case .viewInit: .viewinit
        case .playerReady: .playerready
        case .play: .play
        case .playing: .playing
        case .pause: .pause
        case .seeking: .seeking
        case .seeked: .seeked
        case .rebufferStart: .rebufferstart
        case .rebufferEnd: .rebufferend
        case .renditionChange: .renditionchange
        case .playoutDelayChange: .playoutdelaychange
        case .freezeStart: .freezestart
        case .freezeEnd: .freezeend
        case .error: .error
        case .ended: .ended
        case .videoChange: .videochange
        case .viewEnd: .viewend
        case .heartbeat: .heartbeat
        case .action(let name, _), .metric(let name, _): TelemetryVocabulary(name)
        case .attribute: .attribute
        }
    }

    /// The record name of the event (`"rebufferstart"`, `"playoutdelaychange"` …).
    public var name: String {
        switch self {
        case .viewInit: "viewinit"
        case .playerReady: "playerready"
        case .play: "play"
        case .playing: "playing"
        case .pause: "pause"
        case .seeking: "seeking"
        case .seeked: "seeked"
        case .rebufferStart: "rebufferstart"
        case .rebufferEnd: "rebufferend"
        case .renditionChange: "renditionchange"
        case .playoutDelayChange: "playoutdelaychange"
        case .freezeStart: "freezestart"
        case .freezeEnd: "freezeend"
        case .error: "error"
        case .ended: "ended"
        case .videoChange: "videochange"
        case .viewEnd: "viewend"
        case .heartbeat: "heartbeat"
        case .action(let name, _): name
        case .metric(let name, _): name
        case .attribute: "attribute"
        }
    }
}

/// Why playback stalled. Only ``network`` stalls are rebuffers in the KPIs: a pause the user asked
/// for (a playout-delay increase) or a seek is not.
public enum TelemetryRebufferCause: String, Sendable, Hashable {
    /// Data did not arrive in time: a rebuffer.
    case network
    /// A requested playout-delay increase holds the picture: not a rebuffer.
    case playoutDelayIncrease = "playoutdelay"
    /// A seek: not a rebuffer.
    case seek
}

/// An `error` event's context.
public struct TelemetryError: Sendable, Hashable {
    /// How bad it is.
    public enum Severity: String, Sendable, Hashable {
        /// Playback cannot go on: the session enters the error state.
        case fatal
        /// Playback goes on.
        case warning
    }

    /// Fatal or warning.
    public var severity: Severity
    /// A numeric code (the player's).
    public var code: Int
    /// What happened, in a user's words.
    public var message: String
    /// True for an expected business outcome (geo-block, no entitlement), not a technical fault.
    public var businessException: Bool
    /// Whether a fatal error puts the session in the error state, ignoring tracking until a new
    /// load (Adobe's heartbeat; the default). False: the session goes on tracking after it, as
    /// Mux's core SDK does since v5 (a `viewend` ends the view). Warnings never stop tracking.
    public var stopsTracking: Bool

    /// An error with its context (`stopsTracking`: see ``stopsTracking``).
    public init(severity: Severity, code: Int, message: String, businessException: Bool = false, stopsTracking: Bool = true) {
        self.severity = severity
        self.code = code
        self.message = message
        self.businessException = businessException
        self.stopsTracking = stopsTracking
    }
}
