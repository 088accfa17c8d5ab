// Telemetry emit against the reference the issue names: swift-metrics' Counter.increment into its
// test backend (MetricsTestKit), in the same run. Emit benchmarks run 1,000 emits per iteration
// (scalingFactor .kilo), so the scaled (*) results read per emit; the engine's thread drains the
// ring concurrently, as in production, and is waited for outside the measurement. The sustained
// benchmark measures emit → engine → in-memory backend end to end, 100,000 events per iteration.
import Benchmark
import Logging
import Metrics
import MetricsTestKit
import PlayoutCore
import PlayoutTelemetry

/// One instrument delivering to memory, quiet, with a ring that holds a whole iteration, kept
/// for the whole run (its threads run as in production); a playing session.
final class Fixture: Sendable {
    let memory = InMemoryTelemetryBackend()
    let instrument: TelemetryInstrument
    let tracker: TelemetryTracker

    init() {
        var logger = Logger(label: "benchmark")
        logger.logLevel = .error
        instrument = try! TelemetryInstrument(
            backends: [memory],
            configuration: .init(ringCapacity: 1 << 18, hub: .init(heartbeatInterval: .seconds(3_600)), delivery: .init(capacity: 1 << 20, maximumBatchSize: 4_096, linger: .milliseconds(1))),
            logger: logger)
        tracker = instrument.makeTracker(name: "benchmark")
        tracker.emit(.play)
        tracker.emit(.playing)
        settle()
    }

    /// Waits until everything emitted was delivered, empties the store, checks nothing dropped.
    func settle() {
        precondition(instrument.flush(timeout: .seconds(60)), "the engine did not drain in 60 s")
        memory.removeAll()
        precondition(instrument.currentStatistics().eventsDropped == 0, "the ring overflowed")
    }
}

let fixture = Fixture()

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .instructions, .mallocCountTotal, .throughput],
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 5_000
    )

    Benchmark("emit: TelemetryTracker.emit into the in-memory backend") { benchmark in
        let tracker = fixture.tracker
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            tracker.emit(.playoutDelayChange(delay: .milliseconds(230), requested: true))
        }
        benchmark.stopMeasurement()
        fixture.settle()
    }

    Benchmark("emit: swift-metrics Counter.increment into TestMetrics (reference)") { benchmark in
        let metrics = TestMetrics()
        let counter = Counter(label: "events", dimensions: [("event", "playoutdelaychange")], factory: metrics)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            counter.increment()
        }
        benchmark.stopMeasurement()
        blackHole(metrics)
    }

    Benchmark(
        "sustained: 100,000 events emitted, built into records and delivered to memory",
        configuration: .init(scalingFactor: .one, maxDuration: .seconds(5), maxIterations: 50)
    ) { benchmark in
        let tracker = fixture.tracker
        for _ in benchmark.scaledIterations {
            benchmark.startMeasurement()
            for _ in 0..<100_000 {
                tracker.emit(.playoutDelayChange(delay: .milliseconds(230), requested: true))
            }
            precondition(fixture.instrument.flush(timeout: .seconds(60)))
            benchmark.stopMeasurement()
            let delivered = fixture.memory.records.count { $0.name == "playoutdelaychange" }
            precondition(delivered == 100_000, "delivered \(delivered) of 100,000")
            fixture.settle()
        }
    }

    Benchmark(
        "sustained, mixed: 100,000 events of ten kinds (actions with context, 20-field heartbeats, freezes, pauses) to memory",
        configuration: .init(scalingFactor: .one, maxDuration: .seconds(5), maxIterations: 50)
    ) { benchmark in
        let tracker = fixture.tracker
        let context = [TelemetryField("adId", .string("ad-17")), TelemetryField("position", .int(3))]
        let sample = (0..<20).map { TelemetryField("qos\($0)", .double(Double($0))) }
        let cycle: [TelemetryEvent] = [
            .playoutDelayChange(delay: .milliseconds(230), requested: true),
            .renditionChange(bitrate: 2_500_000, width: 1280, height: 720),
            .action("adclick", context), .metric("cpu", .double(0.25)), .heartbeat(sample),
            .pause, .play, .playing, .freezeStart, .freezeEnd(duration: .milliseconds(150)),
        ]
        for _ in benchmark.scaledIterations {
            benchmark.startMeasurement()
            for index in 0..<100_000 {
                tracker.emit(cycle[index % cycle.count])
            }
            precondition(fixture.instrument.flush(timeout: .seconds(60)))
            benchmark.stopMeasurement()
            let delivered = fixture.memory.records.count
            precondition(delivered == 100_000, "delivered \(delivered) of 100,000")
            fixture.settle()
        }
    }
}
