import PlayoutCore

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
package struct TelemetrySessionHub: Sendable {
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

    /// Its settings (``TelemetrySessionConfiguration``).
    package typealias Configuration = TelemetrySessionConfiguration

    /// What handling one event produced.
    enum Output: Sendable, Equatable {
        /// A record to deliver.
        case record(TelemetryRecord)
        /// The event was refused: `reason` names the event and the state.
        case rejected(reason: String)
        /// The event was dropped because the session is in the error state (until a new load).
        case ignored(event: String)
    }

    /// What ``poll(now:)`` asks of its driver.
    enum PollAction: Sendable, Equatable {
        /// Call ``heartbeat(_:now:wallTime:)`` now (with the tracker's QoS sample).
        case heartbeatDue
        /// Nothing to do before `instant`.
        case wait(until: MonotonicInstant)
        /// Nothing to do until the next event.
        case idle
    }

    /// The current state.
    private(set) var state: State = .initial
    /// The current session's id (empty before the first event).
    private(set) var sessionId = ""
    /// Events rejected so far.
    private(set) var rejectedCount = 0
    /// Events ignored in the error state so far.
    private(set) var ignoredCount = 0

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
    /// Its tracker's tags, on each of its records (after the instrument's).
    private let tags: [TelemetryField]
    /// Changes whenever the attributes or the `timeSince<Action>` names change: with the same
    /// version, a vocabulary event's record has the same field names as the last one.
    private var layoutVersion = 0
    /// The index of the current session's id in the builder the last record went into.
    private var sessionInBuilder: (builder: Int, session: Int, index: UInt32) = (0, 0, 0)
    /// The shape the last record of each vocabulary event had, in which builder, under which
    /// layout and with how many own fields (so the next one is written as values only); custom
    /// actions and metrics by name in `knownCustomShapes`, the last few names seen.
    private var knownShapes = [KnownShape?](repeating: nil, count: TelemetryVocabulary.allCases.count)
    private var knownCustomShapes: [(kind: TelemetryRecord.Kind, name: String, shape: KnownShape)] = []
    private var nextCustomSlot = 0
    private static let knownCustomNames = 8
    private struct KnownShape {
        var builder: Int
        var layoutVersion: Int
        var ownFields: Int
        var shape: Int
    }

    /// A hub whose sessions are named `<sessionIdPrefix>-<n>` (n from 1), timing records from
    /// `origin` (the engine's start), its records tagged `tags` (its tracker's, after the
    /// instrument's).
    init(sessionIdPrefix: String, origin: MonotonicInstant, configuration: Configuration = .init(), tags: [TelemetryField] = []) {
        self.sessionIdPrefix = sessionIdPrefix
        self.tags = tags
        self.origin = origin
        self.configuration = configuration
    }

    // MARK: - Events

    /// Handles `event`, emitted at `now` (wall time `wallTime`, ns since 1970); returns the
    /// records to deliver (in order), or the rejection.
    mutating func handle(_ event: TelemetryEvent, now: MonotonicInstant, wallTime: Int64) -> [Output] {
        var outputs: [Output] = []
        handle(event, now: now, wallTime: wallTime, into: &outputs)
        return outputs
    }

    /// ``handle(_:now:wallTime:)`` appending to `outputs` (a buffer the caller reuses).
    mutating func handle(_ event: TelemetryEvent, now: MonotonicInstant, wallTime: Int64, into outputs: inout [Output]) {
        var sink = Sink()
        process(event, now: now, wallTime: wallTime, into: &sink)
        // One event's records come first; a rejection or an ignore ends its handling.
        for index in 0..<sink.columns.count { outputs.append(.record(sink.columns.record(index))) }
        outputs.append(contentsOf: sink.rejected.map { .rejected(reason: $0) })
        outputs.append(contentsOf: sink.ignored.map { .ignored(event: $0) })
    }

    /// What handling produced, apart: the engine has the hubs write their records straight into
    /// the columns it hands to the backends (no ``Output`` and no ``TelemetryRecord`` per record).
    struct Sink {
        var columns: TelemetryColumnsBuilder
        var rejected: [String] = []
        var ignored: [String] = []

        init(columns: TelemetryColumnsBuilder = .init()) {
            self.columns = columns
        }
    }

    /// ``handle(_:now:wallTime:)`` appending to `sink`.
    mutating func handle(_ event: TelemetryEvent, now: MonotonicInstant, wallTime: Int64, into sink: inout Sink) {
        process(event, now: now, wallTime: wallTime, into: &sink)
    }

    /// Sends a heartbeat with `fields` (the tracker's QoS sample) when the state allows one.
    mutating func heartbeat(_ fields: [TelemetryField], now: MonotonicInstant, wallTime: Int64) -> [Output] {
        handle(.heartbeat(fields), now: now, wallTime: wallTime)
    }

    /// Whether a heartbeat is due (playing or rebuffering, one interval after the last).
    func poll(now: MonotonicInstant) -> PollAction {
        guard state == .playing || state == .rebuffering, let next = nextHeartbeat else { return .idle }
        return now >= next ? .heartbeatDue : .wait(until: next)
    }

    private mutating func process(_ event: TelemetryEvent, now: MonotonicInstant, wallTime: Int64, into sink: inout Sink) {
        let name = event.name
        if case .attribute(let key, let value) = event {
            guard state != .closed || !begun else { return reject("attribute \(key) after viewend (state closed)", &sink) }
            attributes.removeAll { $0.name == key }
            if let value { attributes.append(TelemetryField(key, value)) }
            layoutVersion &+= 1
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

        // The event's own fields are written with its record, by `writeOwnFields` (records the
        // event causes first, like `freezeend`, go before it).
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
        case .rebufferStart:
            guard state == .playing else { return reject("rebufferstart while \(state.rawValue)", &sink) }
            endFreeze(now: now, wallTime: wallTime, into: &sink)
            state = .rebuffering
        case .rebufferEnd:
            guard state == .rebuffering else { return reject("rebufferend while \(state.rawValue)", &sink) }
            state = .playing
        case .renditionChange, .playoutDelayChange: break
        case .freezeStart:
            guard state == .playing, !freezing else {
                return reject("freezestart while \(freezing ? "frozen" : state.rawValue)", &sink)
            }
            freezing = true
        case .freezeEnd(let duration):
            guard freezing || duration != nil else { return reject("freezeend while \(state.rawValue), not frozen", &sink) }
            freezing = false
        case .error(let error):
            if error.severity == .fatal, error.stopsTracking {
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
            layoutVersion &+= 1
            state = .initial
            seeking = false
        case .viewEnd:
            endFreeze(now: now, wallTime: wallTime, into: &sink)
            emit(.event, "viewend", .viewend, of: .viewEnd, now: now, wallTime: wallTime, into: &sink)
            state = .closed
            nextHeartbeat = nil
            return
        case .heartbeat:
            guard state != .closed else { return }
            emit(.heartbeat, "heartbeat", .heartbeat, of: event, now: now, wallTime: wallTime, into: &sink)
            if state == .playing || state == .rebuffering { nextHeartbeat = now.advanced(by: configuration.heartbeatInterval) }
            return
        case .action(let action, _):
            guard !action.isEmpty, !Self.reservedNames.contains(action) else {
                return reject("action \"\(action)\" while \(state.rawValue): \(action.isEmpty ? "an action needs a name" : "the name is the player vocabulary's; emit the event itself")", &sink)
            }
        case .metric:
            lastActivity = now
            emit(.metric, name, event.vocabulary, of: event, now: now, wallTime: wallTime, into: &sink)
            return
        }
        emit(.event, name, event.vocabulary, of: event, now: now, wallTime: wallTime, into: &sink)
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
        layoutVersion &+= 1
        state = .initial
        playerReady = false
        seeking = false
        freezing = false
        nextHeartbeat = nil
        emit(.event, "viewinit", .viewinit, of: .viewInit, now: now, wallTime: wallTime, into: &sink)
    }

    /// Ends the session after inactivity and goes on in a new one, in the same state.
    private mutating func split(now: MonotonicInstant, wallTime: Int64, into sink: inout Sink) {
        let carried = (state: state, ready: playerReady)
        emit(.event, "viewend", .viewend, [TelemetryField("reason", .string("inactivity"))], of: .viewEnd, now: now, wallTime: wallTime, into: &sink)
        begin(now: now, wallTime: wallTime, into: &sink)
        state = carried.state
        playerReady = carried.ready
        if state == .playing || state == .rebuffering { nextHeartbeat = now.advanced(by: configuration.heartbeatInterval) }
    }

    private mutating func endFreeze(now: MonotonicInstant, wallTime: Int64, into sink: inout Sink) {
        guard freezing else { return }
        freezing = false
        emit(.event, "freezeend", .freezeend, of: .freezeEnd(duration: nil), now: now, wallTime: wallTime, into: &sink)
    }

    private mutating func emitInternal(_ event: TelemetryEvent, now: MonotonicInstant, wallTime: Int64, into sink: inout Sink) {
        emit(.event, event.name, event.vocabulary, of: event, now: now, wallTime: wallTime, into: &sink)
    }

    /// Writes a record of `event`: its own fields (its delay, its bitrate, a heartbeat's sample …)
    /// and `fields`, then the attributes and a `timeSince<Action>` for every action seen before.
    private mutating func emit(
        _ kind: TelemetryRecord.Kind, _ name: String, _ vocabulary: TelemetryVocabulary, _ fields: [TelemetryField] = [],
        of event: TelemetryEvent, now: MonotonicInstant, wallTime: Int64, into sink: inout Sink
    ) {
        if sessionInBuilder.builder != sink.columns.id || sessionInBuilder.session != sessionCount {
            sessionInBuilder = (sink.columns.id, sessionCount, sink.columns.addSession(sessionId, tags: tags))
        }
        let session = sessionInBuilder.index
        let monotonic = now.nanoseconds &- origin.nanoseconds
        // An event whose last record of its kind and name went into this builder under the same
        // attributes and actions has that record's shape when its own fields match it (by count
        // alone for the vocabulary's fixed fields; by name and type for an action's context, a
        // metric's value, a heartbeat's sample).
        let ownFields = Self.ownFieldCount(event)
        var remembered: KnownShape?
        if fields.isEmpty, let shape = knownShape(kind, name, vocabulary), shape.builder == sink.columns.id,
            shape.layoutVersion == layoutVersion, shape.ownFields == ownFields
        {
            if kind == .event, vocabulary != .other {
                remembered = shape  // the vocabulary's own fields are fixed: the count matched
            } else {
                switch event {  // (the builder's methods called in place: passing it would copy it)
                case .action(_, let fields), .heartbeat(let fields):
                    if sink.columns.shape(shape.shape, beginsWith: fields) { remembered = shape }
                case .metric(_, let value):
                    if sink.columns.shape(shape.shape, hasTypeOf: value, at: 0) { remembered = shape }
                default: break
                }
            }
        }
        let known = remembered != nil
        if let remembered {
            sink.columns.beginRecord(
                shape: remembered.shape, session: session, seq: seq, monotonicNanoseconds: monotonic, wallTimeNanoseconds: wallTime)
        } else {
            sink.columns.beginRecord(
                kind: kind, name: name, vocabulary: vocabulary, session: session, seq: seq, monotonicNanoseconds: monotonic,
                wallTimeNanoseconds: wallTime)
        }
        writeOwnFields(of: event, into: &sink.columns)
        for field in fields { sink.columns.append(field.name, field.value) }
        for attribute in attributes { sink.columns.append(attribute.name, attribute.value) }
        var previous: Int?
        for index in actionTimes.indices {
            if actionTimes[index].vocabulary == vocabulary, vocabulary != .other || actionTimes[index].name == name { previous = index }
            // Seconds from whole nanoseconds: exact for any realistic session, and no 128-bit
            // arithmetic (Duration.seconds) for every field of every record.
            let seconds = TelemetryValue.double(Double(now.nanoseconds &- actionTimes[index].time.nanoseconds) / 1e9)
            if known { sink.columns.append(seconds) } else { sink.columns.append(actionTimes[index].key, seconds) }
        }
        sink.columns.endRecord()
        if !known, fields.isEmpty {
            remember(
                KnownShape(builder: sink.columns.id, layoutVersion: layoutVersion, ownFields: ownFields, shape: sink.columns.lastShapeIndex),
                kind, name, vocabulary)
        }
        if kind == .event {
            lastActivity = now
            if let previous {
                actionTimes[previous].time = now
            } else {
                actionTimes.append(ActionTime(name: name, vocabulary: vocabulary, key: "timeSince" + Self.capitalized(name), time: now))
                layoutVersion &+= 1
            }
        }
        seq += 1
    }

    /// The shape remembered for records of this kind and name, if any.
    @inline(__always)
    private func knownShape(_ kind: TelemetryRecord.Kind, _ name: String, _ vocabulary: TelemetryVocabulary) -> KnownShape? {
        if let slot = Self.vocabularySlot(kind, vocabulary) { return knownShapes[slot] }
        for entry in knownCustomShapes where entry.kind == kind && entry.name == name { return entry.shape }
        return nil
    }

    private mutating func remember(
        _ shape: KnownShape, _ kind: TelemetryRecord.Kind, _ name: String, _ vocabulary: TelemetryVocabulary
    ) {
        if let slot = Self.vocabularySlot(kind, vocabulary) { return knownShapes[slot] = shape }
        if let index = knownCustomShapes.firstIndex(where: { $0.kind == kind && $0.name == name }) {
            return knownCustomShapes[index].shape = shape
        }
        if knownCustomShapes.count < Self.knownCustomNames { return knownCustomShapes.append((kind, name, shape)) }
        knownCustomShapes[nextCustomSlot] = (kind, name, shape)
        nextCustomSlot = (nextCustomSlot + 1) % Self.knownCustomNames
    }

    /// Where `knownShapes` keeps the shape of records of this kind and vocabulary: the vocabulary's
    /// events and heartbeats by vocabulary; nil for a custom action or metric (kept by name).
    @inline(__always)
    private static func vocabularySlot(_ kind: TelemetryRecord.Kind, _ vocabulary: TelemetryVocabulary) -> Int? {
        if kind == .event, vocabulary != .other { return Int(vocabulary.rawValue) }
        if kind == .heartbeat { return Int(TelemetryVocabulary.heartbeat.rawValue) }
        return nil
    }

    /// How many fields ``writeOwnFields(of:into:)`` writes for `event`.
    private static func ownFieldCount(_ event: TelemetryEvent) -> Int {
        switch event {
        case .rebufferStart: 1
        case .renditionChange: 3
        case .playoutDelayChange: 2
        case .freezeEnd(let duration): duration == nil ? 0 : 1
        case .error: 4
        case .action(_, let context): context.count
        case .metric: 1
        case .heartbeat(let sample): sample.count
        default: 0
        }
    }

    /// The fields an event carries itself, written straight into the open record.
    private func writeOwnFields(of event: TelemetryEvent, into columns: inout TelemetryColumnsBuilder) {
        switch event {
        case .rebufferStart(let cause):
            columns.append("cause", .string((seeking ? .seek : cause).rawValue))
        case .renditionChange(let bitrate, let width, let height):
            columns.append("bitrate", .int(bitrate))
            columns.append("width", .int(Int64(width)))
            columns.append("height", .int(Int64(height)))
        case .playoutDelayChange(let delay, let requested):
            columns.append("delay", .double(delay.seconds))
            columns.append("requested", .bool(requested))
        case .freezeEnd(let duration):
            if let duration { columns.append("duration", .double(duration.seconds)) }
        case .error(let error):
            columns.append("severity", .string(error.severity.rawValue))
            columns.append("code", .int(Int64(error.code)))
            columns.append("message", .string(error.message))
            columns.append("businessException", .bool(error.businessException))
        case .action(_, let context):
            for field in context { columns.append(field.name, field.value) }
        case .metric(_, let value):
            columns.append("value", value)
        case .heartbeat(let sample):
            for field in sample { columns.append(field.name, field.value) }
        default: break
        }
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

/// The hub's settings, with documented defaults.
public struct TelemetrySessionConfiguration: Sendable, Equatable {
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
        heartbeatInterval: Duration = TelemetrySessionConfiguration.defaultHeartbeatInterval,
        inactivityTimeout: Duration = TelemetrySessionConfiguration.defaultInactivityTimeout
    ) {
        self.heartbeatInterval = heartbeatInterval
        self.inactivityTimeout = inactivityTimeout
    }
}
