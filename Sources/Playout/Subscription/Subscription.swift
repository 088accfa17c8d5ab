import Logging
import PlayoutCore
import PlayoutJitter
import PlayoutRTP
import PlayoutTelemetry
import Synchronization

/// One subscription's parts, wired, on the clock it is handed: the tracks, their playout loops,
/// the playout-delay controller, the state machine and the observer delivery. It starts no
/// thread and reads no clock of its own: a driver calls ``control(now:)`` (decisions) and
/// ``feedback(now:)``, hands datagrams to the tracks and advances the loops — the event loop
/// (``SubscriptionEventLoop``, ``Subscriber/start()``) on the real clock, and the embedded driver
/// (PlayoutTesting's `EmbeddedDriver`) on a manual clock, with the same parts.
package final class Subscription: @unchecked Sendable {
    package let clock: any PlayoutClock
    let options: Subscriber.Options
    let delayController: PlayoutDelayController
    package let delivery: ObserverDelivery
    package let tracks: [SubscribedTrack]
    package let loops: [PlayoutLoop]
    let renderer: Renderer
    /// The per-frame record, when ``Subscriber/Options/frameLogCapacity`` asks for one.
    package let frameLog: FrameLog?
    private let machine: LockedValue<SubscriptionStateMachine>
    /// Told the final sample once the run is over (the subscriber's telemetry and waiters).
    private let ended: @Sendable (SubscriberQoS) -> Void
    private let logger = Logger(label: "playout.subscriber")
    /// The scheduled overrides held now (control thread).
    private var held: [Int: PlayoutDelayOverride] = [:]
    /// The scheduled bandwidth limits held now (control thread), and where they are held.
    private var limitsHeld: [Int: any Disposable] = [:]
    let bandwidthLimiter: BandwidthLimiter
    /// The last periodic sample (rates are measured against it).
    private let previousSample = LockedValue<SubscriberQoS?>(nil)
    private var delayWatch: (any Disposable)?
    /// What the driver has called when a decision is wanted soon (``onAttention(_:)``).
    private let attention = LockedValue<(@Sendable () -> Void)?>(nil)
    /// Where driver threads wait (pacing, an input's reopen): woken when the
    /// subscription finishes or the state machine says to reopen the input.
    private let waits = ConditionLock()
    private var inputReopenDue = false  // waits
    private var finishing = false  // waits
    /// Bumped when a track's socket was bound anew: drivers read ``sockets`` again.
    private let socketsChanged = Atomic<Int>(0)  // a driver reads it at every wake-up
    /// The WebRTC transport (a WHEP source): its sockets carry every track's packets.
    let connection: WebRTCConnection?
    /// How the start-up went so far.
    let startup: StartupRecorder

    /// A socket a driver waits on, and what takes its datagrams.
    struct IntakeSocket {
        var receiver: UDPReceiver
        /// Receives one batch from it.
        var receive: () throws -> Void
        /// What to reopen when it fails (nil: a failure ends the subscription).
        var source: SubscriptionStateMachine.Source?
    }

    /// Wires `tracks` to playout loops presenting into `renderer`, started at `start`.
    ///
    /// - Throws: ``PlayoutError`` when a decoder cannot be opened.
    init(
        clock: any PlayoutClock, start: MonotonicInstant, options: Subscriber.Options, delayController: PlayoutDelayController,
        delivery: ObserverDelivery, tracks: [SubscribedTrack], renderer: Renderer, bandwidthLimiter: BandwidthLimiter = BandwidthLimiter(),
        connection: WebRTCConnection? = nil, startup: StartupRecorder? = nil, ended: @escaping @Sendable (SubscriberQoS) -> Void = { _ in }
    ) throws {
        self.ended = ended
        self.connection = connection
        self.startup = startup ?? StartupRecorder(start: start, delivery: delivery)
        self.bandwidthLimiter = bandwidthLimiter
        self.clock = clock
        self.options = options
        self.delayController = delayController
        self.delivery = delivery
        self.tracks = tracks
        self.renderer = renderer
        let frameLog = options.frameLogCapacity > 0 ? FrameLog(capacity: options.frameLogCapacity, start: start) : nil
        self.frameLog = frameLog
        loops = try tracks.map { track in
            try PlayoutLoop(
                track: track, renderer: renderer, clock: clock, start: start, decoderThreads: options.decoderThreads, decoding: options.decoding,
                frameLog: frameLog, delayPauseEnded: { delivery.post(.delayPauseEnded($0)) }
            )
        }
        var machine = SubscriptionStateMachine(configuration: .init(
            qosInterval: options.qosInterval, stallTimeout: options.stallTimeout, duration: options.duration, overrides: options.overrides,
            bandwidthLimits: options.bandwidthLimits
        ))
        let actions = machine.start(now: start) + machine.opened()
        self.machine = LockedValue(machine)
        delayWatch = delayController.effectiveDelay.subscribe { [tracks, delivery, clock, attention] effective in
            frameLog?.record(DelayChangeRecord(at: clock.now, delay: effective))
            for track in tracks { track.setDelay(effective.delay, transition: effective.transition, source: effective.source) }
            delivery.post(.playoutDelay(effective))
            attention.call()
        }
        delivery.takeSamples { [weak self] in self?.periodicSample() }
        // The decisions look at the tracks only now and then while the subscription plays: what
        // they must see at once wakes them.
        renderer.onFailure { [attention] in attention.call() }
        for track in tracks { track.onAttention { [attention] in attention.call() } }
        perform(actions, now: start)
    }

    /// Every bound socket — each track's, or the WebRTC transport's — with what takes its
    /// datagrams: what a driver waits on. Read again when ``socketsGeneration`` changed.
    var sockets: [IntakeSocket] {
        if let connection {
            return connection.sockets.indices.map { index in
                IntakeSocket(receiver: connection.sockets[index], receive: { try connection.receive(on: index) }, source: nil)
            }
        }
        return tracks.flatMap { track in
            track.receivers.enumerated().map { index, socket in
                IntakeSocket(receiver: socket.receiver, receive: { try track.receive(from: socket) }, source: .socket(track: track.index, socket: index))
            }
        }
    }

    /// Changes whenever a socket was bound anew (a reopen).
    var socketsGeneration: Int { socketsChanged.load(ordering: .acquiring) }

    /// The instant the subscription started.
    package var startInstant: MonotonicInstant { machine.withLock { $0.startInstant } }

    /// Whether the state machine decided the subscription is over.
    package var isFinished: Bool { machine.withLock(\.isFinished) }

    /// Everything due at `now` (overrides, state, QoS sample, the end); returns when to call again
    /// at the latest (nil: finished — stop the loops and call ``finish()``).
    package func control(now: MonotonicInstant) -> MonotonicInstant? {
        if let failure = renderer.failure, !isFinished { fail(reason: failure.message) }
        let statuses = tracks.map { $0.status() }
        startup.record(statuses.map(\.startup))
        // The sender's playout-delay range (the first track's that has one: video before audio).
        delayController.setSenderRange(statuses.lazy.compactMap(\.senderPlayoutDelay).first)
        let step = machine.withLock { $0.poll(now: now, tracks: statuses) }
        perform(step.actions, now: now)
        return step.wake
    }

    /// Whether any track's feedback should be sent now rather than at the instant
    /// ``feedback(now:)`` returned (a gap opened, a key frame to ask for, a bandwidth limit to
    /// tell): a driver asks after each turn, since a turn follows every receive and every frame.
    var feedbackWantsPoll: Bool { tracks.contains { $0.feedbackWantsPoll } }

    /// The longest a driver waits between two feedback looks, whatever the decisions say: a
    /// safety net, since between two looks the decisions say exactly when they fall due and
    /// ``feedbackWantsPoll`` says when something they could not foresee happened.
    static let feedbackPollInterval: Duration = .milliseconds(250)

    /// Sends each track's RTCP due at `now` (a driver's feedback turn); returns when to look
    /// again: the next decision, at most ``feedbackPollInterval`` away (nil: no track talks back).
    package func feedback(now: MonotonicInstant) -> MonotonicInstant? {
        guard let next = tracks.compactMap({ $0.sendFeedback(now: now) }).min() else { return nil }
        return min(next, now.advanced(by: Self.feedbackPollInterval))
    }

    /// What the WebRTC transport has due at `now` (checks, consent, the handshake's timers);
    /// returns when to call again (nil: nothing is timed, or no transport).
    package func transport(now: MonotonicInstant) -> MonotonicInstant? {
        connection?.poll(now: now)
    }

    /// When the WebRTC transport wants ``transport(now:)`` next (nil: not timed, or none).
    package var transportWake: MonotonicInstant? { connection?.nextWake }

    /// ``Subscriber/stop()``: the next ``control(now:)`` finishes.
    func stop() {
        event { $0.stop() }
    }

    /// Has `wake` called whenever something from outside the driver's turns needs a decision
    /// soon — a stop, a failure, a playout-delay change — so the driver takes a turn with
    /// ``control(now:)`` at once rather than at its next due instant.
    package func onAttention(_ wake: @escaping @Sendable () -> Void) {
        attention.withLock { $0 = wake }
    }

    /// A file source ended: finish once every track rendered what it holds.
    func inputDidEnd() {
        event { $0.inputDidEnd() }
    }

    /// `source` failed with `error`: `connecting`, and the state machine says when to reopen it
    /// (a socket: ``control(now:)`` binds it again; the input: ``waitForInputReopen()`` returns).
    func sourceFailed(_ source: SubscriptionStateMachine.Source, error: any Error) {
        let now = clock.now
        let (actions, retryAt) = event { $0.sourceFailed(source, now: now) }
        if let retryAt { logger.warning("\(describe(source)) failed: \(error); reopening in \(now.duration(to: retryAt).compactDescription)") }
        perform(actions, now: now)
    }

    /// The input was opened again (the driver's reading thread, after ``waitForInputReopen()``).
    package func inputReopened() {
        let now = clock.now
        perform(event { $0.reopened(.input, now: now) }, now: now)
    }

    /// Opening the input again failed: the state machine says when to try next.
    package func inputReopenFailed(_ error: any Error) {
        sourceFailed(.input, error: error)
    }

    /// Waits until the state machine says to reopen the input (true), or the subscription
    /// finishes (false). The reading thread of a libavformat input.
    package func waitForInputReopen() -> Bool {
        waits.withLock {
            while !inputReopenDue, !finishing { waits.wait(until: nil) }
            defer { inputReopenDue = false }
            return !finishing
        }
    }

    /// Whether the state machine said to reopen the input since the last look (and forgets it):
    /// ``waitForInputReopen()`` without the wait, for a driver that looks at each turn.
    package func takeDueInputReopen() -> Bool {
        waits.withLock {
            defer { inputReopenDue = false }
            return inputReopenDue
        }
    }

    /// Sleeps until `instant`, or until the subscription finishes (false then). The reading
    /// thread of a libavformat input.
    @discardableResult
    package func sleep(until instant: MonotonicInstant) -> Bool {
        waits.withLock {
            if !finishing { waits.wait(until: instant) }
            return !finishing
        }
    }

    /// Takes a lifecycle event to the state machine and, when the machine wants a decision at
    /// once, wakes the driver: the one place both happen, so no event forgets either.
    private func event<Result>(_ change: (inout SubscriptionStateMachine) -> Result) -> Result {
        let (result, decideNow) = machine.withLock { machine in (change(&machine), machine.decidesAtOnce) }
        if decideNow { attention.call() }
        return result
    }

    private func describe(_ source: SubscriptionStateMachine.Source) -> String {
        switch source {
        case .input: "the input"
        case .socket(let track, let socket):
            tracks[track].receivers.indices.contains(socket) ? "receiving on \(tracks[track].receivers[socket].receiver.localAddress)" : "a socket"
        }
    }

    /// Fails the subscription with `reason`.
    package func fail(reason: String) {
        perform(event { $0.failed(reason: reason) }, now: clock.now)
    }

    /// After the loops ended: closes the sinks, publishes the final state and sample, lets the
    /// observers see them, then ends the run (telemetry's last records, the subscriber's
    /// waiters); returns the final sample. The one end of every driver.
    @discardableResult
    package func finish() -> SubscriberQoS {
        // The WebRTC session first: close_notify and the WHEP DELETE go out within 2 s of the end.
        connection?.close(now: clock.now)
        renderer.finish()
        delayWatch?.dispose()
        // A file that failed only as it was closed (a full disk at the last write) fails the run.
        if let failure = renderer.failure { fail(reason: failure.message) }
        let actions = machine.withLock { $0.finalState() }
        perform(actions, now: clock.now)
        let final = sample(final: true)
        delivery.post(.qos(final))
        delivery.close()
        ended(final)
        return final
    }

    /// The periodic sample due, taken now (the observer thread, as it delivers): nil once the
    /// decisions said the end — the final sample comes next.
    private func periodicSample() -> SubscriberQoS? {
        guard !isFinished else { return nil }
        let sample = sample()
        previousSample.withLock { $0 = sample }
        return sample
    }

    /// A QoS sample now. Rates cover the time since the last periodic sample, or the whole run
    /// for the final sample.
    func sample(final: Bool = false) -> SubscriberQoS {
        let now = clock.now
        let start = startInstant
        let delay = delayController.effectiveDelay.value
        let state = machine.withLock(\.state)
        var sample = SubscriberQoS(elapsed: start.duration(to: now), state: state, playoutDelay: delay)
        let previous = final ? nil : previousSample.withLock { $0 }
        let window = sample.elapsed - (previous?.elapsed ?? .zero)
        for track in tracks {
            var qos = track.qos(playoutDelay: delay)
            qos.measureRates(since: previous?.tracks[qos.kind], window: window)
            sample.tracks[qos.kind] = qos
        }
        return sample
    }

    private func perform(_ actions: [SubscriptionStateMachine.Action], now: MonotonicInstant) {
        for action in actions {
            switch action {
            case .publishState(let state):
                logger.info("state \(state)")
                delivery.post(.state(state))
            case .sampleQoS:
                delivery.post(.sampleQoS)  // taken on the observer thread (periodicSample())
            case .setOverride(let index):
                let planned = options.overrides[index]
                do {
                    held[index] = try delayController.overridePlayoutDelay(planned.delay, transition: planned.transition)
                } catch {
                    logger.error("override \(planned) refused: \(error)")
                }
            case .releaseOverride(let index):
                held.removeValue(forKey: index)?.dispose()
            case .setBandwidthLimit(let index):
                let planned = options.bandwidthLimits[index]
                logger.info("bandwidth limit \(planned)")
                limitsHeld[index] = bandwidthLimiter.hold(planned.bitsPerSecond)
            case .releaseBandwidthLimit(let index):
                limitsHeld.removeValue(forKey: index)?.dispose()
            case .reopen(.socket(let track, let socket)):
                let now = clock.now
                do {
                    try tracks[track].reopen(socketAt: socket)
                    socketsChanged.add(1, ordering: .releasing)
                    perform(event { $0.reopened(.socket(track: track, socket: socket), now: now) }, now: now)
                } catch {
                    sourceFailed(.socket(track: track, socket: socket), error: error)
                }
            case .reopen(.input):
                waits.withLock {
                    inputReopenDue = true
                    waits.broadcast()
                }
            case .finish:
                waits.withLock {
                    finishing = true
                    waits.broadcast()
                }
            }
        }
    }
}

extension LockedValue where Value == (@Sendable () -> Void)? {
    /// Calls the closure held, if any, after unlocking (the driver's wake-up: ``Subscription/onAttention(_:)``).
    fileprivate func call() {
        withLock { $0 }?()
    }
}
