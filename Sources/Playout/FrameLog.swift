public import PlayoutCore

/// What happened to one frame of a subscription, for benchmarking: when it was due, when it was
/// rendered or skipped, and under which playout delay. Recorded only when
/// ``Subscriber/Options/frameLogCapacity`` asks for it.
public struct FrameRecord: Equatable, Sendable {
    /// The track's position among the subscriber's tracks, and its kind.
    public var track: Int
    /// Audio or video.
    public var kind: MediaKind
    /// The frame's position among its track's records (0, 1, 2, … in the order its playout
    /// thread recorded them: a skip is recorded when decided, a render when presented).
    public var index: Int
    /// The frame's media time, as the sender stamped it (its RTP timestamp, extended, in seconds).
    public var mediaTime: Duration
    /// When it was captured on the sender's wall clock (nanoseconds since 1970), when known.
    public var captureTime: Int64?
    /// When its last packet arrived (local monotonic clock).
    public var arrival: MonotonicInstant
    /// When the rule made it due: `localTime(mediaTime)` + the delay in effect.
    public var due: MonotonicInstant
    /// When it was presented to the sink, or skipped.
    public var shown: MonotonicInstant
    /// Whether it was skipped (its due time had passed) rather than rendered.
    public var skipped: Bool
    /// The playout delay in effect for it (between the two delays while a gradual transition
    /// is under way).
    public var delay: Duration
    /// Whether that delay is the configured one or an override.
    public var source: PlayoutDelaySource
    /// Capture to presentation on the wall clock, when the capture time is known and it was
    /// rendered.
    public var endToEndLatency: Duration?

    /// A record with every field given.
    public init(
        track: Int, kind: MediaKind, index: Int, mediaTime: Duration, captureTime: Int64?, arrival: MonotonicInstant, due: MonotonicInstant,
        shown: MonotonicInstant, skipped: Bool, delay: Duration, source: PlayoutDelaySource, endToEndLatency: Duration?
    ) {
        self.track = track
        self.kind = kind
        self.index = index
        self.mediaTime = mediaTime
        self.captureTime = captureTime
        self.arrival = arrival
        self.due = due
        self.shown = shown
        self.skipped = skipped
        self.delay = delay
        self.source = source
        self.endToEndLatency = endToEndLatency
    }
}

/// A change of the playout delay asked for (an override set or released, or the configured delay
/// at the start), at the instant it was asked.
public struct DelayChangeRecord: Equatable, Sendable {
    /// When it was asked (local monotonic clock).
    public var at: MonotonicInstant
    /// The delay asked for, its source and how rendering moves there.
    public var delay: EffectivePlayoutDelay

    /// A change to `delay` at `at`.
    public init(at: MonotonicInstant, delay: EffectivePlayoutDelay) {
        self.at = at
        self.delay = delay
    }
}

/// A subscription's per-frame record for benchmarking: every frame rendered or skipped
/// (``FrameRecord``) and every change of the playout delay (``DelayChangeRecord``), read after
/// the run with ``snapshot()``.
///
/// Cheap and bounded: the playout loops append into storage reserved up front (no allocation
/// per frame), holding a lock only for the append; what does not fit is counted in
/// ``Snapshot/framesDropped`` and ``Snapshot/changesDropped``, never grown.
///
/// ```swift
/// let subscriber = try Subscriber(source: "stream.sdp", options: .init(duration: .seconds(20), frameLogCapacity: 10_000))
/// try subscriber.start()
/// _ = subscriber.waitUntilEnded()
/// let log = subscriber.frameLog!.snapshot()
/// print(log.frames.filter(\.skipped).count, log.framesDropped)
/// ```
public final class FrameLog: Sendable {
    /// What was recorded, as one value.
    public struct Snapshot: Equatable, Sendable {
        /// The subscription's start (time zero of the benchmark).
        public var start: MonotonicInstant
        /// The frames, in the order they were recorded (by track, in the order each playout
        /// thread rendered or skipped them).
        public var frames: [FrameRecord]
        /// The delay changes asked for, in order; the first is the configured delay at the start.
        public var changes: [DelayChangeRecord]
        /// Frames that did not fit.
        public var framesDropped: Int
        /// Delay changes that did not fit.
        public var changesDropped: Int

        /// A snapshot with these contents.
        public init(start: MonotonicInstant, frames: [FrameRecord], changes: [DelayChangeRecord], framesDropped: Int = 0, changesDropped: Int = 0) {
            self.start = start
            self.frames = frames
            self.changes = changes
            self.framesDropped = framesDropped
            self.changesDropped = changesDropped
        }
    }

    /// How many delay changes are kept.
    public static let changeCapacity = 1_024

    /// The most frames kept.
    public let capacity: Int
    private let storage: LockedValue<Snapshot>

    /// A log of at most `capacity` frames, all reserved now, starting at `start`.
    public init(capacity: Int, start: MonotonicInstant) {
        self.capacity = max(0, capacity)
        var snapshot = Snapshot(start: start, frames: [], changes: [])
        snapshot.frames.reserveCapacity(self.capacity)
        snapshot.changes.reserveCapacity(Self.changeCapacity)
        storage = LockedValue(snapshot)
    }

    /// Appends one frame, or counts it as dropped when full (a playout loop).
    public func record(_ frame: FrameRecord) {
        storage.withLock { log in
            if log.frames.count < capacity { log.frames.append(frame) } else { log.framesDropped += 1 }
        }
    }

    /// Appends one delay change, or counts it as dropped when full.
    public func record(_ change: DelayChangeRecord) {
        storage.withLock { log in
            if log.changes.count < Self.changeCapacity { log.changes.append(change) } else { log.changesDropped += 1 }
        }
    }

    /// A copy of everything recorded so far.
    public func snapshot() -> Snapshot {
        storage.withLock { $0 }
    }
}
