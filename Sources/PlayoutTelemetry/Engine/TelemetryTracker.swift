public import PlayoutCore

/// A component that reports to a ``TelemetryInstrument``: a player, the `Subscriber`, a user's
/// own code. Each tracker has its own sessions (``TelemetrySessionHub``).
///
/// ``emit(_:)`` is the hot call: it reads the clock and copies the event into the engine's
/// preallocated ring — O(1), no lock, no allocation for events built from literals and numbers,
/// never blocking, and no backend code runs on the caller's thread. When the ring is full the
/// event is dropped and counted (``TelemetryStatistics/eventsDropped``).
///
/// ```swift
/// let tracker = instrument.makeTracker(name: "player")
/// tracker.addAttribute("bufferLength", filter: .only(["heartbeat"])) { .double(player.buffered) }
/// tracker.ready()                       // viewinit
/// tracker.emit(.play)
/// tracker.emit(.playing)
/// tracker.emit(.action("adclick", []))  // later records carry timeSinceAdclick
/// tracker.endOfService()                // viewend; the tracker is removed
/// ```
public final class TelemetryTracker: Sendable {
    /// The tracker's name (in log lines about rejected events).
    public let name: String
    /// Tags on each of its records, after the instrument's (a swarm's `viewer`).
    public let tags: [TelemetryField]
    let index: Int32
    let core: TelemetryEngineCore
    let registration: LockedValue<Registration>

    /// What the engine's thread reads about a tracker: getters and the heartbeat provider.
    struct Registration {
        var attributes: [(name: String, filter: TelemetryEventFilter, getter: @Sendable () -> TelemetryValue?)] = []
        var heartbeatProvider: (@Sendable () -> [TelemetryField])?
    }

    init(name: String, tags: [TelemetryField] = [], index: Int32, core: TelemetryEngineCore) {
        self.name = name
        self.tags = tags
        self.index = index
        self.core = core
        registration = LockedValue(Registration())
    }

    /// Emits `event`, timed now. Never blocks; see the type's notes.
    @inline(__always)
    public func emit(_ event: TelemetryEvent) {
        core.push(TelemetryRingEntry(tracker: index, time: core.clock.now, event: event, removesTracker: false))
    }

    /// Emits `event` timed at `time` (a time measured earlier on the instrument's clock).
    public func emit(_ event: TelemetryEvent, at time: MonotonicInstant) {
        core.push(TelemetryRingEntry(tracker: index, time: time, event: event, removesTracker: false))
    }

    /// The component is ready: begins its view (`viewinit`).
    public func ready() { emit(.viewInit) }

    /// The component goes away: its view ends (`viewend`) and the engine forgets it.
    public func endOfService() {
        core.push(TelemetryRingEntry(tracker: index, time: core.clock.now, event: .viewEnd, removesTracker: true))
    }

    /// Adds `getter`'s value as the attribute `name` to each of this tracker's records that
    /// `filter` lets through (called on the engine's thread; nil adds nothing).
    public func addAttribute(_ name: String, filter: TelemetryEventFilter = .all, _ getter: @escaping @Sendable () -> TelemetryValue?) {
        registration.withLock { $0.attributes.append((name, filter, getter)) }
    }

    /// Removes the attribute getters called `name`.
    public func removeAttribute(_ name: String) {
        registration.withLock { $0.attributes.removeAll { $0.name == name } }
    }

    /// Sets the QoS provider the engine calls (on its thread) for each periodic `heartbeat`
    /// while the session plays (every ``TelemetrySessionConfiguration/heartbeatInterval``).
    /// Without one there are no periodic heartbeats: a tracker that samples on its own schedule
    /// emits ``TelemetryEvent/heartbeat(_:)`` itself (the subscriber does, once per QoS sample).
    public func setHeartbeatProvider(_ provider: (@Sendable () -> [TelemetryField])?) {
        registration.withLock { $0.heartbeatProvider = provider }
    }
}

/// Which records an attribute getter applies to, by record name.
public enum TelemetryEventFilter: Sendable {
    /// Every record.
    case all
    /// Only records with these names (`"heartbeat"`, `"error"` …).
    case only(Set<String>)
    /// Every record but those with these names.
    case except(Set<String>)

    /// Whether a record called `name` passes.
    public func includes(_ name: String) -> Bool {
        switch self {
        case .all: true
        case .only(let names): names.contains(name)
        case .except(let names): !names.contains(name)
        }
    }
}

/// One slot of the engine's ring: an event, its tracker and time.
struct TelemetryRingEntry: Sendable {
    var tracker: Int32
    var time: MonotonicInstant
    var event: TelemetryEvent
    var removesTracker: Bool
}
