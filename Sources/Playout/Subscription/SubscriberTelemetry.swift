import PlayoutCore
import PlayoutTelemetry

/// A subscriber as a telemetry tracker: its state changes, playout-delay changes, freezes and
/// errors become events, each QoS sample a heartbeat carrying the whole sample, and the command
/// line's contract events (`stateChanged`, `overrideApplied` …) actions — so the `--json` stream
/// is one more telemetry backend.
///
/// It reads the subscriber through the one ``SubscriberEventFeed`` every bridge uses (timed on the
/// subscription's clock for the contract events), so it runs on the observer thread
/// and never on a media thread; emitting only copies an event into the engine's ring.
///
/// Each heartbeat covers its own window: the periodic samples' rates (`framesPerSecond`,
/// `bitrate`) are over the time since the sample before, and the final heartbeat's over the time
/// since the last periodic one (the final sample itself, which the summary reads, covers the whole
/// run). The final sample is one heartbeat, written once, and none when no time passed since the
/// last.
final class SubscriberTelemetry: Sendable {
    private let tracker: TelemetryTracker
    /// The instrument it reports to.
    let instrument: TelemetryInstrument
    private let feed: SubscriberEventFeed
    /// The last periodic sample sent as a heartbeat.
    private let lastHeartbeat = LockedValue<SubscriberQoS?>(nil)
    /// Whether its view began, or a bridge took it over.
    private let phase = LockedValue(Phase.waiting([]))

    /// Before the start, events wait (the view begins at the start, unless an analytics bridge
    /// on the same instrument takes the session over before it: then nothing is emitted).
    private enum Phase {
        case waiting([TelemetryEvent])
        case open
        case handedOver
    }

    init(
        instrument: TelemetryInstrument, name: String, tags: [TelemetryField] = [], clock: any PlayoutClock, state: ReadOnlyObservable<SubscriberState>,
        qos: ReadOnlyObservable<SubscriberQoS>, playoutDelay: ReadOnlyObservable<EffectivePlayoutDelay>,
        startup: ReadOnlyObservable<StartupTimeline?>? = nil
    ) {
        let tracker = instrument.makeTracker(name: name, tags: tags)
        self.tracker = tracker
        self.instrument = instrument
        let (lastHeartbeat, phase) = (self.lastHeartbeat, self.phase)
        feed = SubscriberEventFeed(state: state, qos: qos, playoutDelay: playoutDelay, startup: startup, contractClock: clock) { update in
            // The final sample (the subscription ended) is sent once, by `finish`, over its own window.
            var sample = update.sample
            if let periodic = sample {
                if periodic.state.isFinal { sample = nil } else { lastHeartbeat.withLock { $0 = periodic } }
            }
            phase.withLock { phase in
                switch phase {
                case .waiting(let events): phase = .waiting(events + update.contractEvents + update.events)
                case .open: Self.emit(update.contractEvents + update.events, heartbeat: sample, to: tracker)
                case .handedOver: break
                }
            }
        }
    }

    /// The subscription started at `instant` (the origin of the events' `elapsed`): its view
    /// begins, unless a bridge took the session over.
    func started(at instant: MonotonicInstant) {
        feed.started(at: instant)
        _ = beginView()
    }

    /// Begins the view with the events that waited for it; false when a bridge took it over.
    private func beginView() -> Bool {
        phase.withLock { phase in
            switch phase {
            case .waiting(let events):
                tracker.ready()
                Self.emit(events, heartbeat: nil, to: tracker)
                phase = .open
                return true
            case .open: return true
            case .handedOver: return false
            }
        }
    }

    /// An analytics bridge reporting into the same instrument tells this subscriber's view from
    /// now on (before the start): this tracker begins no view and emits nothing, so the instrument
    /// holds one session for the subscriber, the bridge's.
    func handOver() {
        phase.withLock { $0 = .handedOver }
    }

    /// The subscription ended and its observers saw the final values: a last heartbeat with the
    /// final sample, then the view ends.
    func finish(final: SubscriberQoS) {
        guard beginView() else { return }  // (a subscription that could not open never started)
        Self.emit(feed.finish(final: final), heartbeat: Self.ownWindow(final, after: lastHeartbeat.withLock { $0 }), to: tracker)
        tracker.endOfService()
    }

    /// `final` with its rates over the time since `last` (the last periodic heartbeat); nil when
    /// no time passed since it (that heartbeat already said it all).
    static func ownWindow(_ final: SubscriberQoS, after last: SubscriberQoS?) -> SubscriberQoS? {
        guard let last else { return final }
        let window = final.elapsed - last.elapsed
        guard window > .zero else { return nil }
        var sample = final
        for kind in sample.tracks.keys { sample.tracks[kind]!.measureRates(since: last.tracks[kind], window: window) }
        return sample
    }

    /// Emits `events`, then a heartbeat of `sample` if there is one.
    private static func emit(_ events: [TelemetryEvent], heartbeat sample: SubscriberQoS?, to tracker: TelemetryTracker) {
        for event in events { tracker.emit(event) }
        if let sample { tracker.emit(.heartbeat(SubscriberTelemetryTranslator.heartbeatFields(sample))) }
    }
}

extension SubscriberState {
    /// Whether the subscription is over (ended or failed): its sample is the final one.
    package var isFinal: Bool {
        switch self {
        case .ended, .failed: true
        default: false
        }
    }
}
