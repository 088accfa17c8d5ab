#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import Playout
import PlayoutCore
import PlayoutSender
import PlayoutTesting
import RealTimeTesting
import Testing

/// Issue 13 on the built binary over loopback: a real plain-RTP stream from ffmpeg plays while
/// strangers send to the same port.
@Suite("playout subscribe keeps the real stream while strangers send to its port", .realTime, .serialized)
struct StrangerTests {
    /// A 360p30 H.264 clip of `seconds` (a key frame every second).
    static func clip(seconds: Int) throws -> URL {
        let clip = FFmpeg.temporaryFile("strangers-\(seconds)s.mkv")
        if !FileManager.default.fileExists(atPath: clip.path) {
            _ = try FFmpeg.run([
                "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30:duration=\(seconds)",
                "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-g", "30", "-bf", "0", "-pix_fmt", "yuv420p", clip.path,
            ])
        }
        return clip
    }

    /// ffmpeg sending `clip`'s video as plain RTP to `port` (`packetSize`: its `-pkt_size`).
    static func sender(clip: URL, port: Int, sdp: URL, realTime: Bool = true, limit: [String] = [], packetSize: Int? = nil) -> [String] {
        (realTime ? ["-re"] : []) + ["-i", clip.path] + limit + ["-map", "0:v", "-c", "copy", "-f", "rtp"]
            + (packetSize.map { ["-pkt_size", String($0)] } ?? []) + ["rtp://127.0.0.1:\(port)", "-sdp_file", sdp.path]
    }

    /// The SDP ffmpeg writes for the stream, with the port set to `port`.
    static func sdp(clip: URL, port: Int, packetSize: Int? = nil) throws -> URL {
        let sdp = FFmpeg.temporaryFile("strangers-\(port).sdp")
        _ = try FFmpeg.run(sender(clip: clip, port: 9, sdp: sdp, realTime: false, limit: ["-t", "0.2"], packetSize: packetSize))
        let text = try String(contentsOf: sdp, encoding: .utf8).replacingOccurrences(of: "m=video 9 ", with: "m=video \(port) ")
        try text.write(to: sdp, atomically: true, encoding: .utf8)
        return sdp
    }

    /// Sends datagrams made by `make` to 127.0.0.1:`port`, `perSecond` of them for `duration`, in
    /// bursts every 5 ms; returns how many were sent.
    static func flood(port: Int, perSecond: Int, for duration: Duration, seed: UInt64, make: @escaping @Sendable (inout SeededRandomNumberGenerator, Int) -> [UInt8]) -> Int {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var random = SeededRandomNumberGenerator(seed: seed)
        let clock = ContinuousClock()
        let start = clock.now
        var sent = 0
        while clock.now < start + duration {
            let due = Int((start.duration(to: clock.now).seconds) * Double(perSecond))
            while sent < due {
                let bytes = make(&random, sent)
                let result = bytes.withUnsafeBytes { buffer in
                    withUnsafePointer(to: &address) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, buffer.baseAddress, buffer.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                    }
                }
                if result >= 0 { sent += 1 } else { break }
            }
            usleep(5_000)
        }
        return sent
    }

    /// An RTP header of payload type 96 and `payload` bytes of garbage.
    static func rtp(sequence: UInt16, ssrc: UInt32, timestamp: UInt32, payload: Int, random: inout SeededRandomNumberGenerator) -> [UInt8] {
        var bytes: [UInt8] = [0x80, 96, UInt8(sequence >> 8), UInt8(sequence & 0xFF)]
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: timestamp >> UInt32(shift))) }
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: ssrc >> UInt32(shift))) }
        return bytes + randomBytes(payload, using: &random)
    }

    /// `count` random bytes, eight from each draw: drawn byte by byte, a debug build's flood of
    /// 1,000-byte packets reached half its rate with two `yes > /dev/null` running (2,813 of
    /// 5,600 in 4 s), and the test measured its own sender instead of the subscriber.
    static func randomBytes(_ count: Int, using random: inout SeededRandomNumberGenerator) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < count {
                let word = random.next()
                let length = min(8, count - offset)
                withUnsafeBytes(of: word) { buffer.baseAddress!.advanced(by: offset).copyMemory(from: $0.baseAddress!, byteCount: length) }
                offset += length
            }
        }
        return bytes
    }

    enum Stranger: String, CaseIterable, CustomTestStringConvertible {
        /// (a) random datagrams of 0–1,500 bytes at 2,000/s.
        case garbage
        /// (b) plausible RTP headers (the stream's payload type) with random SSRCs and sequence numbers, 2,000/s.
        case randomSSRCs
        /// (c) a second real sender (ffmpeg, its own SSRC) aimed at the same port.
        case secondSender
        /// (d) 1,000 foreign SSRCs, each in sequence, at > 10× the stream's packet rate.
        case flood
        var testDescription: String { rawValue }
    }

    @Test("≥ 98 % of the real frames render, the state stays playing, the strangers are counted under their reason", arguments: Stranger.allCases)
    func strangers(_ stranger: Stranger) throws {
        let port = Int(try SocketAddress.freeLoopbackPorts(count: 4).lowerBound)  // video, audio and their RTCP
        // 6 s of stream, 4 s of strangers while it plays: what the receiver does with each
        // stranger shows within a second (11 s and 9 s before, the same counts per second).
        let seconds = 6
        let strangerTime = Duration.seconds(4)
        let clip = try Self.clip(seconds: seconds)
        let sdp = try Self.sdp(clip: clip, port: port)
        let subscriber = try RunningPlayout(["subscribe", sdp.path, "--json", "--duration", "\(seconds + 2)s"])
        // Strangers are sent only to a port this subscriber holds (never into another test's).
        try #require(subscriber.waitForLine(containing: "\"buffering\""), "the subscriber binds its ports")
        let real = try FFmpeg.start(Self.sender(clip: clip, port: port, sdp: FFmpeg.temporaryFile("strangers-sent-\(port).sdp")), captureOutput: true)
        // The strangers start once the stream plays, and stop before it ends.
        try #require(subscriber.waitForLine(containing: "\"playing\"", timeout: .seconds(10)))
        var foreign = 0
        switch stranger {
        case .garbage:
            foreign = Self.flood(port: port, perSecond: 2_000, for: strangerTime, seed: 1) { random, _ in
                Self.randomBytes(Int.random(in: 0...1_500, using: &random), using: &random)
            }
        case .randomSSRCs:
            foreign = Self.flood(port: port, perSecond: 2_000, for: strangerTime, seed: 2) { random, _ in
                Self.rtp(
                    sequence: .random(in: 0...UInt16.max, using: &random), ssrc: .random(in: 0...UInt32.max, using: &random),
                    timestamp: .random(in: 0...UInt32.max, using: &random), payload: Int.random(in: 0...1_400, using: &random), random: &random
                )
            }
        case .secondSender:
            let second = try FFmpeg.start(
                Self.sender(clip: clip, port: port, sdp: FFmpeg.temporaryFile("strangers-second-\(port).sdp"), limit: ["-t", "\(seconds - 3)"]), captureOutput: true
            )
            try FFmpeg.finish(second, arguments: [], deadline: .now + .seconds(20))
        case .flood:
            // The 360p stream sends ≈ 133 packets/s: 1,400/s from 1,000 sources, each in sequence
            // (too many to remember: none stays long enough to pass probation).
            foreign = Self.flood(port: port, perSecond: 1_400, for: strangerTime, seed: 3) { random, index in
                let source = UInt32(index % 1_000)
                return Self.rtp(
                    sequence: UInt16(truncatingIfNeeded: index / 1_000), ssrc: 0xF000_0000 | source, timestamp: UInt32(index / 1_000) * 3_000,
                    payload: 1_000, random: &random
                )
            }
        }
        let memory = Self.residentMegabytes(of: subscriber.process.processIdentifier)
        try FFmpeg.finish(real, arguments: [], deadline: .now + .seconds(30))
        let result = subscriber.finish()
        #expect(result.status == 0, "\(result.stderr)")
        let objects = result.lines.compactMap(jsonObject)
        let states = objects.filter { $0["name"] as? String == "stateChanged" }.compactMap { $0["state"] as? String }
        let played = try #require(states.firstIndex(of: "playing"), "\(states)")
        // Playing until the sender stops (then stalled, then ended).
        #expect(Array(states[played...].prefix(2)) == ["playing", "stalled"] || Array(states[played...]) == ["playing", "ended"], "\(states)")
        let summary = try #require(objects.last)
        let video = try #require(summary["video"] as? [String: Any])
        let rendered = video["framesRendered"] as? Int ?? 0
        let frames = seconds * 30
        print("strangers \(stranger): rendered \(rendered) of \(frames) (\(String(format: "%.1f", 100 * Double(rendered) / Double(frames))) %), foreign sent \(foreign), memory \(memory) MB, video \(video.filter { $0.key.hasPrefix("packets") || $0.key.hasPrefix("datagrams") || $0.key.hasPrefix("source") })")
        #expect(Double(rendered) >= 0.98 * Double(frames), "rendered \(rendered) of \(frames)")
        #expect(memory < 400, "resident memory \(memory) MB")
        let count = { (name: String) in video[name] as? Int ?? -1 }
        switch stranger {
        case .garbage:
            let counted = count("datagramsUndecodable") + count("packetsWrongPayloadType") + count("packetsFromOtherSources") + count("rtcpFromOtherSources") + count("rtcpUndecodable")
            #expect(counted >= foreign * 98 / 100 && counted <= foreign, "counted \(counted) of \(foreign)")
        case .randomSSRCs:
            #expect(count("packetsFromUnvalidatedSources") >= foreign * 9 / 10 && count("packetsFromOtherSources") <= foreign)
        case .secondSender:
            #expect(count("packetsFromSourcesNotPlayed") >= 100, "the second sender's packets: \(count("packetsFromSourcesNotPlayed"))")
            #expect(count("sourceSwitches") == 0)
        case .flood:
            #expect(count("packetsFromOtherSources") >= foreign * 9 / 10 && count("packetsFromOtherSources") <= foreign)
            // At least 10× the real stream's packet rate (the flood lasts 4 s of the stream's 6 s).
            #expect(Double(foreign) / strangerTime.seconds >= 10 * Double(count("packetsReceived")) / Double(seconds), "\(foreign) foreign packets in \(strangerTime), \(count("packetsReceived")) real in \(seconds) s")
        }
        #expect(count("packetsLost") == 0 && count("packetsDuplicated") == 0, "no real packet lost or doubled on loopback")
    }

    @Test("ffmpeg -pkt_size 8000: 8,000-byte datagrams arrive whole, every frame renders")
    func largePackets() throws {
        let port = Int(try SocketAddress.freeLoopbackPorts(count: 4).lowerBound)
        let seconds = 3
        let clip = try Self.clip(seconds: seconds)
        let sdp = try Self.sdp(clip: clip, port: port, packetSize: 8_000)
        let subscriber = try RunningPlayout(["subscribe", sdp.path, "--json", "--duration", "\(seconds + 2)s"])
        #expect(subscriber.waitForLine(containing: "\"buffering\""))
        let sender = try FFmpeg.start(
            Self.sender(clip: clip, port: port, sdp: FFmpeg.temporaryFile("strangers-large-\(port).sdp"), packetSize: 8_000), captureOutput: true
        )
        try FFmpeg.finish(sender, arguments: [], deadline: .now + .seconds(30))
        let result = subscriber.finish()
        #expect(result.status == 0, "\(result.stderr)")
        let video = try #require(result.lines.last.flatMap(jsonObject)?["video"] as? [String: Any])
        #expect(video["framesRendered"] as? Int == seconds * 30, "\(video["framesRendered"] ?? "none") of \(seconds * 30)")
        #expect(video["packetsLost"] as? Int == 0)
        #expect(video["datagramsUndecodable"] as? Int == 0)
    }

    /// The resident set of process `pid`, in MB (0 when unknown).
    static func residentMegabytes(of pid: Int32) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kilobytes / 1_024
    }
}
