import PlayoutCore
import PlayoutRTP
import PlayoutSender
import Testing

/// The streams of `publish --fanout N` driven without sockets: one canonical packet becomes N
/// packets with their own SSRCs, numbering and SRTP (real libsrtp2 on both sides), and one
/// viewer's feedback is answered on its stream only.
@Suite("Fan-out streams (sans-IO)")
struct FanoutStreamTests {
    static let t0 = MonotonicInstant(nanoseconds: 9_000_000_000)
    static let key = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
    static let viewers = 6

    /// Viewer `viewer`'s plan as the publisher makes it: video SSRC base + i, RTX base + N + i.
    static func plan(viewer: Int) throws -> [FanoutStream.TrackPlan] {
        [FanoutStream.TrackPlan(
            kind: .video, payloadType: 96, clockRate: 90_000, ssrc: 1_000 + UInt32(viewer), retransmission: (98, 1_000 + UInt32(viewers + viewer)),
            captureTimeID: 1, destination: try SocketAddress(host: "127.0.0.1", port: UInt16(30_000 + 2 * viewer)),
            controlDestination: try SocketAddress(host: "127.0.0.1", port: UInt16(30_001 + 2 * viewer)), answersRequests: true
        )]
    }

    static func streams(impairment: NetworkImpairment.Configuration = .init()) throws -> [FanoutStream] {
        try (0..<viewers).map { try FanoutStream(viewer: $0, tracks: plan(viewer: $0), keyingMaterial: key, impairment: impairment) }
    }

    /// Canonical packet `number` (plain RTP, the publisher's own numbering).
    static func canonical(_ number: Int) throws -> [UInt8] {
        let builder = RTPPacketBuilder(
            marker: number % 3 == 2, payloadType: 96, sequenceNumber: SequenceNumber(rawValue: UInt16(truncatingIfNeeded: 65_530 + number)),
            timestamp: RTPTimestamp(rawValue: UInt32(3_000 * (number / 3))), ssrc: 42, extensions: [.init(id: 1, bytes: [1, 2, 3, 4, 5, 6, 7, 8])]
        )
        let payload = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ number) }
        var bytes = [UInt8](repeating: 0, count: builder.packetLength(payloadCount: payload.count))
        let length = try payload.withUnsafeBytes { source in try bytes.withUnsafeMutableBytes { try builder.write(payload: source, into: $0) } }
        return Array(bytes[0..<length])
    }

    /// Writes canonical packet `bytes` for `stream`: the SRTP datagram.
    static func write(_ bytes: [UInt8], for stream: FanoutStream, at now: MonotonicInstant) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 2_048)
        let length = try bytes.withUnsafeBytes { raw in
            let parsed = try RTPPacket(parsing: raw)
            return out.withUnsafeMutableBytes { stream.write(canonical: parsed, track: 0, captureTime: parsed.headerExtension(id: 1), now: now, into: $0) }
        }
        #expect(length > 0)
        return Array(out[0..<length])
    }

    /// Unprotects `datagram` in `session`; the RTP packet, or nil when it fails.
    static func unprotect(_ datagram: [UInt8], in session: SRTPSession) -> (ssrc: UInt32, sequence: UInt16, timestamp: UInt32, payload: [UInt8], capture: [UInt8]?)? {
        var buffer = datagram + [UInt8](repeating: 0, count: 64)
        guard let length = try? buffer.withUnsafeMutableBytes({ try session.unprotectRTP($0, length: datagram.count) }) else { return nil }
        return buffer.withUnsafeBytes { raw in
            guard let packet = try? RTPPacket(parsing: UnsafeRawBufferPointer(rebasing: raw[0..<length])) else { return nil }
            return (packet.ssrc, packet.sequenceNumber.rawValue, packet.timestamp.rawValue, Array(packet.payload), packet.headerExtension(id: 1).map(Array.init))
        }
    }

    @Test("N streams of one packet: distinct SSRCs, each its own consecutive numbering and timestamps, the payload and capture time intact")
    func distinctStreams() throws {
        let streams = try Self.streams()
        let receivers = try (0..<Self.viewers).map { try SRTPSession(keyingMaterial: Self.key.fannedOut(viewer: $0), direction: .inbound) }
        var firstSequences: [UInt16] = []
        var firstTimestamps: [UInt32] = []
        var ssrcs: [UInt32] = []
        for (viewer, stream) in streams.enumerated() {
            var previous: (sequence: UInt16, timestamp: UInt32)?
            for number in 0..<12 {  // across the canonical sequence number's wrap
                let canonical = try Self.canonical(number)
                let datagram = try Self.write(canonical, for: stream, at: Self.t0)
                let packet = try #require(Self.unprotect(datagram, in: receivers[viewer]))
                #expect(packet.ssrc == 1_000 + UInt32(viewer))
                #expect(packet.capture == [1, 2, 3, 4, 5, 6, 7, 8])
                let original = try canonical.withUnsafeBytes { try Array(RTPPacket(parsing: $0).payload) }
                #expect(packet.payload == original)
                if let previous {
                    #expect(packet.sequence == previous.sequence &+ 1)
                    #expect(packet.timestamp == previous.timestamp &+ (number % 3 == 0 ? 3_000 : 0))
                } else {
                    firstSequences.append(packet.sequence)
                    firstTimestamps.append(packet.timestamp)
                    ssrcs.append(packet.ssrc)
                }
                previous = (packet.sequence, packet.timestamp)
            }
            #expect(stream.statistics.tracks[.video]?.packetsSent == 12)
        }
        #expect(Set(ssrcs).count == Self.viewers)
        // Each stream's numbering starts where its own random offset puts it (as an SFU's).
        #expect(Set(firstSequences).count > 1)
        #expect(Set(firstTimestamps).count > 1)
    }

    @Test("independent SRTP: a packet of stream 1 does not unprotect in stream 2's receive context (nor in viewer 0's keys)")
    func independentSRTP() throws {
        let streams = try Self.streams()
        let datagram = try Self.write(Self.canonical(0), for: streams[1], at: Self.t0)
        let second = try SRTPSession(keyingMaterial: Self.key.fannedOut(viewer: 2), direction: .inbound)
        #expect(Self.unprotect(datagram, in: second) == nil)
        #expect(second.statistics.authFailures == 1)
        let base = try SRTPSession(keyingMaterial: Self.key, direction: .inbound)
        #expect(Self.unprotect(datagram, in: base) == nil)
        // The SDP a swarm viewer is made from carries the same keys.
        var media = MediaDescription(kind: .video, port: 30_000, proto: .rtpSAVP, payloadTypes: [96])
        media.crypto = [CryptoAttribute(suite: .aesCM128HMACSHA1_80, keys: [.init(keyAndSalt: Self.key.concatenated)])]
        let sdp = try SessionDescription(media: [media]).fannedOut(viewer: 1)
        let fromSDP = try SRTPSession(keyingMaterial: SRTPKeyingMaterial(crypto: sdp.media[0].crypto[0]), direction: .inbound)
        #expect(Self.unprotect(datagram, in: fromSDP)?.ssrc == 1_001)
    }

    /// Viewer `viewer`'s SRTCP compound: a NACK for `lost` (the stream's numbers) on SSRC `ssrc`, and a PLI.
    static func feedback(viewer: Int, ssrc: UInt32, lost: [UInt16], pli: Bool = false) throws -> [UInt8] {
        var packets: [RTCPPacket] = [.receiverReport(RTCPReceiverReport(ssrc: 77))]
        packets.append(.feedback(RTCPFeedback(senderSSRC: 77, mediaSSRC: ssrc, message: .nack(lost))))
        if pli { packets.append(.feedback(RTCPFeedback(senderSSRC: 77, mediaSSRC: ssrc, message: .pictureLoss))) }
        let sender = try SRTPSession(keyingMaterial: key.fannedOut(viewer: viewer), direction: .outbound)
        return try sender.protectRTCP(RTCPPacket.serializeCompound(packets))
    }

    @Test("viewer 3's NACK is answered with RTX on stream 3 only; the same datagram given to stream 2 is refused, and a PLI asks the one encoder for a key frame")
    func feedbackStaysOnItsStream() throws {
        let streams = try Self.streams()
        var stores: [RetransmissionBuffer?] = [RetransmissionBuffer(minimumResendInterval: .zero)]
        var sequences: [Int: [UInt16]] = [:]
        let receivers = try (0..<Self.viewers).map { try SRTPSession(keyingMaterial: Self.key.fannedOut(viewer: $0), direction: .inbound) }
        for number in 0..<20 {  // the RTX budget is a quarter of the media bytes
            let canonical = try Self.canonical(number)
            canonical.withUnsafeBytes { stores[0]!.store($0, sequenceNumber: UInt16(truncatingIfNeeded: 65_530 + number), now: Self.t0) }
            for (viewer, stream) in streams.enumerated() {
                let packet = try #require(Self.unprotect(try Self.write(canonical, for: stream, at: Self.t0), in: receivers[viewer]))
                sequences[viewer, default: []].append(packet.sequence)
            }
        }
        let lost = [sequences[3]![1], sequences[3]![3]]
        var datagram = try Self.feedback(viewer: 3, ssrc: 1_003, lost: lost, pli: true)
        var resent: [(track: Int, bytes: [UInt8])] = []
        let now = Self.t0.advanced(by: .milliseconds(40))
        let requests = datagram.withUnsafeMutableBytes { raw in
            streams[3].receiveRTCP(raw, length: raw.count, now: now, arrivalNTP: 0, stores: &stores) { resent.append(($0, Array($1))) }
        }
        #expect(requests.keyFrame)
        #expect(resent.count == 2)
        // RTX on the stream's RTX SSRC, carrying the stream's own sequence numbers (RFC 4588 OSN).
        let rtxReceiver = receivers[3]
        for (index, rtx) in resent.enumerated() {
            let packet = try #require(Self.unprotect(rtx.bytes, in: rtxReceiver))
            #expect(packet.ssrc == 1_000 + UInt32(Self.viewers + 3))
            #expect(UInt16(packet.payload[0]) << 8 | UInt16(packet.payload[1]) == lost[index])
        }
        #expect(streams[3].statistics.tracks[.video]?.retransmittedPacketsSent == 2)
        #expect(streams[3].statistics.tracks[.video]?.feedback.nacksReceived == 1)

        // The same (viewer 3's) datagram handed to stream 2: its keys refuse it, nothing is resent.
        var copy = try Self.feedback(viewer: 3, ssrc: 1_003, lost: lost)
        var other: [[UInt8]] = []
        let refused = copy.withUnsafeMutableBytes { raw in
            streams[2].receiveRTCP(raw, length: raw.count, now: now, arrivalNTP: 0, stores: &stores) { other.append(Array($1)) }
        }
        #expect(!refused.keyFrame)
        #expect(other.isEmpty)
        #expect(streams[2].statistics.feedbackRefused == 1)
        #expect(streams[2].statistics.tracks[.video]?.feedback.nacksReceived == 0)
        // A viewer asking about another viewer's SSRC with its own keys: ignored, nothing resent.
        var foreign = try Self.feedback(viewer: 2, ssrc: 1_003, lost: lost)
        _ = foreign.withUnsafeMutableBytes { raw in
            streams[2].receiveRTCP(raw, length: raw.count, now: now, arrivalNTP: 0, stores: &stores) { other.append(Array($1)) }
        }
        #expect(other.isEmpty)
        #expect(streams[2].statistics.rtcpAccepted == 1)
        // Hostile RTCP (truncated, random) is refused and counted, never acted on.
        var random = SeededRandomNumberGenerator(seed: 7)
        for length in [0, 1, 8, 12, 40, 300] {
            var junk = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            _ = junk.withUnsafeMutableBytes { raw in
                streams[4].receiveRTCP(raw, length: raw.count, now: now, arrivalNTP: 0, stores: &stores) { other.append(Array($1)) }
            }
        }
        #expect(other.isEmpty)
        #expect(streams[4].statistics.feedbackRefused == 6)
    }

    @Test("sender reports: one per track per stream, with the stream's SSRC and keys")
    func senderReports() throws {
        let streams = try Self.streams()
        for (viewer, stream) in streams.enumerated() {
            var reports: [[UInt8]] = []
            stream.senderReports(wallClock: 1_700_000_000_000_000_000, canonicalTimestamp: { _ in 1_234 }, now: Self.t0) { reports.append($1) }
            #expect(reports.count == 1)
            let receiver = try SRTPSession(keyingMaterial: Self.key.fannedOut(viewer: viewer), direction: .inbound)
            let plain = try receiver.unprotectRTCP(reports[0])
            let packets = try plain.withUnsafeBytes { try RTCPPacket.parseCompound($0) }
            guard case .senderReport(let report) = packets.first else {
                Issue.record("no sender report first")
                continue
            }
            #expect(report.ssrc == 1_000 + UInt32(viewer))
        }
    }

    @Test("with impairment each stream has its own seeded network: the same seeds give the same losses, and streams differ")
    func ownNetworks() throws {
        func losses() throws -> [[Int]] {
            let streams = try Self.streams(impairment: .init(loss: 0.3, seed: 5))
            return try streams.map { stream in
                #expect(stream.impairs)
                var sent: [Int] = []
                for number in 0..<40 {
                    stream.submit(try Self.write(Self.canonical(number), for: stream, at: Self.t0), label: number, now: Self.t0)
                    while case .send(_, let label) = stream.pollNetwork(now: Self.t0) { sent.append(label) }
                }
                return sent
            }
        }
        let first = try losses()
        #expect(first == (try losses()))
        #expect(Set(first).count > 1)
        #expect(first.allSatisfy { $0.count < 40 && $0.count > 10 })
    }
}
