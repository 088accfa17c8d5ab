import PlayoutCore

/// What a driver that multiplexes subscriptions on its own threads does with one of them: takes
/// turns. A turn at `now` runs the subscription's decisions when due, its feedback decisions when
/// due (or when the turn's receive or frames changed what they would decide: a gap, a key frame
/// to ask for), and each playout loop that asked for `now` or sooner; ``nextWake``
/// says when the next turn is due. When the decisions say the end, the turn says so, and
/// ``finish()`` drains the loops and ends the subscription where the driver may run observers.
/// No thread, no clock of its own: the embedded driver takes turns
/// on a manual clock, the event loop on the real one for many subscriptions per thread.
package final class SubscriptionTurns: @unchecked Sendable {
    package let subscriber: Subscriber
    package let subscription: Subscription
    private var controlWake: MonotonicInstant?
    private var feedbackWake: MonotonicInstant?
    /// When the WebRTC transport (a WHEP source) has something timed (nil: nothing, or none).
    private var transportWake: MonotonicInstant?
    private var loopWakes: [PlayoutLoop.Wake]
    /// The final sample, once the subscription ended.
    package private(set) var final: SubscriberQoS?
    /// The instant of the turn whose decisions said the end: ``finish()`` shows no frame due
    /// after it, however late it runs.
    private var endedAt: MonotonicInstant?
    /// Turns taken at ``lastInstant``: a part that keeps asking for the same instant would spin.
    private var turnsAtInstant = 0
    private var lastInstant: MonotonicInstant?

    /// The most turns at one instant before the subscription fails as not advancing.
    package static let maximumTurnsAtOneInstant = 10_000

    /// The turns of `subscription`, which `subscriber` opened; the first is due at once.
    package init(subscriber: Subscriber, subscription: Subscription, now: MonotonicInstant) {
        self.subscriber = subscriber
        self.subscription = subscription
        loopWakes = Array(repeating: .poll(until: nil), count: subscription.loops.count)
        controlWake = now
        feedbackWake = now
    }

    /// The next instant a turn is due (nil: ended).
    package var nextWake: MonotonicInstant? { nextTurn.wake }

    /// Whether all the next turn has to do is read ahead: a loop left the release and decode of
    /// its next frame to it (``PlayoutLoop/Wake/readAhead(at:)``), sooner than anything else is
    /// due. That has slack (the frame is due later); a driver with other subscriptions' frames
    /// due takes those first.
    package var readsAheadOnly: Bool { nextTurn.readsAheadOnly }

    /// ``nextWake`` and ``readsAheadOnly`` in one look at the wakes (a driver asks after every turn).
    package var nextTurn: (wake: MonotonicInstant?, readsAheadOnly: Bool) {
        guard final == nil else { return (nil, false) }
        // A plain loop: arrays would be two allocations.
        var other = controlWake
        var ahead: MonotonicInstant?
        if let instant = feedbackWake { other = min(other ?? instant, instant) }
        if let instant = transportWake { other = min(other ?? instant, instant) }
        for wake in loopWakes {
            if case .readAhead(let at) = wake {
                ahead = min(ahead ?? at, at)
            } else if let instant = Self.instant(of: wake) {
                other = min(other ?? instant, instant)
            }
        }
        guard let ahead else { return (other, false) }
        guard let other else { return (ahead, true) }
        return (min(ahead, other), ahead < other)
    }

    /// When a loop's wake is due (nil: when woken, or never).
    private static func instant(of wake: PlayoutLoop.Wake) -> MonotonicInstant? {
        switch wake {
        case .present(let at), .yield(let at), .readAhead(let at): at
        case .poll(let until): until
        case .decoding: nil
        }
    }

    /// Has the next turn run the subscription's decisions too, whenever they are due next.
    package func decideAtNextTurn() {
        if controlWake != nil { controlWake = MonotonicInstant(nanoseconds: 0) }
    }

    /// Does everything due at `now`; returns whether the subscription's decisions said the end
    /// (the caller then calls ``finish()`` where it may run observers). `othersDue`: other
    /// subscriptions' turns are due on the same thread after this one — the loops present what
    /// is due and leave reading ahead to a turn of their own, due at once (``readsAheadOnly``).
    package func turn(now: MonotonicInstant, othersDue: Bool = false) -> Bool {
        guard final == nil else { return true }
        turnsAtInstant = now == lastInstant ? turnsAtInstant + 1 : 0
        lastInstant = now
        if turnsAtInstant == Self.maximumTurnsAtOneInstant {
            subscription.fail(reason: "the driver does not advance past \(now): a part keeps asking for the same instant")
            controlWake = now
        }
        if let due = controlWake, due <= now { controlWake = subscription.control(now: now) }
        // The decisions said the end: the loops present no more (``finish()`` drains them) —
        // but what is due by the end is shown in this turn, on time. The drain runs later, on
        // the observer thread, one subscription after another: with hundreds ending together
        // (a swarm's duration), the frames it showed there came out late.
        guard controlWake != nil else {
            if endedAt == nil {
                endedAt = now
                for index in loopWakes.indices where Self.instant(of: loopWakes[index]).map({ $0 <= now }) ?? false {
                    loopWakes[index] = subscription.loops[index].advance(now: now)
                }
            }
            return true
        }
        if let due = feedbackWake, due <= now { feedbackWake = subscription.feedback(now: now) }
        // A receive may have moved the transport's timers (a check answered, a handshake flight).
        transportWake = subscription.transportWake
        if let due = transportWake, due <= now { transportWake = subscription.transport(now: now) }
        // Earliest first; each loop told when another presents next, so a decode does not keep
        // an audio frame waiting that is due before the decode would end. A loop whose decode
        // completed on the pool goes too, to start its next one.
        func advance(_ index: Int) {
            switch loopWakes[index] {
            case .present(let at) where at > now && !subscription.loops[index].decodeCompleted && !subscription.loops[index].holdsStaleRenderTimes: return
            case .yield(let at) where at > now: return
            default:
                var deadline: MonotonicInstant?
                for (other, wake) in loopWakes.enumerated() where other != index {
                    if case .present(let at) = wake { deadline = min(deadline ?? at, at) }
                }
                loopWakes[index] = subscription.loops[index].advance(now: now, presentingBy: deadline, othersDue: othersDue)
            }
        }
        func due(_ index: Int) -> Int64 { Self.instant(of: loopWakes[index])?.nanoseconds ?? .max }
        // One or two loops (video, audio: the common cases) are put in order without an array.
        switch loopWakes.count {
        case 1: advance(0)
        case 2:
            let first = due(1) < due(0) ? 1 : 0
            advance(first)
            advance(1 - first)
        default:
            for index in loopWakes.indices.sorted(by: { due($0) < due($1) }) { advance(index) }
        }
        // What arrived, or a frame taken, may have changed what the feedback decides (a gap
        // opened, decoding waits for a key frame): it looks now, not at the instant it last said.
        if let due = feedbackWake, due > now, subscription.feedbackWantsPoll { feedbackWake = subscription.feedback(now: now) }
        return false
    }

    /// The end, once the decisions said so: the loops, advanced no more, present what they
    /// hold; the final sample reaches the observers and ``Subscriber/waitUntilEnded()``.
    package func finish() {
        guard final == nil else { return }
        let end = endedAt ?? lastInstant ?? MonotonicInstant(nanoseconds: .max)
        for loop in subscription.loops { loop.drain(endedAt: end) }
        final = subscription.finish()
    }
}
