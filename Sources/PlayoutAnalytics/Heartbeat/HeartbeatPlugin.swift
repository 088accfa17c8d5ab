public import PlayoutCore
public import PlayoutTelemetry

/// A video heartbeat plug-in: the guide's `ADB_HB_PluginProtocol`. The list of plug-ins is given
/// once, when the ``HeartbeatTracker`` is made (it cannot change afterwards); each is enabled at
/// first and can be disabled and enabled again. While enabled, a plug-in sees every tracking call
/// the instance accepted, with the events it sent (on the caller's thread, after the call's
/// events are in the engine's ring: a plug-in does little and returns).
public protocol HeartbeatPlugin: AnyObject, Sendable {
    /// The plug-in's name (`AdobeAnalyticsPlugin` …).
    var name: String { get }
    /// Whether the plug-in processes calls.
    var isEnabled: Bool { get }
    /// Enables the plug-in (plug-ins start enabled: only after ``disable()`` is this needed).
    func enable()
    /// Disables the plug-in: it sees no call until enabled again.
    func disable()
    /// One tracking call the instance accepted at `time`, with the events it sent.
    func process(_ call: HeartbeatCall, events: [TelemetryEvent], at time: MonotonicInstant)
}

/// The guide's Adobe Analytics plug-in (`ADB_VHB_AdobeAnalyticsPlugin`) as far as Playout can be
/// it: there is no AppMeasurement on Linux, so it keeps the tracking calls it would have turned
/// into Analytics calls, for a test to read (``calls``). Bounded: after ``capacity`` calls the
/// oldest are dropped and counted (``droppedCalls``).
///
/// ```swift
/// let analytics = HeartbeatAnalyticsPlugin()
/// let heartbeat = HeartbeatTracker(instrument: instrument, delegate: player, plugins: [analytics])
/// heartbeat.trackVideoLoad()
/// analytics.calls.map(\.call)      // [.trackVideoLoad]
/// ```
public final class HeartbeatAnalyticsPlugin: HeartbeatPlugin {
    /// One call the plug-in processed.
    public struct Call: Sendable, Hashable {
        /// The tracking call.
        public var call: HeartbeatCall
        /// The names of the events it sent (attributes left out).
        public var events: [String]
        /// When.
        public var time: MonotonicInstant
    }

    /// Calls kept before the oldest are dropped.
    public let capacity: Int
    private let state = LockedValue((enabled: true, calls: [Call](), dropped: 0))

    /// An enabled plug-in keeping at most `capacity` calls.
    public init(capacity: Int = 10_000) {
        self.capacity = max(1, capacity)
    }

    /// `AdobeAnalyticsPlugin`.
    public var name: String { "AdobeAnalyticsPlugin" }
    /// Whether the plug-in processes calls.
    public var isEnabled: Bool { state.withLock { $0.enabled } }
    /// The calls processed while enabled, oldest first.
    public var calls: [Call] { state.withLock { $0.calls } }
    /// Calls dropped because more than ``capacity`` were processed.
    public var droppedCalls: Int { state.withLock { $0.dropped } }

    /// Enables the plug-in.
    public func enable() { state.withLock { $0.enabled = true } }
    /// Disables the plug-in.
    public func disable() { state.withLock { $0.enabled = false } }

    /// Keeps the call (the oldest is dropped past ``capacity``).
    public func process(_ call: HeartbeatCall, events: [TelemetryEvent], at time: MonotonicInstant) {
        let names = events.filter { if case .attribute = $0 { false } else { true } }.map(\.name)
        state.withLock { state in
            guard state.enabled else { return }
            if state.calls.count == capacity {
                state.calls.removeFirst()
                state.dropped += 1
            }
            state.calls.append(Call(call: call, events: names, time: time))
        }
    }
}
