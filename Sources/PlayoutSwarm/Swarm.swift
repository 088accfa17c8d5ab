#if canImport(Glibc)
import Glibc
#endif
public import Playout
import PlayoutCore
import PlayoutTelemetry

/// An audience of real viewers in one process: each viewer is a whole ``Subscriber`` — its own
/// source validation, jitter buffer, playout clock, delay controller, scheduler, feedback and
/// QoS, the core `playout subscribe` runs — and all of them play on one
/// ``SubscriptionEventLoop``: a fixed set of threads (one worker per core by default, a bounded
/// decode pool), none per viewer. Viewers join on a ramp, may leave and rejoin (churn), decode
/// all, a sample or none; every interval the swarm aggregates them into a ``SwarmSample``
/// (percentiles across viewers) with the tester's own load.
///
/// ```swift
/// var configuration = Swarm.Configuration(viewers: 200, source: .url("https://127.0.0.1:8889/whep/live"))
/// configuration.ramp = 50
/// configuration.decode = .none
/// configuration.duration = .seconds(30)
/// let swarm = try Swarm(configuration: configuration)
/// let result = try swarm.run { sample in print(sample.connected, sample["startupTime"]?.p95 ?? 0) }
/// ```
public final class Swarm: @unchecked Sendable {
    /// Where each viewer subscribes.
    public struct Source: Sendable {
        /// What the source is, for the report (`https://…/whep/live`, `stream.sdp`).
        public var description: String
        /// File descriptors one viewer holds (its sockets), for the check before the ramp.
        public var descriptorsPerViewer: Int
        /// Makes viewer `viewer`'s subscriber with `options`.
        public var subscriber: @Sendable (_ viewer: Int, _ options: Subscriber.Options) throws -> Subscriber

        /// A source with these values.
        public init(description: String, descriptorsPerViewer: Int, subscriber: @escaping @Sendable (Int, Subscriber.Options) throws -> Subscriber) {
            self.description = description
            self.descriptorsPerViewer = descriptorsPerViewer
            self.subscriber = subscriber
        }

        /// Each viewer opens `source` itself (``Subscriber/init(source:options:)``): a WHEP URL
        /// (each viewer its own session: offer, ICE, DTLS, SRTP), an SDP file every viewer
        /// receives the same (a multicast stream: each viewer joins), or a URL libavformat opens.
        public static func url(_ source: String) -> Source {
            let whep = source.hasPrefix("http://") || source.hasPrefix("https://")
            return Source(description: source, descriptorsPerViewer: whep ? 4 : 6) { _, options in
                try Subscriber(source: source, options: options)
            }
        }

        /// Viewer `i` receives `sessionDescription(i)` (a fanned-out unicast stream: viewer i's
        /// ports; see `SessionDescription.fannedOut(viewer:)`).
        public static func sessionDescriptions(
            _ description: String, tracks: Int, _ sessionDescription: @escaping @Sendable (Int) throws -> SessionDescription
        ) -> Source {
            Source(description: description, descriptorsPerViewer: 2 * max(1, tracks)) { viewer, options in
                // A key given for the stream is viewer 0's: each viewer's stream has its own.
                var options = options
                options.srtpKey = options.srtpKey?.fannedOut(viewer: viewer)
                return try Subscriber(sessionDescription: sessionDescription(viewer), options: options)
            }
        }
    }

    /// A swarm's settings.
    public struct Configuration: Sendable {
        /// The viewers of the whole run (every shard).
        public var viewers: Int
        /// The viewers this process runs, by their number in the whole run (default: all).
        public var shardViewers: Range<Int>
        /// This shard and the shard count (0 of 1: one machine).
        public var shard: Int = 0
        public var shardCount: Int = 1
        /// Where each viewer subscribes.
        public var source: Source
        /// Viewers joining per second (nil: all at once).
        public var ramp: Double?
        /// Which viewers decode (default: none — every timing statistic exact, the decode
        /// statistics unknown).
        public var decode: SwarmDecode = .none
        /// The mean lifetime of a viewer's session (nil: no churn); see ``SwarmScheduler``.
        public var churn: Duration?
        /// How long the run lasts (nil: until ``Swarm/stop()``).
        public var duration: Duration?
        /// How often an aggregate is taken (default 1 s; each viewer samples its QoS as often).
        public var interval: Duration = .seconds(1)
        /// Seeds the churn's lifetimes.
        public var seed: UInt64 = 1
        /// The event loop's worker and decode threads (default: one per core each).
        public var workers = SubscriptionEventLoop.defaultWorkerCount
        public var decodeThreads = SubscriptionEventLoop.defaultWorkerCount
        /// Every viewer's subscriber options: playout delay, overrides, bandwidth limits,
        /// feedback, telemetry (each viewer a tracker tagged `viewer`), … (`decoding` is set per
        /// viewer from ``decode``; `qosInterval` from ``interval``).
        public var subscriber = Subscriber.Options()

        /// A swarm of `viewers` viewers of `source`, on one machine.
        public init(viewers: Int, source: Source) {
            self.viewers = viewers
            shardViewers = 0..<max(0, viewers)
            self.source = source
        }
    }

    /// What a run ends with.
    public struct Result: Sendable {
        /// Every interval's aggregate, oldest first; the last is the final one (every viewer
        /// ended).
        public var samples: [SwarmSample]
        /// Every session's outcome (a viewer that churned has one per session), by viewer.
        public var outcomes: [ViewerOutcome]
        /// Every session's start-up time (first frame), seconds.
        public var startupTimes: [Double]
        /// Resident memory per viewer at the end of the run (every viewer joined, its buffers
        /// filled), over what the process held before the first joined, bytes (nil: not all joined).
        public var memoryPerViewer: Int?
        /// What was said during the run (the tester saturated, viewers that could not start).
        public var warnings: [String]

        /// The final aggregate.
        public var final: SwarmSample? { samples.last }
    }

    /// One viewer's current session.
    private struct Session {
        let viewer: Int
        let session: Int
        let subscriber: Subscriber
        let decoded: Bool
        /// Where its start is: the connector thread that opens it and the control thread share it.
        let start = LockedValue(StartState.queued)

        /// Why it could not start (nil: it started, or has not tried yet).
        var failure: String? {
            if case .failed(let reason) = start.withLock({ $0 }) { return reason }
            return nil
        }

        /// Whether its subscriber was started (so it ends, and its final sample comes).
        var started: Bool { start.withLock { $0 } == .started }
    }

    private enum StartState: Equatable {
        case queued, starting, started, cancelled
        case failed(String)
    }

    public let configuration: Configuration
    private let loop: SubscriptionEventLoop
    private let connector: SwarmConnector
    /// Viewers opened at once, off the control thread (a WHEP offer's round trip each).
    public static let connectThreads = 8
    private let clock = MonotonicClock()
    private let wake = ConditionLock()
    private let stopRequested = LockedValue(false)
    /// Shared with the observer thread (`warn`): the warnings said so far.
    private let said = LockedValue<[String]>([])

    /// Checks the file-descriptor limit for the shard's viewers (raising the soft limit to the
    /// hard one when that is enough) and starts the event loop's threads.
    ///
    /// - Throws: ``PlayoutError`` when the viewers need more file descriptors than the process
    ///   may open, or a thread cannot start.
    public init(configuration: Configuration) throws {
        guard configuration.viewers >= 1 else { throw PlayoutError(.invalidOption, "--viewers \(configuration.viewers): at least 1") }
        try Self.checkDescriptors(viewers: configuration.shardViewers.count, each: configuration.source.descriptorsPerViewer)
        self.configuration = configuration
        loop = try SubscriptionEventLoop(workers: configuration.workers, decodeThreads: configuration.decode == .none ? 0 : configuration.decodeThreads)
        connector = try SwarmConnector(threads: Self.connectThreads)
    }

    /// The threads the swarm plays on, whatever the number of viewers: the event loop's, and
    /// those that open viewers.
    public var threadCount: Int { loop.threadCount + Self.connectThreads }


    /// Ends the run early (Ctrl-C): every viewer stops, and ``run(onSample:)`` returns with the
    /// final aggregate.
    public func stop() {
        stopRequested.withLock { $0 = true }
        wake.withLock { wake.broadcast() }
    }

    /// Runs the swarm on the calling thread until its duration or ``stop()``: starts viewers as
    /// the ramp says, ends and restarts sessions as the churn says, and calls `onSample` with each
    /// interval's aggregate (and the final one). Every viewer has ended when it returns; the
    /// event loop's threads are shut down.
    public func run(onSample: (SwarmSample) -> Void = { _ in }) -> Result {
        let start = clock.now
        var scheduler = SwarmScheduler(
            viewers: configuration.shardViewers, ramp: configuration.ramp, churn: configuration.churn, duration: configuration.duration,
            seed: configuration.seed, start: start)
        var monitor = TesterMonitor(now: start)
        var sessions: [Int: Session] = [:]
        var leaving: [Session] = []
        /// Viewers whose subscriber could not be made (a refused source): failed from the start.
        var notStarted: [Int: (session: Int, decoded: Bool, reason: String)] = [:]
        var outcomes: [ViewerOutcome] = []
        var samples: [SwarmSample] = []
        var nextSample = start.advanced(by: configuration.interval)
        let residentBefore = TesterMonitor.residentBytes()
        var memoryPerViewer: Int?
        var saturatedBefore = false

        func sample(now: MonotonicInstant, final: Bool) {
            let all = Array(sessions.values)
            // Sessions that left by churn and have not ended yet count as ended.
            let snapshots = all.map { snapshot(of: $0) }
                + leaving.map { ViewerSnapshot(viewer: $0.viewer, session: $0.session, phase: .ended, qos: nil, startup: nil) }
                + notStarted.map { ViewerSnapshot(viewer: $0.key, session: $0.value.session, phase: .failed, qos: nil, startup: nil) }
            let renderError = Spread(snapshots.compactMap(\.renderErrorP99))?.p99
            let dropped = all.reduce(0) { $0 + $1.subscriber.observerDelivery.samplesDropped }
                + (configuration.subscriber.telemetry?.currentStatistics().undelivered ?? 0)
            let load = monitor.load(now: now, latePolls: loop.latePolls, duePolls: loop.duePolls, renderErrorP99: renderError, droppedTelemetry: dropped)
            if load.saturated, !saturatedBefore, !final { warn(TesterMonitor.warning(load)) }
            saturatedBefore = load.saturated
            let sample = SwarmAggregator.sample(elapsed: start.duration(to: now), planned: configuration.shardViewers.count, viewers: snapshots, tester: load)
            samples.append(sample)
            onSample(sample)
        }

        func begin(viewer: Int, session: Int) {
            var options = configuration.subscriber
            let decodes = configuration.decode.decodes(viewer: viewer)
            options.decoding = decodes
            options.qosInterval = configuration.interval
            options.telemetryTrackerName = "viewer \(viewer)"
            options.telemetryTags += [TelemetryField("viewer", .int(Int64(viewer)))]
            options.duration = nil  // the swarm ends its viewers
            let subscriber: Subscriber
            do {
                subscriber = try configuration.source.subscriber(viewer, options)
            } catch {
                notStarted[viewer] = (session, decodes, "\(error)")
                self.warnStart(viewer, error)
                return
            }
            let entry = Session(viewer: viewer, session: session, subscriber: subscriber, decoded: decodes)
            sessions[viewer] = entry
            connector.submit { [loop] in
                // Cancelled while queued (its lifetime ended first): never started.
                guard entry.start.withLock({ state in
                    defer { if state == .queued { state = .starting } }
                    return state == .queued
                }) else { return }
                do {
                    try loop.start(subscriber)
                    entry.start.withLock { $0 = .started }
                } catch {
                    entry.start.withLock { $0 = .failed("\(error)") }
                    self.warnStart(viewer, error)
                }
            }
        }

        func collectLeft() {
            leaving.removeAll { session in
                if session.failure != nil {
                    outcomes.append(outcome(of: session, final: session.subscriber.qos.value))
                    return true
                }
                guard session.subscriber.state.value.isFinal else { return false }
                outcomes.append(outcome(of: session, final: session.subscriber.waitUntilEnded()))
                return true
            }
        }

        while true {
            let now = clock.now
            let stopping = stopRequested.withLock { $0 }
            let actions = stopping ? [.end] : scheduler.advance(now: now)
            var ended = false
            for action in actions {
                switch action {
                case .start(let viewer, let session): begin(viewer: viewer, session: session)
                case .leave(let viewer, _):
                    if let session = sessions.removeValue(forKey: viewer) {
                        // Not opened yet: it never starts. Else it stops, and its outcome comes when it ended.
                        let queued = session.start.withLock { state in
                            defer { if state == .queued { state = .cancelled } }
                            return state == .queued
                        }
                        if !queued {
                            session.subscriber.stop()
                            leaving.append(session)
                        }
                    }
                case .end: ended = true
                }
            }
            if ended {
                // Measured at the end, every viewer's buffers filled: what a viewer costs in steady state.
                if scheduler.joined == configuration.shardViewers.count, !sessions.isEmpty {
                    memoryPerViewer = max(0, TesterMonitor.residentBytes() - residentBefore) / max(1, configuration.shardViewers.count)
                }
                break
            }
            collectLeft()
            if now >= nextSample {
                sample(now: now, final: false)
                while nextSample <= now { nextSample = nextSample.advanced(by: configuration.interval) }
            }
            let deadline = min(nextSample, scheduler.nextDeadline ?? nextSample)
            wake.withLock {
                if !stopRequested.withLock({ $0 }) { wake.wait(until: deadline) }
            }
        }
        // The end: the viewers being opened are opened, then every session stops; the final
        // aggregate covers every viewer.
        connector.waitUntilIdle()
        for session in sessions.values where session.started { session.subscriber.stop() }
        for session in sessions.values where session.started { _ = session.subscriber.waitUntilEnded() }
        for session in leaving where session.started { _ = session.subscriber.waitUntilEnded() }
        collectLeft()
        sample(now: clock.now, final: true)
        for session in sessions.values.sorted(by: { $0.viewer < $1.viewer }) {
            outcomes.append(outcome(of: session, final: session.started ? session.subscriber.waitUntilEnded() : session.subscriber.qos.value))
        }
        for (viewer, failed) in notStarted {
            outcomes.append(ViewerOutcome(
                viewer: viewer, shard: configuration.shard, state: "failed: \(failed.reason)", decoded: failed.decoded, startupTime: nil,
                renderedRatio: nil, framesRendered: 0, freezeCount: 0, freezeRatio: nil, endToEndLatency: nil, jitterBufferDelay: nil, bitrate: 0,
                packetsLost: 0, nackCount: 0, framesDecoded: nil))
        }
        let failures = startFailures.withLock { $0 }
        if failures > 5 { warn("\(failures) viewers could not start in all (the first 5 said above)") }
        connector.shutdown()
        loop.shutdown()
        outcomes.sort { ($0.viewer, $0.state) < ($1.viewer, $1.state) }
        return Result(
            samples: samples, outcomes: outcomes, startupTimes: outcomes.compactMap(\.startupTime), memoryPerViewer: memoryPerViewer,
            warnings: said.withLock { $0 })
    }

    /// Viewers that could not start, counted (the first five said).
    private let startFailures = LockedValue(0)

    private func warnStart(_ viewer: Int, _ error: any Error) {
        let count = startFailures.withLock { count in
            count += 1
            return count
        }
        if count <= 5 { warn("viewer \(viewer) could not start: \(error)") }
    }

    private func warn(_ text: String) {
        said.withLock { $0.append(text) }
    }

    private func snapshot(of session: Session) -> ViewerSnapshot {
        // A viewer that could not start has no measures (not zeros).
        guard session.failure == nil else {
            return ViewerSnapshot(viewer: session.viewer, session: session.session, phase: .failed, qos: nil, startup: session.subscriber.startup.value)
        }
        return ViewerSnapshot(
            viewer: session.viewer, session: session.session, phase: ViewerSnapshot.Phase(session.subscriber.state.value), qos: session.subscriber.qos.value,
            startup: session.subscriber.startup.value)
    }

    private func outcome(of session: Session, final: SubscriberQoS) -> ViewerOutcome {
        var snapshot = snapshot(of: session)
        if session.failure == nil { snapshot.qos = final }
        let track = final.video ?? final.audio
        let state = session.failure.map { "failed: \($0)" } ?? {
            if case .failed(let reason) = final.state { return "failed: \(reason)" }
            return final.state.name
        }()
        let elapsed = final.elapsed.seconds
        return ViewerOutcome(
            viewer: session.viewer, shard: configuration.shard, state: state, decoded: session.decoded, startupTime: snapshot.startupTime,
            renderedRatio: snapshot.renderedRatio, framesRendered: track?.framesRendered ?? 0, freezeCount: track?.freezeCount ?? 0,
            freezeRatio: snapshot.freezeRatio, endToEndLatency: track?.endToEndLatency.percentile(0.5)?.seconds,
            jitterBufferDelay: snapshot.jitterBufferDelay, bitrate: elapsed > 0 ? Double(final.total.bytesReceived * 8) / elapsed : 0,
            packetsLost: final.total.packetsLost, nackCount: final.tracks.values.reduce(0) { $0 + $1.nackCount },
            framesDecoded: session.decoded ? track?.framesDecoded : nil)
    }

    /// Checks that `viewers` viewers of `each` descriptors fit the process's limit, raising the
    /// soft limit up to the hard one if that is what it takes.
    static func checkDescriptors(viewers: Int, each: Int) throws {
        let needed = rlim_t(viewers * each + 64)
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        if limit.rlim_cur >= needed { return }
        if limit.rlim_max >= needed {
            limit.rlim_cur = needed
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 { return }
        }
        throw PlayoutError(
            .invalidOption,
            "\(viewers) viewers need about \(needed) file descriptors (\(each) each, and 64 more), and this process may open \(min(limit.rlim_cur, limit.rlim_max)): raise the limit (ulimit -n \(needed)) or run fewer viewers per shard")
    }
}
