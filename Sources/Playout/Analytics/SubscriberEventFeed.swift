import PlayoutCore
import PlayoutTelemetry

/// The one feed from a subscription to an SDK adapter's bridge: it watches the subscriber's state,
/// playout delay and QoS samples once, reads each update through one ``SubscriberPlayerStory``
/// (which holds the subscriber's ``SubscriberTelemetryTranslator``), and hands the bridge both
/// readings — the translator's telemetry events and the story's player steps — and, with the final
/// QoS sample, the end. Every bridge (``MuxSubscriberBridge``, ``HeartbeatSubscriberBridge``,
/// ``NielsenSubscriberBridge``, ``OpenAVTSubscriberBridge``) is built on it, so none subscribes to
/// the observables under a lock of its own and none needs to be told the subscription ended.
///
/// It runs where the subscriber's observers run (one observer thread, never a media thread, or the
/// embedded driver's caller, so updates arrive one at a time and in order): the story decides
/// under a lock, `handle` is called after unlocking. The latest QoS sample is kept for the
/// adapter's heartbeats (``latestQoS``), so the QoS numbers an adapter reports are the
/// subscriber's own. After the final sample (state `ended` or `failed`, posted after the ended
/// state and before ``Subscriber/waitUntilEnded()`` returns) it stops watching by itself.
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
    }

    private let watches = DisposeBag()
    private let qos: ReadOnlyObservable<SubscriberQoS>

    /// Watches `subscriber` (before it starts) and calls `handle` with each update that makes an
    /// event or a step, and with the final sample.
    public init(_ subscriber: Subscriber, handle: @escaping @Sendable (Update) -> Void) {
        qos = subscriber.qos
        let story = LockedValue(SubscriberPlayerStory())
        let ended = LockedValue(false)
        // The watches capture the story and `handle`, not the feed (no cycle through the bag);
        // the bag weakly, to stop watching after the final sample.
        let deliver: @Sendable ((inout SubscriberPlayerStory) -> (events: [TelemetryEvent], steps: [SubscriberPlayerStory.Step]), SubscriberQoS?) -> Void = {
            [weak watches] read, final in
            let update = story.withLock { story -> Update? in
                guard !ended.withLock({ $0 }) else { return nil }
                let (events, steps) = read(&story)
                if final != nil { ended.withLock { $0 = true } }
                return Update(events: events, steps: steps, final: final)
            }
            guard let update, !update.events.isEmpty || !update.steps.isEmpty || update.final != nil else { return }
            handle(update)
            if update.final != nil { watches?.dispose() }
        }
        subscriber.playoutDelay.subscribe { value in deliver({ $0.update(playoutDelay: value) }, nil) }.disposed(by: watches)
        subscriber.state.subscribe { value in deliver({ $0.update(state: value) }, nil) }.disposed(by: watches)
        subscriber.qos.subscribe { sample in
            let final: SubscriberQoS? = switch sample.state {
            case .ended, .failed: sample
            default: nil
            }
            deliver({ $0.update(qos: sample) }, final)
        }.disposed(by: watches)
    }

    /// The subscriber's latest QoS sample.
    public var latestQoS: SubscriberQoS { qos.value }

    /// Heartbeat fields of the latest QoS sample (``SubscriberTelemetryTranslator/heartbeatFields(_:)``).
    public var heartbeatFields: [TelemetryField] { SubscriberTelemetryTranslator.heartbeatFields(qos.value) }
}
