public import PlayoutTelemetry
import PlayoutCore

/// One Mux player's decisions, sans-IO: it takes a dispatched event (and whether the global
/// data holds an environment key), checks ``MuxRule``, and returns the telemetry events to emit.
/// Mux's playback events are the engine's vocabulary itself; data events and `timeupdate` set
/// attributes (`video_*`, `video_source_*`, `view_dropped_frame_count`, `player_playhead_time`).
public struct MuxPlayerStateMachine: Sendable {
    /// What to do for one event.
    public struct Decision: Sendable {
        /// The events to emit, in order.
        public var events: [TelemetryEvent] = []
        /// The rule the event broke (then ``events`` is empty).
        public var broken: (rule: MuxRule, detail: String)?
    }

    /// Whether a view is open.
    public private(set) var viewOpen = false
    private var viewEnded = false  // a view ended: the next one needs new video data first
    private var newVideoData = false
    private var rendition: (bitrate: Double, width: Int, height: Int)?
    private var rebuffering = false
    private var seeking = false
    private var held: [TelemetryEvent] = []  // data between viewend and viewinit: set once the new view begins

    /// A player with no view.
    public init() {}

    /// Handles `event`; `hasEnvironmentKey`: the global data holds one.
    public mutating func handle(_ event: MuxEvent, hasEnvironmentKey: Bool) -> Decision {
        func broken(_ rule: MuxRule, _ detail: String) -> Decision { Decision(broken: (rule, detail)) }
        if case .data(let data) = event {
            if let problem = data.problem { return broken(.invalidMetadata, problem) }
            if data.video != nil, !viewOpen { newVideoData = true }
            if let whole = data.rendition { rendition = whole }
            // The engine's view has ended (it takes no attribute then): held for the next view.
            guard viewOpen || !viewEnded else {
                held += data.attributes
                return Decision()
            }
            return Decision(events: data.attributes)
        }
        guard hasEnvironmentKey else {
            return broken(.missingEnvironmentKey, "\(event.name) before global data with an environment key (dispatchGlobalDataEvent)")
        }
        if case .viewInit = event {
            if viewOpen { return broken(.videoChangeWithoutData, "viewinit while a view is open: dispatch viewend, the new video's data, then viewinit") }
            if viewEnded, !newVideoData { return broken(.videoChangeWithoutData, "viewinit after viewend without the new video's data") }
            viewOpen = true
            newVideoData = false
            rebuffering = false
            seeking = false
            defer { held.removeAll() }
            return Decision(events: [.viewInit] + held)
        }
        guard viewOpen else { return broken(.viewInitFirst, "\(event.name) with no view open: dispatch viewinit first") }
        switch event {
        case .viewInit, .data: return Decision()  // handled above
        case .playerReady: return Decision(events: [.playerReady])
        case .play: return Decision(events: [.play])
        case .playing: return Decision(events: [.playing])
        case .pause: return Decision(events: [.pause])
        case .seeking:
            seeking = true
            return Decision(events: [.seeking])
        case .seeked:
            guard seeking else { return broken(.unmatchedEnd, "seeked without seeking") }
            seeking = false
            return Decision(events: [.seeked])
        case .rebufferStart:
            rebuffering = true
            return Decision(events: [.rebufferStart(.network)])
        case .rebufferEnd:
            guard rebuffering else { return broken(.unmatchedEnd, "rebufferend without rebufferstart") }
            rebuffering = false
            return Decision(events: [.rebufferEnd])
        case .renditionChange:
            guard let rendition else {
                return broken(.renditionChangeWithoutData, "renditionchange without a data event carrying the rendition's width, height and bitrate")
            }
            self.rendition = nil
            return Decision(events: [.renditionChange(
                bitrate: Int64(rendition.bitrate.rounded()), width: Int32(clamping: rendition.width), height: Int32(clamping: rendition.height))])
        case .timeUpdate(let playhead):
            return Decision(events: [.attribute("player_playhead_time", .double(playhead.seconds))])
        case .error(let error):
            guard !error.message.isEmpty, error.message.utf8.count <= MuxLimits.maximumMetadataBytes,
                error.context.utf8.count <= MuxLimits.maximumMetadataBytes
            else { return broken(.invalidError, "an error needs a message of 1 to \(MuxLimits.maximumMetadataBytes) bytes (and a context within it)") }
            return Decision(events: [
                .attribute("player_error_context", error.context.isEmpty ? nil : .string(error.context)),
                .error(TelemetryError(severity: error.severity, code: error.code, message: error.message, businessException: error.businessException)),
            ])
        case .ended: return Decision(events: [.ended])
        case .viewEnd:
            viewOpen = false
            viewEnded = true
            newVideoData = false
            return Decision(events: [.viewEnd])
        }
    }
}
