public import PlayoutTelemetry
import PlayoutCore

/// One Mux player's decisions, sans-IO: it takes a dispatched event (with the player data sent
/// with it, and whether the global data holds an environment key), checks ``MuxRule``, and
/// returns the telemetry events to emit. Mux's playback events are the engine's vocabulary
/// itself; data events, player data and `timeupdate` set attributes (`video_*`,
/// `video_source_*`, `view_dropped_frame_count`, `player_*` with the playhead in milliseconds);
/// `orientationchange`, the request events and ad events are actions with their fields.
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
    private var viewEnded = false  // a view ended: the engine's session is closed until the next viewinit
    private var customerPlayerData = false  // the player's customer data (with its environment key, or nil: inferred) was dispatched
    private var customerFields: Set<String> = []  // the fields the player's own customer data set: global data never replaces them
    private var videoDataJustBefore = false  // the previous event was a data event with MUXSDKVideoData
    private var rendition: (bitrate: Double?, width: Int?, height: Int?) = (nil, nil, nil)
    private var videoFields: Set<String> = []  // the video_* fields the current video set
    private var rebuffering = false
    private var seeking = false
    private var adBreak = false
    private var held: [TelemetryEvent] = []  // data between viewend and viewinit: set once the new view begins

    /// A player with no view.
    public init() {}

    /// Handles `event` with the `playerData` dispatched with it; `hasEnvironmentKey`: the global
    /// data holds one.
    public mutating func handle(_ event: MuxEvent, hasEnvironmentKey: Bool, playerData: MuxPlayerData? = nil) -> Decision {
        func broken(_ rule: MuxRule, _ detail: String) -> Decision { Decision(broken: (rule, detail)) }
        if let problem = playerData?.problem { return broken(.invalidMetadata, problem) }
        let state = playerData?.attributes ?? []
        if case .data(let data) = event {
            if let problem = data.problem { return broken(.invalidMetadata, problem) }
            if data.videoChange, !viewOpen {
                return broken(.videoChangeOrder, "data with videoChange while no view is open: dispatch viewend, viewinit, then the new video's data")
            }
            if let customer = data.customerPlayerData {
                customerPlayerData = true
                customerFields.formUnion(customer.fields.map(\.name))
            }
            if data.hasVideoData { videoDataJustBefore = true }
            rendition = (data.sourceBitrate ?? rendition.bitrate, data.sourceWidth ?? rendition.width, data.sourceHeight ?? rendition.height)
            var events = state
            if let video = data.video {
                let names = Set(video.fields.map(\.name))
                // A new video's data replaces the old video's: the fields it lacks are removed.
                if data.videoChange { events += videoFields.subtracting(names).sorted().map { .attribute($0, nil) } }
                videoFields = data.videoChange ? names : videoFields.union(names)
            }
            events += data.attributes
            if let measures = data.measures, viewOpen { events.append(measures) }
            // The engine's view has ended (it takes no attribute then): held for the next view.
            guard viewOpen || !viewEnded else {
                held += events
                return Decision()
            }
            return Decision(events: events)
        }
        let renditionData = videoDataJustBefore
        videoDataJustBefore = false
        if case .viewInit = event {
            if viewOpen {
                return broken(.videoChangeOrder, "viewinit while a view is open: dispatch viewend first, then viewinit and the new video's data (videoChange)")
            }
            viewOpen = true
            rebuffering = false
            seeking = false
            adBreak = false
            defer {
                held.removeAll()
                viewEnded = false
            }
            // After a viewend the engine takes attributes only once the new view has begun.
            return Decision(events: viewEnded ? [.viewInit] + state + held : state + [.viewInit] + held)
        }
        guard viewOpen else { return broken(.viewInitFirst, "\(event.name) with no view open: dispatch viewinit first") }
        guard hasEnvironmentKey || customerPlayerData else {
            return broken(
                .missingEnvironmentKey,
                "\(event.name) before a data event with customer player data (its environmentKey, or nil to have it inferred) or global data with an environment key")
        }
        func emit(_ events: TelemetryEvent...) -> Decision { Decision(events: state + events) }
        switch event {
        case .viewInit, .data: return Decision()  // handled above
        case .playerReady: return emit(.playerReady)
        case .play: return emit(.play)
        case .playing: return emit(.playing)
        case .pause: return emit(.pause)
        case .seeking:
            seeking = true
            return emit(.seeking)
        case .seeked:
            guard seeking else { return broken(.unmatchedEnd, "seeked without seeking") }
            seeking = false
            return emit(.seeked)
        case .rebufferStart:
            rebuffering = true
            return emit(.rebufferStart(.network))
        case .rebufferEnd:
            guard rebuffering else { return broken(.unmatchedEnd, "rebufferend without rebufferstart") }
            rebuffering = false
            return emit(.rebufferEnd)
        case .renditionChange:
            guard renditionData else {
                return broken(.renditionChangeWithoutData, "renditionchange not immediately after a data event with the new rendition's video data")
            }
            return emit(.renditionChange(
                bitrate: Int64((rendition.bitrate ?? 0).rounded()), width: Int32(clamping: rendition.width ?? 0), height: Int32(clamping: rendition.height ?? 0)))
        case .orientationChange: return emit(.action("orientationchange", []))
        case .requestBandwidth(let data):
            if let problem = data.problem { return broken(.invalidMetadata, "bandwidth data: \(problem)") }
            return emit(.action(data.outcome.rawValue, data.fields))
        case .timeUpdate(let playhead):
            guard playhead >= .zero else { return broken(.invalidMetadata, "timeupdate with a negative playhead (\(playhead))") }
            return emit(.attribute("player_playhead_time", .int(playhead.muxMilliseconds)))
        case .error(let error):
            let message = playerData?.errorMessage ?? error.message
            let context = playerData?.errorContext ?? error.context
            let code = playerData?.errorCode ?? String(error.code)
            guard !message.isEmpty, message.utf8.count <= MuxLimits.maximumMetadataBytes, context.utf8.count <= MuxLimits.maximumMetadataBytes
            else {
                return broken(.invalidError, "an error needs a message of 1 to \(MuxLimits.maximumMetadataBytes) bytes (playerErrorMessage, and a context within it)")
            }
            // Core SDK v5: the details go with this error event only, every time; tracking goes on.
            var details = [TelemetryField("player_error_code", .string(code)), TelemetryField("player_error_message", .string(message))]
            if !context.isEmpty { details.append(TelemetryField("player_error_context", .string(context))) }
            let telemetry = TelemetryError(
                severity: error.severity, code: Int(code) ?? error.code, message: message, businessException: error.businessException, stopsTracking: false)
            return Decision(events: state + details.map { .attribute($0.name, $0.value) } + [.error(telemetry)] + details.map { .attribute($0.name, nil) })
        case .ended: return emit(.ended)
        case .viewEnd:
            viewOpen = false
            viewEnded = true
            return emit(.viewEnd)
        }
    }

    /// The attribute changes that replacing the global data's fields `previous` with `new` makes
    /// on this player: fields of `previous` that `new` lacks are removed, `new`'s are set —
    /// except the fields the player's own customer player data set (`env_key`, `viewer_user_id`
    /// …), which stay the player's: the guide puts the environment key there, and a player's data
    /// is more specific than the data every player shares.
    public func globalDataReplaced(_ previous: [TelemetryField], with new: [TelemetryField]) -> [TelemetryEvent] {
        let newNames = Set(new.map(\.name))
        let removed = previous.filter { !newNames.contains($0.name) && !customerFields.contains($0.name) }
        return removed.map { .attribute($0.name, nil) } + new.filter { !customerFields.contains($0.name) }.map { .attribute($0.name, $0.value) }
    }

    /// Handles the ad event `event` (with its ad data and the player data sent with it).
    public mutating func handleAd(_ event: MuxAdEvent, adData: MuxAdData?, hasEnvironmentKey: Bool, playerData: MuxPlayerData? = nil) -> Decision {
        func broken(_ rule: MuxRule, _ detail: String) -> Decision { Decision(broken: (rule, detail)) }
        if let problem = playerData?.problem { return broken(.invalidMetadata, problem) }
        if let oversized = MuxLimits.oversized(adData?.fields ?? []) { return broken(.invalidMetadata, oversized) }
        videoDataJustBefore = false
        guard viewOpen else { return broken(.viewInitFirst, "\(event.rawValue) with no view open: dispatch viewinit first") }
        guard hasEnvironmentKey || customerPlayerData else {
            return broken(.missingEnvironmentKey, "\(event.rawValue) before a data event with customer player data (its environmentKey, or nil to have it inferred)")
        }
        switch event {
        case .adBreakStart: adBreak = true
        case .adBreakEnd:
            guard adBreak else { return broken(.unmatchedEnd, "adbreakend without adbreakstart") }
            adBreak = false
        default: break
        }
        return Decision(events: (playerData?.attributes ?? []) + [.action(event.rawValue, adData?.fields ?? [])])
    }
}
