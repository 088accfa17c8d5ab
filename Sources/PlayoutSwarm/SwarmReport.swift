/// Percentiles across viewers of one measure at one instant: the lowest, the median, the 95th
/// and 99th percentiles and the highest of the viewers' values (nearest rank), and how many
/// viewers had a value.
public struct Spread: Equatable, Sendable {
    /// How many viewers had a value.
    public var count: Int
    public var min: Double
    public var p50: Double
    public var p95: Double
    public var p99: Double
    public var max: Double

    /// The spread of `values` (nil when there is none): nearest-rank percentiles, so each is one
    /// viewer's value.
    public init?(_ values: [Double]) {
        let sorted = values.filter(\.isFinite).sorted()
        guard let first = sorted.first, let last = sorted.last else { return nil }
        func rank(_ p: Double) -> Double {
            sorted[Swift.max(0, Swift.min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1))]
        }
        count = sorted.count
        min = first
        p50 = rank(0.50)
        p95 = rank(0.95)
        p99 = rank(0.99)
        max = last
    }

    /// A spread with these values.
    public init(count: Int, min: Double, p50: Double, p95: Double, p99: Double, max: Double) {
        self.count = count
        self.min = min
        self.p50 = p50
        self.p95 = p95
        self.p99 = p99
        self.max = max
    }

    /// The named percentile: `"min"`, `"p50"`, `"p95"`, `"p99"` or `"max"`.
    public func value(of statistic: String) -> Double? {
        switch statistic {
        case "min": min
        case "p50": p50
        case "p95": p95
        case "p99": p99
        case "max": max
        default: nil
        }
    }
}

/// What the tester itself cost and whether it kept up — so a result is not blamed on the server
/// when the tester was the bottleneck.
public struct TesterLoad: Equatable, Sendable {
    /// The process's CPU time over the interval, in cores (1.0: one core busy all the time).
    public var cpuCores: Double
    /// The cores the machine has.
    public var cores: Int
    /// The event loop's turns taken later than they were due by more than the lateness bound,
    /// since the start.
    public var latePolls: Int
    /// The 99th percentile across viewers of the render error (how late frames were presented),
    /// seconds.
    public var renderErrorP99: Double?
    /// Telemetry records and samples dropped because a backend or the output did not keep up,
    /// since the start.
    public var droppedTelemetry: Int
    /// The process's resident memory, bytes.
    public var residentBytes: Int
    /// The tester, not the server, is the bottleneck (CPU saturated, polls late or frames
    /// presented late).
    public var saturated: Bool

    /// A load with these values.
    public init(cpuCores: Double, cores: Int, latePolls: Int, renderErrorP99: Double?, droppedTelemetry: Int, residentBytes: Int, saturated: Bool) {
        self.cpuCores = cpuCores
        self.cores = cores
        self.latePolls = latePolls
        self.renderErrorP99 = renderErrorP99
        self.droppedTelemetry = droppedTelemetry
        self.residentBytes = residentBytes
        self.saturated = saturated
    }
}

/// One interval's aggregate across the viewers of a swarm (a `"swarm"` JSON line).
public struct SwarmSample: Equatable, Sendable {
    /// Time since the swarm started.
    public var elapsed: Duration
    /// The viewers this shard runs (started or still to start).
    public var viewers: Int
    /// Viewers playing, connecting (or reconnecting, or not yet started), failed, and ended (by
    /// churn or at the end).
    public var connected: Int
    public var connecting: Int
    public var failed: Int
    public var ended: Int
    /// Per measure (a QoS field's name, or `startupTime`, `renderedRatio`, `freezeRatio`, …), its
    /// spread across the viewers that have a value; in the order measures are written.
    public var measures: [(name: String, spread: Spread)]
    /// The tester's own load over the interval.
    public var tester: TesterLoad

    /// A sample with these values.
    public init(elapsed: Duration, viewers: Int, connected: Int, connecting: Int, failed: Int, ended: Int, measures: [(name: String, spread: Spread)], tester: TesterLoad) {
        self.elapsed = elapsed
        self.viewers = viewers
        self.connected = connected
        self.connecting = connecting
        self.failed = failed
        self.ended = ended
        self.measures = measures
        self.tester = tester
    }

    /// The spread of the measure named `name`.
    public subscript(name: String) -> Spread? {
        measures.first { $0.name == name }?.spread
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.elapsed == rhs.elapsed && lhs.viewers == rhs.viewers && lhs.connected == rhs.connected && lhs.connecting == rhs.connecting
            && lhs.failed == rhs.failed && lhs.ended == rhs.ended && lhs.tester == rhs.tester
            && lhs.measures.map(\.name) == rhs.measures.map(\.name) && lhs.measures.map(\.spread) == rhs.measures.map(\.spread)
    }
}

/// An SLO's outcome at the end of a run: `startup.p95<2s` held or was breached.
public struct SLOVerdict: Equatable, Sendable {
    /// The objective as written, e.g. `startupTime.p95<2s`.
    public var objective: String
    /// The measured value it was compared with, in the measure's unit (seconds, a ratio, a count);
    /// nil when no viewer had a value (a breach).
    public var measured: Double?
    /// The bound, in the same unit.
    public var bound: Double
    /// Whether it held.
    public var held: Bool

    /// A verdict with these values.
    public init(objective: String, measured: Double?, bound: Double, held: Bool) {
        self.objective = objective
        self.measured = measured
        self.bound = bound
        self.held = held
    }
}

/// One viewer at the end of a run, a row of the report's table.
public struct ViewerOutcome: Equatable, Sendable {
    /// The viewer's number in the whole run (across shards).
    public var viewer: Int
    /// The shard that ran it.
    public var shard: Int
    /// `ended`, `failed: …`, `playing` …
    public var state: String
    /// Whether its frames were decoded (nil decode statistics otherwise).
    public var decoded: Bool
    /// From its start to its first frame rendered, seconds (nil: none rendered).
    public var startupTime: Double?
    /// Frames rendered on time / frames due.
    public var renderedRatio: Double?
    public var framesRendered: Int
    public var freezeCount: Int
    /// Time frozen / time played.
    public var freezeRatio: Double?
    /// End-to-end latency, median, seconds.
    public var endToEndLatency: Double?
    /// Jitter-buffer delay per frame emitted, seconds.
    public var jitterBufferDelay: Double?
    /// Bits/s over the run.
    public var bitrate: Double
    public var packetsLost: Int
    public var nackCount: Int
    /// Frames decoded (nil when the viewer did not decode).
    public var framesDecoded: Int?

    /// An outcome with these values.
    public init(
        viewer: Int, shard: Int, state: String, decoded: Bool, startupTime: Double?, renderedRatio: Double?, framesRendered: Int, freezeCount: Int,
        freezeRatio: Double?, endToEndLatency: Double?, jitterBufferDelay: Double?, bitrate: Double, packetsLost: Int, nackCount: Int, framesDecoded: Int?
    ) {
        self.viewer = viewer
        self.shard = shard
        self.state = state
        self.decoded = decoded
        self.startupTime = startupTime
        self.renderedRatio = renderedRatio
        self.framesRendered = framesRendered
        self.freezeCount = freezeCount
        self.freezeRatio = freezeRatio
        self.endToEndLatency = endToEndLatency
        self.jitterBufferDelay = jitterBufferDelay
        self.bitrate = bitrate
        self.packetsLost = packetsLost
        self.nackCount = nackCount
        self.framesDecoded = framesDecoded
    }
}

/// Everything a picture of a swarm run shows (``SwarmHTMLReport``): the run, its aggregates over
/// time, the start-up distribution, the SLO verdicts, the tester's load and every viewer's outcome.
public struct SwarmReport: Equatable, Sendable {
    /// The run's title, e.g. `playout swarm https://…/whep/live`.
    public var title: String
    /// The run's id (the `run` tag).
    public var run: String
    /// This shard and the shard count (0/1 for one machine).
    public var shard: Int
    public var shardCount: Int
    /// When it started, as an ISO 8601 UTC text.
    public var started: String
    /// The viewers' decode mode as written: `all`, `sample:20`, `none`.
    public var decode: String
    /// One aggregate per interval, oldest first; the last is the final one.
    public var samples: [SwarmSample]
    /// Every viewer's start-up time (first frame rendered), seconds.
    public var startupTimes: [Double]
    /// The SLO verdicts (empty without `--slo`).
    public var verdicts: [SLOVerdict]
    /// Every viewer at the end.
    public var viewers: [ViewerOutcome]
    /// Warnings said during the run (the tester saturated, file descriptors …).
    public var warnings: [String]

    /// A report with these values.
    public init(
        title: String, run: String, shard: Int, shardCount: Int, started: String, decode: String, samples: [SwarmSample], startupTimes: [Double],
        verdicts: [SLOVerdict], viewers: [ViewerOutcome], warnings: [String]
    ) {
        self.title = title
        self.run = run
        self.shard = shard
        self.shardCount = shardCount
        self.started = started
        self.decode = decode
        self.samples = samples
        self.startupTimes = startupTimes
        self.verdicts = verdicts
        self.viewers = viewers
        self.warnings = warnings
    }
}
