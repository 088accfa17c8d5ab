// A whole subscription on a manual clock, with no thread, no socket and no sleep: PlayoutTesting's
// EmbeddedDriver advances a real Subscriber (jitter buffer, playout delay, real H.264 decoder,
// feedback decisions, observers) through 6 s of a simulated stream with 1 % loss and a 1 s outage,
// and a playout-delay override — in a fraction of a second, with the same result on every run.
import Playout
import PlayoutSender
import PlayoutTesting

LoggingSetup.bootstrap()  // console at PLAYOUT_LOG_LEVEL (default warning), once per process
let clock = ManualClock()
var network = NetworkImpairment.Configuration(loss: 0.01, seed: 7)
network.outages = [Duration.seconds(3)..<Duration.seconds(4)]
let stream = SimulatedStream(.init(feedback: ["nack", "nack pli"], impairment: network))
var options = Subscriber.Options(duration: .seconds(6), overrides: [ScheduledOverride(delay: .seconds(1), at: .seconds(1), hold: .seconds(1))], clock: clock)
options.seed = 1  // the receiver's random draws (RTCP SSRC, report times) too: the same run every time
let subscriber = try Subscriber(sessionDescription: stream.sessionDescription, options: options)
let states = LockedValue<[String]>([])
let watch = subscriber.state.subscribe { state in states.withLock { $0.append("\(state)") } }   // on this thread, in order
let driver = try EmbeddedDriver(subscriber)
let final = driver.run(try stream.datagrams(for: .zero..<Duration.seconds(6), origin: clock.now))
watch.dispose()

let video = final.video!
print("states: \(states.withLock { $0 }.joined(separator: " → "))")
print("simulated: \(final.elapsed.compactDescription) on the manual clock")
print("packets received \(video.packetsReceived), lost \(video.packetsLost); NACKs \(video.nackCount), PLIs \(video.pliCount)")
print("frames rendered \(video.framesRendered), skipped \(video.framesSkipped), delay pauses \(video.delayPauseCount)")
print("freezes \(video.freezeCount): \(video.totalFreezesDuration.compactDescription)")
