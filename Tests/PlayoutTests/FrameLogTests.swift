@testable import Playout
import PlayoutCore
import PlayoutJitter
import PlayoutTesting
import Testing

/// The per-frame record a benchmark reads (`Subscriber.Options.frameLogCapacity`), through a whole
/// subscription on a manual clock: what it says must match the QoS counters and the rule exactly.
private func abs(_ duration: Duration) -> Duration {
    duration < .zero ? .zero - duration : duration
}

@Suite("Frame log: a subscription's per-frame record on a manual clock")
struct FrameLogTests {
    static let key = SubscriptionTests.key

    @Test("230 ms, 1 s override at 2 s released at 4 s: every frame once, due = localTime + the delay it records, pause and skip where the rule puts them")
    func overrideRecorded() throws {
        let simulation = try SimulatedSubscription(
            session: SimulatedSubscription.session(key: Self.key),
            options: .init(duration: .seconds(7), overrides: [ScheduledOverride(delay: .seconds(1), at: .seconds(2), hold: .seconds(2))], frameLogCapacity: 1_000)
        )
        let start = simulation.clock.now
        let final = simulation.run(try SimulatedSender(key: Self.key).datagrams(video: Duration.zero..<Duration.seconds(6), origin: start))
        let log = try #require(simulation.subscription.frameLog).snapshot()
        let video = try #require(final.video)

        #expect(log.start == start && log.framesDropped == 0 && log.changesDropped == 0)
        #expect(log.changes.map { start.duration(to: $0.at) } == [.zero, .seconds(2), .seconds(4)])
        #expect(log.changes.map(\.delay.delay) == [.milliseconds(230), .seconds(1), .milliseconds(230)])
        #expect(log.changes.map(\.delay.source) == [.configured, .override, .configured])

        let rendered = log.frames.filter { !$0.skipped }
        let skipped = log.frames.filter(\.skipped)
        #expect(rendered.count == video.framesRendered && skipped.count == video.framesSkipped)
        #expect(video.framesSkipped > 0)
        #expect(log.frames.map(\.index) == Array(0..<log.frames.count))
        #expect(Set(log.frames.map(\.mediaTime)).count == log.frames.count, "each frame once")
        // The sender sends each frame at its media time (from the first frame's); it arrives 10 ms
        // later; the fastest path is 10 ms, so localTime(media) = arrival and due = arrival +
        // delay, exactly.
        let firstMedia = try #require(log.frames.map(\.mediaTime).min())
        for frame in log.frames {
            #expect(frame.kind == .video && frame.track == 0)
            #expect(frame.arrival == start.advanced(by: frame.mediaTime - firstMedia + .milliseconds(10)))
            #expect(frame.due == frame.arrival.advanced(by: frame.delay), "\(frame)")
            #expect(frame.source == (frame.delay == .seconds(1) ? .override : .configured), "\(frame)")
            #expect(frame.captureTime != nil)
        }
        for frame in rendered {
            #expect(frame.shown == frame.due)
            // (The simulated wall clock is in whole nanoseconds, capture times round to one.)
            let latency = try #require(frame.endToEndLatency)
            #expect(abs(latency - (frame.delay + .milliseconds(10))) <= .nanoseconds(1), "\(latency)")
        }
        // Increase at 2 s: the frames due before it (230 ms) and the rest at 1 s; the gap between
        // the last at 230 ms and the first at 1 s is 770 ms longer than the media between them.
        let sorted = rendered.sorted { $0.mediaTime < $1.mediaTime }
        let firstLong = try #require(sorted.firstIndex { $0.delay == .seconds(1) })
        let gap = sorted[firstLong - 1].shown.duration(to: sorted[firstLong].shown) - (sorted[firstLong].mediaTime - sorted[firstLong - 1].mediaTime)
        #expect(gap == .milliseconds(770))
        // Release at 4 s: what became late by more than the tolerance is skipped once the loop
        // has presented what it had decoded ahead (within its 150 ms horizon), due under 230 ms.
        for frame in skipped {
            #expect(frame.shown >= start.advanced(by: .seconds(4)) && frame.shown <= start.advanced(by: .milliseconds(4_150)), "\(start.duration(to: frame.shown))")
            #expect(frame.delay == .milliseconds(230) && frame.source == .configured)
            #expect(frame.due < frame.shown)
        }
    }

    /// Issue 30: a frame released for decoding ahead of its time (the 20 ms lead) when the run
    /// ends is not shown by the drain: it was shown at the end, early — or late, by as long as
    /// a swarm's observer thread took to reach its subscription, a frame per viewer at 500.
    @Test("a run that ends between a frame's release and its render time does not show it, nor count it due")
    func endBeforeRenderTime() throws {
        // Frame 30 (media 1 s) arrives at 1.01 s and is due at 1.24 s; released 20 ms before
        // that; the run ends at 1.23 s.
        let simulation = try SimulatedSubscription(
            session: SimulatedSubscription.session(key: Self.key), options: .init(duration: .milliseconds(1_230), frameLogCapacity: 100)
        )
        let start = simulation.clock.now
        let final = simulation.run(try SimulatedSender(key: Self.key).datagrams(video: Duration.zero..<Duration.seconds(2), origin: start))
        let log = try #require(simulation.subscription.frameLog).snapshot()
        let video = try #require(final.video)
        #expect(log.frames.count == 30 && log.frames.allSatisfy { !$0.skipped && $0.shown == $0.due }, "\(log.frames.suffix(2))")
        #expect(log.frames.allSatisfy { $0.due <= start.advanced(by: .milliseconds(1_230)) })
        #expect(video.framesRendered == 30 && video.framesRenderedLate == 0 && video.framesDropped == 0)
        // Every frame received is accounted for: frame 30 with those still buffered.
        #expect(video.framesRendered + video.framesDropped + video.bufferedFrames == video.framesReceived, "\(video)")
    }

    /// The event loop finishes a run on its observer thread, after the turn that said the end:
    /// with hundreds of viewers ending together, tens of milliseconds after it. A frame due at
    /// the end is shown by that turn, on time, not by the drain.
    @Test("the turn that ends a run shows the frame due at that instant, on time; the drain, 40 ms later, shows nothing late")
    func endTurnShowsWhatIsDue() throws {
        // Frame 30 (media 1 s) is due at 1.24 s, the instant the run ends.
        let simulation = try SimulatedSubscription(
            session: SimulatedSubscription.session(key: Self.key), options: .init(duration: .milliseconds(1_240), frameLogCapacity: 100)
        )
        simulation.driver.finishingDelay = .milliseconds(40)
        let final = simulation.run(try SimulatedSender(key: Self.key).datagrams(video: Duration.zero..<Duration.seconds(2), origin: simulation.clock.now))
        let log = try #require(simulation.subscription.frameLog).snapshot()
        #expect(log.frames.count == 31 && log.frames.allSatisfy { !$0.skipped && $0.shown == $0.due }, "\(log.frames.suffix(2))")
        let video = try #require(final.video)
        #expect(video.framesRendered == 31 && video.framesRenderedLate == 0)
    }

    @Test("a full log counts what it could not keep and keeps the first frames")
    func bounded() throws {
        let simulation = try SimulatedSubscription(session: SimulatedSubscription.session(key: Self.key), options: .init(duration: .seconds(2), frameLogCapacity: 10))
        let start = simulation.clock.now
        let final = simulation.run(try SimulatedSender(key: Self.key).datagrams(video: Duration.zero..<Duration.seconds(1), origin: start))
        let log = try #require(simulation.subscription.frameLog).snapshot()
        #expect(log.frames.count == 10 && log.frames.map(\.index) == Array(0..<10))
        #expect(log.frames.count + log.framesDropped == (final.video?.framesRendered ?? 0))
        #expect(final.video?.framesRendered == 30)
    }

    @Test("no capacity, no log")
    func off() throws {
        let simulation = try SimulatedSubscription(session: SimulatedSubscription.session(key: Self.key), options: .init(duration: .seconds(1)))
        #expect(simulation.subscription.frameLog == nil)
    }
}
