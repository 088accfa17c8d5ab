import Logging
import PlayoutCore
import PlayoutTelemetry

/// Delivers a subscription's state, QoS samples and playout-delay changes to its observers on a
/// thread of their own, so an observer that is slow or blocks (a JSON writer whose stdout nobody
/// reads) costs the media threads nothing.
///
/// The media and control threads ``post(_:)`` updates into a bounded queue and go on; the
/// delivery thread sets the public observables, whose callbacks run there. When the queue is
/// full the oldest update is dropped and counted (``Statistics/dropped``): observables are
/// behaviour subjects, which promise the latest value, not every value — so the last value
/// posted always arrives.
package final class ObserverDelivery: @unchecked Sendable {
    /// One update for the observers.
    enum Update: Sendable {
        case state(SubscriberState)
        case qos(SubscriberQoS)
        case playoutDelay(EffectivePlayoutDelay)
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
    private let capacity: Int
    private let condition = ConditionLock()
    private var queue: [Update] = []  // condition
    private var head = 0  // condition
    private var statistics = Statistics()  // condition
    private var closing = false  // condition
    private var running = false  // condition
    private var idle = true  // condition: the delivery thread waits with nothing in hand

    init(state: SubscriberState, qos: SubscriberQoS, playoutDelay: EffectivePlayoutDelay, capacity: Int = ObserverDelivery.defaultCapacity) {
        self.state = Observable(state)
        self.qos = Observable(qos)
        self.playoutDelay = Observable(playoutDelay)
        self.capacity = max(1, capacity)
        queue.reserveCapacity(self.capacity)
    }

    /// Starts the delivery thread. Before it runs (and in tests that never start it), updates
    /// wait in the queue.
    func start() throws {
        condition.withLock { running = true }
        do {
            try startThread(named: "playout-observe") { [self] in run() }
        } catch {
            condition.withLock { running = false }
            throw error
        }
    }

    /// Queues `update` for the observers; never blocks on them.
    func post(_ update: Update) {
        condition.withLock {
            guard !closing else { return }
            if queue.count - head >= capacity {
                if case .qos = queue[head] { statistics.samplesDropped += 1 }
                statistics.dropped += 1
                head += 1
            }
            if head > capacity {
                queue.removeFirst(head)
                head = 0
            }
            queue.append(update)
            condition.broadcast()
        }
    }

    /// Delivers what is queued on the caller's thread (when no delivery thread runs, e.g. in
    /// deterministic tests).
    package func deliverPending() {
        while let update = next(waiting: false) { deliver(update) }
    }

    /// What the queue did so far.
    var snapshot: Statistics { condition.withLock { statistics } }

    /// Lets the delivery thread hand out what is queued, then end; returns once it has (the
    /// observers saw the last values).
    func close() {
        let wasRunning = condition.withLock {
            closing = true
            condition.broadcast()
            return running
        }
        guard wasRunning else {
            deliverPending()
            return
        }
        condition.withLock {
            while running { condition.wait(until: nil) }
        }
    }

    private func run() {
        while let update = next(waiting: true) { deliver(update) }
        condition.withLock {
            running = false
            condition.broadcast()
        }
    }

    /// The next update; with `waiting`, waits for one unless closing (nil: closed and empty).
    private func next(waiting: Bool) -> Update? {
        condition.withLock {
            while head == queue.count {
                if closing || !waiting { return nil }
                condition.wait(until: nil)
            }
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
        case .playoutDelay(let value): playoutDelay.value = value
        }
    }
}
