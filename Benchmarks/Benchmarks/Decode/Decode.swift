// Decode to null: Playout's demuxer + decoder against a minimal C loop over libavformat and
// libavcodec (av_read_frame → avcodec_send_packet → avcodec_receive_frame) in the same process, and
// against `ffmpeg -f null` on the same file with the same decoder threading.
//
// Paired measurements: this VM's CPU speed drifts by ±10 % between runs and even between
// consecutive benchmarks, which hides a few-percent difference between two benchmarks run one
// after the other. So each iteration decodes the clip once with each of the three, in one of
// the six orders in turn, and records each one's CPU time (CLOCK_PROCESS_CPUTIME_ID, µs;
// ordo-one's cpuTotal counts 10 ms ticks) and that iteration's ratios. Read the ratios' p50:
// "Playout / C loop CPU" ≤ 1031 ‰ is ≥ 0.97× the C loop's frames per CPU second, and
// "Playout / ffmpeg CPU after opening" < 1000 ‰ is faster than ffmpeg.
//
// Playout and the C loop are measured whole (open, probe, decode). ffmpeg's numbers are its own
// `-benchmark` line, which starts after it opened (and probed) its input, so Playout's are given
// from the same point too. ffmpeg's input options set the configuration's threading
// (`-threads N -thread_type T`). Instruction counts, which do not drift: decode-instructions.sh.
import Benchmark
import DecodeLoops
import Foundation
import PlayoutCodec

/// Encodes a 2 s test clip once per process (the ffmpeg CLI comes with `make setup`).
func clip(_ name: String, _ arguments: [String]) -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("playout-bench-\(name)").path
    if !FileManager.default.fileExists(atPath: path) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        process.arguments = ["-hide_banner", "-loglevel", "error", "-y"] + arguments + [path]
        try! process.run()
        process.waitUntilExit()
        precondition(process.terminationStatus == 0, "ffmpeg could not make \(name)")
    }
    return path
}

/// This process's CPU time in µs (CLOCK_PROCESS_CPUTIME_ID: ns precision).
func processCPUTime() -> Int {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return time.tv_sec * 1_000_000 + time.tv_nsec / 1000
}

/// CPU time and wall time of one decode, in µs.
struct Cost {
    var cpu: Int
    var wall: Int

    init(cpu: Int, wall: Int) {
        self.cpu = cpu
        self.wall = wall
    }

    /// From `start` (see ``start()``) until now.
    init(since start: (cpu: Int, wall: ContinuousClock.Instant)) {
        self.init(cpu: processCPUTime() - start.cpu, wall: Int((ContinuousClock.now - start.wall) / .microseconds(1)))
    }

    static func start() -> (cpu: Int, wall: ContinuousClock.Instant) { (processCPUTime(), .now) }
}

/// Playout's decode, measured whole and from the point its input was open.
func measurePlayout(_ path: String, configuration: FFmpegDecoder.Configuration) throws -> (whole: Cost, afterOpening: Cost) {
    let start = Cost.start()
    var opened = start
    blackHole(try playoutDecode(path, configuration: configuration) { opened = Cost.start() })
    return (Cost(since: start), Cost(since: opened))
}

/// The C loop's decode, measured whole.
func measureReference(_ path: String, configuration: FFmpegDecoder.Configuration) -> Cost {
    let start = Cost.start()
    blackHole(referenceDecode(path, configuration: configuration))
    return Cost(since: start)
}

/// `ffmpeg -benchmark … -i PATH -f null -` with the configuration's threading; its decode loop's
/// cost from the `bench: utime=…s stime=…s rtime=…s` line it prints.
func ffmpegDecode(_ path: String, configuration: FFmpegDecoder.Configuration) -> Cost {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
    process.arguments = [
        "-nostdin", "-hide_banner", "-benchmark",
        "-threads", String(configuration.threadCount),
        "-thread_type", configuration.threading == .frame ? "frame" : "slice",
        "-i", path, "-f", "null", "-",
    ]
    let errors = Pipe()
    process.standardError = errors
    process.standardOutput = FileHandle.nullDevice
    try! process.run()
    let output = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    precondition(process.terminationStatus == 0, "ffmpeg could not decode \(path)")
    guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("bench: utime=") }) else {
        preconditionFailure("ffmpeg printed no bench: line for \(path)")
    }
    // bench: utime=0.307s stime=0.020s rtime=0.328s
    var seconds: [String: Double] = [:]
    for field in line.dropFirst("bench: ".count).split(separator: " ") {
        let parts = field.split(separator: "=")
        if parts.count == 2 { seconds[String(parts[0])] = Double(parts[1].dropLast()) }
    }
    let microseconds = { (key: String) in Int((seconds[key] ?? 0) * 1_000_000) }
    return Cost(cpu: microseconds("utime") + microseconds("stime"), wall: microseconds("rtime"))
}

enum Metric {
    static func microseconds(_ name: String) -> BenchmarkMetric { .custom(name + " (µs)", useScalingFactor: false) }
    static func permille(_ name: String) -> BenchmarkMetric { .custom(name + " (‰)", useScalingFactor: false) }
    static let playoutCPU = microseconds("Playout CPU")
    static let referenceCPU = microseconds("C loop CPU")
    static let versusReference = permille("Playout / C loop CPU")
    static let playoutLoopCPU = microseconds("Playout CPU after opening")
    static let ffmpegCPU = microseconds("ffmpeg -f null CPU after opening")
    static let versusFFmpeg = permille("Playout / ffmpeg CPU after opening")
    static let playoutWall = microseconds("Playout wall")
    static let referenceWall = microseconds("C loop wall")
    static let playoutLoopWall = microseconds("Playout wall after opening")
    static let ffmpegWall = microseconds("ffmpeg -f null wall after opening")
    static let all = [
        playoutCPU, referenceCPU, versusReference, playoutLoopCPU, ffmpegCPU, versusFFmpeg,
        playoutWall, referenceWall, playoutLoopWall, ffmpegWall,
    ]
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: Metric.all,
        units: Dictionary(uniqueKeysWithValues: Metric.all.map { ($0, .count) }),  // µs and ‰ as they are
        warmupIterations: 1,
        maxDuration: .seconds(40),
        maxIterations: 30
    )
    let clips = [
        ("720p H.264", clip("720p.mp4", ["-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30:duration=2", "-c:v", "libx264", "-pix_fmt", "yuv420p"])),
        ("1080p H.264", clip("1080p.mp4", ["-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30:duration=2", "-c:v", "libx264", "-pix_fmt", "yuv420p"])),
        ("720p VP8", clip("720p.webm", ["-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30:duration=2", "-c:v", "libvpx", "-b:v", "2M"])),
    ]
    // One thread; the decoder's default (2 slice threads, no added latency, for live); and the
    // batch preset (2 frame threads, two frames in flight).
    let configurations: [(String, FFmpegDecoder.Configuration)] = [
        ("1 thread", .init(threadCount: 1)), ("2 slice threads", .init()), ("2 frame threads", .batch),
    ]
    // Every order of the three, in turn: whichever runs right after ffmpeg's process (or after
    // the other in-process decoder) does so equally often.
    let orders = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]]
    for (name, path) in clips {
        for (threads, configuration) in configurations {
            Benchmark("decode \(name), \(threads): Playout vs C loop vs ffmpeg -f null") { benchmark in
                var iteration = 0
                for _ in benchmark.scaledIterations {
                    var playout: (whole: Cost, afterOpening: Cost)?
                    var reference: Cost?
                    var ffmpeg: Cost?
                    for runner in orders[iteration % orders.count] {
                        switch runner {
                        case 0: playout = try measurePlayout(path, configuration: configuration)
                        case 1: reference = measureReference(path, configuration: configuration)
                        default: ffmpeg = ffmpegDecode(path, configuration: configuration)
                        }
                    }
                    iteration += 1
                    guard let playout, let reference, let ffmpeg else { preconditionFailure("a decoder did not run") }
                    let values: [(BenchmarkMetric, Int)] = [
                        (Metric.playoutCPU, playout.whole.cpu), (Metric.referenceCPU, reference.cpu),
                        (Metric.versusReference, playout.whole.cpu * 1000 / max(1, reference.cpu)),
                        (Metric.playoutLoopCPU, playout.afterOpening.cpu), (Metric.ffmpegCPU, ffmpeg.cpu),
                        (Metric.versusFFmpeg, playout.afterOpening.cpu * 1000 / max(1, ffmpeg.cpu)),
                        (Metric.playoutWall, playout.whole.wall), (Metric.referenceWall, reference.wall),
                        (Metric.playoutLoopWall, playout.afterOpening.wall), (Metric.ffmpegWall, ffmpeg.wall),
                    ]
                    for (metric, value) in values { benchmark.measurement(metric, value) }
                }
            }
        }
    }
}
