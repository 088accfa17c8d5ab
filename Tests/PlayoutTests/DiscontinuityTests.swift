@testable import Playout
import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Testing

/// Issue 13 item 5, replayed: a plain-RTP capture of H.264 (a key frame every second) and Opus,
/// rewritten as a probing tool would — random sequence numbers in 2 % of the packets, a step back
/// of 1,000 sequence numbers, timestamp steps of −5 s and ±2^31 — through the whole subscription
/// on a manual clock (real encoder, packetizer, pipeline, decoder; no sockets, no sleeps).
@Suite("Discontinuities of the played source (RFC 3550 A.1): counters stay within what was sent, playback resumes within a key-frame interval")
struct DiscontinuityTests {
    /// Where the stream changes: 3 s after the start; the sender sends 0–8 s.
    static let change = Duration.seconds(3)
    static let sending = Duration.zero..<Duration.seconds(8)

    enum Rewrite: String, CaseIterable, CustomTestStringConvertible {
        case randomSequence2Percent, sequenceBack1000, timestampBack5s, timestampPlus2to31, timestampMinus2to31
        var testDescription: String { rawValue }
    }

    /// The packets' sequence number and timestamp, rewritten in place (plain RTP).
    static func rewrite(_ datagram: inout SimulatedDatagram, sequence: (UInt16) -> UInt16, timestamp: (UInt32) -> UInt32) {
        let bytes = datagram.bytes
        let oldSequence = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        let oldTimestamp = bytes[4...7].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let newSequence = sequence(oldSequence)
        let newTimestamp = timestamp(oldTimestamp)
        datagram.bytes[2] = UInt8(newSequence >> 8)
        datagram.bytes[3] = UInt8(newSequence & 0xFF)
        for index in 0..<4 { datagram.bytes[4 + index] = UInt8(truncatingIfNeeded: newTimestamp >> UInt32(24 - 8 * index)) }
    }

    @Test("the capture, rewritten", arguments: Rewrite.allCases)
    func replay(_ rewrite: Rewrite) throws {
        let simulation = try SimulatedSubscription(
            session: SimulatedSubscription.session(key: nil, audio: true), options: .init(duration: .seconds(10), qosInterval: .milliseconds(100))
        )
        let start = simulation.clock.now
        var datagrams = try SimulatedSender(key: nil).datagrams(video: Self.sending, audio: Self.sending, origin: start)
        // One random stream per track: which packets of a track get a random sequence number
        // does not depend on how many packets the other track has.
        var random = [SeededRandomNumberGenerator(seed: 2), SeededRandomNumberGenerator(seed: 3)]
        let changeAt = start.advanced(by: Self.change)
        var randomized = [0, 0]
        for index in datagrams.indices {
            let after = datagrams[index].arrival >= changeAt
            switch rewrite {
            case .randomSequence2Percent:
                let track = datagrams[index].track
                if Double.random(in: 0..<1, using: &random[track]) < 0.02 {
                    let value = UInt16.random(in: 0...UInt16.max, using: &random[track])
                    Self.rewrite(&datagrams[index], sequence: { _ in value }, timestamp: { $0 })
                    randomized[datagrams[index].track] += 1
                }
            case .sequenceBack1000 where after:
                Self.rewrite(&datagrams[index], sequence: { $0 &- 1_000 }, timestamp: { $0 })
            case .timestampBack5s where after:
                let ticks = UInt32(datagrams[index].track == 0 ? 5 * 90_000 : 5 * 48_000)
                Self.rewrite(&datagrams[index], sequence: { $0 }, timestamp: { $0 &- ticks })
            case .timestampPlus2to31 where after:
                Self.rewrite(&datagrams[index], sequence: { $0 }, timestamp: { $0 &+ (1 << 31) })
            case .timestampMinus2to31 where after:
                Self.rewrite(&datagrams[index], sequence: { $0 }, timestamp: { $0 &- (1 << 31) })
            default:
                break
            }
        }
        let final = simulation.run(datagrams)
        let sent = [datagrams.filter { $0.track == 0 }.count, datagrams.filter { $0.track == 1 }.count]
        let framesSent = [
            SimulatedMedia.video.filter { Self.sending.contains($0.mediaTime.duration) }.count,
            SimulatedMedia.audio.filter { Self.sending.contains($0.mediaTime.duration) }.count,
        ]
        for (index, kind) in [MediaKind.video, .audio].enumerated() {
            let track = try #require(final.tracks[kind])
            let name = kind.rawValue
            // Counters stay within what was sent.
            #expect(track.packetsReceived <= sent[index], "\(name): received \(track.packetsReceived) of \(sent[index])")
            #expect(track.packetsReceived + track.packetsLost <= sent[index] + 1, "\(name): received \(track.packetsReceived) + lost \(track.packetsLost) of \(sent[index])")
            #expect(track.packetsDuplicated <= randomized[index], "\(name): \(track.packetsDuplicated) duplicates")
            #expect(track.framesReceived <= framesSent[index] && track.framesRendered <= framesSent[index])
            // Every packet has the played SSRC, and neither track's first two packets (probation)
            // is randomized. (With one random stream for both tracks, and video encoded on two
            // threads whose bytes varied on a busy machine, the audio's pattern moved with the
            // video's packet count and sometimes hit its first packets: 2 here in 3 of 5 full runs.)
            #expect(track.packetsFromOtherSources == 0, "\(name): \(track.packetsFromOtherSources)")
            // Skipped frames and their duration agree: each skipped frame is 20–34 ms of media.
            let frame = kind == .video ? Duration.milliseconds(33) : .milliseconds(20)
            #expect(track.totalSkippedDuration >= frame * (track.framesSkipped * 9 / 10), "\(name): \(track.framesSkipped) skipped, \(track.totalSkippedDuration)")
            #expect(track.totalSkippedDuration <= (frame + .milliseconds(1)) * track.framesSkipped, "\(name): \(track.framesSkipped) skipped, \(track.totalSkippedDuration)")
            // Both tracks play again within a key-frame interval (1 s) of the change: from then to
            // the end of the sending, at least 90 % of the frames sent render.
            let resumed = Self.change + .seconds(1) + .milliseconds(300)
            let ended = Self.sending.upperBound + .milliseconds(300)
            guard let from = simulation.samples.first(where: { $0.elapsed >= resumed })?.tracks[kind],
                  let to = simulation.samples.first(where: { $0.elapsed >= ended })?.tracks[kind]
            else {
                Issue.record("no samples")
                continue
            }
            let expected = Double(framesSent[index]) * (ended - resumed).seconds / Self.sending.upperBound.seconds
            let rendered = Double(to.framesRendered - from.framesRendered)
            if rewrite != .randomSequence2Percent || kind == .audio {
                #expect(rendered >= 0.9 * expected, "\(name): \(rendered) rendered of \(expected) from \(resumed) to \(ended)")
            } else {
                #expect(rendered > 0, "video plays between losses")
            }
            if rewrite == .randomSequence2Percent {
                #expect(track.restarts == 0, "\(name): a stray sequence number is not a new stream")
                #expect(track.packetsOutOfSequence + track.packetsImplausibleTimestamp + track.packetsDuplicated + track.packetsDiscarded >= randomized[index] * 9 / 10)
            } else {
                #expect(track.restarts == 1 && track.sourceResyncs == 1, "\(name): \(track.restarts) restarts")
            }
        }
        #expect(final.state == .ended)
        // Playing from the first render until the sender stops (stalled a second after that).
        let whileSending = simulation.states.filter { start.duration(to: $0.at) < Self.sending.upperBound + .milliseconds(500) }
        #expect(whileSending.map(\.state) == [.idle, .connecting, .buffering, .playing], "\(whileSending.map { (start.duration(to: $0.at), $0.state) })")
    }
}
