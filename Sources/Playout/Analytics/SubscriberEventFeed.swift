import PlayoutCore
import PlayoutTelemetry

/// The one feed from a subscription to what reads it — an SDK adapter's bridge, and the
/// subscriber's own telemetry (the `--json` stream): it watches the subscriber's state, playout
/// delay and QoS samples once, reads each update through one ``SubscriberPlayerStory`` (which
/// holds the subscriber's ``SubscriberTelemetryTranslator``), and hands the reader both readings —
/// the translator's telemetry events and the story's player steps — and, with the final QoS
/// sample, the end. Every bridge (``MuxSubscriberBridge``, ``HeartbeatSubscriberBridge``,
/// ``NielsenSubscriberBridge``, ``OpenAVTSubscriberBridge``) is built on it, so none subscribes to
/// the observables under a lock of its own and none needs to be told the subscription ended.
///
/// It runs where the subscriber's observers run (one observer thread, never a media thread, or the
/// embedded driver's caller, so updates arrive one at a time and in order): the story decides
/// under a lock, `handle` is called after unlocking. The latest QoS sample is kept for the
/// adapter's heartbeats (``latestQoS``), so the QoS numbers an adapter reports are the
/// subscriber's own. After the final sample (state `ended` or `failed`, posted after the ended
/// state and before ``Subscriber/waitUntilEnded()`` returns) it stops watching by itself — except
/// the subscriber's own telemetry's feed, which the subscriber ends when the run is over.
///
/// ```swift
/// let feed = SubscriberEventFeed(subscriber) { update in
///     for event in update.events { adapt(event) }
///     if let final = update.final { report(final) }   // the subscription ended
/// }
/// try subscriber.start()
/// _ = subscriber.waitUntilEnded()
/// ```
public final class SubscriberEventFeed: Sendable {
    /// What one update of the subscriber makes.
    public struct Update: Sendable {
        /// The translator's telemetry events (the engine's reading of the subscription).
        public var events: [TelemetryEvent]
        /// The player's story (what a player SDK is told).
        public var steps: [SubscriberPlayerStory.Step]
        /// The final QoS sample, when this update ended the subscription (the last update).
        public var final: SubscriberQoS?
        /// The command line's contract events (``SubscriberContractEvents``), before ``events``;
        /// only a feed timed on a clock makes them (the subscriber's own telemetry).
        var contractEvents: [TelemetryEvent] = []
        /// The QoS sample this update read (nil for a state or delay change).
        var sample: SubscriberQoS?

        /// Whether there is anything to hand on.
        var isEmpty: Bool { events.isEmpty && steps.isEmpty && final == nil && contractEvents.isEmpty && sample == nil }
    }

    /// One value of one of the subscriber's observables.
    private enum Observed {
        case state(SubscriberState)
        case playoutDelay(EffectivePlayoutDelay)
        case qos(SubscriberQoS)
        case delayPauseEnded(MonotonicInstant)
        case startup(StartupTimeline)
    }

    /// Everything the feed reads updates with, under one lock, sans-IO: the story, the contract
    /// events when timed, and whether the feed ended.
    private struct Reading: Sendable {
        var story: SubscriberPlayerStory
        var contract: SubscriberContractEvents?
        /// When the subscription started (the origin of the contract events' `elapsed`).
        var start: MonotonicInstant?
        var ended = false

        /// The update `observed` makes `now` (nil once ended, and for the QoS value before the start).
        mutating func read(_ observed: Observed, now: MonotonicInstant?) -> Update? {
            guard !ended else { return nil }
            let elapsed = start.flatMap { start in now.map { start.duration(to: $0) } } ?? .zero
            switch observed {
            case .playoutDelay(let value):
                let contractEvent = contract?.playoutDelay(value, elapsed: elapsed)
                let (events, steps) = story.update(playoutDelay: value)
                return Update(events: events, steps: steps, contractEvents: [contractEvent].compactMap(\.self))
            case .state(let value):
                let contractEvent = contract?.state(value, elapsed: elapsed)
                let (events, steps) = story.update(state: value)
                return Update(events: events, steps: steps, contractEvents: [contractEvent].compactMap(\.self))
            case .delayPauseEnded:
                return Update(events: [], steps: story.delayPauseEnded())
            case .startup(let timeline):
                return Update(events: [], steps: [], contractEvents: contract?.startup(timeline) ?? [])
            case .qos(let sample):
                guard sample.state != .idle else { return nil }  // the value before the start
                let contractEvents = contract?.qos(sample) ?? []
                let (events, steps) = story.update(qos: sample)
                let isFinal = switch sample.state {
                case .ended, .failed: true
                default: false
                }
                // A timed feed ends when its owner says (``finish(final:)``), others by themselves.
                let final = isFinal && contract == nil ? sample : nil
                if final != nil { ended = true }
                return Update(events: events, steps: steps, final: final, contractEvents: contractEvents, sample: sample)
            }
        }
    }

    private let watches = DisposeBag()
    private let qos: ReadOnlyObservable<SubscriberQoS>
    private let reading: LockedValue<Reading>

    /// Watches `subscriber` (before it starts) and calls `handle` with each update that makes an
    /// event or a step, and with the final sample.
    public convenience init(_ subscriber: Subscriber, handle: @escaping @Sendable (Update) -> Void) {
        self.init(
            state: subscriber.state, qos: subscriber.qos, playoutDelay: subscriber.playoutDelay, delayPauseEnded: subscriber.delayPauseEnded,
            handle: handle)
    }

    /// Watches the observables of a subscriber (also from inside its initializer). With
    /// `contractClock`, each update also carries the contract events timed on it since
    /// ``started(at:)``, every QoS sample is handed on, and the feed ends only at
    /// ``finish(final:)`` (its owner knows the end).
    init(
        state: ReadOnlyObservable<SubscriberState>, qos: ReadOnlyObservable<SubscriberQoS>, playoutDelay: ReadOnlyObservable<EffectivePlayoutDelay>,
        delayPauseEnded: ReadOnlyObservable<MonotonicInstant?>? = nil, startup: ReadOnlyObservable<StartupTimeline?>? = nil,
        contractClock clock: (any PlayoutClock)? = nil, handle: @escaping @Sendable (Update) -> Void
    ) {
        self.qos = qos
        let reading = LockedValue(Reading(
            story: SubscriberPlayerStory(resumesOnRender: delayPauseEnded != nil), contract: clock.map { _ in SubscriberContractEvents() }))
        self.reading = reading
        // The watches capture the reading and `handle`, not the feed (no cycle through the bag);
        // the bag weakly, to stop watching after the final sample. Decide under the lock, hand
        // on after unlocking.
        let deliver: @Sendable (Observed) -> Void = { [weak watches] observed in
            guard let update = reading.withLock({ $0.read(observed, now: clock?.now) }), !update.isEmpty else { return }
            handle(update)
            if update.final != nil { watches?.dispose() }
        }
        playoutDelay.subscribe { deliver(.playoutDelay($0)) }.disposed(by: watches)
        state.subscribe { deliver(.state($0)) }.disposed(by: watches)
        qos.subscribe { deliver(.qos($0)) }.disposed(by: watches)
        delayPauseEnded?.subscribe { if let instant = $0 { deliver(.delayPauseEnded(instant)) } }.disposed(by: watches)
        startup?.subscribe { if let timeline = $0 { deliver(.startup(timeline)) } }.disposed(by: watches)
    }

    /// The subscription started at `instant` (the origin of the contract events' `elapsed`).
    func started(at instant: MonotonicInstant) {
        reading.withLock { $0.start = instant }
    }

    /// Ends the feed with `final` (the subscription's last sample, which its observers saw, or
    /// the sample of a subscription that could not open): stops watching, and returns the
    /// translator's events for it.
    func finish(final: SubscriberQoS) -> [TelemetryEvent] {
        watches.dispose()
        return reading.withLock {
            $0.ended = true
            return $0.story.update(qos: final).events
        }
    }

    /// The subscriber's latest QoS sample.
    public var latestQoS: SubscriberQoS { qos.value }

    /// Heartbeat fields of the latest QoS sample (``SubscriberTelemetryTranslator/heartbeatFields(_:)``).
    public var heartbeatFields: [TelemetryField] { SubscriberTelemetryTranslator.heartbeatFields(qos.value) }
}
