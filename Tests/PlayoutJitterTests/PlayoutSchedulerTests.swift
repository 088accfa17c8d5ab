import PlayoutCore
import PlayoutJitter
import PlayoutTesting
import Testing

/// One simulated frame: its index, media time and whether it is a key frame.
struct SimFrame: Equatable {
    var index: Int
    var media: Duration
    var isKeyframe: Bool
}

/// A live sender and a subscriber's scheduler on one simulated timeline, stepped event by event
/// (arrivals and the instants the scheduler asks to be woken at) — no clock is read, nothing
/// sleeps.
struct Simulation {
    let interval: Duration
    let gop: Int
    let transit: Duration
    var timeline = PlayoutTimeline()
    var scheduler: PlayoutScheduler<SimFrame>
    var now = MonotonicInstant(nanoseconds: 1_000_000_000)
    var nextFrame = 0
    let start: MonotonicInstant
    var renders: [(frame: SimFrame, at: MonotonicInstant)] = []
    var skips: [(frame: SimFrame, mode: PlayoutScheduler<SimFrame>.SkipMode)] = []
    /// Frames not sent (a network stall) by index.
    var withheld: Set<Int> = []

    init(delay: Duration, interval: Duration = .nanoseconds(33_333_333), gop: Int = 30, transit: Duration = .milliseconds(10)) {
        self.interval = interval
        self.gop = gop
        self.transit = transit
        scheduler = PlayoutScheduler(delay: delay)
        start = now
    }

    func arrival(of index: Int) -> MonotonicInstant {
        start.advanced(by: interval * index + transit)
    }

    /// Runs until `end`, handling arrivals and polls in time order.
    mutating func run(until end: MonotonicInstant) {
        while true {
            var wake: MonotonicInstant?
            loop: while true {
                switch scheduler.poll(now: now, timeline: timeline) {
                case .render(let frame, let at): renders.append((frame, at))
                case .skip(let frame, let mode): skips.append((frame, mode))
                case .wait(let instant): wake = instant; break loop
                case .idle: break loop
                }
            }
            let nextArrival = arrival(of: nextFrame)
            let next = min(wake ?? nextArrival, nextArrival)
            guard next <= end else {
                now = end
                return
            }
            now = max(now, next)
            while arrival(of: nextFrame) <= now {
                let frame = SimFrame(index: nextFrame, media: interval * nextFrame, isKeyframe: nextFrame % gop == 0)
                if !withheld.contains(nextFrame) {
                    timeline.observe(mediaTime: frame.media, arrival: arrival(of: nextFrame))
                    scheduler.enqueue(frame, mediaTime: frame.media, isKeyframe: frame.isKeyframe, byteCount: 10_000, arrival: arrival(of: nextFrame))
                }
                nextFrame += 1
            }
        }
    }

    mutating func run(for duration: Duration) {
        run(until: now.advanced(by: duration))
    }

    /// The largest gap between consecutive renders.
    var largestRenderGap: Duration {
        zip(renders, renders.dropFirst()).map { $0.at.duration(to: $1.at) }.max() ?? .zero
    }

    /// Whether every decoded frame (rendered or decoded without render) has its references: after
    /// a dropped frame, decoding resumes only at a key frame, and frames go in order.
    var decoderStaysConsistent: Bool {
        var events: [(index: Int, decoded: Bool, isKeyframe: Bool)] = renders.map { ($0.frame.index, true, $0.frame.isKeyframe) }
        events += skips.map { ($0.frame.index, $0.mode == .decodeWithoutRender, $0.frame.isKeyframe) }
        events.sort { $0.index < $1.index }
        var chainIntact = false
        var previous = -1
        for event in events {
            if event.index != previous + 1 { chainIntact = false }  // a frame never reached the decoder
            previous = event.index
            if event.isKeyframe, event.decoded { chainIntact = true }
            if event.decoded, !chainIntact { return false }
            if !event.decoded { chainIntact = false }
        }
        return true
    }
}

@Suite("Playout scheduler: pause on increase, skip on decrease")
struct PlayoutSchedulerTests {
    let frame: Duration = .nanoseconds(33_333_333)

    @Test("frames render at local arrival time + delay, one frame interval apart")
    func steadyState() {
        var simulation = Simulation(delay: .milliseconds(230))
        simulation.run(for: .seconds(5))
        #expect(simulation.renders.count >= 140)
        let first = simulation.renders[0]
        #expect(first.at == simulation.arrival(of: 0).advanced(by: .milliseconds(230)), "the first frame's own arrival sets the path")
        #expect(simulation.largestRenderGap <= frame + .nanoseconds(1))
        #expect(simulation.skips.isEmpty)
        #expect(simulation.scheduler.statistics.freezeCount == 0)
    }

    @Test("a restart drops the queued frames of the old timeline; the new stream's first gap is no freeze")
    func restartDiscardsQueue() {
        var simulation = Simulation(delay: .milliseconds(500))
        simulation.run(for: .seconds(2))
        let queued = simulation.scheduler.statistics.bufferedFrames
        #expect(queued >= 14, "about 500 ms of frames wait")
        var handedBack: [Int] = []
        simulation.scheduler.discardQueued { handedBack.append($0.index) }
        #expect(handedBack.count == queued)
        #expect(handedBack == handedBack.sorted(), "in order")
        #expect(simulation.scheduler.statistics.framesDroppedOnRestart == queued)
        #expect(simulation.scheduler.statistics.bufferedFrames == 0 && simulation.scheduler.statistics.bufferedBytes == 0)
        guard case .idle = simulation.scheduler.poll(now: simulation.now, timeline: simulation.timeline) else {
            Issue.record("the queue is empty after a restart")
            return
        }
        // The new stream: a fresh timeline, frames from 0 again after a 3 s silence.
        simulation.timeline.reset()
        let rendered = simulation.renders.count
        simulation.withheld = Set(simulation.nextFrame..<(simulation.nextFrame + 90))
        simulation.run(for: .seconds(5))
        #expect(simulation.renders.count >= rendered + 44, "the 2 s sent after the silence, less the 500 ms still held")
        #expect(simulation.scheduler.statistics.freezeCount == 0)
        #expect(simulation.scheduler.statistics.pauseCount == 0)
    }

    @Test("a longer lead releases the frames due within it at once, with their own render times; lateness is still judged at now")
    func decodeAheadLead() {
        var simulation = Simulation(delay: .milliseconds(500))
        simulation.run(for: .seconds(2))
        let now = simulation.now
        let lead = Duration.milliseconds(150)
        var released: [(frame: SimFrame, at: MonotonicInstant)] = []
        var wake: MonotonicInstant?
        loop: while true {
            switch simulation.scheduler.poll(now: now, timeline: simulation.timeline, lead: lead) {
            case .render(let frame, let at): released.append((frame, at))
            case .wait(let instant): wake = instant; break loop
            case .skip, .idle: break loop
            }
        }
        // At 30 fps, the 150 ms ahead hold four or five frames, each to be shown at its own time.
        #expect((4...5).contains(released.count), "\(released.count) released")
        #expect(released.allSatisfy { $0.at > now && $0.at <= now.advanced(by: lead) })
        for index in released.indices.dropFirst() {
            let gap = released[index - 1].at.duration(to: released[index].at)
            #expect(abs(gap.seconds - 1.0 / 30) < 0.001, "one frame interval apart")
        }
        #expect(simulation.scheduler.statistics.framesSkipped == 0)
        // The next frame is released `lead` before it is due; with the default lead, 20 ms before.
        let next = simulation.scheduler.renderTime(for: simulation.interval * (released.last!.frame.index + 1), timeline: simulation.timeline)
        #expect(wake == next.advanced(by: .zero - lead))
        guard case .wait(let instant) = simulation.scheduler.poll(now: now, timeline: simulation.timeline) else {
            Issue.record("nothing else is due within the default lead")
            return
        }
        #expect(instant == next.advanced(by: .milliseconds(-20)))
    }

    @Test("1 s → 5 s gives a render gap of 4 s ± one frame interval, counted as a delay pause")
    func increasePauses() {
        var simulation = Simulation(delay: .seconds(1))
        simulation.run(for: .seconds(10))
        simulation.scheduler.setDelay(.seconds(5))
        simulation.run(for: .seconds(10))
        let gap = simulation.largestRenderGap
        #expect(gap >= .seconds(4) - frame && gap <= .seconds(4) + frame, "gap \(gap.compactDescription)")
        let statistics = simulation.scheduler.statistics
        #expect(statistics.delayPauseCount == 1)
        #expect(abs((statistics.totalDelayPausesDuration - .seconds(4)).seconds) <= frame.seconds)
        #expect(statistics.freezeCount == 0 && statistics.pauseCount == 0, "a pause the user asked for is not a freeze")
        #expect(simulation.skips.isEmpty)
        // After the pause, the normal rate again.
        let tail = simulation.renders.suffix(60)
        #expect(zip(tail, tail.dropFirst()).allSatisfy { $0.at.duration(to: $1.at) <= frame + .nanoseconds(1) })
    }

    @Test("5 s → 1 s skips 4 s of media ± one frame interval, and the decoder stays consistent")
    func decreaseSkips() {
        var simulation = Simulation(delay: .seconds(5))
        simulation.run(for: .seconds(12))
        simulation.scheduler.setDelay(.seconds(1))
        simulation.run(for: .seconds(5))
        let statistics = simulation.scheduler.statistics
        #expect(abs((statistics.totalSkippedDuration - .seconds(4)).seconds) <= frame.seconds, "\(statistics.totalSkippedDuration.compactDescription)")
        #expect(statistics.framesSkipped == simulation.skips.count)
        #expect(statistics.delayPauseCount == 0)
        #expect(simulation.decoderStaysConsistent)
        #expect(statistics.framesDroppedToKeyFrame > 0, "frames before a key frame among the skipped need no decoding")
        #expect(simulation.largestRenderGap <= frame * 2, "no pause on a decrease")
    }

    @Test("a decrease during a pause ends it early and skips what is late: pause − skip = final − initial")
    func composed() {
        var simulation = Simulation(delay: .seconds(1))
        simulation.run(for: .seconds(5))
        simulation.scheduler.setDelay(.seconds(5))
        simulation.run(for: .seconds(2))
        simulation.scheduler.setDelay(.seconds(1))
        simulation.run(for: .seconds(5))
        let statistics = simulation.scheduler.statistics
        let balance = statistics.totalDelayPausesDuration - statistics.totalSkippedDuration
        #expect(abs(balance.seconds) <= 0.002, "pause \(statistics.totalDelayPausesDuration.compactDescription) − skip \(statistics.totalSkippedDuration.compactDescription)")
        #expect(simulation.largestRenderGap <= .seconds(2) + frame)
        #expect(simulation.decoderStaysConsistent)
    }

    @Test("any sequence of changes: total pause − total skip = final delay − initial delay", arguments: [1, 2, 3, 4, 5])
    func randomSequences(seed: Int) {
        var random = SeededRandomNumberGenerator(seed: UInt64(seed))
        let initial = Duration.milliseconds(Int64.random(in: 100...3_000, using: &random))
        var simulation = Simulation(delay: initial)
        simulation.run(for: .seconds(8))
        var delay = initial
        for _ in 0..<6 {
            delay = .milliseconds(Int64.random(in: 100...6_000, using: &random))
            simulation.scheduler.setDelay(delay)
            simulation.run(for: .milliseconds(Int64.random(in: 200...7_000, using: &random)))
        }
        simulation.run(for: .seconds(8))
        let statistics = simulation.scheduler.statistics
        let balance = statistics.totalDelayPausesDuration - statistics.totalSkippedDuration
        let expected = delay - initial
        #expect(abs((balance - expected).seconds) <= 0.002,
                "pause − skip = \(balance.compactDescription), final − initial = \(expected.compactDescription)")
        #expect(simulation.decoderStaysConsistent)
    }

    @Test("audio and video move together")
    func audioAndVideoTogether() {
        var video = Simulation(delay: .seconds(1))
        var audio = Simulation(delay: .seconds(1), interval: .milliseconds(20), gop: 1)
        video.run(for: .seconds(5))
        audio.run(for: .seconds(5))
        video.scheduler.setDelay(.seconds(3))
        audio.scheduler.setDelay(.seconds(3))
        video.run(for: .seconds(5))
        audio.run(for: .seconds(5))
        #expect(abs((video.scheduler.statistics.totalDelayPausesDuration - .seconds(2)).seconds) <= 0.034)
        #expect(abs((audio.scheduler.statistics.totalDelayPausesDuration - .seconds(2)).seconds) <= 0.021)
    }

    @Test("jitterBufferDelay and jitterBufferTargetDelay tell the truth under an override")
    func bufferDelayUnderOverride() {
        var simulation = Simulation(delay: .milliseconds(230))
        simulation.run(for: .seconds(5))
        let before = simulation.scheduler.statistics
        simulation.scheduler.setDelay(.seconds(5))
        simulation.run(for: .seconds(20))
        let after = simulation.scheduler.statistics
        let emitted = after.jitterBufferEmittedCount - before.jitterBufferEmittedCount
        let meanDelay = (after.jitterBufferDelay - before.jitterBufferDelay).seconds / Double(emitted)
        let meanTarget = (after.jitterBufferTargetDelay - before.jitterBufferTargetDelay).seconds / Double(emitted)
        #expect(abs(meanTarget - 5) < 0.001)
        #expect(meanDelay > 4.9 && meanDelay < 5.1, "a 5 s override reads ≈ 5 s, not \(meanDelay) s")
        #expect(before.jitterBufferDelay.seconds / Double(before.jitterBufferEmittedCount) < 0.25)
        #expect(after.bufferedDuration > .milliseconds(4_900), "5 s of media waits in the buffer")
    }

    @Test("a stall in the network is a W3C freeze, not a delay pause; a long one is a pause")
    func freezesAndPauses() {
        var simulation = Simulation(delay: .milliseconds(230))
        simulation.withheld = Set(150..<165)  // 500 ms of frames never arrive
        simulation.withheld.formUnion(300..<500)  // 6.7 s of frames never arrive
        simulation.run(for: .seconds(20))
        let statistics = simulation.scheduler.statistics
        #expect(statistics.freezeCount == 1)
        #expect(abs((statistics.totalFreezesDuration - .milliseconds(533)).seconds) <= frame.seconds)
        #expect(statistics.pauseCount == 1)
        #expect(statistics.delayPauseCount == 0)
    }

    @Test("memory is bounded: beyond maximumBytes the oldest frames are dropped and counted")
    func bounded() {
        var scheduler = PlayoutScheduler<Int>(delay: .seconds(10), configuration: .init(maximumBytes: 100_000))
        for index in 0..<1_000 {
            scheduler.enqueue(index, mediaTime: .milliseconds(Int64(index) * 33), isKeyframe: false, byteCount: 1_000, arrival: .zero)
        }
        #expect(scheduler.statistics.bufferedBytes <= 100_000)
        #expect(scheduler.statistics.bufferedFrames == 100)
        #expect(scheduler.statistics.framesDroppedOverflow == 900)
    }
}

@Suite("PlayoutScheduler: late frames")
struct PlayoutSchedulerLateTests {
    @Test("a frame complete after its render time, with no delay change, is late: not a skip, no skipped duration")
    func lateIsNotASkip() {
        var scheduler = PlayoutScheduler<Int>(delay: .milliseconds(100))
        var timeline = PlayoutTimeline()
        var actions: [PlayoutScheduler<Int>.Action] = []
        func poll(at now: MonotonicInstant) {
            while true {
                let action = scheduler.poll(now: now, timeline: timeline, lead: .zero)
                switch action {
                case .wait, .idle: return
                default: actions.append(action)
                }
            }
        }
        // Frame 0 (media 0) arrives at 1 s: due at 1.1 s, rendered.
        timeline.observe(mediaTime: .zero, arrival: ms(1_000))
        scheduler.enqueue(0, mediaTime: .zero, isKeyframe: true, byteCount: 10, arrival: ms(1_000))
        poll(at: ms(1_100))
        // Frame 1 (media 33 ms, due 1.133 s) is complete only at 1.5 s: late.
        scheduler.enqueue(1, mediaTime: .milliseconds(33), isKeyframe: false, byteCount: 10, arrival: ms(1_500))
        poll(at: ms(1_500))
        #expect(actions.count == 2)
        let statistics = scheduler.statistics
        #expect(statistics.framesLate == 1 && statistics.framesSkipped == 0 && statistics.totalSkippedDuration == .zero)
        // A decrease that makes the next frames late skips them, with the media it jumped.
        for index in 2..<10 {
            timeline.observe(mediaTime: .milliseconds(Int64(index) * 33), arrival: ms(1_000 + Double(index) * 33))
            scheduler.enqueue(index, mediaTime: .milliseconds(Int64(index) * 33), isKeyframe: index == 5, byteCount: 10, arrival: ms(1_000 + Double(index) * 33))
        }
        scheduler.setDelay(.zero)
        poll(at: ms(1_600))
        // The next frame on time renders: the jump is measured against it.
        timeline.observe(mediaTime: .milliseconds(800), arrival: ms(1_800))
        scheduler.enqueue(10, mediaTime: .milliseconds(800), isKeyframe: true, byteCount: 10, arrival: ms(1_800))
        poll(at: ms(1_800))
        let after = scheduler.statistics
        #expect(after.framesLate == 1 && after.framesSkipped == 8, "\(after)")
        #expect(after.totalSkippedDuration == .milliseconds(100), "the 100 ms decrease: \(after.totalSkippedDuration)")
    }
}


@Suite("PlayoutScheduler: discarding up to a key frame")
struct PlayoutSchedulerKeyframeDiscardTests {
    @Test("frames before the first queued key frame are handed back; the key frame and what follows stay queued")
    func discardsUntilKeyframe() {
        var scheduler = PlayoutScheduler<Int>(delay: .milliseconds(100))
        let arrival = MonotonicInstant.zero
        for index in 0..<6 {
            scheduler.enqueue(index, mediaTime: .milliseconds(33 * index), isKeyframe: index == 3, byteCount: 10, arrival: arrival)
        }
        var handedBack: [Int] = []
        let result = scheduler.discardUntilKeyframe { handedBack.append($0) }
        #expect(result.discarded == 3 && result.keyframeQueued)
        #expect(handedBack == [0, 1, 2])
        #expect(scheduler.statistics.bufferedFrames == 3 && scheduler.statistics.bufferedBytes == 30)
        // Nothing before a key frame any more: nothing to discard.
        #expect(scheduler.discardUntilKeyframe().discarded == 0)
    }

    @Test("without a queued key frame everything is discarded and none is queued")
    func discardsEverythingWithoutKeyframe() {
        var scheduler = PlayoutScheduler<Int>(delay: .milliseconds(100))
        for index in 0..<4 {
            scheduler.enqueue(index, mediaTime: .milliseconds(33 * index), isKeyframe: false, byteCount: 10, arrival: .zero)
        }
        let result = scheduler.discardUntilKeyframe()
        #expect(result.discarded == 4 && !result.keyframeQueued)
        #expect(scheduler.statistics.bufferedFrames == 0)
        guard case .idle = scheduler.poll(now: .zero, timeline: PlayoutTimeline()) else {
            Issue.record("nothing may be queued")
            return
        }
    }
}
