import Foundation
import PlayoutCore
import PlayoutJitter
import PlayoutTesting
import Testing

@Suite("Media time → local time along the fastest path, with drift")
struct PlayoutTimelineTests {
    /// Simulates a 30 fps sender whose media clock runs `ppm` parts per million off ours, over a
    /// path of 20 ms base delay plus up to 15 ms random queuing, for `duration`; returns the
    /// largest error of `localTime(media)` against the true fastest-path arrival (send + 20 ms)
    /// after `convergence`.
    func worstError(ppm: Double, duration: Duration, convergence: Duration = .seconds(60), seed: UInt64) -> Duration {
        var timeline = PlayoutTimeline()
        var random = SeededRandomNumberGenerator(seed: seed)
        let frameInterval: Int64 = 33_333_333
        let frames = duration.nanoseconds / frameInterval
        let base: Int64 = 20_000_000
        let start: Int64 = 1_000_000_000_000  // local clock at the first send
        var worst: Int64 = 0
        for index in 0..<frames {
            let send = start + index * frameInterval
            // The sender stamps media time on its own clock, drifting against ours.
            let media = Duration.nanoseconds(Int64((Double(index * frameInterval) * (1 + ppm / 1e6)).rounded()))
            let queuing = Int64.random(in: 0...15_000_000, using: &random)
            timeline.observe(mediaTime: media, arrival: MonotonicInstant(nanoseconds: send + base + queuing))
            if index * frameInterval >= convergence.nanoseconds {
                let error = timeline.localTime(for: media).nanoseconds - (send + base)
                worst = max(worst, abs(error))
            }
        }
        return .nanoseconds(worst)
    }

    @Test("drift at ±100 and ±1000 ppm over 24 simulated hours: within 5 ms of the fastest path", arguments: [100.0, -100.0, 1_000.0, -1_000.0])
    func drift(ppm: Double) {
        let error = worstError(ppm: ppm, duration: .seconds(24 * 3_600), seed: UInt64(abs(ppm)))
        #expect(error <= .milliseconds(5), "worst error \(error.compactDescription) at \(ppm) ppm")
    }

    @Test("the drift estimate matches the sender's")
    func driftEstimate() {
        var timeline = PlayoutTimeline()
        for index in 0..<(120 * 30) {
            let local = Int64(index) * 33_333_333
            timeline.observe(mediaTime: .nanoseconds(Int64(Double(local) * (1 + 500e-6))), arrival: MonotonicInstant(nanoseconds: local + 10_000_000))
        }
        // Transit = local − media shrinks by 500 µs per second of media: about −500 ppm.
        #expect(abs(timeline.driftPPM + 500) < 5, "\(timeline.driftPPM)")
    }

    /// The largest move of a buffered frame's local time from one arrival to the next over the
    /// first `seconds` of a 30 fps stream on a jittery path — after the first window, before
    /// which the fastest arrival so far is the path — with half-normal queuing of standard
    /// deviation `jitter`, order kept (``NetworkImpairment``'s model), and no drift.
    func largestMove(seconds: Int, jitter: Double, configuration: PlayoutTimeline.Configuration, seed: UInt64) -> Duration {
        var timeline = PlayoutTimeline(configuration: configuration)
        var random = SeededRandomNumberGenerator(seed: seed)
        let frameInterval: Int64 = 33_333_333
        let scale = jitter / (1 - 2 / Double.pi).squareRoot()
        var arrival: Int64 = 0
        var largest: Int64 = 0
        for index in 0..<(Int64(seconds) * 30) {
            let media = Duration.nanoseconds(index * frameInterval)
            // Box–Muller: a standard normal from two uniforms.
            let normal = (-2 * log(Double.random(in: .ulpOfOne..<1, using: &random))).squareRoot() * cos(2 * .pi * Double.random(in: 0..<1, using: &random))
            arrival = max(arrival, 10_000_000 + index * frameInterval + Int64(abs(normal) * scale * 1e9))
            let buffered = media + .milliseconds(230)  // a frame still waiting to be rendered
            let before = timeline.isEmpty ? nil : timeline.localTime(for: buffered)
            timeline.observe(mediaTime: media, arrival: MonotonicInstant(nanoseconds: arrival))
            if let before, index >= 31 { largest = max(largest, abs(timeline.localTime(for: buffered).nanoseconds - before.nanoseconds)) }
        }
        return .nanoseconds(largest)
    }

    /// A loopback test with 30 ms jitter rendered one of 120 frames late in about half its runs:
    /// three or four jittery window minima fitted slopes of thousands of ppm, and when the next
    /// window corrected the fit a buffered frame's render time jumped back by up to 114 ms. The
    /// fit's slope is bounded by ``PlayoutTimeline/Configuration/maximumDriftPPM`` now.
    @Test("30 ms of jitter in the first seconds moves a buffered frame's render time by under 10 ms (unbounded drift: tens of ms)")
    func jitterAtStartup() {
        var bounded: Duration = .zero, unbounded: Duration = .zero
        for seed in UInt64(1)...20 {
            bounded = max(bounded, largestMove(seconds: 8, jitter: 0.030, configuration: .init(), seed: seed))
            unbounded = max(unbounded, largestMove(seconds: 8, jitter: 0.030, configuration: .init(maximumDriftPPM: 1e12), seed: seed))
        }
        #expect(bounded < .milliseconds(10), "\(bounded.compactDescription)")
        #expect(unbounded > .milliseconds(20), "the case this guards against: \(unbounded.compactDescription)")
    }

    @Test("a burst after a stall arrives late and does not move the mapping")
    func burstAfterStall() {
        var timeline = PlayoutTimeline()
        let frame: Int64 = 33_333_333
        for index in 0..<(40 * 30) {  // 40 s of steady arrivals, 20 ms transit
            timeline.observe(mediaTime: .nanoseconds(Int64(index) * frame), arrival: MonotonicInstant(nanoseconds: Int64(index) * frame + 20_000_000))
        }
        let before = timeline.localTime(for: .seconds(45))
        // A 2 s stall, then everything queued arrives within 1 ms.
        let stallEnd = 40 * 30 * frame + 2_000_000_000
        for index in (40 * 30)..<(42 * 30) {
            timeline.observe(mediaTime: .nanoseconds(Int64(index) * frame), arrival: MonotonicInstant(nanoseconds: stallEnd + Int64(index - 1_200) * 10_000))
        }
        let after = timeline.localTime(for: .seconds(45))
        #expect(abs(after.nanoseconds - before.nanoseconds) < 1_000_000, "moved by \((after.nanoseconds - before.nanoseconds) / 1_000) µs")
    }

    @Test("a media clock that jumps ahead starts the timeline afresh instead of stalling playout")
    func jumpAhead() {
        var timeline = PlayoutTimeline()
        let frame: Int64 = 33_333_333
        for index in 0..<(40 * 30) {
            timeline.observe(mediaTime: .nanoseconds(Int64(index) * frame), arrival: MonotonicInstant(nanoseconds: Int64(index) * frame + 20_000_000))
        }
        // The sender's timestamps jump an hour ahead; arrivals go on as before.
        let jumped = Duration.seconds(3_600) + .nanoseconds(1_200 * frame)
        let arrival = MonotonicInstant(nanoseconds: 1_200 * frame + 20_000_000)
        timeline.observe(mediaTime: jumped, arrival: arrival)
        #expect(timeline.discontinuities == 1)
        #expect(timeline.localTime(for: jumped) == arrival, "due now, not in an hour")
        // A stall (transits above the path) is queuing, not a discontinuity.
        timeline.observe(mediaTime: jumped + .nanoseconds(frame), arrival: arrival.advanced(by: .seconds(5)))
        #expect(timeline.discontinuities == 1)
    }

    @Test("before any window closes, the fastest arrival so far is used")
    func startup() {
        var timeline = PlayoutTimeline()
        #expect(timeline.isEmpty)
        timeline.observe(mediaTime: .seconds(10), arrival: MonotonicInstant(nanoseconds: 5_030_000_000))
        timeline.observe(mediaTime: .milliseconds(10_033), arrival: MonotonicInstant(nanoseconds: 5_050_000_000))
        // Transits: −4.97 s and −4.983 s; the smaller wins.
        #expect(timeline.localTime(for: .seconds(11)) == MonotonicInstant(nanoseconds: 11_000_000_000 - 4_983_000_000))
        timeline.reset()
        #expect(timeline.isEmpty)
    }
}
