public import PlayoutCore
public import PlayoutTelemetry

/// One Adobe video heartbeat 1.x tracking call.
public enum HeartbeatCall: String, Sendable, Hashable, CaseIterable {
    case trackVideoLoad, trackVideoUnload, trackSessionStart, trackPlay, trackPause, trackComplete
    case trackSeekStart, trackSeekComplete, trackBufferStart, trackBufferComplete
    case trackAdStart, trackAdComplete, trackChapterStart, trackChapterComplete
    case trackBitrateChange, trackVideoPlayerError, trackApplicationError
    /// The guide's `trackQoSUpdateInfo`: the latest QoS values from the delegate, between calls.
    case trackQoSUpdateInfo
}

/// The heartbeat adapter's decisions, sans-IO: it takes one tracking call, what the player
/// delegate said for it, and the time, checks ``HeartbeatRule``, and returns the telemetry
/// events to emit (in the engine's Mux/HTML5 vocabulary, with actions and attributes for what the
/// vocabulary lacks: ads, chapters, video metadata, QoS).
///
/// | call | events |
/// |---|---|
/// | `trackVideoLoad` | `viewinit`, video attributes, `playerready` (after a player error: `videochange`) |
/// | `trackSessionStart` | `play` |
/// | `trackPlay` | `playing` (first: `play` too if no session start; after a pause: `play`, `playing`) |
/// | `trackPause` | `pause` |
/// | `trackBufferStart`/`Complete` | `rebufferstart`/`rebufferend` while playing (else startup, not a rebuffer: none) |
/// | `trackSeekStart`/`Complete` | `seeking`/`seeked` |
/// | `trackAdStart`/`Complete` | actions `adstart`/`adcomplete` |
/// | `trackChapterStart`/`Complete` | actions `chapterstart`/`chaptercomplete`, attribute `chapterName` |
/// | `trackBitrateChange` | QoS attributes, `renditionchange` |
/// | `trackVideoPlayerError` | fatal `error` (the error state) |
/// | `trackApplicationError` | warning `error` |
/// | `trackComplete` | QoS attributes, `ended` |
/// | `trackVideoUnload` | QoS attributes, `viewend` |
/// | `trackQoSUpdateInfo` | QoS attributes |
///
/// Every call carries the delegate's QoS, as the guide appends it to every call: when it changed
/// since the last call, its attributes (`bitrate`, `fps`, `droppedFrames`, `startupTime`) come
/// first.
public struct HeartbeatStateMachine: Sendable {
    /// What the player delegate said for a call (only what that call reads).
    public struct Info: Sendable {
        /// For `trackVideoLoad`; for `trackAdStart`, the main content's playhead (the ad break's
        /// default start time).
        public var video: HeartbeatVideoInfo?
        /// For `trackAdStart`.
        public var adBreak: HeartbeatAdBreakInfo?
        /// For `trackAdStart`.
        public var ad: HeartbeatAdInfo?
        /// For `trackChapterStart`.
        public var chapter: HeartbeatChapterInfo?
        /// For every call (the guide appends QoS to every call; `trackBitrateChange` and
        /// `trackQoSUpdateInfo` need it).
        public var qos: HeartbeatQoSInfo?
        /// For the error calls.
        public var errorId: String?

        /// Info with the given values.
        public init(
            video: HeartbeatVideoInfo? = nil, adBreak: HeartbeatAdBreakInfo? = nil, ad: HeartbeatAdInfo? = nil,
            chapter: HeartbeatChapterInfo? = nil, qos: HeartbeatQoSInfo? = nil, errorId: String? = nil
        ) {
            self.video = video
            self.adBreak = adBreak
            self.ad = ad
            self.chapter = chapter
            self.qos = qos
            self.errorId = errorId
        }
    }

    /// What to do for one call.
    public struct Decision: Sendable {
        /// The events to emit, in order.
        public var events: [TelemetryEvent] = []
        /// The rule the call broke (then ``events`` is empty).
        public var broken: (rule: HeartbeatRule, detail: String)?
        /// Why a call that broke no rule changed nothing (a repeated pause …), for the trace.
        public var note: String?
        /// True for the unload: the delegate hears `onVideoUnloaded` once it was handed off.
        public var unloaded = false
    }

    /// Where the video is.
    public enum Phase: String, Sendable, Hashable {
        /// No video loaded.
        case unloaded
        /// A video is loaded.
        case loaded
        /// The content completed; only the unload may follow.
        case completed
        /// After a player error (or invalid video info or configuration): ignoring calls until
        /// the next load.
        case error
        /// After `destroy()`: every call is refused.
        case destroyed
    }

    /// The current phase.
    public private(set) var phase: Phase = .unloaded
    /// The startup time measured so far: from the session start to the first play.
    public private(set) var measuredStartupTime: Duration?
    private var sessionStart: MonotonicInstant?
    private var playing = false
    private var paused = false
    private var buffering = false
    private var rebuffering = false  // the buffering is a rebuffer in the engine
    private var seeking = false
    private var inAd = false
    private var inChapter = false
    private var lastCall: HeartbeatCall?
    private var sentQoS: [TelemetryField] = []
    private var configurationProblem: String?
    private var viewOpen = false

    /// A tracker with no video loaded.
    public init() {}

    /// `configure(config)` with what is wrong with the configuration (nil: valid). Returns the
    /// broken rule, if any; while it is invalid, `trackVideoLoad` enters the error state.
    public mutating func configure(problem: String?) -> (rule: HeartbeatRule, detail: String)? {
        guard phase != .destroyed else { return (.callAfterDestroy, "configure after destroy: make a new instance") }
        configurationProblem = problem
        return problem.map { (.invalidConfiguration, $0) }
    }

    /// `destroy()`: the instance is torn down; every later call is refused. Returns whether a
    /// video was still loaded (its view ends).
    public mutating func destroy() -> Bool {
        let loaded = viewOpen
        self = HeartbeatStateMachine()
        phase = .destroyed
        return loaded
    }

    /// Handles `call` at `now` with the delegate's `info`.
    public mutating func handle(_ call: HeartbeatCall, info: Info = Info(), now: MonotonicInstant) -> Decision {
        var decision = handleCall(call, info: info, now: now)
        if decision.broken == nil {
            let qos = Self.qosFields(info.qos, startup: measuredStartupTime)
            if !qos.isEmpty, qos != sentQoS, phase != .destroyed {
                sentQoS = qos
                let attributes = qos.map { TelemetryEvent.attribute($0.name, $0.value) }
                if call == .trackVideoLoad {
                    decision.events += attributes  // after viewinit: the new view's
                } else {
                    decision.events.insert(contentsOf: attributes, at: 0)  // the call's record carries them
                }
            }
        }
        lastCall = call
        return decision
    }

    private mutating func handleCall(_ call: HeartbeatCall, info: Info, now: MonotonicInstant) -> Decision {
        var decision = Decision()
        func broken(_ rule: HeartbeatRule, _ detail: String) -> Decision {
            Decision(broken: (rule, detail))
        }
        switch (phase, call) {
        case (.destroyed, _): return broken(.callAfterDestroy, "\(call.rawValue) after destroy: make a new instance")
        case (.error, .trackVideoLoad), (.error, .trackVideoUnload): break
        case (.error, _): return broken(.callInErrorState, "\(call.rawValue) in the error state (a player error, or invalid video info or configuration): ignored until the next trackVideoLoad")
        case (.unloaded, .trackVideoLoad): break
        case (.unloaded, _): return broken(.callBeforeVideoLoad, "\(call.rawValue) with no video loaded: call trackVideoLoad first")
        case (.loaded, .trackVideoLoad), (.completed, .trackVideoLoad):
            return broken(.loadWhileLoaded, "trackVideoLoad while a video is loaded: call trackVideoUnload first")
        case (.completed, .trackVideoUnload): break
        case (.completed, _): return broken(.callAfterComplete, "\(call.rawValue) after trackComplete: only trackVideoUnload may follow")
        case (.loaded, _): break
        }
        switch call {
        case .trackVideoLoad:
            if let problem = configurationProblem {
                phase = .error
                return broken(.invalidConfiguration, "trackVideoLoad with an invalid configuration (\(problem)): call configure with a valid one")
            }
            guard let video = info.video else {
                phase = .error
                return broken(.invalidVideoInfo, "getVideoInfo returned nothing")
            }
            if let problem = video.problem {
                phase = .error
                return broken(.invalidVideoInfo, problem)
            }
            let continues = phase == .error && viewOpen  // after a player error: the same view goes on
            if continues {
                decision.events.append(.videoChange(videoId: video.id))
            } else {
                decision.events.append(.viewInit)
            }
            decision.events += Self.attributes(of: video)
            if !continues { decision.events.append(.playerReady) }
            reset()
            viewOpen = true
            phase = .loaded
        case .trackVideoUnload:
            if viewOpen { decision.events.append(.viewEnd) }  // no view when the only load was refused
            decision.unloaded = true
            reset()
        case .trackSessionStart:
            guard sessionStart == nil else { return Decision(note: "the session has started already") }
            sessionStart = now
            decision.events.append(.play)
        case .trackPlay:
            if sessionStart == nil {
                sessionStart = now
                decision.events.append(.play)
            } else if paused {
                decision.events.append(.play)
            } else if playing {
                return Decision(note: "playing already")
            }
            if measuredStartupTime == nil, let sessionStart { measuredStartupTime = sessionStart.duration(to: now) }
            playing = true
            paused = false
            decision.events.append(.playing)
        case .trackPause:
            if lastCall == .trackAdStart {
                return broken(.adTransitionCall, "trackPause straight after trackAdStart: the ad's start pauses the main video by itself")
            }
            guard playing, !paused else { return Decision(note: paused ? "paused already" : "not playing") }
            paused = true
            rebuffering = false
            decision.events.append(.pause)
        case .trackComplete:
            decision.events.append(playing || sessionStart != nil ? .ended : .action("complete", []))
            phase = .completed
        case .trackSeekStart:
            guard !seeking else { return Decision(note: "seeking already") }
            seeking = true
            decision.events.append(.seeking)
        case .trackSeekComplete:
            guard seeking else { return broken(.completeWithoutStart, "trackSeekComplete without trackSeekStart") }
            seeking = false
            decision.events.append(.seeked)
        case .trackBufferStart:
            guard !buffering else { return Decision(note: "buffering already") }
            buffering = true
            if playing, !paused {
                rebuffering = true
                decision.events.append(.rebufferStart(.network))
            } else {
                decision.note = "buffering before playback: part of the startup, not a rebuffer"
            }
        case .trackBufferComplete:
            guard buffering else { return broken(.completeWithoutStart, "trackBufferComplete without trackBufferStart") }
            buffering = false
            if rebuffering { decision.events.append(.rebufferEnd) }
            rebuffering = false
        case .trackAdStart:
            guard let adBreak = info.adBreak else { return broken(.invalidAdInfo, "getAdBreakInfo returned nothing") }
            guard let ad = info.ad else { return broken(.invalidAdInfo, "getAdInfo returned nothing") }
            if let problem = adBreak.problem ?? ad.problem { return broken(.invalidAdInfo, problem) }
            inAd = true
            var fields = [
                TelemetryField("adId", .string(ad.id)), TelemetryField("adName", .string(ad.name)),
                TelemetryField("adLength", .double(ad.length.seconds)), TelemetryField("adPosition", .int(Int64(ad.position))),
                TelemetryField("adBreakName", .string(adBreak.name)), TelemetryField("adBreakPosition", .int(Int64(adBreak.position))),
                TelemetryField("adBreakStartTime", .double((adBreak.startTime ?? info.video?.playhead ?? .zero).seconds)),
            ]
            if let cpm = ad.cpm { fields.append(TelemetryField("adCpm", .string(cpm))) }
            decision.events.append(.action("adstart", fields))
        case .trackAdComplete:
            guard inAd else { return broken(.completeWithoutStart, "trackAdComplete without trackAdStart") }
            inAd = false
            decision.events.append(.action("adcomplete", []))
        case .trackChapterStart:
            guard let chapter = info.chapter else { return broken(.invalidChapterInfo, "getChapterInfo returned nothing") }
            if let problem = chapter.problem { return broken(.invalidChapterInfo, problem) }
            inChapter = true
            decision.events.append(.action("chapterstart", [
                TelemetryField("chapterName", .string(chapter.name)), TelemetryField("chapterLength", .double(chapter.length.seconds)),
                TelemetryField("chapterPosition", .int(Int64(chapter.position))),
                TelemetryField("chapterStartTime", .double(chapter.startTime.seconds)),
            ]))
            decision.events.append(.attribute("chapterName", .string(chapter.name)))
        case .trackChapterComplete:
            guard inChapter else { return broken(.completeWithoutStart, "trackChapterComplete without trackChapterStart") }
            inChapter = false
            decision.events += [.action("chaptercomplete", []), .attribute("chapterName", nil)]
        case .trackBitrateChange:
            guard let qos = info.qos else { return broken(.invalidQoSInfo, "getQoSInfo returned nothing") }
            if let problem = qos.problem { return broken(.invalidQoSInfo, problem) }
            decision.events.append(.renditionChange(
                bitrate: Int64(qos.bitrate.rounded()), width: Int32(clamping: qos.width), height: Int32(clamping: qos.height)))
        case .trackVideoPlayerError, .trackApplicationError:
            let id = info.errorId ?? ""
            guard !id.isEmpty else { return broken(.invalidErrorId, "\(call.rawValue) needs a non-empty error id") }
            guard id.utf8.count <= heartbeatMaximumMetadataBytes else {
                return broken(.invalidErrorId, "the error id is \(id.utf8.count) bytes; at most \(heartbeatMaximumMetadataBytes)")
            }
            let fatal = call == .trackVideoPlayerError
            decision.events.append(.error(TelemetryError(
                severity: fatal ? .fatal : .warning, code: Int(id) ?? 0, message: fatal ? id : "application: \(id)")))
            if fatal { phase = .error }
        case .trackQoSUpdateInfo:
            guard let qos = info.qos else { return broken(.invalidQoSInfo, "getQoSInfo returned nothing") }
            if let problem = qos.problem { return broken(.invalidQoSInfo, problem) }
            decision.note = "QoS updated"
        }
        return decision
    }

    /// Back to no video loaded, keeping the configuration's validity.
    private mutating func reset() {
        let configuration = configurationProblem
        self = HeartbeatStateMachine()
        configurationProblem = configuration
    }

    /// The video's attributes, added to the view's later records.
    static func attributes(of video: HeartbeatVideoInfo) -> [TelemetryEvent] {
        [
            .attribute("videoId", .string(video.id)), .attribute("videoName", .string(video.name)),
            .attribute("videoLength", video.length.map { .double($0.seconds) }), .attribute("streamType", .string(video.streamType.rawValue)),
            .attribute("playerName", .string(video.playerName)),
        ]
    }

    /// The QoS by Adobe's names (`bitrate` in bps, `fps` truncated, `droppedFrames`, `startupTime`
    /// in seconds): a heartbeat's content, and as attributes what each call carries (none without
    /// valid QoS info).
    static func qosFields(_ qos: HeartbeatQoSInfo?, startup measured: Duration?) -> [TelemetryField] {
        guard let qos, qos.problem == nil else { return [] }
        var fields = [
            TelemetryField("bitrate", .double(qos.bitrate)), TelemetryField("fps", .double(qos.fps.rounded(.towardZero))),
            TelemetryField("droppedFrames", .int(Int64(qos.droppedFrames))),
        ]
        if let startup = qos.startupTime ?? measured { fields.append(TelemetryField("startupTime", .double(startup.seconds))) }
        return fields
    }
}
