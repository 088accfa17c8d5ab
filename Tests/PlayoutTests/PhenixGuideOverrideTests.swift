import Foundation
import Playout
import PlayoutCore
import PlayoutSender
import PlayoutTesting
import Testing

/// The Phenix guide's "Override Playout Delay" example (seed 003), as it writes it: a renderer
/// created when it is needed, a 900 ms override held for 10 s, released by dropping the
/// disposable (issue 27 item 5). The embedded driver stands in for `DispatchQueue.main.asyncAfter`.
@Suite("Renderer.overridePlayoutDelay as the Phenix guide writes it, on the embedded driver")
struct PhenixGuideOverrideTests {
    /// The guide's `SomeClass`, with `asyncAfter` run by the test on the manual clock.
    final class SomeClass {
        private var currentRendererPlayoutDelayOverride: (any Disposable)?
        private(set) var currentRenderer: Renderer?
        let subscriber: Subscriber
        let asyncAfter: (Duration, @escaping () -> Void) -> Void

        init(subscriber: Subscriber, asyncAfter: @escaping (Duration, @escaping () -> Void) -> Void) {
            self.subscriber = subscriber
            self.asyncAfter = asyncAfter
        }

        func setPlayoutDelayOverrideFor10Seconds() {
            self.currentRenderer = subscriber.createRenderer()
            // Override playout delay to 900ms for 10 seconds
            let playoutDelay: TimeInterval = 0.9
            self.currentRendererPlayoutDelayOverride = self.currentRenderer?.overridePlayoutDelay(playoutDelay)
            asyncAfter(.seconds(10)) {
                // Dropping the disposable will undo the playout delay override
                self.currentRendererPlayoutDelayOverride = nil
            }
        }
    }

    @Test("renderer created after the start, 900 ms for 10 s: one delay pause of the increase, the decrease skipped at the release, the delay back to 230 ms")
    func guideExample() throws {
        let clock = ManualClock()
        let stream = SimulatedStream()
        var options = Subscriber.Options(duration: .seconds(13), clock: clock)
        options.seed = 1
        let subscriber = try Subscriber(sessionDescription: stream.sessionDescription, options: options)
        let delays = LockedValue<[EffectivePlayoutDelay]>([])
        let watch = subscriber.playoutDelay.subscribe { delay in delays.withLock { $0.append(delay) } }
        let driver = try EmbeddedDriver(subscriber)  // started: the renderer is made later, when needed
        var timers: [(at: MonotonicInstant, body: () -> Void)] = []
        let some = SomeClass(subscriber: subscriber) { delay, body in timers.append((clock.now.advanced(by: delay), body)) }
        let datagrams = try stream.datagrams(for: .zero..<Duration.seconds(13), origin: clock.now)
        var calledAt: MonotonicInstant?
        for datagram in datagrams {
            if calledAt == nil, datagram.arrival >= MonotonicInstant.zero.advanced(by: .seconds(1)) {
                driver.advance(to: MonotonicInstant.zero.advanced(by: .seconds(1)))
                some.setPlayoutDelayOverrideFor10Seconds()
                calledAt = clock.now
            }
            while let timer = timers.first, timer.at <= datagram.arrival {
                driver.advance(to: timer.at)
                timers.removeFirst().body()
            }
            driver.advance(to: datagram.arrival)
            driver.receive(datagram.bytes, track: datagram.track)
        }
        #expect(timers.isEmpty)
        let final = driver.runUntilEnded()
        watch.dispose()
        #expect(calledAt == MonotonicInstant.zero.advanced(by: .seconds(1)))
        #expect(some.currentRenderer === subscriber.createRenderer())  // one renderer, the subscription's
        #expect(delays.withLock { $0.map(\.delay) } == [.milliseconds(230), .milliseconds(900), .milliseconds(230)])
        #expect(delays.withLock { $0.map(\.source) } == [.configured, .override, .configured])
        let video = try #require(final.video)
        #expect(video.delayPauseCount == 1)
        #expect(abs((video.totalDelayPausesDuration - .milliseconds(670)).seconds) < 0.04)
        #expect(video.framesSkipped > 0)
        #expect(abs((video.totalSkippedDuration - .milliseconds(670)).seconds) < 0.04)
        #expect(final.playoutDelay.delay == .milliseconds(230))
    }

    @Test("createRenderer before the start is the renderer the subscription uses; a second renderer is refused; a value the override refuses gives nil")
    func createBeforeStart() throws {
        let clock = ManualClock()
        let stream = SimulatedStream()
        let subscriber = try Subscriber(sessionDescription: stream.sessionDescription, options: .init(duration: .seconds(1), clock: clock))
        let delays = LockedValue<[EffectivePlayoutDelay]>([])
        let watch = subscriber.playoutDelay.subscribe { delay in delays.withLock { $0.append(delay) } }
        let renderer = subscriber.createRenderer()
        #expect(renderer.sink == .null)
        #expect(throws: PlayoutError.self) { try Renderer(subscriber: subscriber) }
        #expect(renderer.overridePlayoutDelay(-1) == nil)
        #expect(renderer.overridePlayoutDelay(.nan) == nil)
        #expect(renderer.overridePlayoutDelay(1e300) == nil)
        let hold = try #require(renderer.overridePlayoutDelay(0.5))
        let driver = try EmbeddedDriver(subscriber)
        #expect(subscriber.createRenderer() === renderer)
        driver.advance(by: .milliseconds(100))
        hold.dispose()
        let final = driver.run(try stream.datagrams(for: .zero..<Duration.seconds(1), origin: clock.now))
        watch.dispose()
        // Only the valid override took effect, and its release returned to the configured delay.
        #expect(Set(delays.withLock { $0.map(\.delay) }) == [.milliseconds(230), .milliseconds(500)])
        #expect(final.playoutDelay.source == .configured && final.playoutDelay.delay == .milliseconds(230))
    }
}
