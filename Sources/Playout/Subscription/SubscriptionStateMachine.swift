import PlayoutCore
import PlayoutTelemetry

/// The decisions of one subscription, sans-IO: its lifecycle (running, reopening a failed source
/// with backoff, draining an ended input, stopping, finished — one ``Lifecycle`` value) and the
/// state it publishes (connecting, buffering, playing, stalled, ended, failed), when to take a QoS
/// sample, when each scheduled override is set and released, when a failed source is reopened,
/// and when the subscription ends. It reads no clock and starts nothing: the driver feeds it
/// events with the time and carries out the actions it returns, with real sockets and threads in
/// production and a manual clock in tests.
///
/// ```swift
/// var machine = SubscriptionStateMachine(configuration: .init(qosInterval: .seconds(1)))
/// for action in machine.start(now: clock.now) { perform(action) }
/// let step = machine.poll(now: clock.now, tracks: statuses)
/// for action in step.actions { perform(action) }
/// // sleep (or wait for packets) until step.wake
/// ```
struct SubscriptionStateMachine {
    /// What the machine needs to know of the subscription's options.
    struct Configuration {
        /// How often a QoS sample is taken.
        var qosInterval: Duration = .seconds(1)
        /// How long nothing may render (with nothing queued) before the state turns `stalled`.
        var stallTimeout: Duration = .seconds(1)
        /// How long to play (nil: until stopped).
        var duration: Duration?
        /// Overrides to set and release at instants after the start.
        var overrides: [ScheduledOverride] = []
        /// Bandwidth limits to set and release at instants after the start.
        var bandwidthLimits: [ScheduledBandwidthLimit] = []
        /// How often the tracks' render status is looked at (the state follows within this)
        /// until the subscription plays; while it plays, the next look is the first after the
        /// newest render could turn into a stall (``stallTimeout`` after it), at least this
        /// apart: rendering is the only way out of playing that is not an event of its own.
        var stateCheckInterval: Duration = .milliseconds(20)
        /// Every SRTP packet failing authentication this many times, nothing received: a wrong key.
        var authenticationFailuresToFail = 50
        /// The first wait before a failed socket is bound again (doubling to ``reopenMaximum``).
        var socketReopenBackoff: Duration = .milliseconds(100)
        /// The first wait before a failed or ended libavformat URL is opened again.
        var inputReopenBackoff: Duration = .milliseconds(200)
        /// The longest wait between two reopens.
        var reopenMaximum: Duration = .seconds(5)
    }

    /// Something a driver reads, which the subscription reopens when it fails.
    enum Source: Hashable, Comparable {
        /// Socket `socket` of track `track` (its RTP or RTCP socket; ``Subscription/sockets``).
        case socket(track: Int, socket: Int)
        /// The libavformat input.
        case input
    }

    /// Where the subscription is in its life. Every decision reads this one value.
    enum Lifecycle: Equatable {
        /// Not started.
        case idle
        /// Receiving.
        case running
        /// Sources failed: each is reopened at its instant (`due`), or its reopen is under way
        /// (`underWay`); the state stays `connecting` until the last is back.
        case reopening(due: [Source: MonotonicInstant], underWay: Set<Source>)
        /// A file source reached its end: finishing once every track drained.
        case inputEnded
        /// ``stop()`` was called: the next poll finishes.
        case stopping
        /// The ``Action/finish`` action was returned.
        case finished
    }

    /// What one track reports to the machine.
    struct TrackStatus: Equatable {
        /// When it last rendered a frame.
        var lastRender: MonotonicInstant?
        /// Whether frames wait in its scheduler (a deliberate delay pause, not a stall).
        var hasQueuedFrames = false
        /// How long its rendering is held on purpose (delay increases since its last render).
        var delayPause: Duration = .zero
        /// Whether its playout loop waits with nothing left to render.
        var isDrained = false
        /// SRTP authentication failures, when nothing authenticated was received (else 0).
        var authenticationFailuresOnly = 0
        /// Where the track receives (for the failure message).
        var port: UInt16 = 0
        /// Its first packet, key frame and presented frame (the start-up's last steps).
        var startup = StartupTimeline.TrackMilestones()
        /// The range its sender asks for with the `playout-delay` extension (nil: none).
        var senderPlayoutDelay: ClosedRange<Duration>?
    }

    /// What the driver must do.
    enum Action: Equatable {
        /// Publish the new state.
        case publishState(SubscriberState)
        /// Take a QoS sample and publish it.
        case sampleQoS
        /// Set the scheduled override `index` (of ``Configuration/overrides``).
        case setOverride(index: Int)
        /// Release the scheduled override `index`.
        case releaseOverride(index: Int)
        /// Set the scheduled bandwidth limit `index` (of ``Configuration/bandwidthLimits``).
        case setBandwidthLimit(index: Int)
        /// Release the scheduled bandwidth limit `index`.
        case releaseBandwidthLimit(index: Int)
        /// Reopen `source`, then report ``reopened(_:now:)`` or ``reopenFailed(_:now:)``.
        case reopen(Source)
        /// The subscription is over: stop the threads, drain, publish the final sample.
        case finish
    }

    /// One poll's result: what to do now, and when to poll again at the latest.
    struct Step: Equatable {
        var actions: [Action]
        /// The next instant something is due (nil once finished).
        var wake: MonotonicInstant?
    }

    let configuration: Configuration
    /// The published state (what the driver last published).
    private(set) var state = SubscriberState.idle
    /// Where the subscription is in its life.
    private(set) var lifecycle = Lifecycle.idle
    private var start = MonotonicInstant.zero
    private var nextSample = MonotonicInstant.zero
    private var nextStateCheck = MonotonicInstant.zero
    private var overrides = OverrideTimetable([])
    private var socketBackoff: ReconnectBackoff
    private var inputBackoff: ReconnectBackoff
    /// Renders before this instant do not count (the source was reopened then).
    private var rendersSince: MonotonicInstant?

    init(configuration: Configuration) {
        self.configuration = configuration
        socketBackoff = ReconnectBackoff(initial: configuration.socketReopenBackoff, maximum: configuration.reopenMaximum)
        inputBackoff = ReconnectBackoff(initial: configuration.inputReopenBackoff, maximum: configuration.reopenMaximum)
    }

    /// Whether the ``Action/finish`` action was returned.
    var isFinished: Bool { lifecycle == .finished }

    /// Whether an event since the last poll wants a decision at once — a stop, a failure, a
    /// source that failed, was reopened or ended: the driver polls now, not at its next wake.
    var decidesAtOnce: Bool {
        guard !isFinished else { return false }
        if lifecycle == .stopping { return true }
        if case .failed = state { return true }
        return nextStateCheck == Self.atOnce
    }

    /// The next look at the tracks when an event asked for one at once.
    private static let atOnce = MonotonicInstant(nanoseconds: .min)

    /// The instant the subscription started.
    var startInstant: MonotonicInstant { start }

    /// `instant` + `duration`, saturating: a duration from code may be as large as `Duration`
    /// holds (the command line refuses more than 100 years), and an instant must not wrap.
    static func later(_ instant: MonotonicInstant, by duration: Duration) -> MonotonicInstant {
        let (sum, overflow) = instant.nanoseconds.addingReportingOverflow(duration.nanoseconds)
        return overflow ? MonotonicInstant(nanoseconds: duration > .zero ? .max : .min) : MonotonicInstant(nanoseconds: sum)
    }

    /// The subscription starts: opening sockets or the source.
    mutating func start(now: MonotonicInstant) -> [Action] {
        start = now
        nextSample = Self.later(now, by: configuration.qosInterval)
        nextStateCheck = now
        overrides = OverrideTimetable(configuration.overrides, bandwidthLimits: configuration.bandwidthLimits, start: now)
        if lifecycle == .idle { lifecycle = .running }
        return transition(to: .connecting)
    }

    /// The tracks are open (sockets bound, decoders ready): waiting for media.
    mutating func opened() -> [Action] {
        transition(to: .buffering)
    }

    /// The tracks could not be opened, or a thread could not start.
    mutating func failed(reason: String) -> [Action] {
        transition(to: .failed(reason: reason))
    }

    /// ``Subscriber/stop()`` was called (before the start too): the next poll finishes.
    mutating func stop() {
        guard lifecycle != .finished else { return }
        lifecycle = .stopping
    }

    /// A file source reached its end: the subscription finishes once every track drained.
    mutating func inputDidEnd() {
        if lifecycle == .running { lifecycle = .inputEnded }
        lookAtTracksAtOnce()
    }

    /// `source` failed at `now`: `connecting`, and a ``Action/reopen(_:)`` after the backoff (the
    /// returned instant; the first wait is the configured one, each next twice as long).
    mutating func sourceFailed(_ source: Source, now: MonotonicInstant) -> (actions: [Action], retryAt: MonotonicInstant?) {
        var (due, underWay): ([Source: MonotonicInstant], Set<Source>)
        switch lifecycle {
        case .running, .inputEnded: (due, underWay) = ([:], [])
        case .reopening(let scheduled, let pending): (due, underWay) = (scheduled, pending)
        case .idle, .stopping, .finished: return ([], nil)
        }
        let retry = source == .input ? inputBackoff.failed(now: now) : socketBackoff.failed(now: now)
        due[source] = retry.retryAt
        underWay.remove(source)
        lifecycle = .reopening(due: due, underWay: underWay)
        lookAtTracksAtOnce()
        return (transition(to: .connecting), retry.retryAt)
    }

    /// `source` was reopened at `now`: once every failed source is back, buffering until a frame
    /// renders again (renders from before do not count).
    mutating func reopened(_ source: Source, now: MonotonicInstant) -> [Action] {
        guard case .reopening(let due, var underWay) = lifecycle else { return [] }
        underWay.remove(source)
        guard due.isEmpty, underWay.isEmpty else {
            lifecycle = .reopening(due: due, underWay: underWay)
            return []
        }
        lifecycle = .running
        lookAtTracksAtOnce()
        rendersSince = now
        return transition(to: .buffering)
    }

    /// Reopening `source` failed at `now`: tried again after a longer wait.
    mutating func reopenFailed(_ source: Source, now: MonotonicInstant) -> (actions: [Action], retryAt: MonotonicInstant?) {
        sourceFailed(source, now: now)
    }

    /// Everything due at `now`: overrides, the state (from the tracks' status), the QoS sample,
    /// and the end.
    mutating func poll(now: MonotonicInstant, tracks: [TrackStatus]) -> Step {
        guard !isFinished else { return Step(actions: [], wake: nil) }
        var actions: [Action] = overrides.take(now: now)
        if now >= nextStateCheck || lifecycle == .stopping {
            actions += updateState(now: now, tracks: tracks)
            nextStateCheck = nextStateCheck(now: now, tracks: tracks)
        }
        let end = configuration.duration.map { Self.later(start, by: $0) }
        let drained = lifecycle == .inputEnded && tracks.allSatisfy(\.isDrained)
        let failed = if case .failed = state { true } else { false }
        if failed || lifecycle == .stopping || drained || end.map({ now >= $0 }) == true {
            lifecycle = .finished
            actions.append(.finish)
            return Step(actions: actions, wake: nil)
        }
        var nextReopen: MonotonicInstant?
        if case .reopening(var due, var underWay) = lifecycle {
            for (source, at) in due.sorted(by: { ($0.value, $0.key) < ($1.value, $1.key) }) {
                if at <= now {
                    due[source] = nil
                    underWay.insert(source)
                    actions.append(.reopen(source))
                } else {
                    nextReopen = min(nextReopen ?? at, at)
                }
            }
            lifecycle = .reopening(due: due, underWay: underWay)
        }
        if now >= nextSample {
            actions.append(.sampleQoS)
            nextSample = Self.later(nextSample, by: configuration.qosInterval)
            if nextSample <= now { nextSample = Self.later(now, by: configuration.qosInterval) }
        }
        var wake = min(nextSample, nextStateCheck)
        if let next = overrides.next { wake = min(wake, next) }
        if let end { wake = min(wake, end) }
        if let nextReopen { wake = min(wake, nextReopen) }
        return Step(actions: actions, wake: wake)
    }

    /// When to look at the tracks again after a look at `now`: a stateCheckInterval later, or
    /// — playing and running, the newest render within the stall timeout — the first instant
    /// that render is older than the timeout (every look before it finds playing again). A
    /// stop, a failure, a source that fails or a scheduled step come as events of their own.
    private func nextStateCheck(now: MonotonicInstant, tracks: [TrackStatus]) -> MonotonicInstant {
        let soonest = now.advanced(by: configuration.stateCheckInterval)
        guard state == .playing, lifecycle == .running,
              let lastRender = newestRender(tracks),
              lastRender.duration(to: now) <= configuration.stallTimeout
        else { return soonest }
        return max(soonest, Self.later(lastRender, by: configuration.stallTimeout + .nanoseconds(1)))
    }

    /// The lifecycle changed outside a poll: the next poll looks at the tracks (and from there
    /// every stateCheckInterval until the subscription plays again).
    private mutating func lookAtTracksAtOnce() {
        nextStateCheck = Self.atOnce
    }

    /// The tracks' newest render that counts (none from before a reopen).
    private func newestRender(_ tracks: [TrackStatus]) -> MonotonicInstant? {
        tracks.compactMap(\.lastRender).filter { $0 >= (rendersSince ?? $0) }.max()
    }

    /// The final state: ended unless failed.
    mutating func finalState() -> [Action] {
        if case .failed = state { return [] }
        return transition(to: .ended)
    }

    /// Playing / stalled / buffering from what the tracks rendered; failed when every datagram
    /// of a track fails SRTP authentication (a wrong key).
    private mutating func updateState(now: MonotonicInstant, tracks: [TrackStatus]) -> [Action] {
        if case .failed = state { return [] }
        if case .reopening = lifecycle { return [] }
        let lastRender = newestRender(tracks)
        if lastRender != nil {
            // Media flows: the next failure waits the first backoff again.
            socketBackoff.succeeded()
            inputBackoff.succeeded()
        }
        let next: SubscriberState
        if let lastRender {
            // Nothing rendered for a while is a stall only when nothing waits to be rendered
            // and no delay pause explains it: an override that raised the delay holds rendering
            // for the increase on purpose, even while a gap keeps the frames in the jitter buffer.
            // Frames queued after a stall are the stream coming back: buffering until one renders.
            let queued = tracks.contains { track in
                track.hasQueuedFrames
                    || track.lastRender.map { $0.duration(to: now) <= configuration.stallTimeout + track.delayPause } == true
            }
            if lastRender.duration(to: now) <= configuration.stallTimeout {
                next = .playing
            } else if !queued {
                next = .stalled
            } else {
                next = state == .stalled || state == .buffering ? .buffering : .playing
            }
        } else if let track = tracks.first(where: { $0.authenticationFailuresOnly >= configuration.authenticationFailuresToFail }) {
            next = .failed(reason: "every SRTP packet on port \(track.port) fails authentication (\(track.authenticationFailuresOnly) so far): wrong key?")
        } else {
            next = state == .connecting ? .connecting : .buffering
        }
        return transition(to: next)
    }

    private mutating func transition(to next: SubscriberState) -> [Action] {
        guard next != state else { return [] }
        if case .failed = state { return [] }  // failed is final
        if state == .ended { return [] }
        state = next
        return [.publishState(next)]
    }
}

/// Scheduled overrides and bandwidth limits in time order, sans-IO: says which to set and which
/// to release at `now`.
struct OverrideTimetable {
    private var steps: [(at: MonotonicInstant, index: Int, set: Bool, limit: Bool)]

    /// The timetable of `planned` overrides and `bandwidthLimits`, counted from `start`.
    init(_ planned: [ScheduledOverride], bandwidthLimits: [ScheduledBandwidthLimit] = [], start: MonotonicInstant = .zero) {
        func entries(_ times: [(at: Duration, hold: Duration?)], limit: Bool) -> [(at: MonotonicInstant, index: Int, set: Bool, limit: Bool)] {
            times.enumerated().flatMap { index, time in
                [(start.advanced(by: time.at), index, true, limit)] + (time.hold.map { [(start.advanced(by: time.at + $0), index, false, limit)] } ?? [])
            }
        }
        // At one instant, sets go before releases: a new override takes over before an older one
        // lets go (no brief return to the configured delay), and `D@T/0s` sets then releases.
        steps = (entries(planned.map { ($0.at, $0.hold) }, limit: false) + entries(bandwidthLimits.map { ($0.at, $0.hold) }, limit: true))
            .sorted { ($0.at, $0.set ? 0 : 1, $0.limit ? 1 : 0, $0.index) < ($1.at, $1.set ? 0 : 1, $1.limit ? 1 : 0, $1.index) }
    }

    /// When the next step is due.
    var next: MonotonicInstant? { steps.first?.at }

    /// The steps due at `now`, in order.
    mutating func take(now: MonotonicInstant) -> [SubscriptionStateMachine.Action] {
        var actions: [SubscriptionStateMachine.Action] = []
        while let step = steps.first, step.at <= now {
            steps.removeFirst()
            switch (step.limit, step.set) {
            case (false, true): actions.append(.setOverride(index: step.index))
            case (false, false): actions.append(.releaseOverride(index: step.index))
            case (true, true): actions.append(.setBandwidthLimit(index: step.index))
            case (true, false): actions.append(.releaseBandwidthLimit(index: step.index))
            }
        }
        return actions
    }
}

/// Reopening with backoff, for anything that fails and is tried again (a socket, a libavformat
/// input): the first retry after ``initial``, each next one twice as late, at most ``maximum``;
/// a success starts over.
struct ReconnectBackoff: Equatable {
    var initial: Duration
    var maximum: Duration = .seconds(5)
    private var current: Duration

    init(initial: Duration, maximum: Duration = .seconds(5)) {
        self.initial = initial
        self.maximum = maximum
        current = initial
    }

    /// A failure at `now`: the instant to try again, and how long that is.
    mutating func failed(now: MonotonicInstant) -> (retryAt: MonotonicInstant, after: Duration) {
        let wait = current
        current = min(current * 2, maximum)
        return (now.advanced(by: wait), wait)
    }

    /// Data flowed again: the next failure waits ``initial``.
    mutating func succeeded() {
        current = initial
    }
}
