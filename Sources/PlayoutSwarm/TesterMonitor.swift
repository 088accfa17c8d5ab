#if canImport(Glibc)
import Glibc
#endif
import Playout
public import PlayoutCore

/// The tester watching itself: its CPU over each interval, its memory, the event loop's late
/// polls, how late frames were presented and what telemetry it dropped — and whether it, not
/// the server, is the bottleneck (a saturated client is the first complaint in every load
/// tester's issues).
///
/// ``assess(cpuCores:cores:latePollsBefore:latePolls:duePolls:renderErrorP99:)`` is the decision,
/// a plain function; ``TesterMonitor`` reads the process's counters for it.
public struct TesterMonitor: Sendable {
    /// Above this share of the machine's cores the tester counts as saturated.
    public static let cpuSaturation = 0.9
    /// Above this share of the due polls taken late in an interval (and at least
    /// ``latePollMinimum`` of them) the tester counts as saturated.
    public static let latePollSaturation = 0.01
    public static let latePollMinimum = 10
    /// Frames presented this late (99th percentile across viewers) mean the tester did not keep up.
    public static let renderErrorSaturation = 0.020

    private var lastCPU: Double
    private var lastWall: MonotonicInstant
    private var lastLatePolls = 0
    private var lastDuePolls = 0
    /// The machine's cores.
    public let cores: Int

    /// A monitor counting from `now`.
    public init(now: MonotonicInstant) {
        lastCPU = Self.processCPUSeconds()
        lastWall = now
        cores = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }

    /// The load since the last call (or the start): `latePolls`/`duePolls` are the event loop's
    /// counters since the start, `renderErrorP99` the viewers' 99th percentile (seconds),
    /// `droppedTelemetry` every drop so far.
    public mutating func load(now: MonotonicInstant, latePolls: Int, duePolls: Int, renderErrorP99: Double?, droppedTelemetry: Int) -> TesterLoad {
        let cpu = Self.processCPUSeconds()
        let wall = lastWall.duration(to: now).seconds
        let cpuCores = wall > 0 ? max(0, cpu - lastCPU) / wall : 0
        let saturated = Self.assess(
            cpuCores: cpuCores, cores: cores, latePolls: latePolls - lastLatePolls, duePolls: duePolls - lastDuePolls, renderErrorP99: renderErrorP99)
        (lastCPU, lastWall, lastLatePolls, lastDuePolls) = (cpu, now, latePolls, duePolls)
        return TesterLoad(
            cpuCores: cpuCores, cores: cores, latePolls: latePolls, renderErrorP99: renderErrorP99, droppedTelemetry: droppedTelemetry,
            residentBytes: Self.residentBytes(), saturated: saturated)
    }

    /// Whether the tester is the bottleneck over an interval: its CPU near every core, more than
    /// 1 % of its polls late (10 at least), or frames presented over 20 ms late at the 99th percentile.
    public static func assess(cpuCores: Double, cores: Int, latePolls: Int, duePolls: Int, renderErrorP99: Double?) -> Bool {
        cpuCores >= cpuSaturation * Double(cores)
            || (latePolls >= latePollMinimum && Double(latePolls) > latePollSaturation * Double(duePolls))
            || (renderErrorP99 ?? 0) > renderErrorSaturation
    }

    /// The warning a saturated interval gives.
    public static func warning(_ load: TesterLoad) -> String {
        "the tester is the bottleneck, not the server: CPU \(fixed(load.cpuCores, 1)) of \(load.cores) cores, "
            + "\(load.latePolls) late polls, render error p99 \(load.renderErrorP99.map { fixed($0 * 1_000, 1) + " ms" } ?? "–"): "
            + "run fewer viewers per machine (--decode none or sample:K, or more shards)"
    }

    /// User and system CPU time of the process so far, seconds.
    public static func processCPUSeconds() -> Double {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return 0 }
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// The process's resident memory, bytes (0 when unknown).
    public static func residentBytes() -> Int {
        guard let file = fopen("/proc/self/statm", "r") else { return 0 }
        defer { fclose(file) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = fread(&buffer, 1, buffer.count - 1, file)
        // size resident shared …, in pages
        let fields = String(decoding: buffer[..<count], as: UTF8.self).split(separator: " ")
        guard fields.count >= 2, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
