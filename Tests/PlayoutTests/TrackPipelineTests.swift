import Playout
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
        let session = try SRTPSession(keyingMaterial: key, direction: .outbound)
        var packetizer = H264Packetizer()
        var header = RTPPacketBuilder(payloadType: 96, sequenceNumber: 65_500, timestamp: RTPTimestamp(rawValue: 4_294_000_000), ssrc: 0xBEEF)
        var datagrams: [Datagram] = []
        var frames: [EncodedFrame] = []
        for index in 0..<60 {
            try encoder.encode(picture: pattern.picture(frameNumber: UInt32(index), captureTimeMilliseconds: UInt32(index * 33)), timestamp: Int64(index) * 3_000) { frames.append($0) }
        }
        try encoder.flush { frames.append($0) }
        var buffer = [UInt8](repeating: 0, count: 2_048)
        for frame in frames {
            let sendTime = MonotonicInstant(nanoseconds: 1_000_000_000 + frame.mediaTime.ticks * 1_000_000_000 / 90_000)
            header.timestamp = RTPTimestamp(rawValue: 4_294_000_000 &+ UInt32(truncatingIfNeeded: frame.mediaTime.ticks))
            try frame.bytes.withUnsafeBytes { access in
                try packetizer.packetize(access) { payload, isLast in
                    header.marker = isLast
                    try buffer.withUnsafeMutableBytes { raw in
                        let length = try session.protectRTP(raw, length: try header.write(payload: payload, into: raw))
                        datagrams.append(Datagram(bytes: Array(raw[0..<length]), arrival: sendTime.advanced(by: .milliseconds(10))))
                    }
                    header.sequenceNumber = header.sequenceNumber.advanced(by: 1)
                }
            }
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
}
