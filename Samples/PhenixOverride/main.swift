// The Phenix guide's "Override Playout Delay" example, as the guide writes it: a renderer created
// when it is needed (after the subscription started), a 900 ms override held for 10 seconds and
// undone by dropping its disposable. The subscription runs on PlayoutTesting's EmbeddedDriver and a
// manual clock, which also stands in for DispatchQueue.main.asyncAfter: the same output every run.
import Foundation
import Playout
import PlayoutSender
import PlayoutTesting

LoggingSetup.bootstrap()  // console at PLAYOUT_LOG_LEVEL (default warning), once per process
let clock = ManualClock()
let stream = SimulatedStream()
var options = Subscriber.Options(duration: .seconds(13), clock: clock)
options.seed = 1
let subscriber = try Subscriber(sessionDescription: stream.sessionDescription, options: options)
let delays = LockedValue<[String]>([])
let watch = subscriber.playoutDelay.subscribe { delay in delays.withLock { $0.append("\(delay.delay.compactDescription) (\(delay.source))") } }
let driver = try EmbeddedDriver(subscriber)  // started, with no renderer made yet

/// `DispatchQueue.main.asyncAfter` on the manual clock: the bodies run when the driver gets there.
final class ManualQueue {
    private var timers: [(at: MonotonicInstant, body: () -> Void)] = []
    let clock: ManualClock
    init(clock: ManualClock) { self.clock = clock }

    func asyncAfter(_ delay: Duration, execute body: @escaping () -> Void) {
        timers.append((clock.now.advanced(by: delay), body))
    }

    /// Runs what is due by `instant`, moving the driver to each one's time first.
    func run(until instant: MonotonicInstant, driver: EmbeddedDriver) {
        while let next = timers.indices.min(by: { timers[$0].at < timers[$1].at }), timers[next].at <= instant {
            let timer = timers.remove(at: next)
            driver.advance(to: timer.at)
            timer.body()
        }
    }
}

final class SomeClass {
    private var currentRendererPlayoutDelayOverride: (any Disposable)?
    private var currentRenderer: Renderer?
    private let subscriber: Subscriber
    private let main: ManualQueue
    init(subscriber: Subscriber, main: ManualQueue) {
        self.subscriber = subscriber
        self.main = main
    }

    func setPlayoutDelayOverrideFor10Seconds() {
        // Previously obtained
        let subscriber: Subscriber = self.subscriber
        self.currentRenderer = subscriber.createRenderer()
        // Override playout delay to 900ms for 10 seconds
        let playoutDelay: TimeInterval = 0.9
        self.currentRendererPlayoutDelayOverride = self.currentRenderer?.overridePlayoutDelay(playoutDelay)
        main.asyncAfter(.seconds(10)) {
            // Dropping the disposable will undo the playout delay override
            self.currentRendererPlayoutDelayOverride = nil
        }
    }
}

let main = ManualQueue(clock: clock)
let some = SomeClass(subscriber: subscriber, main: main)
main.asyncAfter(.seconds(1)) { some.setPlayoutDelayOverrideFor10Seconds() }
for datagram in try stream.datagrams(for: .zero..<Duration.seconds(13), origin: clock.now) {
    main.run(until: datagram.arrival, driver: driver)
    driver.advance(to: datagram.arrival)
    driver.receive(datagram.bytes, track: datagram.track)
}
let final = driver.runUntilEnded()
watch.dispose()

let video = final.video!
print("playout delay: \(delays.withLock { $0 }.joined(separator: " → "))")
print("simulated: \(final.elapsed.compactDescription) on the manual clock")
print("delay pauses \(video.delayPauseCount): \(video.totalDelayPausesDuration.compactDescription)")
print("frames rendered \(video.framesRendered), skipped \(video.framesSkipped): \(video.totalSkippedDuration.compactDescription)")
