@testable import Playout
import PlayoutCore
import PlayoutTelemetry
import Testing

/// The subscription's decisions as plain values: events and instants in, actions out.
@Suite("Subscription state machine")
struct SubscriptionStateMachineTests {
    typealias Machine = SubscriptionStateMachine
    static let t0 = MonotonicInstant(nanoseconds: 5_000_000_000)

    static func at(_ milliseconds: Int) -> MonotonicInstant { t0.advanced(by: .milliseconds(milliseconds)) }

    static func started(_ configuration: Machine.Configuration = .init()) -> Machine {
        var machine = Machine(configuration: configuration)
        #expect(machine.start(now: t0) == [.publishState(.connecting)])
        #expect(machine.opened() == [.publishState(.buffering)])
        return machine
    }

    @Test("QoS samples at exact multiples of the interval; a late poll takes one sample, not a backlog")
    func samplingSchedule() {
        var machine = Self.started(.init(qosInterval: .milliseconds(250)))
        var sampledAt: [Int] = []
        for milliseconds in stride(from: 0, through: 1_000, by: 10) where machine.poll(now: Self.at(milliseconds), tracks: []).actions.contains(.sampleQoS) {
            sampledAt.append(milliseconds)
        }
        #expect(sampledAt == [250, 500, 750, 1_000])
        // Late by 3 intervals: one sample, and the next one interval later.
        #expect(machine.poll(now: Self.at(2_000), tracks: []).actions.filter { $0 == .sampleQoS }.count == 1)
        #expect(machine.poll(now: Self.at(2_100), tracks: []).wake == Self.at(2_120), "the next state check comes first")
        #expect(!machine.poll(now: Self.at(2_249), tracks: []).actions.contains(.sampleQoS))
        #expect(machine.poll(now: Self.at(2_250), tracks: []).actions.contains(.sampleQoS))
    }

    @Test("playing after a render; stalled only when nothing rendered for the timeout and nothing is queued")
    func stallVersusDelayPause() {
        var machine = Self.started(.init(qosInterval: .seconds(60), stallTimeout: .seconds(1)))
        let rendered = Machine.TrackStatus(lastRender: Self.at(100))
        #expect(machine.poll(now: Self.at(100), tracks: [rendered]).actions == [.publishState(.playing)])
        // 1.5 s later with frames queued (an override raised the delay): still playing.
        var paused = rendered
        paused.hasQueuedFrames = true
        #expect(machine.poll(now: Self.at(1_600), tracks: [paused]).actions.isEmpty)
        #expect(machine.poll(now: Self.at(1_620), tracks: [rendered]).actions == [.publishState(.stalled)])
        // The stream comes back: frames queued after a stall are buffering until one renders.
        #expect(machine.poll(now: Self.at(1_640), tracks: [paused]).actions == [.publishState(.buffering)])
        #expect(machine.poll(now: Self.at(1_660), tracks: [Machine.TrackStatus(lastRender: Self.at(1_650))]).actions == [.publishState(.playing)])
    }

    @Test("playing, the tracks are looked at next when the newest render could turn into a stall, not every 20 ms; a lifecycle event brings the look back at once")
    func lookWhilePlaying() {
        var machine = Self.started(.init(qosInterval: .seconds(60), stallTimeout: .seconds(1)))
        let step = machine.poll(now: Self.at(100), tracks: [Machine.TrackStatus(lastRender: Self.at(100))])
        let stale = Self.at(1_100).advanced(by: .nanoseconds(1))
        #expect(step == .init(actions: [.publishState(.playing)], wake: stale), "one look, at the instant the render is over a second old")
        // A poll before then (another part's turn) does not look: tracks that would say buffering go unread.
        #expect(machine.poll(now: Self.at(600), tracks: [Machine.TrackStatus()]) == .init(actions: [], wake: stale))
        // Rendering went on: that look finds a newer render and waits for it to go stale in turn.
        let next = Machine.TrackStatus(lastRender: Self.at(1_090))
        #expect(machine.poll(now: stale, tracks: [next]) == .init(actions: [], wake: Self.at(2_090).advanced(by: .nanoseconds(1))))
        // The input ended: the driver is woken, the next poll looks at once, then every 20 ms
        // until the tracks drained.
        #expect(!machine.decidesAtOnce, "nothing happened since the look")
        machine.inputDidEnd()
        #expect(machine.decidesAtOnce)
        #expect(machine.poll(now: Self.at(1_200), tracks: [next]) == .init(actions: [], wake: Self.at(1_220)))
        #expect(!machine.decidesAtOnce, "that poll looked")
        var drained = next
        drained.isDrained = true
        #expect(machine.poll(now: Self.at(1_220), tracks: [drained]).actions == [.finish])
    }

    @Test("a delay pause is no stall while it lasts, though loss keeps its frames in the jitter buffer; past it, a stall")
    func delayPauseWithNothingQueued() {
        var machine = Self.started(.init(qosInterval: .seconds(60), stallTimeout: .seconds(1)))
        var held = Machine.TrackStatus(lastRender: Self.at(100))
        #expect(machine.poll(now: Self.at(100), tracks: [held]).actions == [.publishState(.playing)])
        // A 2 s increase, nothing in the scheduler: rendering is held on purpose for 2 s (+ the stall timeout).
        held.delayPause = .seconds(2)
        #expect(machine.poll(now: Self.at(3_000), tracks: [held]).actions.isEmpty)
        #expect(machine.poll(now: Self.at(3_100), tracks: [held]).actions.isEmpty)
        #expect(machine.poll(now: Self.at(3_120), tracks: [held]).actions == [.publishState(.stalled)])
    }

    @Test("the end: at the duration, on stop, or when an ended input drained; then nothing more")
    func ends() {
        var timed = Self.started(.init(duration: .seconds(2)))
        #expect(timed.poll(now: Self.at(1_990), tracks: []).wake == Self.at(2_000))
        #expect(timed.poll(now: Self.at(2_000), tracks: []) == .init(actions: [.finish], wake: nil))
        #expect(timed.poll(now: Self.at(3_000), tracks: []) == .init(actions: [], wake: nil))
        #expect(timed.finalState() == [.publishState(.ended)])

        var stopped = Self.started()
        _ = stopped.poll(now: Self.at(0), tracks: [])
        #expect(!stopped.decidesAtOnce)
        stopped.stop()
        #expect(stopped.decidesAtOnce)
        #expect(stopped.poll(now: Self.at(5), tracks: []).actions == [.finish])
        #expect(!stopped.decidesAtOnce, "finished: nothing more to decide")

        var file = Self.started()
        file.inputDidEnd()
        var busy = Machine.TrackStatus(lastRender: Self.at(100))
        #expect(!file.poll(now: Self.at(100), tracks: [busy]).actions.contains(.finish), "frames still to render")
        busy.isDrained = true
        #expect(file.poll(now: Self.at(200), tracks: [busy]).actions.contains(.finish))
    }

    @Test("durations as large as Duration holds never wrap the end or the sampling instant")
    func hugeDurations() {
        var machine = Self.started(.init(qosInterval: .seconds(Int64.max / 2), duration: .seconds(Int64.max / 2)))
        let step = machine.poll(now: Self.at(1_000), tracks: [])
        #expect(!step.actions.contains(.finish) && !step.actions.contains(.sampleQoS))
        #expect(step.wake == Self.at(1_020))
    }

    @Test("a failure from outside the polls (a thread that did not start) wakes the driver, and the next poll finishes")
    func failedOutsideAPoll() {
        var machine = Self.started()
        _ = machine.poll(now: Self.at(0), tracks: [])
        #expect(machine.failed(reason: "no thread") == [.publishState(.failed(reason: "no thread"))])
        #expect(machine.decidesAtOnce)
        #expect(machine.poll(now: Self.at(1), tracks: []).actions == [.finish])
        #expect(!machine.decidesAtOnce)
    }

    @Test("every SRTP packet failing authentication fails the subscription, once, and finishes it")
    func wrongKey() {
        var machine = Self.started()
        let failing = Machine.TrackStatus(authenticationFailuresOnly: 50, port: 5_004)
        let step = machine.poll(now: Self.at(500), tracks: [failing])
        guard case .publishState(.failed(let reason)) = step.actions.first else {
            Issue.record("\(step)")
            return
        }
        #expect(reason.contains("port 5004") && reason.contains("wrong key"))
        #expect(step.actions.last == .finish && step.wake == nil)
        #expect(machine.finalState().isEmpty, "failed stays failed")
    }

    @Test("a lost source is connecting until restored, whatever the tracks say; then buffering")
    func reconnecting() {
        var machine = Self.started()
        let socket = Machine.Source.socket(track: 0, socket: 1)
        let failed = machine.sourceFailed(socket, now: Self.at(50))
        #expect(failed.actions == [.publishState(.connecting)] && failed.retryAt == Self.at(150))
        #expect(machine.decidesAtOnce, "the driver learns of the reopen's instant now")
        let waiting = machine.poll(now: Self.at(100), tracks: [Machine.TrackStatus(lastRender: Self.at(90))])
        #expect(waiting.actions.isEmpty && waiting.wake == Self.at(120), "the next state check, before the reopen at 150")
        #expect(machine.poll(now: Self.at(150), tracks: []).actions == [.reopen(socket)])
        #expect(machine.poll(now: Self.at(160), tracks: []).actions.isEmpty, "a reopen is asked for once")
        #expect(!machine.decidesAtOnce)
        #expect(machine.reopened(socket, now: Self.at(170)) == [.publishState(.buffering)])
        #expect(machine.lifecycle == .running && machine.decidesAtOnce)
        #expect(machine.poll(now: Self.at(200), tracks: [Machine.TrackStatus(lastRender: Self.at(90))]).actions.isEmpty, "a render from before the reopen")
        #expect(machine.poll(now: Self.at(220), tracks: [Machine.TrackStatus(lastRender: Self.at(210))]).actions == [.publishState(.playing)])
    }

    @Test("reopening: each failure of a reopen doubles the wait, two sources come back before buffering, media flowing starts the backoff over")
    func reopenBackoff() {
        var machine = Self.started(.init(socketReopenBackoff: .milliseconds(100), inputReopenBackoff: .milliseconds(200), reopenMaximum: .milliseconds(400)))
        let rtp = Machine.Source.socket(track: 0, socket: 0)
        let rtcp = Machine.Source.socket(track: 0, socket: 1)
        #expect(machine.sourceFailed(rtp, now: Self.at(0)).retryAt == Self.at(100))
        #expect(machine.sourceFailed(rtcp, now: Self.at(10)).retryAt == Self.at(210), "the second failure waits twice as long")
        #expect(machine.poll(now: Self.at(100), tracks: []).actions == [.reopen(rtp)])
        #expect(machine.reopenFailed(rtp, now: Self.at(105)).retryAt == Self.at(505), "at most the maximum")
        #expect(machine.poll(now: Self.at(210), tracks: []).actions == [.reopen(rtcp)])
        #expect(machine.reopened(rtcp, now: Self.at(215)).isEmpty, "the other socket is still down: connecting")
        #expect(machine.poll(now: Self.at(505), tracks: []).actions == [.reopen(rtp)])
        #expect(machine.reopened(rtp, now: Self.at(510)) == [.publishState(.buffering)])
        #expect(machine.poll(now: Self.at(600), tracks: [Machine.TrackStatus(lastRender: Self.at(590))]).actions == [.publishState(.playing)])
        #expect(machine.sourceFailed(rtp, now: Self.at(700)).retryAt == Self.at(800), "rendering again started the backoff over")
        #expect(machine.sourceFailed(.input, now: Self.at(700)).retryAt == Self.at(900), "the input has its own first wait")
    }

    @Test("stop: once, in the machine — before the start, while reopening, or after an input ended; nothing reopens after it")
    func stopping() {
        var early = Machine(configuration: .init())
        early.stop()
        _ = early.start(now: Self.t0)
        #expect(early.poll(now: Self.t0, tracks: []).actions.last == .finish, "a stop before the start ends the first poll")

        var machine = Self.started()
        _ = machine.sourceFailed(.input, now: Self.at(0))
        machine.stop()
        let step = machine.poll(now: Self.at(500), tracks: [])
        #expect(step.actions == [.finish] && step.wake == nil && machine.lifecycle == .finished, "\(step)")
        #expect(machine.sourceFailed(.input, now: Self.at(600)).actions.isEmpty, "nothing reopens once finished")

        var file = Self.started()
        file.inputDidEnd()
        #expect(file.lifecycle == .inputEnded)
        file.stop()
        #expect(file.poll(now: Self.at(10), tracks: [Machine.TrackStatus(isDrained: false)]).actions.last == .finish, "stop does not wait for the drain")
    }

    @Test("scheduled overrides come out as actions at their instants, and bound the next wake")
    func overrides() {
        var machine = Self.started(.init(overrides: [ScheduledOverride(delay: .seconds(2), at: .milliseconds(1_005), hold: .milliseconds(500))]))
        #expect(machine.poll(now: Self.at(1_000), tracks: []).wake == Self.at(1_005))
        #expect(machine.poll(now: Self.at(1_005), tracks: []).actions == [.setOverride(index: 0)])
        #expect(machine.poll(now: Self.at(1_505), tracks: []).actions == [.releaseOverride(index: 0)])
    }

    @Test("backoff doubles from its start to its cap, and starts over after a success")
    func backoff() {
        var backoff = ReconnectBackoff(initial: .milliseconds(100), maximum: .seconds(1))
        var now = Self.t0
        var waits: [Duration] = []
        for _ in 0..<6 {
            let retry = backoff.failed(now: now)
            waits.append(retry.after)
            #expect(retry.retryAt == now.advanced(by: retry.after))
            now = retry.retryAt
        }
        #expect(waits == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1)])
        backoff.succeeded()
        #expect(backoff.failed(now: now).after == .milliseconds(100))
    }
}
