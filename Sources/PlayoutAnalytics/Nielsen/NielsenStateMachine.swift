public import PlayoutCore
public import PlayoutTelemetry

/// The decisions of one Nielsen DCR SDK instance, sans-IO: it takes the SDK's calls with the time
/// and returns the telemetry events to emit and the rules broken (``NielsenRule``); it reads no
/// clock and emits nothing. ``NielsenAppSDK`` carries its steps out.
///
/// Lifecycle (the guide's four states): `initial` until initialized; `idle` once initialized
/// with a valid app id (and after `stop` or `end`); `processing` while a session plays (after
/// `play`, `loadMetadata` or a playhead); `disabled` after `appDisableApi(true)` or a failed
/// initialization. A user opt-out keeps the state but sends nothing: the open view ends
/// (`viewend`) and no later event is returned until the user opts in again.
///
/// Calls become events in the engine's vocabulary: `play` → `play`; `loadMetadata` → the
/// asset's attributes and a `loadmetadata` action (`videochange` first when the asset changes
/// after `end`); the first playhead after `play` or `stop` → `playing`, and every playhead a
/// `playheadposition` metric; `stop` → `pause`; `end` → `ended`.
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
    private var stopped = false
    private var playingReported = false
    private var viewOpen = false
    private var asset: (assetid: String, length: Double?, live: Bool)?
    private var lastAssetId: String?
    private var lastPlayhead: MonotonicInstant?

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

    /// `play(channelInfo)`: opens a viewing session.
    public mutating func play(_ channelInfo: [String: NielsenValue]) -> Step {
        var step = Step()
        guard enabled("play", &step) else { return step }
        step.metadataErrors = NielsenMetadata.validateChannelInfo(channelInfo)
        for error in step.metadataErrors { step.findings.append((error.rule, "play: \(error)")) }
        if sessionOpen {
            step.findings.append((.sessionOrder, "play while a session is open: call end first"))
            return step
        }
        sessionOpen = true
        stopped = false
        playingReported = false
        lastPlayhead = nil
        state = .processing
        send(.play, &step)
        return step
    }

    /// `loadMetadata(metadata)`: the asset about to play. Invalid metadata is refused (not
    /// applied) with its errors.
    public mutating func loadMetadata(_ metadata: [String: NielsenValue]) -> Step {
        var step = Step()
        guard enabled("loadMetadata", &step) else { return step }
        step.metadataErrors = NielsenMetadata.validate(metadata)
        for error in step.metadataErrors { step.findings.append((error.rule, "loadMetadata: \(error)")) }
        if !sessionOpen { step.findings.append((.sessionOrder, "loadMetadata outside a session: call play first")) }
        guard step.metadataErrors.isEmpty, let type = metadata["type"]?.string else { return step }
        let assetid = metadata["assetid"]?.string ?? ""  // static content may have none
        let length = metadata["length"]?.string
        if let last = lastAssetId, last != assetid, asset == nil { send(.videoChange(videoId: assetid), &step) }
        asset = (assetid, length.flatMap(Double.init), type == "content" && NielsenMetadata.isLive(length: length))
        lastAssetId = assetid
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
        lastPlayhead = now
        stopped = false
        state = .processing
        if !playingReported {
            playingReported = true
            send(.playing, &step)
        }
        send(.metric("playheadposition", .int(position)), &step)
        return step
    }

    /// `stop()`: playback paused or interrupted; resumed by `loadMetadata` and playheads.
    public mutating func stop() -> Step {
        var step = Step()
        guard enabled("stop", &step) else { return step }
        guard sessionOpen else {
            step.findings.append((.sessionOrder, "stop outside a session: call play first"))
            return step
        }
        guard !stopped else { return step }
        stopped = true
        playingReported = false
        lastPlayhead = nil
        state = .idle
        send(.pause, &step)
        return step
    }

    /// `end()`: the content ended; the session closes (the next asset needs `play` and
    /// `loadMetadata`).
    public mutating func end() -> Step {
        var step = Step()
        guard enabled("end", &step) else { return step }
        guard sessionOpen else {
            step.findings.append((.sessionOrder, "end outside a session: call play first"))
            return step
        }
        sessionOpen = false
        stopped = false
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

    /// `userOptOut(optOut)`: the user opts out (the open view ends; nothing more is sent) or in.
    public mutating func userOptOut(_ optOut: Bool) -> Step {
        var step = Step()
        if optOut, !optedOut, viewOpen {
            step.events.append(.viewEnd)
            viewOpen = false
        }
        optedOut = optOut
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
        guard !optedOut else { return }
        viewOpen = true
        step.events.append(event)
    }

    /// Whether `appid` is `P` or `T` followed by a GUID (8-4-4-4-12 hex digits).
    static func isAppId(_ appid: String) -> Bool {
        let scalars = Array(appid.unicodeScalars)
        guard scalars.count == 37, scalars[0] == "P" || scalars[0] == "T" else { return false }
        for (index, scalar) in scalars.dropFirst().enumerated() {
            if [8, 13, 18, 23].contains(index) {
                guard scalar == "-" else { return false }
            } else {
                guard scalar.properties.isASCIIHexDigit else { return false }
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
