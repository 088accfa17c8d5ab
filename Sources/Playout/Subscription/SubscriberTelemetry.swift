import PlayoutCore
import PlayoutTelemetry

/// A subscriber as a telemetry tracker: its state changes, playout-delay changes, freezes and
/// errors become events, each QoS sample a heartbeat carrying the whole sample, and the command
/// line's contract events (`stateChanged`, `overrideApplied` …) actions — so the `--json` stream
/// is one more telemetry backend.
///
/// It watches the subscriber's public observables, so it runs on the observer thread
/// and never on a media thread; emitting only copies an event into the engine's ring.
final class SubscriberTelemetry: Sendable {
    let tracker: TelemetryTracker
    private let translators = LockedValue((player: SubscriberTelemetryTranslator(), contract: SubscriberContractEvents()))
    private let start = LockedValue<MonotonicInstant?>(nil)
    private let clock: any PlayoutClock
    private let watches = DisposeBag()

    init(
        instrument: TelemetryInstrument, name: String, clock: any PlayoutClock, state: ReadOnlyObservable<SubscriberState>,
        qos: ReadOnlyObservable<SubscriberQoS>, playoutDelay: ReadOnlyObservable<EffectivePlayoutDelay>
    ) {
        self.clock = clock
        tracker = instrument.makeTracker(name: name)
        tracker.ready()
        // Decide under the lock, emit after unlocking.
        playoutDelay.subscribe { [self] value in
            let elapsed = elapsed()
            emit(translators.withLock { [$0.contract.playoutDelay(value, elapsed: elapsed)].compactMap(\.self) + $0.player.playoutDelay(value) })
        }.disposed(by: watches)
        state.subscribe { [self] value in
            let elapsed = elapsed()
            emit(translators.withLock { [$0.contract.state(value, elapsed: elapsed)].compactMap(\.self) + $0.player.state(value) })
        }.disposed(by: watches)
        qos.subscribe { [self] sample in
            guard sample.state != .idle else { return }  // the value before the start
            emit(translators.withLock { $0.contract.qos(sample) + $0.player.qos(sample) } + [.heartbeat(SubscriberTelemetryTranslator.heartbeatFields(sample))])
        }.disposed(by: watches)
    }

    /// The subscription started at `instant` (the origin of the events' `elapsed`).
    func started(at instant: MonotonicInstant) {
        start.withLock { $0 = instant }
    }

    /// The subscription ended and its observers saw the final values: a last heartbeat with the
    /// final sample, then the view ends.
    func finish(final: SubscriberQoS) {
        watches.dispose()
        emit(translators.withLock { $0.player.qos(final) } + [.heartbeat(SubscriberTelemetryTranslator.heartbeatFields(final))])
        tracker.endOfService()
    }

    private func elapsed() -> Duration {
        start.withLock { $0 }.map { $0.duration(to: clock.now) } ?? .zero
    }

    private func emit(_ events: [TelemetryEvent]) {
        for event in events { tracker.emit(event) }
    }
}
