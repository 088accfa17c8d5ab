// Decode to null: Playout's demuxer + decoder against a minimal C loop over libavformat and
// libavcodec (av_read_frame → avcodec_send_packet → avcodec_receive_frame) on the same files, in the
// same process. One iteration decodes the whole clip; compare cpuTotal (CPU time) per iteration.
import Benchmark
import CDecodeReference
import Foundation
import PlayoutCodec
import PlayoutCore

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

/// Playout's path: demux, decode, count.
func playoutDecode(_ path: String, configuration: FFmpegDecoder.Configuration) throws -> Int {
    let demuxer = try FFmpegDemuxer(url: path)
    let stream = demuxer.streams.first { $0.kind == .video }!
    let decoder = try FFmpegDecoder(codec: stream.codec!, configuration: configuration)
    var frames = 0
    while let frame = try demuxer.read() {
        guard frame.track.rawValue == UInt32(stream.index) else { continue }
        try decoder.decode(frame.bytes) { _ in frames += 1 }
    }
    try decoder.flush { _ in frames += 1 }
    return frames
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal],
        maxDuration: .seconds(3),
        maxIterations: 50
    )
    let clips = [
        ("720p H.264", clip("720p.mp4", ["-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30:duration=2", "-c:v", "libx264", "-pix_fmt", "yuv420p"])),
        ("1080p H.264", clip("1080p.mp4", ["-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30:duration=2", "-c:v", "libx264", "-pix_fmt", "yuv420p"])),
        ("720p VP8", clip("720p.webm", ["-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30:duration=2", "-c:v", "libvpx", "-b:v", "2M"])),
    ]
    // One thread; the decoder's default (2 slice threads, no added latency, for live); and the
    // batch preset (2 frame threads, like ffmpeg's default on this machine).
    let configurations: [(String, FFmpegDecoder.Configuration)] = [
        ("1 thread", .init(threadCount: 1)), ("2 slice threads", .init()), ("2 frame threads", .batch),
    ]
    for (name, path) in clips {
        for (threads, configuration) in configurations {
            Benchmark("decode \(name), \(threads): C loop (reference)") { benchmark in
                for _ in benchmark.scaledIterations {
                    blackHole(reference_decode_file(path, Int32(configuration.threadCount), configuration.threading == .frame ? 1 : 0))
                }
            }
            Benchmark("decode \(name), \(threads): Playout") { benchmark in
                for _ in benchmark.scaledIterations {
                    blackHole(try playoutDecode(path, configuration: configuration))
                }
            }
        }
    }
}
