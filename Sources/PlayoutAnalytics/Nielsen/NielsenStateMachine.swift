public import PlayoutCore
public import PlayoutTelemetry

/// The decisions of one Nielsen DCR SDK instance, sans-IO: it takes the SDK's calls with the time
/// and returns the telemetry events to emit and the rules broken (``NielsenRule``); it reads no
/// clock and emits nothing. ``NielsenAppSDK`` carries its steps out.
///
/// Lifecycle (the guide's four states): `initial` until initialized; `idle` once initialized
/// with a valid app id (and after `stop` or `end`); `processing` while a session plays (after
/// `play`, `loadMetadata` or a playhead); `disabled` after `appDisableApi(true)` or a failed
/// initialization. A user opt-out keeps the state and, as the guide's SDK 5.1 and later, goes on
/// measuring: later records carry the attribute `optout` = true.
///
/// Calls become events in the engine's vocabulary: `play` → `play`; `loadMetadata` → the
/// asset's attributes and a `loadmetadata` action (`videochange` first when new content follows
/// `end` and `play`); the first playhead after `play` or `stop` → `playing`, and every playhead a
/// `playheadposition` metric; `stop` → `pause`; `end` → `ended`; `updateOTT` → its attributes and
/// an `updateott` action.
///
/// ```swift
/// var machine = NielsenStateMachine()
/// _ = machine.initialize(appInfo: ["appid": "PE4D5C2A1-0B1C-4D2E-8F3A-5B6C7D8E9F00"])
/// _ = machine.play(["channelName": "news"])
/// _ = machine.loadMetadata(content)
/// let step = machine.playheadPosition(1_700_000_000, now: t, utcSeconds: 1_700_000_000)
/// // step.events: [playing, playheadposition]; step.findings: []
/// ```
public struct NielsenStateMachine: Sendable {
    /// The instance's lifecycle state.
    public enum State: String, Sendable, Hashable, CaseIterable {
        /// Created, not initialized.
        case initial
        /// Initialized, no session playing.
        case idle
        /// A session plays.
        case processing
        /// Disabled by the app, or initialization failed: every call is ignored.
        case disabled
    }

    /// The result of one call.
    public struct Step: Sendable {
        /// Events to emit, in order (none while opted out). A `viewend` ends the view: the next
        /// event begins a new one.
        public var events: [TelemetryEvent] = []
        /// Rules the call broke, with what was wrong.
        public var findings: [(rule: NielsenRule, detail: String)] = []
        /// The metadata errors of a `loadMetadata` or `play` call.
        public var metadataErrors: [NielsenMetadataError] = []
    }

    /// Half a second: two playheads closer than this break ``NielsenRule/playheadOncePerSecond``.
    public static let shortestPlayheadGap: Duration = .milliseconds(500)
    /// 30 s: buffering longer than this needs `stop` (``NielsenRule/stopAfterLongBuffering``).
    public static let longestBuffering: Duration = .seconds(30)
    /// 30 s: how far a live playhead may be from the device's UTC clock.
    public static let liveClockTolerance: Int64 = 30

    /// The lifecycle state.
    public private(set) var state = State.initial
    /// Whether the user opted out (nothing is sent).
    public private(set) var optedOut = false
    /// The debug level the app asked for (`nol_devDebug`).
    public private(set) var debugLevel = NielsenDebugLevel.none

    private var initialized = false  // a valid app id was given
    private var disabledByApp = false
    private var sessionOpen = false
    private var afterEnd = false  // the stream ended: only ads (a postroll) until the next play
    private var newStream = false  // after end: the next content is a new video
    private var stopped = false
    private var needsMetadata = false  // stopped: playback resumes with loadMetadata
    private var playingReported = false
    private var viewOpen = false
    private var optOutMarkPending = false
    private var asset: Asset?
    private var lastContentId: String?
    private var lastPlayhead: MonotonicInstant?
    private var adStartPending = false  // the next playhead is a new ad's first
    private var contentResume: Int64?  // content after an ad: the position it left off at
    private var contentPosition: (assetid: String, position: Int64)?
    private var sections: Set<String> = []
    private var segments: Set<String> = []

    private struct Asset {
        var assetid: String
        var length: Double?
        var live: Bool
        var isAd: Bool
    }

    /// 1.5 s: an `end` or `loadMetadata` later than this after the last playhead (and sooner than
    /// ``longestBuffering``) missed the final playhead (``NielsenRule/finalPlayhead``).
    public static let finalPlayheadGap: Duration = .milliseconds(1500)

    /// An instance in the `initial` state.
    public init() {}

    // MARK: - Calls

    /// Initializes with the app info (`appid`, `nol_devDebug`): `idle` with a valid app id, else
    /// `disabled`.
    public mutating func initialize(appInfo: [String: NielsenValue]) -> Step {
        var step = Step()
        if let level = appInfo["nol_devDebug"]?.string { debugLevel = NielsenDebugLevel(rawValue: level) ?? .none }
        guard state == .initial else { return step }
        let appid = appInfo["appid"]?.string ?? ""
        if Self.isAppId(appid) {
            initialized = true
            state = .idle
        } else {
            state = .disabled
            let shown = appInfo["appid"].map { "\"\(NielsenMetadata.shorten($0.description))\"" } ?? "none"
            step.findings.append((.appId, "app id \(shown) is not P or T followed by a GUID: the instance is disabled"))
        }
        return step
    }

    /// `play()` or `play(channelInfo)`: opens a viewing session (the guide calls `play()` with
    /// no argument; channel info, when given, needs `channelName`). After `end` it starts the
    /// next stream, also when a postroll played after that `end`.
    public mutating func play(_ channelInfo: [String: NielsenValue]? = nil) -> Step {
        var step = Step()
        guard enabled("play", &step) else { return step }
        if let channelInfo {
            step.metadataErrors = NielsenMetadata.validateChannelInfo(channelInfo)
            for error in step.metadataErrors { step.findings.append((error.rule, "play: \(error)")) }
        }
        if sessionOpen, !afterEnd {
            step.findings.append((.sessionOrder, "play while a session is open: call end first"))
            return step
        }
        sessionOpen = true
        afterEnd = false
        stopped = false
        needsMetadata = false
        playingReported = false
        lastPlayhead = nil
        asset = nil
        state = .processing
        send(.play, &step)
        return step
    }

    /// `loadMetadata(metadata)` at `now` (nil: no timing check): the asset about to play, or
    /// static content. Invalid metadata is refused (not applied) with its errors. Static
    /// metadata may come before any `play` (at app start); an ad's may follow `end` (a
    /// postroll).
    public mutating func loadMetadata(_ metadata: [String: NielsenValue], now: MonotonicInstant? = nil) -> Step {
        var step = Step()
        guard enabled("loadMetadata", &step) else { return step }
        step.metadataErrors = NielsenMetadata.validate(metadata)
        for error in step.metadataErrors { step.findings.append((error.rule, "loadMetadata: \(error)")) }
        let type = metadata["type"]?.string ?? ""
        let isStatic = type == "static"
        let isAd = NielsenMetadata.adTypes.contains(type)
        if isStatic {
            // measured apart from video: allowed before play, at app start
        } else if !sessionOpen {
            if isAd, afterEnd {
                sessionOpen = true  // a postroll after the content's end
            } else {
                step.findings.append((.sessionOrder, "loadMetadata outside a session: call play first"))
            }
        } else if afterEnd, !isAd {
            step.findings.append((.sessionOrder, "content after end: call play for the next stream"))
        }
        guard step.metadataErrors.isEmpty, !type.isEmpty else { return step }
        countAggregates(metadata, &step)
        if isStatic {
            for key in ["type", "section"] {
                if let value = metadata[key]?.string { send(.attribute(key, .string(value)), &step) }
            }
            send(.action("loadmetadata", [TelemetryField("type", .string(type)), TelemetryField("section", .string(metadata["section"]?.string ?? ""))]), &step)
            return step
        }
        checkFinalPlayhead("loadMetadata", now: now, &step)
        let assetid = metadata["assetid"]?.string ?? ""
        let length = metadata["length"]?.string
        let previous = asset
        if isAd {
            adStartPending = !(previous?.isAd == true && previous?.assetid == assetid)  // an interrupted ad resumes
            contentResume = nil
        } else {
            if newStream, let last = lastContentId, last != assetid { send(.videoChange(videoId: assetid), &step) }
            newStream = false
            lastContentId = assetid
            adStartPending = false
            contentResume = previous?.isAd == true && contentPosition?.assetid == assetid ? contentPosition?.position : nil
        }
        asset = Asset(assetid: assetid, length: length.flatMap(Double.init), live: type == "content" && NielsenMetadata.isLive(length: length), isAd: isAd)
        needsMetadata = false
        if sessionOpen { state = .processing }
        for key in ["type", "assetid", "program", "title", "length"] {
            if let value = metadata[key]?.string { send(.attribute(key, .string(value)), &step) }
        }
        send(.action("loadmetadata", [TelemetryField("type", .string(type)), TelemetryField("assetid", .string(assetid))]), &step)
        return step
    }

    /// `playheadPosition(position)` at `now`, when the device's UTC clock reads `utcSeconds`.
    public mutating func playheadPosition(_ position: Int64, now: MonotonicInstant, utcSeconds: Int64) -> Step {
        var step = Step()
        guard enabled("playheadPosition", &step) else { return step }
        guard sessionOpen else {
            step.findings.append((.sessionOrder, "playheadPosition \(position) outside a session: call play first"))
            return step
        }
        guard let asset else {
            step.findings.append((.metadataBeforePlayhead, "playheadPosition \(position) before loadMetadata"))
            return step
        }
        if needsMetadata {
            needsMetadata = false
            step.findings.append((.resumeWithMetadata, "playheadPosition \(position) straight after stop: call loadMetadata as playback resumes"))
        }
        if let last = lastPlayhead {
            let gap = last.duration(to: now)
            if gap < Self.shortestPlayheadGap {
                step.findings.append((.playheadOncePerSecond, "playheadPosition \(position) \(Self.milliseconds(gap)) ms after the previous one"))
            } else if gap > Self.longestBuffering {
                step.findings.append((.stopAfterLongBuffering, "no playhead for \(Self.milliseconds(gap) / 1000) s and no stop: call stop after 30 s of buffering"))
            }
        }
        if let problem = Self.unitProblem(position, live: asset.live, length: asset.length, utcSeconds: utcSeconds) {
            step.findings.append((.playheadUnits, "playheadPosition \(position): \(problem)"))
        }
        if adStartPending {
            adStartPending = false
            if position != 0 { step.findings.append((.adPlayheadFromZero, "the ad \(asset.assetid)'s first playhead is \(position): an ad's playhead begins from 0")) }
        }
        if let resume = contentResume {
            contentResume = nil
            if !asset.live, position < resume || position > resume + 1 {
                step.findings.append((.contentResumesPosition, "content resumed at \(position) after the ad: it left off at \(resume)"))
            }
        }
        if !asset.isAd, !asset.live { contentPosition = (asset.assetid, position) }
        lastPlayhead = now
        stopped = false
        state = .processing
        if !playingReported {
            playingReported = true
            if afterEnd { send(.play, &step) }  // a postroll after the content's end plays again
            send(.playing, &step)
        }
        send(.metric("playheadposition", .int(position)), &step)
        return step
    }

    /// `stop()`: playback paused or interrupted, or an ad ended; resumed by `loadMetadata` and
    /// playheads. Not checked for the final playhead: the guide withholds playheads while
    /// buffering, and `stop` may follow a buffering of any length.
    public mutating func stop() -> Step {
        var step = Step()
        guard enabled("stop", &step) else { return step }
        guard sessionOpen else {
            step.findings.append((.sessionOrder, "stop outside a session: call play first"))
            return step
        }
        guard !stopped else { return step }
        stopped = true
        needsMetadata = true
        playingReported = false
        lastPlayhead = nil
        state = .idle
        send(.pause, &step)
        return step
    }

    /// `end()` at `now` (nil: no timing check): the content ended; the session closes (the next
    /// stream needs `play` and `loadMetadata`; a postroll may still play).
    public mutating func end(now: MonotonicInstant? = nil) -> Step {
        var step = Step()
        guard enabled("end", &step) else { return step }
        guard sessionOpen else {
            step.findings.append((.sessionOrder, "end outside a session: call play first"))
            return step
        }
        checkFinalPlayhead("end", now: now, &step)
        sessionOpen = false
        afterEnd = true
        newStream = true
        stopped = false
        needsMetadata = false
        playingReported = false
        lastPlayhead = nil
        asset = nil
        state = .idle
        send(.ended, &step)
        return step
    }

    /// `appDisableApi(disabled)`: disables the instance, or enables it again (to `idle`, when it
    /// was initialized).
    public mutating func appDisableApi(_ disabled: Bool) -> Step {
        disabledByApp = disabled
        if disabled {
            state = .disabled
        } else if initialized, state == .disabled {
            state = .idle
            sessionOpen = false
            asset = nil
        }
        return Step()
    }

    /// `userOptOut(optOut)`: the user opts out or back in. As the guide's SDK (5.1 and later)
    /// does, measurement goes on: every later record carries the attribute `optout` (true while
    /// opted out), sent with the next event (at once when a view is open).
    public mutating func userOptOut(_ optOut: Bool) -> Step {
        var step = Step()
        if optOut != optedOut {
            optedOut = optOut
            optOutMarkPending = true
        }
        if viewOpen, optOutMarkPending {
            optOutMarkPending = false
            step.events.append(.attribute("optout", .bool(optedOut)))
        }
        return step
    }

    /// `userOptOut(url)`: the URL the opt-out page navigated to — `nielsenappsdk://1` opts out,
    /// `nielsenappsdk://0` opts in; anything else is refused (``NielsenRule/optOutURL``).
    public mutating func userOptOut(url: String) -> Step {
        switch url {
        case NielsenAppSDK.optOutSelection: return userOptOut(true)
        case NielsenAppSDK.optInSelection: return userOptOut(false)
        default:
            var step = Step()
            step.findings.append((.optOutURL, "userOptOut(\"\(NielsenMetadata.shorten(url))\"): pass nielsenappsdk://1 (opt out) or nielsenappsdk://0 (opt in)"))
            return step
        }
    }

    /// `updateOTT(info)`: the AirPlay/mirroring status (`ottStatus` `0` or `1`, with
    /// `ottType`, `ottDevice`, `ottDeviceModel`, `ottDeviceID`), as attributes of later records
    /// and an `updateott` action.
    public mutating func updateOTT(_ info: [String: NielsenValue]) -> Step {
        var step = Step()
        guard enabled("updateOTT", &step) else { return step }
        step.metadataErrors = NielsenMetadata.validateOTT(info)
        for error in step.metadataErrors { step.findings.append((error.rule, "updateOTT: \(error)")) }
        guard step.metadataErrors.isEmpty else { return step }
        for key in NielsenMetadata.ottKeys {
            if let value = info[key]?.string { send(.attribute(key, .string(value)), &step) }
        }
        send(.action("updateott", [TelemetryField("ottStatus", .string(info["ottStatus"]?.string ?? ""))]), &step)
        return step
    }

    // MARK: - Helpers

    private mutating func enabled(_ call: String, _ step: inout Step) -> Bool {
        if state == .initial {
            step.findings.append((.appId, "\(call) before the instance was initialized with an app id"))
            return false
        }
        guard state == .disabled else { return true }
        step.findings.append((.disabledInstance, "\(call) ignored: the instance is disabled\(initialized ? " (appDisableApi)" : " (no valid app id)")"))
        return false
    }

    private mutating func send(_ event: TelemetryEvent, _ step: inout Step) {
        if optOutMarkPending {
            optOutMarkPending = false
            step.events.append(.attribute("optout", .bool(optedOut)))
        }
        viewOpen = true
        step.events.append(event)
    }

    private mutating func checkFinalPlayhead(_ call: String, now: MonotonicInstant?, _ step: inout Step) {
        guard let now, let last = lastPlayhead, playingReported, let asset else { return }
        let gap = last.duration(to: now)
        if gap > Self.finalPlayheadGap, gap < Self.longestBuffering {
            step.findings.append((.finalPlayhead, "\(call) \(Self.milliseconds(gap)) ms after the last playhead of \(asset.assetid): send its final position first"))
        }
    }

    /// Counts distinct `section` and segment values; the one past the limit is a finding.
    private mutating func countAggregates(_ metadata: [String: NielsenValue], _ step: inout Step) {
        if metadata["type"]?.string == "static", let section = metadata["section"]?.string, sections.insert(section).inserted,
            sections.count > NielsenMetadata.aggregationLimit
        {
            step.findings.append((.aggregationLimits, "section \"\(NielsenMetadata.shorten(section))\" is distinct value \(sections.count): at most \(NielsenMetadata.aggregationLimit)"))
        }
        for key in NielsenMetadata.segmentKeys {
            guard let value = metadata[key]?.string, segments.insert(value).inserted, segments.count > NielsenMetadata.aggregationLimit else { continue }
            step.findings.append((.aggregationLimits, "\(key) \"\(NielsenMetadata.shorten(value))\" is distinct segment value \(segments.count) across segA, segB and segC: at most \(NielsenMetadata.aggregationLimit)"))
        }
    }

    /// Whether `appid` is `P` or `T` followed by a GUID (8-4-4-4-12 hex digits). An `X` stands for
    /// a hex digit, as in the guide's masked ids (`PXXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX`), so its
    /// samples initialize.
    static func isAppId(_ appid: String) -> Bool {
        let scalars = Array(appid.unicodeScalars)
        guard scalars.count == 37, scalars[0] == "P" || scalars[0] == "T" else { return false }
        for (index, scalar) in scalars.dropFirst().enumerated() {
            if [8, 13, 18, 23].contains(index) {
                guard scalar == "-" else { return false }
            } else {
                guard scalar.properties.isASCIIHexDigit || scalar == "X" else { return false }
            }
        }
        return true
    }

    private static func unitProblem(_ position: Int64, live: Bool, length: Double?, utcSeconds: Int64) -> String? {
        let looksLikeUTC = position >= 1_000_000_000
        if looksLikeUTC || live {
            guard looksLikeUTC else { return "live content reports the Unix time in seconds (now \(utcSeconds)), not a position" }
            let off = position - utcSeconds
            return abs(off) > liveClockTolerance ? "\(off) s off the device's UTC clock (\(utcSeconds))" : nil
        }
        if position < 0 { return "a position is never negative" }
        if let length, length > 0, Double(position) > length.rounded(.up) { return "beyond the content's length (\(length) s)" }
        return nil
    }

    private static func milliseconds(_ duration: Duration) -> Int64 { duration.nanoseconds / 1_000_000 }
}

/// The SDK's debug levels (`nol_devDebug`), from quiet to chatty.
public enum NielsenDebugLevel: String, Sendable, Hashable, CaseIterable, Comparable {
    /// No debug output (the default).
    case none = "NONE"
    /// Errors only: invalid metadata, broken rules.
    case error = "ERROR"
    /// Errors and warnings: ignored calls.
    case warn = "WARN"
    /// Every API call.
    case info = "INFO"
    /// Every API call and every event sent.
    case debug = "DEBUG"

    private var rank: Int { Self.allCases.firstIndex(of: self)! }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rank < rhs.rank }
}
