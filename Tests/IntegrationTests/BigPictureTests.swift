import Foundation
import PlayoutTesting
import RealTimeTesting
import Testing

/// Runs the built `playout` binary like ``runPlayout(_:environment:)`` and also reports its peak
/// resident memory, as GNU `time` measures it for its own child.
///
/// Not from `wait4`'s resource usage of a child this process spawns: `posix_spawn` starts the
/// child in this process's memory (`CLONE_VM`), and `exec` records that memory's high-water mark
/// as the child's own `ru_maxrss`. A test process that once held 570 MiB reported a playout that
/// peaked at 400 MiB as 570. `time` forks a copy of its own small process, so its child's peak is
/// the child's.
func runPlayoutMeasuringMemory(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String, peakResidentMiB: Double) {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let binary = root.appendingPathComponent(".build/debug/playout").path
    guard FileManager.default.isExecutableFile(atPath: binary) else {
        throw CLIError("no binary at \(binary): run `swift build` (make test does) first")
    }
    let time = "/usr/bin/time"
    guard FileManager.default.isExecutableFile(atPath: time) else {
        throw CLIError("no GNU time at \(time): run `make setup` (make test does) first")
    }
    let stdoutFile = FFmpeg.temporaryFile("stdout.jsonl")
    let stderrFile = FFmpeg.temporaryFile("stderr.txt")
    let peakFile = FFmpeg.temporaryFile("peak.txt")
    defer {
        for file in [stdoutFile, stderrFile, peakFile] { try? FileManager.default.removeItem(at: file) }
    }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, stdoutFile.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, stderrFile.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    // `%M`: the child's peak resident set, in KiB.
    let argv = ([time, "--format=%M", "--output=\(peakFile.path)", binary] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, time, &actions, nil, argv, environ)
    guard spawned == 0 else { throw CLIError("posix_spawn failed: \(spawned)") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
        guard errno == EINTR else { throw CLIError("waitpid failed: \(errno)") }
    }
    let exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    // When the child was killed, `time` writes a line saying so before the number.
    let peak = try String(contentsOf: peakFile, encoding: .utf8).split(separator: "\n").last.flatMap { Double($0) }
    guard let peak else { throw CLIError("GNU time wrote no peak: \((try? String(contentsOf: peakFile, encoding: .utf8)) ?? "")") }
    return (exitStatus, try String(contentsOf: stdoutFile, encoding: .utf8), try String(contentsOf: stderrFile, encoding: .utf8), peak / 1024)
}

/// A picture larger than the machine decodes in real time (issue 14, items 4 and 10): memory stays
/// proportional to the picture size and the playout delay, every sample stays consistent, and the
/// frames decoding could not finish in time are counted as such.
@Suite("playout subscribe: pictures too big to decode in real time", .realTime(weight: 3))
struct BigPictureTests {
    @Test("an 8192x8192 file with --playout-delay 3s: rendered ≤ decoded ≤ received in every sample, late frames counted, memory bounded")
    func eightKSquare() throws {
        let clip = FFmpeg.temporaryFile("8192.mkv")
        defer { try? FileManager.default.removeItem(at: clip) }
        let frames = 15
        _ = try FFmpeg.run([
            "-f", "lavfi", "-i", "testsrc2=size=8192x8192:rate=30:duration=\(Double(frames) / 30)",
            "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-x264-params", "level=6.2",
            "-pix_fmt", "yuv420p", "-y", clip.path,
        ])
        let clipBytes = try #require(try FileManager.default.attributesOfItem(atPath: clip.path)[.size] as? Int)
        let result = try runPlayoutMeasuringMemory(["subscribe", clip.path, "--playout-delay", "3s", "--qos-interval", "200ms", "--json"])
        #expect(result.status == 0, "\(result.stderr)")

        let lines = result.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let samples = lines.filter { ["qos", "summary"].contains($0["type"] as? String) }
        #expect(samples.count >= 2, "\(result.stdout)")
        for sample in samples {
            let video = try #require(sample["video"] as? [String: Any])
            let received = video["framesReceived"] as? Int ?? -1
            let decoded = video["framesDecoded"] as? Int ?? -1
            let rendered = video["framesRendered"] as? Int ?? -1
            #expect(0 <= rendered && rendered <= decoded && decoded <= received, "rendered \(rendered), decoded \(decoded), received \(received) at t=\(sample["t"] ?? "?")")
        }
        let summary = try #require(samples.last?["video"] as? [String: Any])
        #expect(summary["framesReceived"] as? Int == frames)
        // Decoding one 8192x8192 picture takes longer than a frame interval here: what was
        // rendered was late, the rest came too late to render, and every frame is accounted for
        // (none was skipped: no delay decrease).
        let rendered = summary["framesRendered"] as? Int ?? 0
        let renderedLate = summary["framesRenderedLate"] as? Int ?? 0
        let late = summary["framesLate"] as? Int ?? 0
        #expect(rendered >= 1 && renderedLate >= 1, "\(summary)")
        #expect(rendered + late == frames && summary["framesSkipped"] as? Int == 0, "\(summary)")

        // The bound, from what must be held: the process itself (≈ 60 MiB with FFmpeg's
        // libraries), the encoded frames the 3 s delay holds (the whole clip here), the decoder's
        // working set (up to three pictures of 96 MiB: the one being decoded, its reference, one
        // waiting for output) and one picture decoded ahead (the byte cap allows no more).
        // Measured: 391 MiB alone, 403 MiB beside three busy loops or two more runs. Decoding
        // three pictures ahead, as before the cap, adds 192 MiB (≈ 530 MiB on a 1 s clip).
        let picture = 8192.0 * 8192 * 3 / 2 / 1_048_576
        let bound = 60 + Double(clipBytes) / 1_048_576 + 4 * picture
        #expect(result.peakResidentMiB < bound, "peak RSS \(result.peakResidentMiB) MiB, bound \(bound) MiB")
    }
}
