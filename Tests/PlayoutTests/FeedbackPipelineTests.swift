@_spi(Pipeline) @testable import Playout
import PlayoutCore
import PlayoutRTP
import PlayoutTesting
import Testing

/// Feedback through one track's receive path on a simulated timeline: the NACKs a gap causes,
/// RTX restored before source validation, and every kind of bad retransmission counted and
/// dropped. No sockets, no sleeping: TrackPipelineTests' sender and receive loop.
@Suite("Track pipeline: NACK and RTX on simulated time")
struct FeedbackPipelineTests {
    /// TrackPipelineTests' stream announced with `nack`, `nack pli` and RTX 98 (apt=96).
    static var media: MediaDescription {
        var media = TrackPipelineTests.section(key: nil)
        media.payloadTypes.append(98)
        media.rtpMaps.append(RTPMap(payloadType: 98, encodingName: "rtx", clockRate: 90_000))
        media.formatParameters.append(FormatParameters(payloadType: 98, parameters: [.init(name: "apt", value: "96")]))
        media.attributes += ["96 nack", "96 nack pli"].map { SDPAttribute(name: "rtcp-fb", value: $0) }
        return media
    }

    /// `original` as RTX of payload type `payloadType` on `ssrc`, sequence number `sequence`.
    static func rtx(_ original: [UInt8], payloadType: UInt8 = 98, ssrc: UInt32 = 0xF00D, sequence: UInt16 = 1) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: original.count + 2)
        let length = original.withUnsafeBytes { source in
            output.withUnsafeMutableBytes { RTPRetransmission.packetize(source, into: $0, payloadType: payloadType, ssrc: ssrc, sequenceNumber: sequence) }
        }
        return Array(output[0..<(length ?? 0)])
    }

    static func sequenceNumber(of datagram: [UInt8]) -> UInt16 { UInt16(datagram[2]) << 8 | UInt16(datagram[3]) }

    @Test("a lost packet is NACKed after the reorder wait; its RTX fills the gap and every frame renders")
    func repaired() throws {
        var lost: [TrackPipelineTests.Datagram] = []
        let datagrams = try TrackPipelineTests.send(key: nil, bitrate: 1_500_000) { datagrams in
            lost = [datagrams.remove(at: 100), datagrams.remove(at: 200)]
            // The retransmissions come 40 ms after the originals would have (a NACK's round trip).
            for (index, original) in lost.enumerated() {
                datagrams.append(.init(bytes: Self.rtx(original.bytes, sequence: UInt16(index + 1)), arrival: original.arrival.advanced(by: .milliseconds(40))))
            }
        }
        var nacked: [UInt16] = []
        let (frames, pipeline) = try TrackPipelineTests.receive(datagrams, media: Self.media, feedback: .init(ssrc: 7, cname: "test")) { pipeline, now in
            for compound in pipeline.pollFeedback(now: now)?.packets ?? [] {
                for case .feedback(let message) in compound { if case .nack(let numbers) = message.message { nacked += numbers } }
            }
        }
        let every: [UInt32] = Array(0..<60)
        #expect(frames.map(\.number) == every, "nothing lost for good")
        #expect(Set(nacked) == Set(lost.map { Self.sequenceNumber(of: $0.bytes) }))
        let payloadBytes: Int = lost.map { $0.bytes.count - 12 }.reduce(0, +)
        let counted = pipeline.retransmissionStatistics
        #expect(counted.packetsReceived == 2 && counted.bytesReceived == payloadBytes)
        #expect(counted.packetsLate == 0 && counted.packetsDuplicated == 0 && counted.packetsDropped == 0)
        #expect(pipeline.statistics.network.packetsLost == 0)
        // Each asked for after the 10 ms reorder wait and again 20 ms later (no RTT measured: the
        // minimum retry interval); the answer comes at 40 ms.
        #expect(pipeline.feedbackStatistics?.nackCount == 4)
    }

    @Test("RTX that cannot help is counted and dropped: late, duplicate, foreign SSRC, truncated, before any source, unannounced payload type")
    func hostile() throws {
        var stream = try TrackPipelineTests.send(key: nil, bitrate: 1_500_000)
        let first = stream[0]
        var datagrams = stream
        // Before a source is played: nothing to restore into.
        datagrams.insert(.init(bytes: Self.rtx(stream[1].bytes, sequence: 1), arrival: first.arrival), at: 0)
        // A packet lost and retransmitted once in time (the RTX SSRC is learned from it) …
        let lost = datagrams.remove(at: 51)
        datagrams.append(.init(bytes: Self.rtx(lost.bytes, sequence: 2), arrival: lost.arrival.advanced(by: .milliseconds(30))))
        // … its retransmission again (duplicate), another stream's RTX (foreign SSRC) …
        datagrams.append(.init(bytes: Self.rtx(lost.bytes, sequence: 3), arrival: lost.arrival.advanced(by: .milliseconds(60))))
        datagrams.append(.init(bytes: Self.rtx(stream[60].bytes, ssrc: 0xBAD, sequence: 1), arrival: stream[60].arrival.advanced(by: .milliseconds(5))))
        // … one with no room for its OSN (truncated), one of a payload type not announced as RTX,
        let truncated = Array(Self.rtx(stream[70].bytes, sequence: 4).prefix(13))
        datagrams.append(.init(bytes: truncated, arrival: stream[70].arrival))
        datagrams.append(.init(bytes: Self.rtx(stream[80].bytes, payloadType: 99, sequence: 5), arrival: stream[80].arrival))
        // … and a packet whose retransmission comes after the buffer gave up on it (late).
        let late = datagrams.remove(at: 150)
        datagrams.append(.init(bytes: Self.rtx(late.bytes, sequence: 6), arrival: late.arrival.advanced(by: .milliseconds(400))))
        stream = datagrams.sorted { $0.arrival < $1.arrival }
        let (frames, pipeline) = try TrackPipelineTests.receive(stream, media: Self.media, feedback: .init(ssrc: 7, cname: "test"))
        let counted = pipeline.retransmissionStatistics
        #expect(counted.packetsReceived == 1 && counted.packetsDuplicated == 1 && counted.packetsLate == 1)
        #expect(counted.packetsDropped == 3, "before a source, foreign SSRC, truncated")
        #expect(pipeline.intakeStatistics.packetsWrongPayloadType == 1)
        #expect(frames.count < 60 && frames.count >= 30, "the late packet costs its frame and those until the next key frame (every 30): \(frames.count)")
    }

    @Test("a silent track (no feedback settings) polls nothing, and a sender that announces nothing gets reports only")
    func silentAndPlain() throws {
        var pipeline = try TrackPipeline(track: 1, media: Self.media, delay: .milliseconds(230))
        #expect(pipeline.pollFeedback(now: MonotonicInstant(nanoseconds: 0)) == nil)
        #expect(pipeline.feedbackStatistics == nil)
        let datagrams = try TrackPipelineTests.send(key: nil, bitrate: 1_500_000) { $0.remove(at: 100) }
        var kinds: Set<String> = []
        _ = try TrackPipelineTests.receive(datagrams, media: TrackPipelineTests.section(key: nil), feedback: .init(ssrc: 7, cname: "test")) { pipeline, now in
            for compound in pipeline.pollFeedback(now: now)?.packets ?? [] {
                for packet in compound {
                    switch packet {
                    case .receiverReport: kinds.insert("RR")
                    case .sourceDescription: kinds.insert("SDES")
                    default: kinds.insert("other")
                    }
                }
            }
        }
        #expect(kinds == ["RR", "SDES"])
    }
}
