import Logging
import PlayoutCore
import PlayoutTelemetry

/// Delivers a subscription's state, QoS samples and playout-delay changes to its observers on a
/// thread that is not a media thread (the event loop's observer thread), so an observer that is
/// slow or blocks (a JSON writer whose stdout nobody reads) costs the media nothing.
///
/// The media and control work ``post(_:)`` updates into a bounded queue and goes on; the
/// observer thread, told of each post, sets the public observables, whose callbacks run there
/// (``deliverPending()``; the embedded driver's caller in tests). When the queue is
/// full the oldest update is dropped and counted (``Statistics/dropped``): observables are
/// behaviour subjects, which promise the latest value, not every value — so the last value
/// posted always arrives.
package final class ObserverDelivery: @unchecked Sendable {
    /// One update for the observers.
    enum Update: Sendable {
        case state(SubscriberState)
        case qos(SubscriberQoS)
        /// A periodic QoS sample is due: the observer thread takes it as it delivers
        /// (``takeSamples(with:)``), so composing a sample costs the media threads nothing.
        case sampleQoS
        case playoutDelay(EffectivePlayoutDelay)
        /// Rendering resumed after a delay pause at that instant.
        case delayPauseEnded(MonotonicInstant)
        /// The start-up reached another step.
        case startup(StartupTimeline)
    }

    /// What the queue did.
    struct Statistics: Equatable, Sendable {
        /// Updates handed to the observables.
        var delivered = 0
        /// Updates dropped because the queue was full (the observers did not keep up).
        var dropped = 0
        /// QoS samples among the dropped.
        var samplesDropped = 0
    }

    /// The default capacity: 64 updates (a minute of 1 s samples with room for events).
    static let defaultCapacity = 64

    let state: Observable<SubscriberState>
    let qos: Observable<SubscriberQoS>
    let playoutDelay: Observable<EffectivePlayoutDelay>
    /// When rendering last resumed after a delay pause (nil: not yet).
    let delayPauseEnded = Observable<MonotonicInstant?>(nil)
    /// How the start-up went so far (nil: no step reached yet).
    let startup = Observable<StartupTimeline?>(nil)
    private let capacity: Int
    private let condition = ConditionLock()
    private var queue: [Update] = []  // condition
    private var head = 0  // condition
    private var statistics = Statistics()  // condition
    private var closing = false  // condition
    /// Told after each post (the observer thread then delivers).
    private var posted: (@Sendable () -> Void)?  // condition
    /// Takes a periodic sample (nil: none any more, the subscription decided its end).
    private var sampler: (@Sendable () -> SubscriberQoS?)?  // condition

    init(state: SubscriberState, qos: SubscriberQoS, playoutDelay: EffectivePlayoutDelay, capacity: Int = ObserverDelivery.defaultCapacity) {
        self.state = Observable(state)
        self.qos = Observable(qos)
        self.playoutDelay = Observable(playoutDelay)
        self.capacity = max(1, capacity)
        queue.reserveCapacity(self.capacity)
    }

    /// Calls `posted` after each update is queued (on the posting thread, after unlocking).
    func notifyPosted(_ posted: @escaping @Sendable () -> Void) {
        condition.withLock { self.posted = posted }
    }

    /// Has `sampler` take each periodic sample when its ``Update/sampleQoS`` is delivered.
    func takeSamples(with sampler: @escaping @Sendable () -> SubscriberQoS?) {
        condition.withLock { self.sampler = sampler }
    }

    /// Queues `update` for the observers; never blocks on them.
    func post(_ update: Update) {
        let posted = condition.withLock { () -> (@Sendable () -> Void)? in
            guard !closing else { return nil }
            if queue.count - head >= capacity {
                switch queue[head] {
                case .qos, .sampleQoS: statistics.samplesDropped += 1
                default: break
                }
                statistics.dropped += 1
                head += 1
            }
            if head > capacity {
                queue.removeFirst(head)
                head = 0
            }
            queue.append(update)
            return self.posted
        }
        posted?()
    }

    /// Delivers what is queued, on the caller's thread.
    package func deliverPending() {
        while let update = next() { deliver(update) }
    }

    /// What the queue did so far.
    var snapshot: Statistics { condition.withLock { statistics } }

    /// Delivers what is queued and takes nothing more (the observers saw the last values).
    func close() {
        condition.withLock { closing = true }
        deliverPending()
    }

    /// The next update (nil: none queued).
    private func next() -> Update? {
        condition.withLock {
            guard head < queue.count else { return nil }
            defer {
                head += 1
                statistics.delivered += 1
                if head == queue.count {
                    queue.removeAll(keepingCapacity: true)
                    head = 0
                }
            }
            return queue[head]
        }
    }

    private func deliver(_ update: Update) {
        switch update {
        case .state(let value): state.value = value
        case .qos(let value): qos.value = value
        case .sampleQoS: if let sample = condition.withLock({ sampler })?() { qos.value = sample }
        case .playoutDelay(let value): playoutDelay.value = value
        case .delayPauseEnded(let instant): delayPauseEnded.value = instant
        case .startup(let timeline): startup.value = timeline
        }
    }
}
