public import Playout
public import PlayoutCodec
import PlayoutCore
public import PlayoutRTP
public import PlayoutSender
import PlayoutTelemetry

extension PlayoutDelayBenchmark {
    /// A benchmark scenario: what to subscribe to, the playout delay, the schedule of overrides,
    /// how long and how many times. ``run(progress:)`` plays it, one fresh subscription per run.
    ///
    /// ```swift
    /// var scenario = PlayoutDelayBenchmark.Scenario(duration: .seconds(12))
    /// scenario.schedule = [ScheduledOverride(delay: .seconds(1), at: .seconds(3), hold: .seconds(4))]
    /// let result = try scenario.run()
    /// for summary in PlayoutDelayBenchmark.summarize(result.map(\.analysis)) { print(summary.pause?.median ?? .zero) }
    /// ```
    public struct Scenario: Sendable {
        /// What to subscribe to: nil for the built-in publisher on loopback, or anything
        /// ``Subscriber/init(source:options:)`` takes.
        public var source: String?
        /// The configured playout delay.
        public var playoutDelay: Duration
        /// The overrides, set and released at their instants (each carries its transition).
        public var schedule: [ScheduledOverride]
        /// How long each run plays.
        public var duration: Duration
        /// How many runs.
        public var runs: Int
        /// The built-in publisher's video (its audio is Opus).
        public var video: FFmpegEncoder.VideoSettings
        /// The built-in publisher's simulated network.
        public var impairment: NetworkImpairment.Configuration
        /// Whether each run uses the next seed (seed, seed + 1, …) rather than the same one.
        public var variesSeed: Bool
        /// The SRTP key for an external source (nil: its SDP's).
        public var srtpKey: SRTPKeyingMaterial?

        /// A scenario with the defaults of `playout bench playout-delay`: the built-in
        /// publisher (720p30 H.264 + Opus over SRTP), 230 ms, no overrides, one run.
        public init(
            source: String? = nil, playoutDelay: Duration = PlayoutDelay.defaultDelay, schedule: [ScheduledOverride] = [], duration: Duration,
            runs: Int = 1, video: FFmpegEncoder.VideoSettings = .init(), impairment: NetworkImpairment.Configuration = .init(),
            variesSeed: Bool = true, srtpKey: SRTPKeyingMaterial? = nil
        ) {
            self.source = source
            self.playoutDelay = playoutDelay
            self.schedule = schedule
            self.duration = duration
            self.runs = runs
            self.video = video
            self.impairment = impairment
            self.variesSeed = variesSeed
            self.srtpKey = srtpKey
        }

        /// Frames recorded per run: 400 a second of duration (video at up to 120 fps, 20 ms
        /// audio, and margin), at least 10,000.
        public var frameLogCapacity: Int {
            max(10_000, Int(duration.seconds.rounded(.up)) * 400)
        }

        /// The subscriber's options for every run.
        public var subscriberOptions: Subscriber.Options {
            Subscriber.Options(
                playoutDelay: .init(delay: playoutDelay), duration: duration, srtpKey: srtpKey, overrides: schedule, frameLogCapacity: frameLogCapacity
            )
        }

        /// Plays every run in turn; `progress` is called with each run's number (from 1) once
        /// it has ended.
        ///
        /// - Throws: ``PlayoutError`` (or the subscriber's and publisher's errors) when a run
        ///   cannot start, or ends failed.
        ///   `stop`, when given and stopped (from any thread, e.g. on Ctrl-C), ends the run under
        ///   way at once and plays no more: what was played is returned, the last run cut short.
        public func run(stop: Stop? = nil, progress: (Int) -> Void = { _ in }) throws -> [RunResult] {
            var results: [RunResult] = []
            for run in 1...max(1, runs) {
                if stop?.isStopped == true { break }
                results.append(try play(run: run, stop: stop))
                progress(run)
            }
            return results
        }

        /// One run: a fresh subscriber (and publisher), played to the end (or until `stop`).
        private func play(run: Int, stop: Stop?) throws -> RunResult {
            var publisher: Publisher?
            let subscriber: Subscriber
            if let source {
                subscriber = try Subscriber(source: source, options: subscriberOptions)
            } else {
                var impairment = impairment
                if variesSeed { impairment.seed &+= UInt64(run - 1) }
                let sender = try Publisher(options: .init(
                    destination: try Publisher.freeLoopbackDestination(), video: video, keyingMaterial: .random(for: .aesCM128HMACSHA1_80),
                    impairment: impairment, duration: duration + .milliseconds(500)
                ))
                publisher = sender
                subscriber = try Subscriber(sessionDescription: sender.sessionDescription, options: subscriberOptions)
            }
            try subscriber.start()
            stop?.watch(subscriber)
            defer { stop?.watch(nil) }
            do {
                try publisher?.start()
            } catch {
                subscriber.stop()
                _ = subscriber.waitUntilEnded()
                throw error
            }
            let final = subscriber.waitUntilEnded()
            let stoppedAt = MonotonicClock().now
            publisher?.stop()
            _ = try? publisher?.waitUntilEnded()
            if case .failed(let reason) = final.state { throw PlayoutError(.invalidSource, "run \(run): \(reason)") }
            let log = subscriber.frameLog?.snapshot() ?? FrameLog.Snapshot(start: .init(nanoseconds: 0), frames: [], changes: [])
            // The run ended at its duration, or where a stop cut it.
            let end = stop?.isStopped == true ? log.start.duration(to: stoppedAt) : min(duration, log.start.duration(to: stoppedAt))
            var result = RunResult(run: run, log: log, qos: final, analysis: PlayoutDelayBenchmark.analyze(log, end: end))
            result.stoppedEarly = stop?.isStopped ?? false
            return result
        }
    }

    /// Ends a ``Scenario/run(stop:progress:)`` early, from any thread: the run under way stops
    /// as ``Subscriber/stop()`` does, and no other starts.
    public final class Stop: Sendable {
        private let state = LockedValue<(stopped: Bool, subscriber: Subscriber?)>((false, nil))

        /// A handle not yet stopped.
        public init() {}

        /// Whether ``stop()`` was called.
        public var isStopped: Bool { state.withLock(\.stopped) }

        /// Stops the run under way and every later one.
        public func stop() {
            let subscriber = state.withLock { state in
                state.stopped = true
                return state.subscriber
            }
            subscriber?.stop()
        }

        /// The subscriber of the run under way (nil: none); stopped at once when ``stop()`` came first.
        func watch(_ subscriber: Subscriber?) {
            let stopNow = state.withLock { state in
                state.subscriber = subscriber
                return state.stopped
            }
            if stopNow { subscriber?.stop() }
        }
    }

    /// One run played: its frame log, final QoS and analysis.
    public struct RunResult: Sendable {
        /// The run's number, from 1.
        public var run: Int
        /// Every frame and delay change recorded.
        public var log: FrameLog.Snapshot
        /// The subscriber's final QoS.
        public var qos: SubscriberQoS
        /// The transitions measured.
        public var analysis: Run
        /// Whether ``Stop/stop()`` ended it before its duration.
        public var stoppedEarly = false

        /// A result with these parts.
        public init(run: Int, log: FrameLog.Snapshot, qos: SubscriberQoS, analysis: Run) {
            self.run = run
            self.log = log
            self.qos = qos
            self.analysis = analysis
        }
    }
}
