public import PlayoutCore

/// How a subscription started, step by step: for a WebRTC (WHEP) source the offer sent, the
/// answer received, ICE connected and DTLS connected, then for every source the first packet of
/// the played source, the first key frame (its last packet's arrival) and the first frame
/// presented — each the instant it happened and its time since the subscription started, the
/// first thing someone running a streaming server asks a test viewer.
///
/// ```swift
/// subscriber.startup.subscribe { timeline in
///     if let firstFrame = timeline.elapsed(.firstFrame) { print("first frame after \(firstFrame)") }
/// }
/// ```
public struct StartupTimeline: Sendable, Equatable {
    /// One step of the start-up, in the order they happen.
    public enum Milestone: String, Sendable, CaseIterable, Comparable {
        /// The WHEP offer was posted.
        case offerSent = "offer_sent"
        /// The WHEP server's `201 Created` with the answer arrived.
        case answerReceived = "answer_received"
        /// ICE selected a candidate pair.
        case iceConnected = "ice_connected"
        /// The DTLS handshake completed and the SRTP keys were exported.
        case dtlsConnected = "dtls_connected"
        /// The played source's first RTP packet arrived (RTP sources).
        case firstPacket = "first_packet"
        /// The first key frame's last packet arrived (it was released to the decoder).
        case firstKeyFrame = "first_key_frame"
        /// The first frame was presented.
        case firstFrame = "first_frame"

        public static func < (lhs: Milestone, rhs: Milestone) -> Bool {
            allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
        }
    }

    /// The last steps as one track saw them.
    struct TrackMilestones: Equatable {
        var firstPacket: MonotonicInstant?
        var firstKeyFrame: MonotonicInstant?
        var firstFrame: MonotonicInstant?
    }

    /// When the subscription started.
    public let start: MonotonicInstant
    /// The instant of each step reached so far.
    public private(set) var instants: [Milestone: MonotonicInstant] = [:]

    /// A timeline with no step reached yet.
    public init(start: MonotonicInstant) {
        self.start = start
    }

    /// How long after the start `milestone` was reached (nil: not yet, or not this kind of source).
    public func elapsed(_ milestone: Milestone) -> Duration? {
        instants[milestone].map { start.duration(to: $0) }
    }

    /// The steps reached, in order, with their time since the start.
    public var reached: [(milestone: Milestone, elapsed: Duration)] {
        Milestone.allCases.compactMap { milestone in elapsed(milestone).map { (milestone, $0) } }
    }

    /// Records `milestone` at `instant` unless it was reached already; returns whether it is new.
    @discardableResult
    public mutating func record(_ milestone: Milestone, at instant: MonotonicInstant) -> Bool {
        guard instants[milestone] == nil else { return false }
        instants[milestone] = instant
        return true
    }

    /// Whether the first frame was presented: the tracks' steps are all in.
    var hasFirstFrame: Bool { instants[.firstFrame] != nil }

    /// Records the earliest of the tracks' last steps; returns the steps that are new.
    mutating func record(_ tracks: [TrackMilestones]) -> [Milestone] {
        guard !hasFirstFrame else { return [] }
        let steps: [(Milestone, KeyPath<TrackMilestones, MonotonicInstant?>)] = [
            (.firstPacket, \.firstPacket), (.firstKeyFrame, \.firstKeyFrame), (.firstFrame, \.firstFrame),
        ]
        // A frame's packets arrived by its own last arrival: a track's first packet is never
        // later than its first key frame (the steps stay in order whatever filed first).
        let tracks = tracks.map { track in
            var track = track
            if let keyFrame = track.firstKeyFrame { track.firstPacket = min(track.firstPacket ?? keyFrame, keyFrame) }
            return track
        }
        let reached: [Milestone] = steps.compactMap { milestone, path in
            guard instants[milestone] == nil, let earliest = tracks.compactMap({ $0[keyPath: path] }).min() else { return nil }
            return record(milestone, at: earliest) ? milestone : nil
        }
        // Probation may file a track's first packet after another track's later one was already
        // taken for the first packet: a key frame that arrived earlier moves it back.
        if let keyFrame = instants[.firstKeyFrame], let packet = instants[.firstPacket], keyFrame < packet { instants[.firstPacket] = keyFrame }
        return reached
    }
}

/// A subscription's ``StartupTimeline`` as it fills: steps come from the control thread (the
/// tracks' last steps) and from a WebRTC transport (offer, answer, ICE, DTLS); each new one is
/// posted to the observers.
final class StartupRecorder: Sendable {
    private let timeline: LockedValue<StartupTimeline>
    private let delivery: ObserverDelivery

    init(start: MonotonicInstant, delivery: ObserverDelivery) {
        timeline = LockedValue(StartupTimeline(start: start))
        self.delivery = delivery
    }

    /// The timeline so far.
    var value: StartupTimeline { timeline.withLock { $0 } }

    /// `milestone` was reached at `instant` (posted when new).
    func record(_ milestone: StartupTimeline.Milestone, at instant: MonotonicInstant) {
        let changed = timeline.withLock { $0.record(milestone, at: instant) ? $0 : nil }
        if let changed { delivery.post(.startup(changed)) }
    }

    /// The tracks' last steps as they stand (posted when one is new). `tracks` is not read once
    /// the first frame was recorded: the decisions ask at every look at the tracks, for the whole run.
    func record(_ tracks: @autoclosure () -> [StartupTimeline.TrackMilestones]) {
        let changed = timeline.withLock { timeline -> StartupTimeline? in
            guard !timeline.hasFirstFrame else { return nil }
            return timeline.record(tracks()).isEmpty ? nil : timeline
        }
        if let changed { delivery.post(.startup(changed)) }
    }
}
