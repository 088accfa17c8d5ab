public import Playout
import PlayoutCore

/// One viewer of a swarm at one instant, as the aggregate reads it.
public struct ViewerSnapshot: Sendable {
    /// Where a viewer's session is.
    public enum Phase: String, Sendable {
        /// Not started yet (the ramp has not reached it), or between two sessions.
        case waiting
        /// Started, not playing yet: signalling, ICE, DTLS, waiting for a first packet or a
        /// reconnect.
        case connecting
        /// Receiving: buffering, playing or stalled.
        case connected
        /// Ended with a failure.
        case failed
        /// Ended cleanly (the run's end, or churn).
        case ended

        /// The phase of a subscriber in `state`.
        public init(_ state: SubscriberState) {
            switch state {
            case .idle, .connecting: self = .connecting
            case .buffering, .playing, .stalled: self = .connected
            case .ended: self = .ended
            case .failed: self = .failed
            }
        }
    }

    /// The viewer's number in the whole run.
    public var viewer: Int
    /// Its session (0, then one more per churn rejoin).
    public var session: Int
    public var phase: Phase
    /// Its latest QoS sample (nil before it started).
    public var qos: SubscriberQoS?
    /// Its start-up so far.
    public var startup: StartupTimeline?

    /// A snapshot with these values.
    public init(viewer: Int, session: Int, phase: Phase, qos: SubscriberQoS?, startup: StartupTimeline?) {
        self.viewer = viewer
        self.session = session
        self.phase = phase
        self.qos = qos
        self.startup = startup
    }

    /// The track the measures read: the video, else the audio.
    private var main: TrackQoS? { qos?.video ?? qos?.audio }

    /// From the start to the first frame rendered, seconds.
    public var startupTime: Double? { startup?.elapsed(.firstFrame)?.seconds }

    /// Frames rendered on time / frames due (rendered, or dropped for any reason but a skip on
    /// a playout-delay decrease, which is on purpose, and the frames before its first key frame,
    /// which a viewer that joined between two key frames could never render); nil before any was
    /// due.
    public var renderedRatio: Double? {
        guard let track = main else { return nil }
        let due = track.framesRendered + track.framesDropped - track.framesSkipped - track.framesDroppedBeforeFirstKeyframe
        return due > 0 ? Double(track.framesRendered - track.framesRenderedLate) / Double(due) : nil
    }

    /// Time frozen / time played since the first frame (the rebuffering ratio); nil before it.
    public var freezeRatio: Double? {
        guard let track = main, let qos, let startupTime else { return nil }
        let played = qos.elapsed.seconds - startupTime
        return played > 0 ? min(1, track.totalFreezesDuration.seconds / played) : nil
    }

    /// The mean time a frame spent in the jitter buffer, seconds.
    public var jitterBufferDelay: Double? {
        guard let track = main, track.jitterBufferEmittedCount > 0 else { return nil }
        return track.jitterBufferDelay.seconds / Double(track.jitterBufferEmittedCount)
    }

    /// The measures of this viewer, by name, in the order they are written (nil: unknown). The
    /// names are the QoS fields' where one exists.
    public var measures: [(name: String, value: Double?)] {
        let track = main
        var values: [(String, Double?)] = [
            ("startupTime", startupTime),
            ("renderedRatio", renderedRatio),
            ("framesRendered", track.map { Double($0.framesRendered) }),
            ("freezeCount", track.map { Double($0.freezeCount) }),
            ("freezeRatio", freezeRatio),
            ("endToEndLatency", track?.endToEndLatency.percentile(0.5)?.seconds),
            ("jitterBufferDelay", jitterBufferDelay),
            ("framesPerSecond", track.map(\.framesPerSecond)),
            ("bitrate", qos.map(\.total.bitrate)),
            ("packetsLost", qos.map { Double($0.total.packetsLost) }),
            ("nackCount", qos.map { Double($0.tracks.values.reduce(0) { $0 + $1.nackCount }) }),
            ("framesDecoded", track.flatMap { $0.decoded ? Double($0.framesDecoded) : nil }),
        ]
        // The start-up's steps (WHEP's signalling, ICE and DTLS among them), seconds since the start.
        for milestone in StartupTimeline.Milestone.allCases where milestone != .firstFrame {
            values.append(("startup." + milestone.rawValue, startup?.elapsed(milestone)?.seconds))
        }
        return values
    }

    /// How late its frames were presented, 99th percentile, seconds.
    public var renderErrorP99: Double? {
        main?.renderError.percentile(0.99)?.seconds
    }
}

/// The aggregate across viewers: each measure's spread over the viewers that have a value, and
/// how many are in each phase — a ``SwarmSample``.
public enum SwarmAggregator {
    /// The sample of `viewers` at `elapsed` (`planned`: the viewers this shard runs, started or
    /// not; those not started count as connecting), with the tester's `load`.
    public static func sample(elapsed: Duration, planned: Int, viewers: [ViewerSnapshot], tester: TesterLoad) -> SwarmSample {
        var counts: [ViewerSnapshot.Phase: Int] = [:]
        for viewer in viewers { counts[viewer.phase, default: 0] += 1 }
        let started = viewers.count
        return SwarmSample(
            elapsed: elapsed, viewers: planned, connected: counts[.connected] ?? 0,
            connecting: (counts[.connecting] ?? 0) + (counts[.waiting] ?? 0) + max(0, planned - started),
            failed: counts[.failed] ?? 0, ended: counts[.ended] ?? 0, measures: measures(viewers), tester: tester)
    }

    /// Each measure's spread across `viewers`, in the order of ``ViewerSnapshot/measures``; a
    /// measure no viewer has a value of is left out.
    public static func measures(_ viewers: [ViewerSnapshot]) -> [(name: String, spread: Spread)] {
        var names: [String] = []
        var values: [String: [Double]] = [:]
        for viewer in viewers {
            for (name, value) in viewer.measures {
                if values[name] == nil {
                    names.append(name)
                    values[name] = []
                }
                if let value { values[name]!.append(value) }
            }
        }
        return names.compactMap { name in Spread(values[name]!).map { (name, $0) } }
    }
}
