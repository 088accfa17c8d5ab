import Dispatch
@testable import Playout
import PlayoutCore
import PlayoutTelemetry
import Testing

/// Observers run on the observer thread, behind a bounded queue: a slow one costs the poster
/// (the media and control work) nothing. Here a serial queue stands in for the event loop's
/// observer thread: told of each post, it delivers.
@Suite("Observer delivery")
struct ObserverDeliveryTests {
    static let delay = EffectivePlayoutDelay(delay: .milliseconds(230), source: .configured)

    /// Delivers `delivery`'s updates on a serial queue as they are posted (the observer thread).
    static func deliverOnQueue(_ delivery: ObserverDelivery) -> DispatchQueue {
        let queue = DispatchQueue(label: "observer-delivery-test")
        delivery.notifyPosted { queue.async { delivery.deliverPending() } }
        return queue
    }

    static func sample(_ milliseconds: Int) -> SubscriberQoS {
        SubscriberQoS(elapsed: .milliseconds(milliseconds), state: .playing, playoutDelay: delay)
    }

    @Test("an observer that blocks costs the poster nothing: the oldest updates are dropped and counted, the last one arrives")
    func blockedObserver() throws {
        let delivery = ObserverDelivery(state: .idle, qos: Self.sample(0), playoutDelay: Self.delay, capacity: 8)
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let seen = LockedValue<[Duration]>([])
        let watch = delivery.qos.subscribe { sample in
            guard sample.elapsed > .zero else { return }
            if seen.withLock({ $0.isEmpty }) {
                entered.signal()
                gate.wait()  // blocked, as a JSON writer whose stdout nobody reads
            }
            seen.withLock { $0.append(sample.elapsed) }
        }
        defer { watch.dispose() }
        let queue = Self.deliverOnQueue(delivery)
        delivery.post(.qos(Self.sample(1)))
        entered.wait()  // the delivery thread is inside the blocked observer
        for milliseconds in 2...1_000 { delivery.post(.qos(Self.sample(milliseconds))) }
        let statistics = delivery.snapshot
        #expect(statistics.dropped == 999 - 8 && statistics.samplesDropped == statistics.dropped)
        gate.signal()
        queue.sync { delivery.close() }
        let values = seen.withLock { $0 }
        #expect(values.first == .milliseconds(1))
        #expect(values.dropFirst() == ArraySlice((993...1_000).map { Duration.milliseconds($0) }), "the newest 8, in order")
        #expect(delivery.qos.value.elapsed == .milliseconds(1_000), "never stale: the last value posted is the value")
    }

    @Test("callbacks run on the observer thread, in the order posted, and close() returns after the last")
    func order() throws {
        let delivery = ObserverDelivery(state: .idle, qos: Self.sample(0), playoutDelay: Self.delay)
        let states = LockedValue<[SubscriberState]>([])
        let watch = delivery.state.subscribe { state in states.withLock { $0.append(state) } }
        defer { watch.dispose() }
        let queue = Self.deliverOnQueue(delivery)
        for state in [SubscriberState.connecting, .buffering, .playing, .stalled, .ended] { delivery.post(.state(state)) }
        queue.sync { delivery.close() }
        #expect(states.withLock { $0 } == [.idle, .connecting, .buffering, .playing, .stalled, .ended])
        delivery.post(.state(.playing))
        #expect(delivery.state.value == .ended, "nothing is delivered after close")
    }
}
