public import PlayoutCore

/// One tracker's sessions, as a sans-IO state machine: it takes the tracker's events with the time
/// they were emitted and returns the records to deliver, or why an event was rejected.
///
/// States follow the player: `initial` (view begun), `loading` (play requested, nothing shown
/// yet), `playing`, `paused`, `rebuffering`, `ended`, `error` (after a fatal error: tracking is
/// ignored until a new load, ``TelemetryEvent/videoChange(videoId:)``, as Adobe's heartbeat does)
/// and `closed` (after `viewend`). An event that makes no sense in the current state (pause while
/// paused, playing after ended) is rejected with a reason naming the state, and counted.
///
/// Every record gets the session's id, a gap-free `seq` from 0, its monotonic time since the
/// engine's origin and its wall time, the session's attributes, and a `timeSince<Action>` field
/// for every action seen before in the session (seconds, monotonic). A session that sees no event
/// but heartbeats for ``Configuration/inactivityTimeout`` is split: the next event ends it with
/// `viewend` and continues in a new session, in the same player state.
///
/// ```swift
/// var hub = TelemetrySessionHub(sessionIdPrefix: "a1b2", origin: .zero)
/// _ = hub.handle(.play, now: t0, wallTime: wall0)      // records viewinit (implicit) and play
/// _ = hub.handle(.playing, now: t1, wallTime: wall1)   // record playing; state .playing
/// _ = hub.handle(.playing, now: t2, wallTime: wall2)   // [.rejected("playing while playing")]
/// ```
public struct TelemetrySessionHub: Sendable {
    /// The player's state as the hub tracks it.
    public enum State: String, Sendable, Hashable, CaseIterable {
        /// The view has begun (or a new video was loaded); nothing requested yet.
        case initial
        /// Play was requested; no frame shown yet (startup, or resuming).
        case loading
        /// Frames are shown.
        case playing
        /// Paused on request.
        case paused
        /// Stalled (a network rebuffer, or a stall the viewer asked for: a seek, a delay increase).
        case rebuffering
        /// The video ended.
        case ended
        /// A fatal error: tracking is ignored until a new load (`videochange`).
        case error
        /// The view ended (`viewend`); only `viewinit` begins another.
        case closed
    }

    /// The hub's settings, with documented defaults.
    public struct Configuration: Sendable, Equatable {
        /// The default heartbeat interval: 10 s.
        public static let defaultHeartbeatInterval: Duration = .seconds(10)
        /// The default inactivity that splits a session: 30 minutes.
        public static let defaultInactivityTimeout: Duration = .seconds(30 * 60)

        /// How often a playing (or rebuffering) session sends a `heartbeat`.
        public var heartbeatInterval: Duration
        /// After this long without an event (heartbeats do not count), the next event starts a
        /// new session.
        public var inactivityTimeout: Duration

        /// Settings with the given values (defaults: 10 s heartbeats, 30 minutes of inactivity).
        public init(
            heartbeatInterval: Duration = Configuration.defaultHeartbeatInterval,
            inactivityTimeout: Duration = Configuration.defaultInactivityTimeout
        ) {
            self.heartbeatInterval = heartbeatInterval
            self.inactivityTimeout = inactivityTimeout
        }
    }

    /// What handling one event produced.
    public enum Output: Sendable, Equatable {
        /// A record to deliver.
        case record(TelemetryRecord)
        /// The event was refused: `reason` names the event and the state.
        case rejected(reason: String)
        /// The event was dropped because the session is in the error state (until a new load).
        case ignored(event: String)
    }

    /// What ``poll(now:)`` asks of its driver.
    public enum PollAction: Sendable, Equatable {
        /// Call ``heartbeat(_:now:wallTime:)`` now (with the tracker's QoS sample).
        case heartbeatDue
        /// Nothing to do before `instant`.
        case wait(until: MonotonicInstant)
        /// Nothing to do until the next event.
        case idle
    }

    /// The current state.
    public private(set) var state: State = .initial
    /// The current session's id (empty before the first event).
    public private(set) var sessionId = ""
    /// Events rejected so far.
    public private(set) var rejectedCount = 0
    /// Events ignored in the error state so far.
    public private(set) var ignoredCount = 0

    private let configuration: Configuration
    private let sessionIdPrefix: String
    private let origin: MonotonicInstant
    private var sessionCount = 0
    private var begun = false
    private var seq: UInt64 = 0
    private var seeking = false
    private var freezing = false
    private var playerReady = false
    private var lastActivity: MonotonicInstant?
    private var nextHeartbeat: MonotonicInstant?
    private var actionTimes: [ActionTime] = []
    /// When an action (an event or a user's action) was last seen, for its `timeSince<Action>`.
    private struct ActionTime {
        var name: String
        var vocabulary: TelemetryVocabulary
        var key: String  // timeSince<Action>
        var time: MonotonicInstant
    }
    private var attributes: [TelemetryField] = []

    /// A hub whose sessions are named `<sessionIdPrefix>-<n>` (n from 1), timing records from
    /// `origin` (the engine's start).
    public init(sessionIdPrefix: String, origin: MonotonicInstant, configuration: Configuration = .init()) {
        self.sessionIdPrefix = sessionIdPrefix
        self.origin = origin
        self.configuration = configuration
    }

    // MARK: - Events

    /// Handles `event`, emitted at `now` (wall time `wallTime`, ns since 1970); returns the
    /// records to deliver (in order), or the rejection.
    public mutating func handle(_ event: TelemetryEvent, now: MonotonicInstant, wallTime: Int64) -> [Output] {
        var outputs: [Output] = []
        handle(event, now: now, wallTime: wallTime, into: &outputs)
        return outputs
    }

    /// ``handle(_:now:wallTime:)`` appending to `outputs` (a buffer the caller reuses).
    public mutating func handle(_ event: TelemetryEvent, now: MonotonicInstant, wallTime: Int64, into outputs: inout [Output]) {
        var sink = Sink()
        process(event, now: now, wallTime: wallTime, into: &sink)
        // One event's records come first; a rejection or an ignore ends its handling.
        outputs.append(contentsOf: sink.records.map(Output.record))
        outputs.append(contentsOf: sink.rejected.map { .rejected(reason: $0) })
        outputs.append(contentsOf: sink.ignored.map { .ignored(event: $0) })
    }

    /// What handling produced, apart: the engine appends records straight to the array it hands
    /// to the backends (no ``Output`` per record).
    struct Sink {
        var records: [TelemetryRecord] = []
        var rejected: [String] = []
        var ignored: [String] = []
    }

    /// ``handle(_:now:wallTime:)`` appending to `sink`.
    mutating func handle(_ event: TelemetryEvent, now: MonotonicInstant, wallTime: Int64, into sink: inout Sink) {
        process(event, now: now, wallTime: wallTime, into: &sink)
    }

    /// Sends a heartbeat with `fields` (the tracker's QoS sample) when the state allows one.
    public mutating func heartbeat(_ fields: [TelemetryField], now: MonotonicInstant, wallTime: Int64) -> [Output] {
        handle(.heartbeat(fields), now: now, wallTime: wallTime)
    }

    /// Whether a heartbeat is due (playing or rebuffering, one interval after the last).
    public func poll(now: MonotonicInstant) -> PollAction {
        guard state == .playing || state == .rebuffering, let next = nextHeartbeat else { return .idle }
        return now >= next ? .heartbeatDue : .wait(until: next)
    }

    private mutating func process(_ event: TelemetryEvent, now: MonotonicInstant, wallTime: Int64, into sink: inout Sink) {
        let name = event.name
        if case .attribute(let key, let value) = event {
            guard state != .closed || !begun else { return reject("attribute \(key) after viewend (state closed)", &sink) }
            attributes.removeAll { $0.name == key }
            if let value { attributes.append(TelemetryField(key, value)) }
            return
        }
        if case .viewInit = event {
            guard !begun || state == .closed else { return reject("viewinit while \(state.rawValue): the view has begun", &sink) }
            begin(now: now, wallTime: wallTime, into: &sink)
            return
        }
        if !begun { begin(now: now, wallTime: wallTime, into: &sink) }
        if state == .closed { return reject("\(name) after viewend (state closed)", &sink) }
        if state == .error {
            switch event {
            case .videoChange, .viewEnd: break
            default:
                ignoredCount += 1
                sink.ignored.append(name)
                return
            }
        }
        let isHeartbeat: Bool
        if case .heartbeat = event { isHeartbeat = true } else { isHeartbeat = false }
        var isViewEnd = false
        if case .viewEnd = event { isViewEnd = true }
        if !isHeartbeat, !isViewEnd, let last = lastActivity, last.duration(to: now) >= configuration.inactivityTimeout {
            split(now: now, wallTime: wallTime, into: &sink)
        }

        // One array per record: the event's fields, then the attributes and `timeSince<Action>`s.
        var fields: [TelemetryField] = []
        fields.reserveCapacity(4 + attributes.count + actionTimes.count)
        switch event {
        case .viewInit, .attribute: return
        case .playerReady:
            guard !playerReady, state == .initial || state == .loading else {
                return reject("playerready while \(state.rawValue)\(playerReady ? ": the player was ready already" : "")", &sink)
            }
            playerReady = true
        case .play:
            guard [.initial, .paused, .ended].contains(state) else { return reject("play while \(state.rawValue)", &sink) }
            state = .loading
        case .playing:
            switch state {
            case .loading, .paused, .initial: break
            case .rebuffering: emitInternal(.rebufferEnd, now: now, wallTime: wallTime, into: &sink)
            default: return reject("playing while \(state.rawValue)", &sink)
            }
            state = .playing
            nextHeartbeat = now.advanced(by: configuration.heartbeatInterval)
        case .pause:
            switch state {
            case .loading, .playing: break
            case .rebuffering: emitInternal(.rebufferEnd, now: now, wallTime: wallTime, into: &sink)
            default: return reject("pause while \(state.rawValue)", &sink)
            }
            endFreeze(now: now, wallTime: wallTime, into: &sink)
            state = .paused
        case .seeking:
            guard !seeking, [.loading, .playing, .paused, .rebuffering, .ended].contains(state) else {
                return reject("seeking while \(seeking ? "seeking" : state.rawValue)", &sink)
            }
            seeking = true
        case .seeked:
            guard seeking else { return reject("seeked while \(state.rawValue), not seeking", &sink) }
            seeking = false
        case .rebufferStart(let cause):
            guard state == .playing else { return reject("rebufferstart while \(state.rawValue)", &sink) }
            endFreeze(now: now, wallTime: wallTime, into: &sink)
            fields.append(TelemetryField("cause", .string((seeking ? .seek : cause).rawValue)))
            state = .rebuffering
        case .rebufferEnd:
            guard state == .rebuffering else { return reject("rebufferend while \(state.rawValue)", &sink) }
            state = .playing
        case .renditionChange(let bitrate, let width, let height):
            fields.append(TelemetryField("bitrate", .int(bitrate)))
            fields.append(TelemetryField("width", .int(Int64(width))))
            fields.append(TelemetryField("height", .int(Int64(height))))
        case .playoutDelayChange(let delay, let requested):
            fields.append(TelemetryField("delay", .double(delay.seconds)))
            fields.append(TelemetryField("requested", .bool(requested)))
        case .freezeStart:
            guard state == .playing, !freezing else {
                return reject("freezestart while \(freezing ? "frozen" : state.rawValue)", &sink)
            }
            freezing = true
        case .freezeEnd(let duration):
            guard freezing || duration != nil else { return reject("freezeend while \(state.rawValue), not frozen", &sink) }
            freezing = false
            if let duration { fields.append(TelemetryField("duration", .double(duration.seconds))) }
        case .error(let error):
            fields.append(TelemetryField("severity", .string(error.severity.rawValue)))
            fields.append(TelemetryField("code", .int(Int64(error.code))))
            fields.append(TelemetryField("message", .string(error.message)))
            fields.append(TelemetryField("businessException", .bool(error.businessException)))
            if error.severity == .fatal {
                endFreeze(now: now, wallTime: wallTime, into: &sink)
                state = .error
            }
        case .ended:
            guard [.loading, .playing, .paused, .rebuffering].contains(state) else { return reject("ended while \(state.rawValue)", &sink) }
            endFreeze(now: now, wallTime: wallTime, into: &sink)
            state = .ended
        case .videoChange(let videoId):
            endFreeze(now: now, wallTime: wallTime, into: &sink)
            attributes.removeAll { $0.name == "videoId" }
            attributes.append(TelemetryField("videoId", .string(videoId)))
            state = .initial
            seeking = false
        case .viewEnd:
            endFreeze(now: now, wallTime: wallTime, into: &sink)
            emit(.event, "viewend", .viewend, [], now: now, wallTime: wallTime, into: &sink)
            state = .closed
            nextHeartbeat = nil
            return
        case .heartbeat(let sample):
            guard state != .closed else { return }
            emit(.heartbeat, "heartbeat", .heartbeat, sample, now: now, wallTime: wallTime, into: &sink)
            if state == .playing || state == .rebuffering { nextHeartbeat = now.advanced(by: configuration.heartbeatInterval) }
            return
        case .action(let action, let context):
            guard !action.isEmpty, !Self.reservedNames.contains(action) else {
                return reject("action \"\(action)\" while \(state.rawValue): \(action.isEmpty ? "an action needs a name" : "the name is the player vocabulary's; emit the event itself")", &sink)
            }
            fields.append(contentsOf: context)
        case .metric(_, let value):
            lastActivity = now
            fields.append(TelemetryField("value", value))
            emit(.metric, name, event.vocabulary, &fields, now: now, wallTime: wallTime, into: &sink)
            return
        }
        emit(.event, name, event.vocabulary, &fields, now: now, wallTime: wallTime, into: &sink)
    }

    // MARK: - Sessions and records

    private mutating func reject(_ reason: String, _ sink: inout Sink) {
        rejectedCount += 1
        sink.rejected.append(reason)
    }

    private mutating func begin(now: MonotonicInstant, wallTime: Int64, into sink: inout Sink) {
        sessionCount += 1
        sessionId = "\(sessionIdPrefix)-\(sessionCount)"
        seq = 0
        begun = true
        actionTimes.removeAll()
        state = .initial
        playerReady = false
        seeking = false
        freezing = false
        nextHeartbeat = nil
        emit(.event, "viewinit", .viewinit, [], now: now, wallTime: wallTime, into: &sink)
    }

    /// Ends the session after inactivity and goes on in a new one, in the same state.
    private mutating func split(now: MonotonicInstant, wallTime: Int64, into sink: inout Sink) {
        let carried = (state: state, ready: playerReady)
        emit(.event, "viewend", .viewend, [TelemetryField("reason", .string("inactivity"))], now: now, wallTime: wallTime, into: &sink)
        begin(now: now, wallTime: wallTime, into: &sink)
        state = carried.state
        playerReady = carried.ready
        if state == .playing || state == .rebuffering { nextHeartbeat = now.advanced(by: configuration.heartbeatInterval) }
    }

    private mutating func endFreeze(now: MonotonicInstant, wallTime: Int64, into sink: inout Sink) {
        guard freezing else { return }
        freezing = false
        emit(.event, "freezeend", .freezeend, [], now: now, wallTime: wallTime, into: &sink)
    }

    private mutating func emitInternal(_ event: TelemetryEvent, now: MonotonicInstant, wallTime: Int64, into sink: inout Sink) {
        emit(.event, event.name, event.vocabulary, [], now: now, wallTime: wallTime, into: &sink)
    }

    private mutating func emit(
        _ kind: TelemetryRecord.Kind, _ name: String, _ vocabulary: TelemetryVocabulary, _ fields: [TelemetryField],
        now: MonotonicInstant, wallTime: Int64, into sink: inout Sink
    ) {
        var all = fields
        emit(kind, name, vocabulary, &all, now: now, wallTime: wallTime, into: &sink)
    }

    /// Adds the attributes and `timeSince<Action>`s to `all` in place (the caller reserved room
    /// for them, so the record's one array is never reallocated) and emits the record.
    private mutating func emit(
        _ kind: TelemetryRecord.Kind, _ name: String, _ vocabulary: TelemetryVocabulary, _ all: inout [TelemetryField],
        now: MonotonicInstant, wallTime: Int64, into sink: inout Sink
    ) {
        if !attributes.isEmpty { all.append(contentsOf: attributes) }
        var previous: Int?
        for index in actionTimes.indices {
            let action = actionTimes[index]
            if action.vocabulary == vocabulary, vocabulary != .other || action.name == name { previous = index }
            // Seconds from whole nanoseconds: exact for any realistic session, and no 128-bit
            // arithmetic (Duration.seconds) for every field of every record.
            all.append(TelemetryField(action.key, .double(Double(now.nanoseconds &- action.time.nanoseconds) / 1e9)))
        }
        if kind == .event {
            lastActivity = now
            if let previous {
                actionTimes[previous].time = now
            } else {
                actionTimes.append(ActionTime(name: name, vocabulary: vocabulary, key: "timeSince" + Self.capitalized(name), time: now))
            }
        }
        sink.records.append(TelemetryRecord(
            sessionId: sessionId, seq: seq, monotonic: .nanoseconds(now.nanoseconds &- origin.nanoseconds), wallTimeNanoseconds: wallTime,
            kind: kind, name: name, vocabulary: vocabulary, fields: all))
        seq += 1
    }

    /// The vocabulary's record names, which a custom action cannot take (the KPIs read them).
    static let reservedNames: Set<String> = [
        "viewinit", "playerready", "play", "playing", "pause", "seeking", "seeked", "rebufferstart", "rebufferend",
        "renditionchange", "playoutdelaychange", "freezestart", "freezeend", "error", "ended", "videochange", "viewend",
        "heartbeat", "attribute",
    ]

    private static func capitalized(_ name: String) -> String {
        guard let first = name.first else { return name }
        return first.uppercased() + name.dropFirst()
    }
}
