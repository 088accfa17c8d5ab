// One sustained telemetry run per process, for profiling (perf, callgrind): emits N events
// (default 1,000,000) into an instrument delivering to the in-memory backend, waits until all were
// delivered and prints events per second. `TelemetryOnce [N] [mixed]`: one kind of event
// (`playoutdelaychange`), or with `mixed` the ten kinds of the Telemetry benchmark's mixed case.
import Foundation
import Logging
import PlayoutCore
import PlayoutTelemetry

let count = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 1_000_000
let cycle: [TelemetryEvent] = CommandLine.arguments.contains("mixed") ? [
    .playoutDelayChange(delay: .milliseconds(230), requested: true),
    .renditionChange(bitrate: 2_500_000, width: 1280, height: 720),
    .action("adclick", [TelemetryField("adId", .string("ad-17")), TelemetryField("position", .int(3))]),
    .metric("cpu", .double(0.25)), .heartbeat((0..<20).map { TelemetryField("qos\($0)", .double(Double($0))) }),
    .pause, .play, .playing, .freezeStart, .freezeEnd(duration: .milliseconds(150)),
] : [.playoutDelayChange(delay: .milliseconds(230), requested: true)]
var logger = Logger(label: "telemetry-once")
logger.logLevel = .error
let memory = InMemoryTelemetryBackend()
let instrument = try TelemetryInstrument(
    backends: [memory],
    configuration: .init(ringCapacity: 1 << 18, hub: .init(heartbeatInterval: .seconds(3_600)), delivery: .init(capacity: 1 << 21, maximumBatchSize: 4_096, linger: .milliseconds(1))),
    logger: logger)
let tracker = instrument.makeTracker(name: "once")
tracker.emit(.play)
tracker.emit(.playing)
precondition(instrument.flush(timeout: .seconds(60)))
memory.removeAll()
let clock = ContinuousClock()
let start = clock.now
var emitted = 0
while emitted < count {
    let chunk = min(100_000, count - emitted)
    for index in 0..<chunk { tracker.emit(cycle[index % cycle.count]) }
    precondition(instrument.flush(timeout: .seconds(60)))
    emitted += chunk
    memory.removeAll()
}
let elapsed = start.duration(to: clock.now)
precondition(instrument.currentStatistics().eventsDropped == 0, "the ring overflowed")
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
print("\(count) events in \(String(format: "%.3f", seconds)) s: \(Int(Double(count) / seconds)) events/s")
_ = instrument.shutdown(timeout: .seconds(5))
