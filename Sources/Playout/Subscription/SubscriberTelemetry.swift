import PlayoutCore
import PlayoutTelemetry

/// A subscriber as a telemetry tracker: its state changes, playout-delay changes, freezes and
/// errors become events, and its latest QoS sample is each heartbeat's content.
///
/// It watches the subscriber's public observables, so it runs on the observers' delivery thread
/// and never on a media thread; emitting only copies an event into the engine's ring. The
/// heartbeat provider runs on the engine's thread and reads the latest sample.
final class SubscriberTelemetry: Sendable {
    let tracker: TelemetryTracker
    private let translator = LockedValue(SubscriberTelemetryTranslator())
    private let watches = DisposeBag()

    init(
        instrument: TelemetryInstrument, name: String, state: ReadOnlyObservable<SubscriberState>,
        qos: ReadOnlyObservable<SubscriberQoS>, playoutDelay: ReadOnlyObservable<EffectivePlayoutDelay>
    ) {
        tracker = instrument.makeTracker(name: name)
        tracker.setHeartbeatProvider { SubscriberTelemetryTranslator.heartbeatFields(qos.value) }
        tracker.ready()
        // Decide under the lock, emit after unlocking.
        playoutDelay.subscribe { [translator, tracker] value in
            for event in translator.withLock({ $0.playoutDelay(value) }) { tracker.emit(event) }
        }.disposed(by: watches)
        state.subscribe { [translator, tracker] value in
            for event in translator.withLock({ $0.state(value) }) { tracker.emit(event) }
        }.disposed(by: watches)
        qos.subscribe { [translator, tracker] value in
            for event in translator.withLock({ $0.qos(value) }) { tracker.emit(event) }
        }.disposed(by: watches)
    }

    /// The subscription ended and its observers saw the final values: a last heartbeat with the
    /// final sample, then the view ends.
    func finish(final: SubscriberQoS) {
        watches.dispose()
        for event in translator.withLock({ $0.qos(final) }) { tracker.emit(event) }
        tracker.emit(.heartbeat(SubscriberTelemetryTranslator.heartbeatFields(final)))
        tracker.endOfService()
    }
}
