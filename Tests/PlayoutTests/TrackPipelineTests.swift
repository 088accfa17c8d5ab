@testable import Playout
import PlayoutCodec
import PlayoutCore
import PlayoutJitter
import PlayoutRTP
import PlayoutTesting
import Testing

/// The whole receive path on a simulated timeline: a real encoder and packetizer send SRTP
/// datagrams with known impairments; the track pipeline orders, depacketizes and schedules them;
/// a real decoder reads the frame numbers back from the pictures. No sockets, no sleeping.
@Suite("Track pipeline: SRTP datagrams in, frames due at arrival + delay out")
struct TrackPipelineTests {
    struct Datagram {
        var bytes: [UInt8]
        var arrival: MonotonicInstant
    }

    /// 2 s of a 320×240 30 fps test pattern, H.264 with a key frame every second, as SRTP packets
    /// sent in real time with 10 ms transit; `impair` may drop, delay or reorder them.
    static func send(key: SRTPKeyingMaterial, impair: (inout [Datagram]) -> Void = { _ in }) throws -> [Datagram] {
        let pattern = TestPattern(width: 320, height: 240)
        let encoder = try FFmpegEncoder(video: .init(codec: .h264, width: 320, height: 240, bitrate: 400_000, keyframeInterval: 30))
        var sender = try TrackSender(
            codec: .h264, payloadType: 96, clockRate: 90_000, keyingMaterial: key, ssrc: 0xBEEF,
            firstSequenceNumber: 65_500, firstTimestamp: 4_294_000_000
        )
        var datagrams: [Datagram] = []
        var frames: [EncodedFrame] = []
        for index in 0..<60 {
            try encoder.encode(picture: pattern.picture(frameNumber: UInt32(index), captureTimeMilliseconds: UInt32(index * 33)), timestamp: Int64(index) * 3_000) { frames.append($0) }
        }
        try encoder.flush { frames.append($0) }
        for frame in frames {
            let sendTime = MonotonicInstant(nanoseconds: 1_000_000_000 + frame.mediaTime.ticks * 1_000_000_000 / 90_000)
            try sender.send(frame, captureTime: nil) { datagrams.append(Datagram(bytes: $0, arrival: sendTime.advanced(by: .milliseconds(10)))) }
        }
        impair(&datagrams)
        return datagrams.sorted { $0.arrival < $1.arrival }
    }

    /// Feeds the datagrams at their arrival instants and polls at the instants the pipeline asks
    /// for; decodes every rendered frame and returns the frame numbers read from the pictures with
    /// their render instants.
    static func receive(_ datagrams: [Datagram], key: SRTPKeyingMaterial, delay: Duration = .milliseconds(230)) throws -> (frames: [(number: UInt32, at: MonotonicInstant)], pipeline: TrackPipeline) {
        var media = MediaDescription(kind: .video, port: 5_004, proto: .rtpAVP, payloadTypes: [96])
        media.rtpMaps = [RTPMap(payloadType: 96, encodingName: "H264", clockRate: 90_000)]
        media.crypto = [CryptoAttribute(suite: SDPCryptoSuite(rawValue: key.suite.name), keys: [.init(keyAndSalt: key.concatenated)])]
        var pipeline = try TrackPipeline(track: 1, media: media, delay: delay)
        let decoder = try FFmpegDecoder(codec: .h264, configuration: .init(threadCount: 1))
        var rendered: [(UInt32, MonotonicInstant)] = []
        var now = datagrams[0].arrival
        var next = 0
        let end = datagrams.last!.arrival.advanced(by: .seconds(3))
        while now <= end {
            while next < datagrams.count, datagrams[next].arrival <= now {
                var bytes = datagrams[next].bytes
                bytes.withUnsafeMutableBytes { pipeline.receive($0, length: $0.count, arrival: datagrams[next].arrival) }
                next += 1
            }
            var wake: MonotonicInstant?
            polling: while true {
                switch pipeline.poll(now: now) {
                case .render(let frame, renderAt: let at):
                    try decoder.decode(frame) { if let code = TestPattern.read($0) { rendered.append((code.frameNumber, at)) } }
                case .skip(let frame, .decodeWithoutRender):
                    try decoder.decode(frame, output: false)
                case .skip(_, .drop):
                    break
                case .wait(until: let instant):
                    wake = instant
                    break polling
                case .idle:
                    break polling
                }
            }
            let nextArrival = next < datagrams.count ? datagrams[next].arrival : end
            now = max(now.advanced(by: .nanoseconds(1)), min(wake ?? nextArrival, nextArrival))
        }
        return (rendered, pipeline)
    }

    @Test("every frame arrives, decodes and renders in order, at its arrival time + the playout delay")
    func clean() throws {
        let key = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
        let datagrams = try Self.send(key: key)
        let (frames, pipeline) = try Self.receive(datagrams, key: key)
        #expect(frames.map(\.number) == (0..<60).map(UInt32.init))
        // Frame 0 was sent at 1 s, arrived at 1.010 s: it renders 230 ms later.
        #expect(frames.first?.at == MonotonicInstant(nanoseconds: 1_240_000_000))
        #expect(pipeline.statistics.network.packetsLost == 0)
        #expect(pipeline.srtpStatistics?.authFailures == 0)
        #expect(pipeline.statistics.frames.framesRendered == 60)
    }

    @Test("1 % reordering by up to 5 packets is absorbed: every frame still renders in order")
    func reordering() throws {
        let key = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
        var random = SeededRandomNumberGenerator(seed: 11)
        let datagrams = try Self.send(key: key) { datagrams in
            for index in datagrams.indices where Int.random(in: 0..<100, using: &random) == 0 {
                datagrams[index].arrival = datagrams[index].arrival.advanced(by: .milliseconds(Int64.random(in: 1...20, using: &random)))
            }
        }
        let (frames, pipeline) = try Self.receive(datagrams, key: key)
        #expect(frames.map(\.number) == (0..<60).map(UInt32.init))
        #expect(pipeline.statistics.network.packetsLost == 0)
    }

    @Test("a lost packet loses its frame and what depends on it until the next key frame; playback recovers")
    func loss() throws {
        let key = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
        var dropped = 0
        let datagrams = try Self.send(key: key) { datagrams in
            datagrams.remove(at: datagrams.count / 4)  // somewhere in the first second
            dropped = 1
        }
        let (frames, pipeline) = try Self.receive(datagrams, key: key)
        let numbers = frames.map(\.number)
        // Every frame up to the damaged one, nothing until the next key frame (30), then all.
        let before = numbers.prefix { $0 < 30 }
        #expect(before == ArraySlice((0..<UInt32(before.count)).map { $0 }))
        #expect(numbers.dropFirst(before.count) == ArraySlice((30..<60).map(UInt32.init)))
        #expect(before.count < 30)
        #expect(pipeline.framesDroppedWaitingForKeyframe + before.count + (pipeline.depacketizerStatistics.framesDiscarded) + 30 >= 59)
        #expect(pipeline.statistics.network.packetsLost == dropped)
        #expect(pipeline.depacketizerStatistics.packetsLost == dropped, "the depacketizer saw the gap and flagged the next frame")
    }

    @Test("a wrong key renders nothing and counts authentication failures")
    func wrongKey() throws {
        let datagrams = try Self.send(key: SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80))
        let (frames, pipeline) = try Self.receive(datagrams, key: SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80))
        #expect(frames.isEmpty)
        #expect(pipeline.srtpStatistics?.authFailures == datagrams.count)
        #expect(pipeline.datagramsIgnored == datagrams.count)
    }

    @Test("a media section Playout cannot receive is a clear error before anything starts", arguments: [
        ("H264", UInt32.max), ("H264", UInt32(Int32.max) + 1), ("opus", 20_000_000), ("MP2T", 90_000), ("AV1", 90_000),
    ])
    func unreceivableMedia(encoding: String, clockRate: UInt32) {
        var media = MediaDescription(kind: .video, port: 5_004, proto: .rtpAVP, payloadTypes: [96])
        media.rtpMaps = [RTPMap(payloadType: 96, encodingName: encoding, clockRate: clockRate)]
        #expect(throws: PlayoutError.self) { try TrackPipeline(track: 1, media: media, delay: .milliseconds(230)) }
    }

    @Test("a sender report maps every frame to its capture time, to the microsecond, through SRTCP")
    func senderReportCaptureTime() throws {
        let key = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
        let sender = try TrackSender(codec: .opus, payloadType: 111, clockRate: 48_000, keyingMaterial: key, firstTimestamp: 4_294_967_000)
        var media = MediaDescription(kind: .audio, port: 5_006, proto: .rtpSAVP, payloadTypes: [111])
        media.rtpMaps = [RTPMap(payloadType: 111, encodingName: "opus", clockRate: 48_000, channels: 2)]
        media.crypto = [CryptoAttribute(suite: .aesCM128HMACSHA1_80, keys: [.init(keyAndSalt: key.concatenated)])]
        var pipeline = try TrackPipeline(track: 0, media: media, delay: .milliseconds(230))
        #expect(pipeline.captureTime(of: MediaTime(ticks: 0, clockRate: 48_000)) == nil, "no report yet")
        // The report says: media tick 96 000 (2 s in) was at 1 700 000 000.123456789 s since 1970.
        let wall: Int64 = 1_700_000_000_123_456_789
        var report = try sender.senderReport(wallClock: wall, ticks: 96_000)
        report.withUnsafeMutableBytes { pipeline.receiveControl($0, length: $0.count) }
        #expect(pipeline.controlPacketsIgnored == 0)
        #expect(pipeline.senderReport?.ssrc == sender.ssrc)
        // A frame 20 ms after the report's instant, across the RTP timestamp's wrap.
        let ticks = Int64(sender.rtpTimestamp(ticks: 96_960))
        let capture = try #require(pipeline.captureTime(of: MediaTime(ticks: ticks, clockRate: 48_000)))
        #expect(abs(capture - (wall + 20_000_000)) < 1_000, "off by \(capture - wall - 20_000_000) ns")
        // A tampered report is counted and ignored.
        report[report.count / 2] ^= 0xFF
        report.withUnsafeMutableBytes { pipeline.receiveControl($0, length: $0.count) }
        #expect(pipeline.controlPacketsIgnored == 1)
    }

    @Test("abs-capture-time gives each frame its own capture time and wins over sender reports")
    func absoluteCaptureTime() throws {
        let key = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
        var sender = try TrackSender(codec: .opus, payloadType: 111, clockRate: 48_000, keyingMaterial: key, firstTimestamp: 4_294_967_000, absoluteCaptureTimeID: 3)
        var media = MediaDescription(kind: .audio, port: 5_006, proto: .rtpSAVP, payloadTypes: [111])
        media.rtpMaps = [RTPMap(payloadType: 111, encodingName: "opus", clockRate: 48_000, channels: 2)]
        media.crypto = [CryptoAttribute(suite: .aesCM128HMACSHA1_80, keys: [.init(keyAndSalt: key.concatenated)])]
        media.extensionMaps = [ExtensionMap(id: 3, uri: AbsoluteCaptureTime.uri)]
        var pipeline = try TrackPipeline(track: 0, media: media, delay: .milliseconds(230))
        #expect(pipeline.absoluteCaptureTimeID == 3)
        // A sender report first: its mapping is used until a frame brings its capture time.
        let reportWall: Int64 = 1_700_000_000_000_000_000
        var report = try sender.senderReport(wallClock: reportWall, ticks: 0)
        report.withUnsafeMutableBytes { pipeline.receiveControl($0, length: $0.count) }
        #expect(pipeline.captureClock?.source == .senderReport)
        // Frame at 1 s, captured 123.456 ms after the report's clock says (encoder delay).
        let frameTicks: Int64 = 48_000
        let capture = reportWall + 1_123_456_000
        let frame = EncodedFrame(
            track: 0, codec: .opus, mediaTime: MediaTime(ticks: frameTicks, clockRate: 48_000),
            firstArrival: MonotonicInstant(nanoseconds: 0), lastArrival: MonotonicInstant(nanoseconds: 0),
            isKeyframe: true, bytes: [0xFC, 0x01, 0x02]
        )
        try sender.send(frame, captureTime: capture) { datagram in
            var datagram = datagram
            datagram.withUnsafeMutableBytes { pipeline.receive($0, length: $0.count, arrival: MonotonicInstant(nanoseconds: 1_000_000_000)) }
        }
        #expect(pipeline.captureClock?.source == .absoluteCaptureTime)
        let rtp = Int64(sender.rtpTimestamp(ticks: frameTicks))
        let measured = try #require(pipeline.captureTime(of: MediaTime(ticks: rtp, clockRate: 48_000)))
        #expect(abs(measured - capture) <= 1, "off by \(measured - capture) ns")
        // The next frame 20 ms later is mapped from that capture time; a later report does not
        // take over.
        report = try sender.senderReport(wallClock: reportWall + 2_000_000_000, ticks: 96_000)
        report.withUnsafeMutableBytes { pipeline.receiveControl($0, length: $0.count) }
        let next = try #require(pipeline.captureTime(of: MediaTime(ticks: rtp + 960, clockRate: 48_000)))
        #expect(abs(next - (capture + 20_000_000)) <= 1)
        // Without an extmap in the SDP, the extension is not read.
        media.extensionMaps = []
        #expect(try TrackPipeline(track: 0, media: media, delay: .milliseconds(230)).absoluteCaptureTimeID == nil)
    }

    @Test("the publisher's SDP announces abs-capture-time on every track, and the pipeline reads it")
    func publisherAnnouncesCaptureTime() throws {
        let publisher = try Publisher(options: .init(destination: try SocketAddress(host: "127.0.0.1", port: 47_390)))
        let media = publisher.sessionDescription.media
        #expect(media.count == 2)
        for (index, section) in media.enumerated() {
            let pipeline = try TrackPipeline(track: TrackID(rawValue: UInt32(index)), media: section, delay: .milliseconds(230))
            #expect(pipeline.absoluteCaptureTimeID == Publisher.absoluteCaptureTimeID)
        }
    }

    @Test("an abs-capture-time with a clock offset moves the capture onto the sender's clock")
    func absoluteCaptureTimeOffset() {
        let capture = AbsoluteCaptureTime(captureTimestamp: NTPTime.ntp(unixNanoseconds: 1_700_000_000_000_000_000), estimatedCaptureClockOffset: -(1 << 31))
        let clock = CaptureClock(absoluteCaptureTime: capture, rtpTimestamp: 7)
        #expect(abs(clock.unixNanoseconds - (1_700_000_000_000_000_000 - 500_000_000)) <= 1, "−0.5 s")
        // Hostile extremes wrap or clamp; they never trap.
        for offset in [Int64.min, Int64.max] {
            _ = CaptureClock(absoluteCaptureTime: AbsoluteCaptureTime(captureTimestamp: .max, estimatedCaptureClockOffset: offset), rtpTimestamp: 0)
        }
    }

    @Test("NTP timestamps convert to and from Unix nanoseconds without losing the fraction")
    func ntpRoundTrip() {
        for nanoseconds: Int64 in [0, 1, 999_999_999, 1_700_000_000_123_456_789, 4_000_000_000_999_999_999] {
            let ntp = NTPTime.ntp(unixNanoseconds: nanoseconds)
            #expect(abs(NTPTime.unixNanoseconds(ntp: ntp) - nanoseconds) <= 1)
        }
        #expect(NTPTime.ntp(unixNanoseconds: 500_000_000) & 0xFFFF_FFFF == 0x8000_0000, "half a second is half the fraction")
        #expect(NTPTime.ntp(unixNanoseconds: 0) >> 32 == 2_208_988_800)
    }
}
