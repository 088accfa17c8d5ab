@_spi(Pipeline) @testable import Playout
import PlayoutCodec
import PlayoutCore
import PlayoutJitter
import PlayoutRTP
@testable import PlayoutSender
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
    static func send(
        key: SRTPKeyingMaterial?, width: Int = 320, height: Int = 240, bitrate: Int = 400_000, maxPayloadSize: Int = PacketizerDefaults.maxPayloadSize,
        impair: (inout [Datagram]) -> Void = { _ in }
    ) throws -> [Datagram] {
        let pattern = TestPattern(width: width, height: height)
        let encoder = try FFmpegEncoder(video: .init(codec: .h264, width: width, height: height, bitrate: bitrate, keyframeInterval: 30))
        var sender = try TrackSender(
            codec: .h264, payloadType: 96, clockRate: 90_000, keyingMaterial: key, ssrc: 0xBEEF,
            firstSequenceNumber: 65_500, firstTimestamp: 4_294_000_000, maxPayloadSize: maxPayloadSize
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
    static func receive(_ datagrams: [Datagram], key: SRTPKeyingMaterial?, delay: Duration = .milliseconds(230)) throws -> (frames: [(number: UInt32, at: MonotonicInstant)], pipeline: TrackPipeline) {
        try receive(datagrams, media: section(key: key), delay: delay)
    }

    /// The H.264 media section the stream is sent as: `RTP/SAVP` with an `a=crypto` line when
    /// keyed, plain `RTP/AVP` otherwise.
    static func section(key: SRTPKeyingMaterial?) -> MediaDescription {
        var media = MediaDescription(kind: .video, port: 5_004, proto: key == nil ? .rtpAVP : .rtpSAVP, payloadTypes: [96])
        media.rtpMaps = [RTPMap(payloadType: 96, encodingName: "H264", clockRate: 90_000)]
        if let key {
            media.crypto = [CryptoAttribute(suite: SDPCryptoSuite(rawValue: key.suite.name), keys: [.init(keyAndSalt: key.concatenated)])]
        }
        return media
    }

    /// ``receive(_:key:delay:)`` for any media section (a rendered frame's bytes are recycled
    /// after decoding, as the playout loop does).
    /// With `feedback`, the pipeline talks back and `step` sees it at every instant it is polled.
    static func receive(
        _ datagrams: [Datagram], media: MediaDescription, delay: Duration = .milliseconds(230), feedback: TrackReceiver.FeedbackSettings? = nil,
        step: (inout TrackPipeline, MonotonicInstant) -> Void = { _, _ in }
    ) throws -> (frames: [(number: UInt32, at: MonotonicInstant)], pipeline: TrackPipeline) {
        var pipeline = try TrackPipeline(track: 1, media: media, delay: delay, feedback: feedback)
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
            step(&pipeline, now)
            polling: while true {
                switch pipeline.poll(now: now) {
                case .render(let frame, renderAt: let at):
                    try decoder.decode(frame) { if let code = TestPattern.read($0) { rendered.append((code.frameNumber, at)) } }
                    pipeline.recycle(frame.bytes)
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

    @Test("datagrams of up to 1,500, 8,000 and 65,000 bytes (a 1280x720 stream packetized with that MTU): every frame renders", arguments: [1_500, 8_000, 65_000])
    func largeDatagrams(size: Int) throws {
        let key = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
        // 12 bytes of RTP header, 10 of SRTP tag: the payload fills the rest.
        let datagrams = try Self.send(key: key, width: 1_280, height: 720, bitrate: 6_000_000, maxPayloadSize: size - 22)
        #expect(datagrams.map(\.bytes.count).max()! > size - 200 && datagrams.map(\.bytes.count).max()! <= size, "\(datagrams.map(\.bytes.count).max()!)")
        let (frames, pipeline) = try Self.receive(datagrams, key: key)
        #expect(frames.map(\.number) == (0..<60).map(UInt32.init))
        #expect(pipeline.statistics.network.packetsLost == 0 && pipeline.datagramsIgnored == 0)
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
        let expectedBefore: [UInt32] = Array(0..<UInt32(before.count))
        let expectedAfter: [UInt32] = Array(30..<60)
        #expect(Array(before) == expectedBefore)
        #expect(Array(numbers.dropFirst(before.count)) == expectedAfter)
        #expect(before.count < 30)
        let accounted: Int = pipeline.framesDroppedWaitingForKeyframe + before.count + pipeline.depacketizerStatistics.framesDiscarded + 30
        #expect(accounted >= 59)
        #expect(pipeline.statistics.network.packetsLost == dropped)
        #expect(pipeline.depacketizerStatistics.packetsLost == dropped, "the depacketizer saw the gap and flagged the next frame")
    }

    @Test("a wrong key renders nothing and counts authentication failures")
    func wrongKey() throws {
        let datagrams = try Self.send(key: SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80))
        let (frames, pipeline) = try Self.receive(datagrams, key: SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80))
        #expect(frames.isEmpty)
        #expect(pipeline.srtpStatistics?.authFailures == datagrams.count)
        #expect(pipeline.receiver.sequencedAuthenticationFailures == datagrams.count, "one sender, in sequence: a wrong key")
        #expect(pipeline.datagramsIgnored == datagrams.count)
    }

    @Test("keys from DTLS: what comes before them is counted and dropped; after setKeys the same path decodes every frame")
    func keysFromDTLS() throws {
        let key = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
        let datagrams = try Self.send(key: key)
        var media = Self.section(key: nil)
        media.proto = TransportProtocol(rawValue: "UDP/TLS/RTP/SAVPF")
        // Without the DTLS flag, a secure section with no key is refused.
        #expect(throws: PlayoutError.self) { try TrackPipeline(track: 1, media: media, delay: .milliseconds(230)) }
        var pipeline = try TrackPipeline(track: 1, media: media, delay: .milliseconds(230), keysFromDTLS: true)
        for var datagram in datagrams.prefix(20) {
            datagram.bytes.withUnsafeMutableBytes { pipeline.receive($0, length: $0.count, arrival: datagram.arrival) }
        }
        var control: [UInt8] = [0x80, 200, 0, 1, 0, 0, 0, 1]
        control.withUnsafeMutableBytes { pipeline.receiveControl($0, length: $0.count) }
        #expect(pipeline.receiver.intakeStatistics.datagramsBeforeKeys == 20 && pipeline.receiver.controlPacketsIgnored == 1)
        #expect(pipeline.receiver.statistics().packetsReceived == 0 && pipeline.receiver.awaitsKeys)
        try pipeline.setKeys(key)
        #expect(!pipeline.receiver.awaitsKeys && pipeline.receiver.keyingMaterial == key)
        // The rest, through the very path an SDES-keyed track takes: from the next key frame on.
        let (frames, keyed) = try Self.receive(Array(datagrams.dropFirst(20)), media: Self.section(key: key))
        #expect(frames.map(\.number) == Array(30..<60))
        #expect(keyed.srtpStatistics?.authFailures == 0)
    }

    @Test("the played source's playout-delay extension is read when the SDP maps it")
    func senderPlayoutDelay() throws {
        var media = Self.section(key: nil)
        media.extensionMaps = [ExtensionMap(id: 6, uri: PlayoutDelayLimits.uri)]
        var pipeline = try TrackPipeline(track: 1, media: media, delay: .milliseconds(230))
        let limits = PlayoutDelayLimits(minimum: .milliseconds(100), maximum: .milliseconds(800))
        for index in 0..<5 {
            var builder = RTPPacketBuilder(marker: true, payloadType: 96, sequenceNumber: SequenceNumber(rawValue: UInt16(index)), ssrc: 9)
            builder.extensions = [.init(id: 6, bytes: limits.bytes)]
            var bytes = try builder.serialized(payload: [0x65, 0x88, 0x84])
            bytes.withUnsafeMutableBytes { pipeline.receive($0, length: $0.count, arrival: MonotonicInstant(nanoseconds: Int64(index) * 33_000_000)) }
        }
        #expect(pipeline.receiver.senderPlayoutDelay == limits)
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
        // Two frames: a source is played once two packets came in sequence (RFC 3550 probation).
        var second = frame
        second.mediaTime = MediaTime(ticks: frameTicks + 960, clockRate: 48_000)
        for (frame, offset) in [(frame, Int64(0)), (second, 20_000_000)] {
            try sender.send(frame, captureTime: capture + offset) { datagram in
                var datagram = datagram
                datagram.withUnsafeMutableBytes { pipeline.receive($0, length: $0.count, arrival: MonotonicInstant(nanoseconds: 1_000_000_000 + offset)) }
            }
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
        let publisher = try Publisher(options: .init(destination: try Publisher.freeLoopbackDestination()))
        let media = publisher.sessionDescription.media
        #expect(media.count == 2)
        for (index, section) in media.enumerated() {
            let pipeline = try TrackPipeline(track: TrackID(rawValue: UInt32(index)), media: section, delay: .milliseconds(230))
            #expect(pipeline.absoluteCaptureTimeID == Publisher.absoluteCaptureTimeID)
        }
    }

    /// A synthetic 720p30 H.264 stream (a key frame every 30 frames) as (S)RTP datagrams, one
    /// every 1/30 s per frame with 10 ms transit, from the real packetizer.
    static func syntheticStream(key: SRTPKeyingMaterial?, frames: Int) throws -> [Datagram] {
        var sender = try TrackSender(
            codec: .h264, payloadType: 96, clockRate: 90_000, keyingMaterial: key, ssrc: 0xBEEF, firstSequenceNumber: 65_000
        )
        var datagrams: [Datagram] = []
        for index in 0..<frames {
            let isKey = index % 30 == 0
            let bytes: [UInt8] = [0, 0, 0, 1, isKey ? 0x65 : 0x41] + Array(repeating: UInt8(index & 0x7F) | 1, count: isKey ? 40_000 : 9_000)
            let frame = EncodedFrame(
                track: 1, codec: .h264, mediaTime: MediaTime(ticks: Int64(index) * 3_000, clockRate: 90_000),
                firstArrival: .zero, lastArrival: .zero, isKeyframe: isKey, bytes: bytes
            )
            let arrival = MonotonicInstant(nanoseconds: 1_010_000_000 + Int64(index) * 1_000_000_000 / 30)
            try sender.send(frame, captureTime: nil) { datagrams.append(Datagram(bytes: $0, arrival: arrival)) }
        }
        return datagrams
    }

    static func h264Section(key: SRTPKeyingMaterial?) -> MediaDescription {
        var media = MediaDescription(kind: .video, port: 5_004, proto: key == nil ? .rtpAVP : .rtpSAVP, payloadTypes: [96])
        media.rtpMaps = [RTPMap(payloadType: 96, encodingName: "H264", clockRate: 90_000)]
        if let key { media.crypto = [CryptoAttribute(suite: SDPCryptoSuite(rawValue: key.suite.name), keys: [.init(keyAndSalt: key.concatenated)])] }
        return media
    }

    /// Feeds `datagrams` through one reused receive buffer (as the socket does), polling after each
    /// and recycling every frame; returns the number of frames rendered.
    static func play(_ datagrams: [Datagram], into pipeline: inout TrackPipeline, every: (Int, TrackPipeline) -> Void = { _, _ in }) -> Int {
        var rendered = 0
        var receiveBuffer = [UInt8](repeating: 0, count: 2_048)
        for (index, datagram) in datagrams.enumerated() {
            receiveBuffer.withUnsafeMutableBytes { buffer in
                datagram.bytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
                pipeline.receive(buffer, length: datagram.bytes.count, arrival: datagram.arrival)
                // The socket's next datagram overwrites the buffer: the pipeline kept its own copy.
                for offset in 0..<datagram.bytes.count { buffer[offset] = 0xEE }
            }
            polling: while true {
                switch pipeline.poll(now: datagram.arrival.advanced(by: .milliseconds(300))) {
                case .render(let frame, _), .skip(let frame, _):
                    rendered += 1
                    pipeline.recycle(frame.bytes)
                case .wait, .idle:
                    break polling
                }
            }
            every(index, pipeline)
        }
        return rendered
    }

    @Test("steady state: packets are copied once into pooled buffers that are recycled; the pool stops growing")
    func pooledSteadyState() throws {
        let key = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
        let datagrams = try Self.syntheticStream(key: key, frames: 600)
        var pipeline = try TrackPipeline(track: 1, media: Self.h264Section(key: key), delay: .milliseconds(230))
        var halfway = RTPPacketPool.Statistics()
        let rendered = Self.play(datagrams, into: &pipeline) { index, pipeline in
            if index == datagrams.count / 2 { halfway = pipeline.packetPoolStatistics }
        }
        let end = pipeline.packetPoolStatistics
        #expect(rendered > 590, "the frames came through the pooled buffers intact")
        #expect(pipeline.depacketizerStatistics.framesDiscarded == 0 && pipeline.depacketizerStatistics.packetsMalformed == 0)
        #expect(end.packetsStored == datagrams.count)
        #expect(halfway.buffersCreated > 0)
        #expect(end.buffersCreated == halfway.buffersCreated, "no buffer created in the second half")
        #expect(end.ringGrowths == halfway.ringGrowths && end.ringSize == halfway.ringSize)
        #expect(end.buffersEnlarged == 0)
        // Released in order with this stream, the ring holds at most twice a frame's packets plus
        // its first size.
        #expect(end.ringSize <= RTPPacketPool.initialRingSize * 2)
    }

    @Test("between packets the scheduler's wait is reused, and a delay or lead change asks it again")
    func waitFollowsDelayAndLead() throws {
        let datagrams = try Self.syntheticStream(key: nil, frames: 3)
        var pipeline = try TrackPipeline(track: 1, media: Self.h264Section(key: nil), delay: .milliseconds(230))
        for datagram in datagrams {
            var bytes = datagram.bytes
            bytes.withUnsafeMutableBytes { pipeline.receive($0, length: $0.count, arrival: datagram.arrival) }
        }
        let now = datagrams[0].arrival
        guard case .wait(let first) = pipeline.poll(now: now) else {
            Issue.record("expected a wait")
            return
        }
        guard case .wait(let again) = pipeline.poll(now: now.advanced(by: .milliseconds(1))) else {
            Issue.record("expected the same wait")
            return
        }
        #expect(again == first)
        guard case .wait(let withLead) = pipeline.poll(now: now, lead: .milliseconds(100)) else {
            Issue.record("expected a wait with the longer lead")
            return
        }
        #expect(withLead < first, "a longer lead releases the frame earlier")
        pipeline.setDelay(.seconds(1))
        guard case .wait(let later) = pipeline.poll(now: now) else {
            Issue.record("expected a wait after the increase")
            return
        }
        #expect(later.duration(to: first) < .milliseconds(-700), "the increase moved the wait by ≈ 770 ms")
        // Due: rendered on time, in order.
        guard case .render(let frame, _) = pipeline.poll(now: later) else {
            Issue.record("expected the first frame at its release instant")
            return
        }
        #expect(frame.isKeyframe, "the first frame, the key frame")
    }

    @Test("duplicates and late packets give their buffers back at once")
    func duplicatesRecycle() throws {
        let datagrams = try Self.syntheticStream(key: nil, frames: 300)
        var doubled: [Datagram] = []
        for (index, datagram) in datagrams.enumerated() {
            doubled.append(datagram)
            doubled.append(datagram)  // a duplicate of every packet …
            if index >= 40 { doubled.append(Datagram(bytes: datagrams[index - 40].bytes, arrival: datagram.arrival)) }  // … and one long released
        }
        var pipeline = try TrackPipeline(track: 1, media: Self.h264Section(key: nil), delay: .milliseconds(230))
        var halfway = RTPPacketPool.Statistics()
        let rendered = Self.play(doubled, into: &pipeline) { index, pipeline in
            if index == doubled.count / 2 { halfway = pipeline.packetPoolStatistics }
        }
        #expect(rendered >= 299)
        #expect(pipeline.statistics.network.packetsDuplicated >= datagrams.count)
        #expect(pipeline.packetPoolStatistics.buffersCreated == halfway.buffersCreated)
        #expect(pipeline.packetPoolStatistics.ringSize <= RTPPacketPool.initialRingSize * 2)
    }

    @Test("RTCP multiplexed on the RTP port (RFC 5761) is read as RTCP; what is neither is ignored")
    func rtcpMux() throws {
        let key = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
        let sender = try TrackSender(codec: .h264, payloadType: 96, clockRate: 90_000, keyingMaterial: key, ssrc: 0xBEEF)
        var pipeline = try TrackPipeline(track: 1, media: Self.h264Section(key: key), delay: .milliseconds(230))
        var report = try sender.senderReport(wallClock: 1_700_000_000_000_000_000, ticks: 0)
        report.withUnsafeMutableBytes { pipeline.receive($0, length: $0.count, arrival: .zero) }
        #expect(pipeline.senderReport?.ssrc == 0xBEEF)
        #expect(pipeline.captureClock?.source == .senderReport)
        #expect(pipeline.datagramsIgnored == 0 && pipeline.controlPacketsIgnored == 0)
        // Too short, not version 2: neither RTP nor RTCP.
        for hostile: [UInt8] in [[], [0x80], [0x80, 0xC8, 0x00], [0x40, 0x60, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1], [0x00, 0x01, 0x00, 0x00]] {
            var bytes = hostile
            bytes.withUnsafeMutableBytes { pipeline.receive($0, length: $0.count, arrival: .zero) }
        }
        #expect(pipeline.datagramsIgnored == 5)
        #expect(pipeline.controlPacketsIgnored == 0)
        // RTCP-looking garbage goes to the RTCP path and is counted there.
        var garbage: [UInt8] = [0x80, 0xC9, 0x00, 0x07, 1, 2, 3, 4]
        garbage.withUnsafeMutableBytes { pipeline.receive($0, length: $0.count, arrival: .zero) }
        #expect(pipeline.controlPacketsIgnored == 1)
    }

    @Test("hostile datagrams and lengths never crash the pipeline")
    func hostileDatagrams() throws {
        var pipeline = try TrackPipeline(track: 1, media: Self.h264Section(key: nil), delay: .milliseconds(230))
        var random = SeededRandomNumberGenerator(seed: 12)
        for round in 0..<20_000 {
            var bytes = (0..<Int.random(in: 0...200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            if !bytes.isEmpty, round % 2 == 0 { bytes[0] = 0x80 | (bytes[0] & 0x3F) }
            if bytes.count > 1, round % 4 == 0 { bytes[1] = 96 }
            let length = round % 7 == 0 ? Int.random(in: -5...300, using: &random) : bytes.count
            bytes.withUnsafeMutableBytes { pipeline.receive($0, length: length, arrival: MonotonicInstant(nanoseconds: Int64(round) * 1_000_000)) }
            _ = pipeline.poll(now: MonotonicInstant(nanoseconds: Int64(round) * 1_000_000))
        }
        #expect(pipeline.datagramsIgnored > 0)
    }
}
