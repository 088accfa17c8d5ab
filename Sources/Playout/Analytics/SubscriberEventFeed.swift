import PlayoutCore
import PlayoutTelemetry

/// A subscription's observable updates — state, QoS samples, the playout delay in effect — turned
/// into telemetry events by the one ``SubscriberTelemetryTranslator``, handed to a bridge that
/// makes an SDK adapter's calls from them.
///
/// It runs where the subscriber's observers run (one delivery thread, never a media thread, so
/// updates arrive one at a time and in order): the translator decides under a lock, `handle` is
/// called after unlocking. The latest
/// QoS sample is kept for the adapter's heartbeats (``latestQoS``), so the QoS numbers an adapter
/// reports are the subscriber's own.
///
/// ```swift
/// let feed = SubscriberEventFeed(subscriber) { events in for event in events { adapt(event) } }
/// try subscriber.start()
/// let final = subscriber.waitUntilEnded()
/// let last = feed.finish(final: final)      // events the final sample reveals
/// ```
public final class SubscriberEventFeed: Sendable {
    private let translator = LockedValue(SubscriberTelemetryTranslator())
    private let watches = DisposeBag()
    private let qos: ReadOnlyObservable<SubscriberQoS>
    private let handle: @Sendable ([TelemetryEvent]) -> Void

    /// Watches `subscriber` (before it starts) and calls `handle` with the events of each update.
    public init(_ subscriber: Subscriber, handle: @escaping @Sendable ([TelemetryEvent]) -> Void) {
        self.handle = handle
        qos = subscriber.qos
        // The watches capture the translator and `handle`, not the feed: no cycle through the bag.
        let deliver = Self.deliverer(translator, handle)
        subscriber.playoutDelay.subscribe { value in deliver { $0.playoutDelay(value) } }.disposed(by: watches)
        subscriber.state.subscribe { value in deliver { $0.state(value) } }.disposed(by: watches)
        subscriber.qos.subscribe { value in deliver { $0.qos(value) } }.disposed(by: watches)
    }

    /// The subscriber's latest QoS sample.
    public var latestQoS: SubscriberQoS { qos.value }

    /// Heartbeat fields of the latest QoS sample (``SubscriberTelemetryTranslator/heartbeatFields(_:)``).
    public var heartbeatFields: [TelemetryField] { SubscriberTelemetryTranslator.heartbeatFields(qos.value) }

    /// The subscription ended (``Subscriber/waitUntilEnded()`` returned `final`): stops watching
    /// and handles what the final sample reveals.
    public func finish(final: SubscriberQoS) {
        watches.dispose()
        let deliver = Self.deliverer(translator, handle)
        deliver { $0.qos(final) }
        deliver { $0.state(final.state) }
    }

    /// Translates under the translator's lock, hands the events over after unlocking.
    private static func deliverer(
        _ translator: LockedValue<SubscriberTelemetryTranslator>, _ handle: @escaping @Sendable ([TelemetryEvent]) -> Void
    ) -> @Sendable ((inout SubscriberTelemetryTranslator) -> [TelemetryEvent]) -> Void {
        { translate in
            let events = translator.withLock { translate(&$0) }
            if !events.isEmpty { handle(events) }
        }
    }
}
