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
final class SubscriberTelemetry: Sendable {
    private let tracker: TelemetryTracker
    private let feed: SubscriberEventFeed

    init(
        instrument: TelemetryInstrument, name: String, clock: any PlayoutClock, state: ReadOnlyObservable<SubscriberState>,
        qos: ReadOnlyObservable<SubscriberQoS>, playoutDelay: ReadOnlyObservable<EffectivePlayoutDelay>
    ) {
        let tracker = instrument.makeTracker(name: name)
        tracker.ready()
        self.tracker = tracker
        feed = SubscriberEventFeed(state: state, qos: qos, playoutDelay: playoutDelay, contractClock: clock) { update in
            Self.emit(update.contractEvents + update.events, heartbeat: update.sample, to: tracker)
        }
    }

    /// The subscription started at `instant` (the origin of the events' `elapsed`).
    func started(at instant: MonotonicInstant) {
        feed.started(at: instant)
    }

    /// The subscription ended and its observers saw the final values: a last heartbeat with the
    /// final sample, then the view ends.
    func finish(final: SubscriberQoS) {
        Self.emit(feed.finish(final: final), heartbeat: final, to: tracker)
        tracker.endOfService()
    }

    /// Emits `events`, then a heartbeat of `sample` if there is one.
    private static func emit(_ events: [TelemetryEvent], heartbeat sample: SubscriberQoS?, to tracker: TelemetryTracker) {
        for event in events { tracker.emit(event) }
        if let sample { tracker.emit(.heartbeat(SubscriberTelemetryTranslator.heartbeatFields(sample))) }
    }
}
