public import Playout
public import PlayoutCore

/// Drives a whole ``Subscriber`` — its state machine, tracks, jitter buffers, playout loops with
/// their real decoders, feedback decisions and observers — on a ``ManualClock``, with no thread,
/// no socket and no sleep, the way swift-nio's `EmbeddedEventLoop` runs channel handlers. The
/// subscriber is the same object a program would start; only the driver differs: datagrams are
/// handed in with ``receive(_:track:control:)``, and ``advance(to:)`` moves the clock through
/// every instant something is due, doing it there. Observers (and so telemetry trackers and
/// analytics bridges attached to the subscriber) are called on the caller's thread, in order.
/// The same input gives the same run, to the nanosecond.
///
/// ```swift
/// let clock = ManualClock()
/// let subscriber = try Subscriber(sessionDescription: sdp, options: .init(duration: .seconds(5), clock: clock))
/// let driver = try EmbeddedDriver(subscriber)
/// for datagram in datagrams {              // (arrival, track, bytes), in arrival order
///     driver.advance(to: datagram.arrival)
///     driver.receive(datagram.bytes, track: datagram.track)
/// }
/// let final = driver.runUntilEnded()       // also what subscriber.waitUntilEnded() returns now
/// ```
///
/// Only RTP sources are embedded (an SDP's tracks; a libavformat input reads files and sockets
/// of its own).
public final class EmbeddedDriver {
    /// One datagram on the simulated wire: when it arrives, which track (SDP media section, in
    /// order) it is for, and its bytes.
    public struct Datagram: Sendable {
        public var arrival: MonotonicInstant
        public var track: Int
        public var bytes: [UInt8]

        public init(arrival: MonotonicInstant, track: Int, bytes: [UInt8]) {
            self.arrival = arrival
            self.track = track
            self.bytes = bytes
        }
    }

    /// The subscriber driven.
    public let subscriber: Subscriber
    /// Its clock, which only this driver (and the caller) moves.
    public let clock: ManualClock
    private let turns: SubscriptionTurns
    /// The subscription's parts (tracks, loops, the frame log), for tests in this package.
    package var subscription: Subscription { turns.subscription }
    /// How long after the turn that said the end the run is finished (its loops drained, its final
    /// sample taken), the clock moved by as much first; zero by default. The event loop finishes a
    /// run later, on its observer thread: tests in this package set it to see what the end's
    /// turn showed by itself.
    package var finishingDelay: Duration = .zero
    /// Whether each turn is taken as an event loop takes it when other subscriptions' turns are
    /// due after it on the same thread: the loops present what is due and leave reading ahead
    /// to a turn of its own, at the same instant (``SubscriptionTurns/readsAheadOnly``); false
    /// by default.
    package var othersDue = false
    /// Whether all the next turn has to do is read ahead (see ``othersDue``).
    package var readsAheadOnly: Bool { turns.readsAheadOnly }

    /// Opens `subscriber` (as ``Subscriber/start()`` does, without binding a socket or starting a
    /// thread) and does what is due at the clock's instant.
    ///
    /// - Throws: ``PlayoutError`` when the subscriber's ``Subscriber/Options/clock`` is not a
    ///   ``ManualClock``, its source is not RTP, it was started before, or a decoder cannot open.
    public init(_ subscriber: Subscriber) throws {
        guard let clock = subscriber.options.clock as? ManualClock else {
            throw PlayoutError(.invalidOption, "an embedded subscriber runs on a ManualClock: create it with Subscriber.Options(clock: ManualClock())")
        }
        guard subscriber.sessionDescription != nil else {
            throw PlayoutError(.invalidOption, "the embedded driver takes RTP datagrams: subscribe to a session description, not a libavformat input")
        }
        self.subscriber = subscriber
        self.clock = clock
        let subscription = try subscriber.open(bindingSockets: false)
        turns = SubscriptionTurns(subscriber: subscriber, subscription: subscription, now: clock.now)
        // A stop, a failure, a delay change between turns: the next turn decides.
        subscription.onAttention { [turns] in turns.decideAtNextTurn() }
        turn()
    }

    /// Whether the subscription ended (its duration, ``Subscriber/stop()``, a failure).
    public var isFinished: Bool { turns.final != nil }

    /// The final sample, once ended.
    public var finalSample: SubscriberQoS? { turns.final }

    /// The next instant something is due (nil: ended).
    public var nextWake: MonotonicInstant? { turns.nextWake }

    /// Hands `bytes` to track `track` as one datagram arriving now, then does what that makes
    /// due. `control`: RTCP (nil: RTCP when its packet type is 200–204, RFC 5761). A datagram
    /// after the end, or for a track that does not exist, is ignored.
    public func receive(_ bytes: [UInt8], track: Int, control: Bool? = nil) {
        deliver(bytes, track: track, control: control)
        turn()
    }

    /// Moves the clock to `instant` (if later), stopping at every instant something is due on
    /// the way and doing it there; ends early when the subscription ends.
    public func advance(to instant: MonotonicInstant) {
        while !isFinished, let wake = nextWake, wake <= instant {
            if wake > clock.now { clock.advance(to: wake) }
            turn()
        }
        if !isFinished, instant > clock.now {
            clock.advance(to: instant)
            turn()
        }
    }

    /// Moves the clock by `duration`; see ``advance(to:)``.
    public func advance(by duration: Duration) {
        advance(to: clock.now.advanced(by: duration))
    }

    /// Runs until the subscription ends (its duration, or ``Subscriber/stop()``); returns the
    /// final sample (which ``Subscriber/waitUntilEnded()`` returns from now on).
    @discardableResult
    public func runUntilEnded() -> SubscriberQoS {
        while !isFinished {
            guard let wake = nextWake else { break }
            if wake > clock.now { clock.advance(to: wake) }
            turn()
        }
        return turns.final!
    }

    /// Delivers `datagrams` at their arrival instants, runs `steps` (an override, a stop) at
    /// theirs, and runs until the end; returns the final sample. At one instant the steps run
    /// first, in their order, then every datagram arriving then is handed in, then what is due
    /// is done once.
    @discardableResult
    public func run(_ datagrams: [Datagram], steps: [(at: MonotonicInstant, body: () -> Void)] = []) -> SubscriberQoS {
        let datagrams = datagrams.sorted { $0.arrival < $1.arrival }
        let steps = steps.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
        var (nextDatagram, nextStep) = (0, 0)
        while !isFinished {
            let instants = [datagrams.dropFirst(nextDatagram).first?.arrival, steps.dropFirst(nextStep).first?.at].compactMap(\.self)
            guard let instant = instants.min() else { break }
            advance(before: instant)
            guard !isFinished else { break }
            while nextStep < steps.count, steps[nextStep].at <= instant {
                steps[nextStep].body()
                nextStep += 1
            }
            while nextDatagram < datagrams.count, datagrams[nextDatagram].arrival <= instant {
                deliver(datagrams[nextDatagram].bytes, track: datagrams[nextDatagram].track, control: nil)
                nextDatagram += 1
            }
            turn()
        }
        return runUntilEnded()
    }

    /// Does what is due before `instant`, then moves the clock there (doing nothing yet).
    private func advance(before instant: MonotonicInstant) {
        while !isFinished, let wake = nextWake, wake < instant {
            if wake > clock.now { clock.advance(to: wake) }
            turn()
        }
        if instant > clock.now { clock.advance(to: instant) }
    }

    /// Hands one datagram to its track, arriving now.
    private func deliver(_ bytes: [UInt8], track: Int, control: Bool?) {
        guard !isFinished, subscription.tracks.indices.contains(track) else { return }
        var bytes = bytes
        let isControl = control ?? (bytes.count >= 2 && (200...204).contains(bytes[1]))
        let now = clock.now
        bytes.withUnsafeMutableBytes { subscription.tracks[track].deliver($0, length: $0.count, arrival: now, control: isControl) }
    }

    /// Does everything due now (see ``SubscriptionTurns``), then calls the observers; and the
    /// end, once the decisions say so. One turn at the clock's instant, due or not: the public
    /// calls take every turn due; tests in this package take one at a time.
    package func turn() {
        guard !isFinished else { return }
        let ended = turns.turn(now: clock.now, othersDue: othersDue)
        subscription.delivery.deliverPending()
        if ended {
            if finishingDelay > .zero { clock.advance(by: finishingDelay) }
            turns.finish()
        }
    }
}
