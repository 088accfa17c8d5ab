@_spi(Pipeline) @testable import Playout
import PlayoutCodec
import PlayoutCore
import PlayoutRTP
@testable import PlayoutSender
import PlayoutTesting
import Testing

/// Strangers on the track's port (issue 13): the real stream of ``TrackPipelineTests`` with
/// hostile datagrams between its packets, through the whole pipeline and a real decoder.
@Suite("Source validation in the receive path: strangers never reach the decoder, and are counted by reason")
struct SourceValidationTests {
    typealias Datagram = TrackPipelineTests.Datagram

    static func section(key: SRTPKeyingMaterial?) -> MediaDescription {
        TrackPipelineTests.section(key: key)
    }

    /// The 2 s stream of ``TrackPipelineTests/send(key:width:height:bitrate:maxPayloadSize:impair:)``, plain RTP or SRTP.
    static func stream(key: SRTPKeyingMaterial?) throws -> [Datagram] {
        try TrackPipelineTests.send(key: key)
    }

    /// Feeds `datagrams` (in arrival order) and polls as the pipeline asks; returns the frame
    /// numbers decoded from the rendered pictures.
    static func play(_ datagrams: [Datagram], media: MediaDescription) throws -> (frames: [UInt32], pipeline: TrackPipeline) {
        let (frames, pipeline) = try TrackPipelineTests.receive(datagrams, media: media)
        return (frames.map(\.number), pipeline)
    }

    /// An RTP header (12 bytes) followed by `payload`.
    static func rtp(_ first: UInt8 = 0x80, payloadType: UInt8 = 96, sequence: UInt16, timestamp: UInt32, ssrc: UInt32, payload: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = [first, payloadType, UInt8(sequence >> 8), UInt8(sequence & 0xFF)]
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: timestamp >> UInt32(shift))) }
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: ssrc >> UInt32(shift))) }
        return bytes + payload
    }

    @Test("between every real packet: not RTP, truncated, a bad extension, bad padding, a wrong payload type, a random SSRC and a second sender — every frame renders, each counted under its reason")
    func everyKindOfStranger() throws {
        let real = try Self.stream(key: nil)
        var random = SeededRandomNumberGenerator(seed: 13)
        var datagrams: [Datagram] = []
        var second: UInt16 = 10
        for datagram in real {
            datagrams.append(datagram)
            let garbage = (0..<Int.random(in: 20...1_200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            let at = datagram.arrival
            datagrams += [
                Datagram(bytes: [0x00, 0x01, 0x02], arrival: at),
                Datagram(bytes: Self.rtp(0x8F, sequence: 1, timestamp: 0, ssrc: 0xBEEF, payload: []), arrival: at),
                Datagram(bytes: Self.rtp(0x90, sequence: 1, timestamp: 0, ssrc: 0xBEEF, payload: [0xBE, 0xDE, 0x00, 0x10]), arrival: at),
                Datagram(bytes: Self.rtp(0xA0, sequence: 1, timestamp: 0, ssrc: 0xBEEF, payload: [1, 2, 0]), arrival: at),
                Datagram(bytes: Self.rtp(payloadType: 100, sequence: 1, timestamp: 0, ssrc: 0xBEEF, payload: garbage), arrival: at),
                Datagram(bytes: Self.rtp(
                    sequence: .random(in: 0...UInt16.max, using: &random), timestamp: .random(in: 0...UInt32.max, using: &random),
                    ssrc: .random(in: 0...UInt32.max, using: &random), payload: garbage
                ), arrival: at),
                Datagram(bytes: Self.rtp(sequence: second, timestamp: UInt32(second) * 3_000, ssrc: 0xF00D, payload: garbage), arrival: at),
            ]
            second &+= 1
        }
        let (frames, pipeline) = try Self.play(datagrams, media: Self.section(key: nil))
        #expect(frames == Array(0..<60), "every frame, in order")
        let n = real.count
        let intake = pipeline.intakeStatistics
        let sources = pipeline.sourceStatistics
        #expect(intake.datagramsNotRTP == n)
        #expect(intake.datagramsTruncated == n)
        #expect(intake.datagramsBadExtension == n)
        #expect(intake.datagramsBadPadding == n)
        #expect(intake.datagramsUndecodable == 4 * n)
        #expect(intake.packetsWrongPayloadType == n)
        #expect(sources.packetsNotPlayed == n, "the second sender: valid, never played")
        #expect(sources.packetsInProbation <= n && sources.packetsInProbation >= n - RTPSourceValidation.Configuration.defaultMaximumCandidates)
        #expect(pipeline.statistics.network.packetsReceived == n, "the played source only")
        #expect(pipeline.statistics.network.packetsLost == 0 && pipeline.statistics.network.packetsDuplicated == 0)
        #expect(pipeline.playedSSRC == 0xBEEF)
        #expect(sources.sourceSwitches == 0 && sources.resyncs == 0)
    }

    @Test("SRTP: garbage with random SSRCs fails authentication, is counted, and never stalls the stream")
    func srtpStrangers() throws {
        let key = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
        let real = try Self.stream(key: key)
        var random = SeededRandomNumberGenerator(seed: 14)
        var datagrams: [Datagram] = []
        for datagram in real {
            datagrams.append(datagram)
            for _ in 0..<3 {
                let garbage = (0..<Int.random(in: 20...1_200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                let ssrc: UInt32 = Bool.random(using: &random) ? 0xBEEF : .random(in: 0...UInt32.max, using: &random)
                datagrams.append(Datagram(bytes: Self.rtp(sequence: .random(in: 0...UInt16.max, using: &random), timestamp: 0, ssrc: ssrc, payload: garbage), arrival: datagram.arrival))
            }
        }
        let (frames, pipeline) = try Self.play(datagrams, media: Self.section(key: key))
        #expect(frames == Array(0..<60))
        #expect(pipeline.srtpStatistics?.authFailures == 3 * real.count)
        #expect(pipeline.receiver.sequencedAuthenticationFailures < 10, "strangers' garbage is not a sender with a wrong key")
        #expect(pipeline.statistics.network.packetsReceived == real.count)
    }

    @Test("SRTP garbage before the stream starts neither fails the subscription (wrong key?) nor stalls it")
    func srtpGarbageFirst() throws {
        let key = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
        let simulation = try SimulatedSubscription(session: SimulatedSubscription.session(key: key), options: .init(duration: .seconds(4)))
        let start = simulation.clock.now
        var random = SeededRandomNumberGenerator(seed: 15)
        // 1 s of garbage at 500 datagrams/s, then 2 s of the real stream.
        var datagrams = (0..<500).map { index in
            SimulatedDatagram(arrival: start.advanced(by: .milliseconds(Int64(index) * 2)), track: 0, bytes: Self.rtp(
                sequence: .random(in: 0...UInt16.max, using: &random), timestamp: 0, ssrc: .random(in: 0...UInt32.max, using: &random),
                payload: (0..<100).map { _ in UInt8.random(in: 0...255, using: &random) }
            ))
        }
        datagrams += try SimulatedSender(key: key).datagrams(video: Duration.zero..<Duration.seconds(2), origin: start.advanced(by: .seconds(1)))
        let final = simulation.run(datagrams)
        #expect(simulation.states.map(\.state).prefix(4) == [.idle, .connecting, .buffering, .playing], "\(simulation.states.map(\.state))")
        #expect(final.video?.framesRendered == 60)
        #expect(final.video?.authFailures == 500)
    }

    @Test("a sender report or BYE of a source not played is counted and ignored: it never moves the timeline")
    func controlFromOthers() throws {
        var pipeline = try TrackPipeline(track: 1, media: Self.section(key: nil), delay: .milliseconds(230))
        let played = try TrackSender(codec: .h264, payloadType: 96, clockRate: 90_000, keyingMaterial: nil, ssrc: 0xBEEF)
        let stranger = try TrackSender(codec: .h264, payloadType: 96, clockRate: 90_000, keyingMaterial: nil, ssrc: 0xF00D)
        for sequence: UInt16 in 1...2 {
            var bytes = Self.rtp(sequence: sequence, timestamp: 0, ssrc: 0xBEEF, payload: [0x65, 0x00])
            bytes.withUnsafeMutableBytes { pipeline.receive($0, length: $0.count, arrival: .zero) }
        }
        #expect(pipeline.playedSSRC == 0xBEEF)
        var report = try stranger.senderReport(wallClock: 1_700_000_000_000_000_000, ticks: 0)
        report.withUnsafeMutableBytes { pipeline.receiveControl($0, length: $0.count) }
        #expect(pipeline.senderReport == nil)
        #expect(pipeline.intakeStatistics.controlPacketsFromOtherSources == 1)
        report = try played.senderReport(wallClock: 1_700_000_000_000_000_000, ticks: 0)
        report.withUnsafeMutableBytes { pipeline.receiveControl($0, length: $0.count) }
        #expect(pipeline.senderReport?.ssrc == 0xBEEF)
        var goodbye = RTCPPacket.goodbye(RTCPGoodbye(ssrcs: [0xF00D])).serialized
        goodbye.withUnsafeMutableBytes { pipeline.receiveControl($0, length: $0.count) }
        #expect(pipeline.goodbyesReceived == 0 && pipeline.intakeStatistics.controlPacketsFromOtherSources == 2)
        goodbye = RTCPPacket.goodbye(RTCPGoodbye(ssrcs: [0xBEEF])).serialized
        goodbye.withUnsafeMutableBytes { pipeline.receiveControl($0, length: $0.count) }
        #expect(pipeline.goodbyesReceived == 1)
    }

    @Test("an RTP/SAVP section without a=crypto and no key is an error at start that names --srtp-key")
    func savpWithoutKey() throws {
        var media = Self.section(key: nil)
        media.proto = .rtpSAVP
        #expect(throws: PlayoutError.self) { try TrackPipeline(track: 1, media: media, delay: .milliseconds(230)) }
        let session = SessionDescription(sessionName: "savp", connection: ConnectionData(addressType: .ip4, address: "127.0.0.1"), media: [media])
        do {
            _ = try SubscriptionSource(sessionDescription: session, options: .init())
            Issue.record("subscribed to SRTP without a key")
        } catch {
            #expect("\(error)".contains("--srtp-key"), "\(error)")
        }
        // With a key given, it subscribes.
        _ = try SubscriptionSource(sessionDescription: session, options: .init(srtpKey: .random(for: .aesCM128HMACSHA1_80)))
    }
}
