public import Logging
import PlayoutCore
public import PlayoutTelemetry

/// One Mux beacon: the events of one batch, each with a monotonic timestamp.
public struct MuxBeacon: Sendable, Hashable {
    /// One event in a beacon.
    public struct Event: Sendable, Hashable {
        /// The view (session) it belongs to.
        public var viewId: String
        /// Its place in the view (the engine's gap-free `seq`).
        public var sequence: UInt64
        /// Its name (`play`, `heartbeat` …).
        public var name: String
        /// Its monotonic time since the engine started; never earlier than the view's previous event.
        public var time: Duration
        /// Its wall time, ms since 1970 (Mux's `viewer_time`).
        public var viewerTime: Int64
    }

    /// The events, in the order they happened.
    public var events: [Event]
    /// When the batch was opened (its first event's time).
    public var opened: Duration
}

/// Mux's beacon batching, sans-IO: records of Mux players (those carrying the
/// `player_instance_id` every ``MuxCore`` player sends — with or without `env_key`, which may be
/// inferred) are gathered into a beacon that is sent when a record comes ``interval`` or more
/// after the beacon's first (10 s by default), at a `viewend`, and at ``flush()``. Timestamps are made
/// monotonic per view (a record timed before its view's previous one takes that one's time, and
/// is counted in ``clampedTimestamps``).
public struct MuxBeaconBatcher: Sendable {
    /// Mux's default beacon interval: 10 s.
    public static let defaultInterval: Duration = .seconds(10)

    /// The batching interval.
    public let interval: Duration
    /// Records whose time went backwards within their view (sent with the view's latest time).
    public private(set) var clampedTimestamps = 0
    private var pending: [MuxBeacon.Event] = []
    private var lastTime: [String: Duration] = [:]

    /// A batcher sending every `interval`.
    public init(interval: Duration = MuxBeaconBatcher.defaultInterval) {
        self.interval = max(.zero, interval)
    }

    /// Adds `record`; returns the beacons it completes (none, or one or two).
    public mutating func add(_ record: TelemetryRecord) -> [MuxBeacon] {
        guard record.fields.contains(where: { $0.name == "player_instance_id" }) else { return [] }
        var beacons: [MuxBeacon] = []
        var time = record.monotonic
        if let last = lastTime[record.sessionId], time < last {
            time = last
            clampedTimestamps += 1
        }
        lastTime[record.sessionId] = time
        if let first = pending.first, time - first.time >= interval, let beacon = flush() { beacons.append(beacon) }
        pending.append(MuxBeacon.Event(
            viewId: record.sessionId, sequence: record.seq, name: record.name, time: time, viewerTime: record.wallTimeNanoseconds / 1_000_000))
        if record.name == "viewend" {
            lastTime[record.sessionId] = nil
            if let beacon = flush() { beacons.append(beacon) }
        }
        return beacons
    }

    /// The beacon of what is pending (nil: nothing).
    public mutating func flush() -> MuxBeacon? {
        guard let first = pending.first else { return nil }
        defer { pending.removeAll(keepingCapacity: true) }
        return MuxBeacon(events: pending, opened: first.time)
    }
}

/// A telemetry backend that sends Mux players' records as beacons (``MuxBeaconBatcher``): to
/// `send` (on the backend's thread) and kept in ``beacons`` (the newest ``capacity``). With a
/// `logger`, each beacon sent is logged at debug level, as the core SDK logs sent beacons in
/// debug mode (v3.9): `beacon sent: 3 events (view e-0-1 seq 0…2): viewinit, play, playing`.
public final class MuxBeaconBackend: TelemetryBackend {
    /// The backend's name.
    public let name: String
    /// Beacons kept.
    public let capacity: Int
    private let send: @Sendable (MuxBeacon) -> Void
    private let logger: Logger?
    private let state: LockedValue<(batcher: MuxBeaconBatcher, beacons: [MuxBeacon], dropped: Int)>

    /// A backend batching every `interval`, sending each beacon to `send`; `logger`: where each
    /// sent beacon is logged at debug level (nil: not logged).
    public init(
        name: String = "mux-beacons", interval: Duration = MuxBeaconBatcher.defaultInterval, capacity: Int = 1_000, logger: Logger? = nil,
        send: @escaping @Sendable (MuxBeacon) -> Void = { _ in }
    ) {
        self.name = name
        self.capacity = max(1, capacity)
        self.logger = logger
        self.send = send
        state = LockedValue((MuxBeaconBatcher(interval: interval), [], 0))
    }

    /// The beacons sent so far (the newest ``capacity``).
    public var beacons: [MuxBeacon] { state.withLock { $0.beacons } }
    /// Beacons sent but no longer kept.
    public var droppedBeacons: Int { state.withLock { $0.dropped } }
    /// Records whose time went backwards within their view.
    public var clampedTimestamps: Int { state.withLock { $0.batcher.clampedTimestamps } }

    /// Batches `batch` and sends the beacons it completes.
    public func deliver(_ batch: [TelemetryRecord]) throws(TelemetryDeliveryError) {
        let beacons = state.withLock { state in batch.flatMap { state.batcher.add($0) } }
        keep(beacons)
    }

    /// Sends what is pending.
    public func close() {
        keep(state.withLock { $0.batcher.flush() }.map { [$0] } ?? [])
    }

    private func keep(_ beacons: [MuxBeacon]) {
        guard !beacons.isEmpty else { return }
        state.withLock { state in
            state.beacons += beacons
            if state.beacons.count > capacity {
                state.dropped += state.beacons.count - capacity
                state.beacons.removeFirst(state.beacons.count - capacity)
            }
        }
        for beacon in beacons {  // after unlocking: user code
            if let logger, let first = beacon.events.first, let last = beacon.events.last {
                let views = Set(beacon.events.map(\.viewId)).count
                logger.debug("beacon sent: \(beacon.events.count) events (view \(first.viewId) seq \(first.sequence)…\(last.sequence)\(views > 1 ? ", \(views) views" : "")): \(beacon.events.map(\.name).joined(separator: ", "))")
            }
            send(beacon)
        }
    }
}
