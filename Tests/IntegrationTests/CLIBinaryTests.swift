import Foundation
import Playout
import PlayoutSender
import PlayoutTesting
import RealTimeTesting
import Testing

/// Runs the built `playout` binary, as a user would.
func runPlayout(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, stdout: String, stderr: String) {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let binary = root.appendingPathComponent(".build/debug/playout")
    guard FileManager.default.isExecutableFile(atPath: binary.path) else {
        throw CLIError("no binary at \(binary.path): run `swift build` (make test does) first")
    }
    let result = try runProgram(binary.path, arguments, environment: environment)
    return (result.status, String(decoding: result.stdout, as: UTF8.self), result.stderr)
}

/// Runs a program to its end; returns its status, standard output (bytes) and standard error.
func runProgram(_ path: String, _ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, stdout: Data, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // Standard error is read on another thread, so a program that fills one pipe while we read
    // the other cannot block.
    let errors = LockedData()
    let done = DispatchSemaphore(value: 0)
    Thread {
        errors.set(err.fileHandleForReading.readDataToEndOfFile())
        done.signal()
    }.start()
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    done.wait()
    return (process.terminationStatus, stdout, String(decoding: errors.value, as: UTF8.self))
}

/// Data handed from a reader thread.
private final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data: Data?
    func set(_ value: Data) { lock.withLock { data = value } }
    var value: Data { lock.withLock { data ?? Data() } }
}

struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

@Suite("playout binary", .realTime)
struct CLIBinaryTests {
    @Test("`playout version` prints the linked FFmpeg and libsrtp2 versions and exits 0")
    func version() throws {
        let result = try runPlayout(["version"])
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.first?.hasPrefix("playout ") == true)
        #expect(lines.contains { $0.hasPrefix("libavcodec 59.") || $0.hasPrefix("libavcodec 6") })
        #expect(lines.contains { $0.hasPrefix("libsrtp2 2.") })
    }

    @Test("`playout publish` announces the feedback it answers: all of it by default, no nack and no RTX with --no-rtx, nothing with --no-feedback; --json says what it answered", arguments: [
        ([String](), true, true), (["--no-rtx"], true, false), (["--no-feedback"], false, false),
    ])
    func publishFeedback(flags: [String], announcesFeedback: Bool, announcesRetransmission: Bool) throws {
        let port = try Publisher.freeLoopbackDestination().port
        let sdp = FileManager.default.temporaryDirectory.appendingPathComponent("playout-publish-\(port).sdp").path
        defer { try? FileManager.default.removeItem(atPath: sdp) }
        let result = try runPlayout(["publish", "testsrc", "--to", "127.0.0.1:\(port)", "--sdp", sdp, "--duration", "1s", "--size", "320x240", "--json"] + flags)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try String(contentsOfFile: sdp, encoding: .utf8).split(whereSeparator: \.isNewline).map(String.init)
        #expect(lines.contains("a=rtcp-fb:96 nack pli") == announcesFeedback, "\(lines)")
        #expect(lines.contains("a=rtcp-fb:96 nack") == announcesRetransmission, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("a=rtpmap:98 rtx/") } == announcesRetransmission, "\(lines)")
        let object = try #require(jsonObject(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        let feedback = try #require((object["video"] as? [String: Any])?["feedback"] as? [String: Any], "\(result.stdout)")
        #expect(feedback["nacksReceived"] as? Int == 0 && feedback["keyFramesForced"] as? Int == 0, "no receiver: \(feedback)")
    }

    @Test("an invalid PLAYOUT_LOG_LEVEL is reported once on stderr and ignored")
    func invalidLogLevel() throws {
        let result = try runPlayout(["version"], environment: ["PLAYOUT_LOG_LEVEL": "loud"])
        #expect(result.status == 0)
        #expect(result.stderr.components(separatedBy: "ignoring PLAYOUT_LOG_LEVEL=loud").count == 2)
        #expect(!result.stdout.contains("PLAYOUT_LOG_LEVEL"), "diagnostics never go to stdout")
    }

    @Test("an unknown subcommand exits non-zero with a reason on stderr")
    func unknownSubcommand() throws {
        let result = try runPlayout(["frobnicate"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("frobnicate"))
    }

    /// Expects a failure told in exactly one stderr line that contains every one of `words`,
    /// no stack trace, and nothing on stdout unless the run had started (then its JSON events).
    static func expectOneLineFailure(_ arguments: [String], mentioning words: [String], started: Bool = false) throws {
        let result = try runPlayout(arguments)
        #expect(result.status != 0, "\(arguments)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(arguments): \(result.stderr)")
        for word in words { #expect(result.stderr.contains(word), "\(arguments): \(result.stderr)") }
        #expect(!result.stderr.contains("Fatal error") && !result.stderr.contains("Stack dump"))
        #expect(started || result.stdout.isEmpty, "\(arguments): \(result.stdout)")
    }

    @Test("bad options: one line on stderr that names the option and the help to read", arguments: [
        (["subscribe", "x.sdp", "--override", "soon"], ["--override soon:", "DELAY@AT[/FOR]", "playout subscribe --help"]),
        (["subscribe", "x.sdp", "--playout-delay", "forever"], ["--playout-delay forever:", "e.g. 230ms"]),
        (["subscribe", "x.sdp", "--sink", "ftp:out"], ["--sink ftp:out:", "file:PATH"]),
        (["subscribe", "x.sdp", "--srtp-key", "zRxmKMKpñ"], ["--srtp-key:", "'ñ' (character 9) is not base64", "head -c 30 /dev/urandom | base64"]),
        (["subscribe", "x.sdp", "--qos-interval", "0s"], ["--qos-interval 0s:", "e.g. 1s"]),
        (["subscribe", "x.sdp", "--frobnicate"], ["--frobnicate", "playout subscribe --help"]),
        (["subscribe"], ["source", "playout subscribe --help"]),
        (["publish", "testsrc", "--to", "nowhere"], ["--to nowhere:", "127.0.0.1:5004"]),
        (["publish", "testsrc", "--to", "127.0.0.1:0"], ["--to 127.0.0.1:0:", "from 1 to 65532", "playout publish --help"]),
        (["publish", "testsrc", "--to", "127.0.0.1:65534"], ["--to 127.0.0.1:65534:", "from 1 to 65532"]),
        (["demo", "--port", "0"], ["--port 0:", "from 1 to 65532", "playout demo --help"]),
        (["demo", "--loss", "150%"], ["--loss 150%:", "0% and 100%"]),
    ])
    func badOptions(arguments: [String], words: [String]) throws {
        try Self.expectOneLineFailure(arguments, mentioning: words)
        let result = try runPlayout(arguments)
        #expect(result.status == 64, "a bad option exits 64 (EX_USAGE)")
        #expect(!result.stderr.contains("Ã"), "no mojibake: \(result.stderr)")
    }

    @Test("a missing SDP, an SDP that does not parse and a non-media file: one line each, before anything starts")
    func unreadableSources() throws {
        try Self.expectOneLineFailure(["subscribe", "/nonexistent/stream.sdp", "--json"], mentioning: ["/nonexistent/stream.sdp"])
        let broken = FFmpeg.temporaryFile("broken.sdp")
        try "v=0\nthis is not an SDP\n".write(to: broken, atomically: true, encoding: .utf8)
        try Self.expectOneLineFailure(["subscribe", broken.path, "--json"], mentioning: [broken.lastPathComponent])
        let text = FFmpeg.temporaryFile("notes.txt")
        try "just some words, no media here\n".write(to: text, atomically: true, encoding: .utf8)
        try Self.expectOneLineFailure(["subscribe", text.path, "--json"], mentioning: [text.lastPathComponent])
    }

    @Test("a port in use: one line naming the port, non-zero exit")
    func portInUse() throws {
        let port = try SocketAddress.freeLoopbackPorts(count: 2).lowerBound
        let holder = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        #expect(holder >= 0)
        defer { close(holder) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = INADDR_ANY
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(holder, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(bound == 0, "the test could not hold port \(port) itself")
        let sdp = FFmpeg.temporaryFile("in-use.sdp")
        let description = "v=0\no=- 0 0 IN IP4 127.0.0.1\ns=x\nc=IN IP4 127.0.0.1\nt=0 0\nm=video \(port) RTP/AVP 96\na=rtpmap:96 H264/90000\n"
        try description.write(to: sdp, atomically: true, encoding: .utf8)
        try Self.expectOneLineFailure(["subscribe", sdp.path, "--json", "--duration", "2s"], mentioning: ["\(port)"], started: true)
    }

}

/// The tests that run the whole demo, one at a time: each encodes and decodes in real time, and
/// several at once on two cores would starve one another.
@Suite("playout demo binary", .realTime, .serialized)
struct DemoBinaryTests {
    @Test("`playout demo` runs publisher and subscriber on loopback and reports what it rendered")
    func demo() throws {
        let port = try Publisher.freeLoopbackDestination().port
        // 640x360: the test is about the command's wiring, and 720p encoding and decoding in real
        // time starves on a machine running the rest of the suite.
        let result = try runPlayout(["demo", "--duration", "3s", "--json", "--port", "\(port)", "--size", "640x360", "--bitrate", "800k"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        let summary = try #require(lines.last.flatMap(jsonObject))
        #expect(summary["type"] as? String == "summary")
        #expect(summary["state"] as? String == "ended")
        let video = try #require(summary["video"] as? [String: Any])
        let audio = try #require(summary["audio"] as? [String: Any])
        #expect(result.stderr.contains("publisher:"), "the publisher's counts go to stderr")
        // 3 s at 30 fps and 50 packets/s: most of what the publisher sent renders, less the
        // 230 ms delay. Measured against what it sent, since on a loaded machine the real-time
        // encoder itself falls behind.
        let sentVideo = try #require(Self.framesSent("video", in: result.stderr), "\(result.stderr)")
        let sentAudio = try #require(Self.framesSent("audio", in: result.stderr), "\(result.stderr)")
        #expect(sentVideo >= 45 && sentAudio >= 75, "the publisher ran: \(result.stderr)")
        #expect(Double(video["framesRendered"] as? Int ?? 0) >= 0.6 * Double(sentVideo), "\(video), \(sentVideo) sent")
        #expect(Double(audio["framesRendered"] as? Int ?? 0) >= 0.6 * Double(sentAudio), "\(audio), \(sentAudio) sent")
    }

    @Test("`playout demo --no-decode`: the frames render at their render times undecoded — rendered, nothing decoded; a .y4m sink is refused in one line")
    func demoWithoutDecoding() throws {
        let port = try Publisher.freeLoopbackDestination().port
        let result = try runPlayout(["demo", "--duration", "2s", "--json", "--port", "\(port)", "--size", "320x180", "--bitrate", "300k", "--no-decode"])
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try #require(result.stdout.split(separator: "\n").last.flatMap { jsonObject(String($0)) })
        let video = try #require(summary["video"] as? [String: Any])
        let sent = try #require(Self.framesSent("video", in: result.stderr), "\(result.stderr)")
        #expect(Double(video["framesRendered"] as? Int ?? 0) >= 0.6 * Double(sent), "\(video), \(sent) sent")
        // Not decoded: the decode statistics are unknown, null — never 0.
        #expect(video["framesDecoded"] is NSNull && video["decodeErrors"] is NSNull, "\(video)")
        let y4m = FileManager.default.temporaryDirectory.appendingPathComponent("playout-no-decode-\(getpid()).y4m").path
        defer { try? FileManager.default.removeItem(atPath: y4m) }
        let refused = try runPlayout(["demo", "--duration", "1s", "--port", "\(port)", "--no-decode", "--sink", "file:\(y4m)"])
        #expect(refused.status != 0 && refused.stderr.contains("decoding on"), "\(refused.stderr)")
    }

    @Test("`playout demo --no-rtx` on a lossy link: no NACK and no retransmission, losses repaired by key-frame requests the publisher answers")
    func noRetransmission() throws {
        let port = try Publisher.freeLoopbackDestination().port
        let result = try runPlayout([
            "demo", "--duration", "4s", "--json", "--port", "\(port)", "--size", "640x360", "--bitrate", "800k", "--loss", "2%", "--no-rtx",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try #require(result.stdout.split(separator: "\n").last.flatMap { jsonObject(String($0)) })
        let video = try #require(summary["video"] as? [String: Any])
        #expect(video["nackCount"] as? Int == 0 && video["retransmittedPacketsReceived"] as? Int == 0, "\(video)")
        let requests = (video["pliCount"] as? Int ?? 0) + (video["firCount"] as? Int ?? 0)
        #expect(requests > 0, "2 % loss over 4 s breaks some frame: \(video)")
        // The publisher line's video part counts the requests it answered with key frames.
        let line = try #require(result.stderr.split(separator: "\n").first { $0.hasPrefix("publisher: video") })
        let videoPart = try #require(line.split(separator: ";").first)
        #expect(videoPart.contains("0 NACKs → 0 RTX") && !videoPart.contains(" 0 PLI + 0 FIR → 0 key frames"), "\(line)")
    }

    /// The frames the demo's publisher line says it sent of `kind`: "publisher: video H264: 94 frames, …".
    static func framesSent(_ kind: String, in stderr: String) -> Int? {
        guard let line = stderr.split(separator: "\n").first(where: { $0.hasPrefix("publisher: ") }) else { return nil }
        for part in line.dropFirst("publisher: ".count).split(separator: ";") {
            let words = part.split(separator: " ")
            if words.first == Substring(kind), words.count >= 4, words[3].hasPrefix("frames") { return Int(words[2]) }
        }
        return nil
    }

    /// stderr's lines, less the one line the demo prints about its publisher.
    static func linesBesidesPublisher(_ stderr: String) -> [Substring] {
        stderr.split(separator: "\n").filter { !$0.hasPrefix("publisher: ") }
    }

    @Test("at PLAYOUT_LOG_LEVEL=error or warning, stderr holds the publisher line and nothing else: no x264, no FFmpeg, even on a lossy link", arguments: [
        ("error", [String]()), ("warning", ["--loss", "5%"]),
    ])
    func quietAtDefaultLevels(level: String, impairment: [String]) throws {
        let port = try Publisher.freeLoopbackDestination().port
        let small = ["--size", "640x360", "--bitrate", "800k"]
        let result = try runPlayout(["demo", "--duration", "2s", "--json", "--port", "\(port)"] + small + impairment, environment: ["PLAYOUT_LOG_LEVEL": level])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count(where: { $0.hasPrefix("publisher: ") }) == 1, "\(result.stderr)")
        #expect(Self.linesBesidesPublisher(result.stderr).isEmpty, "\(result.stderr)")
        #expect(!result.stdout.contains("libx264") && !result.stdout.contains("playout.ffmpeg"), "logs never go into the JSON stream")
    }

    @Test("at PLAYOUT_LOG_LEVEL=trace FFmpeg's own lines (libx264's too) arrive through swift-log, on stderr, never on stdout")
    func ffmpegLinesThroughSwiftLog() throws {
        let port = try Publisher.freeLoopbackDestination().port
        let result = try runPlayout(["demo", "--duration", "1s", "--json", "--port", "\(port)", "--size", "640x360"], environment: ["PLAYOUT_LOG_LEVEL": "trace"])
        #expect(result.status == 0, "\(result.stderr)")
        let ffmpeg = result.stderr.split(separator: "\n").filter { $0.contains("playout.ffmpeg") }
        #expect(ffmpeg.contains { $0.contains("[libx264 @ ") }, "\(ffmpeg.prefix(5))")
        #expect(!result.stdout.contains("libx264"))
    }
}

// Weight 2: `demo` sends and receives in one debug process; at weight 1, beside the rest of the
// suite, 4 of 360 video frames came late.
@Suite("playout binary with a reader that stops reading", .realTime(weight: 2))
struct StalledOutputTests {
    @Test("stdout not read for 10 s: no packet lost, every frame rendered, the dropped samples counted in the summary")
    func stdoutNotRead() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let binary = root.appendingPathComponent(".build/debug/playout").path
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("playout-stalled-\(UInt32.random(in: 0...UInt32.max)).jsonl")
        defer { try? FileManager.default.removeItem(at: output) }
        let port = try Publisher.freeLoopbackDestination().port
        // The reader is a shell that sleeps before it reads: 240 samples of ≈ 1.9 kB fill the
        // 64 kB pipe after ≈ 2 s; the rest waits in the JSON backend's queue.
        #expect(FileManager.default.isExecutableFile(atPath: binary), "run swift build first")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "'\(binary)' demo --duration 12s --qos-interval 50ms --size 320x240 --playout-delay 500ms --port \(port) | (sleep 10; cat > '\(output.path)')"]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(stderr)")
        let lines = try String(contentsOf: output, encoding: .utf8).split(separator: "\n").map(String.init)
        let summary = try #require(lines.last.flatMap(jsonObject), "\(lines.suffix(2))")
        #expect(summary["type"] as? String == "summary")
        let total = try #require(summary["total"] as? [String: Any])
        #expect(total["packetsLost"] as? Int == 0)
        for kind in ["video", "audio"] {
            let track = try #require(summary[kind] as? [String: Any])
            let received = try #require(track["framesReceived"] as? Int)
            let rendered = try #require(track["framesRendered"] as? Int)
            let dropped = try #require(track["framesDropped"] as? Int)
            let buffered = try #require(track["bufferedFrames"] as? Int)
            // Every frame received was rendered, or is still held for the 500 ms delay at the
            // end. A reader that held up the media would cost the 10 s it did not read (300
            // frames); a debug build that sends and receives in one process, beside the rest of
            // the suite, lets a few come late (4 of 358 video, 7 of 600 audio frames): 2 %.
            #expect(rendered + dropped + buffered == received, "\(kind): \(track)")
            #expect(dropped <= received / 50, "\(kind): \(track)")
        }
        let samples = lines.filter { $0.contains("\"type\":\"qos\"") }.count
        let dropped = try #require(summary["samplesDropped"] as? Int)
        // The stream is a telemetry backend with its own queue: it caught up once the reader
        // read (every sample written), or says how many it dropped.
        #expect(samples + dropped >= 235, "every sample written or counted: \(samples) written, \(dropped) dropped")
    }
}

@Suite("a library user's program", .realTime)
struct LibraryProgramTests {
    @Test("the SubscribeFromCode sample prints nothing on stderr: FFmpeg's and libx264's lines go through swift-log")
    func quietStderr() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let process = Process()
        process.executableURL = root.appendingPathComponent(".build/debug/SubscribeFromCode")
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(stdout.contains("packets lost: 0"))
        #expect(stderr.isEmpty, "\(stderr)")
    }
}
