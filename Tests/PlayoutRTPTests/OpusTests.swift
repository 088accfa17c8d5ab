import Foundation
import PlayoutCore
import PlayoutRTP
import PropertyBased
import PlayoutTesting
import Testing

/// A 20 ms CELT-only fullband mono Opus packet: TOC 0xF8 (config 31, s = 0, c = 0, RFC 6716 §3.1)
/// and some coded bytes.
let opusFrame: [UInt8] = [0xF8, 0xFF, 0xFE] + Array(repeating: 0x5A, count: 120)

@Suite("Opus depacketizer and packetizer (RFC 7587)")
struct OpusTests {
    @Test("each packet is one key frame at 48 kHz, marker or not")
    func onePacketOneFrame() {
        var harness = DepacketizerHarness(OpusDepacketizer(track: 3))
        harness.push(opusFrame, sequence: 1, timestamp: 0, marker: true, arrival: 7)
        harness.push(opusFrame + [1], sequence: 2, timestamp: 960, marker: false, arrival: 9)
        #expect(harness.frames.count == 2)
        #expect(harness.frames.map(\.bytes) == [opusFrame, opusFrame + [1]])
        #expect(harness.frames.allSatisfy { $0.isKeyframe && $0.codec == .opus && $0.track == 3 && !$0.followsLoss })
        #expect(harness.frames[1].mediaTime == MediaTime(ticks: 960, clockRate: 48_000))
        #expect(harness.frames[1].sequenceRange == 2...2)
        #expect(harness.frames[1].firstArrival.nanoseconds == 9)
    }

    @Test("a lost packet is counted and the next frame follows loss")
    func loss() {
        var harness = DepacketizerHarness(OpusDepacketizer(track: 1))
        harness.push(opusFrame, sequence: 10, timestamp: 0, marker: false)
        harness.push(opusFrame, sequence: 12, timestamp: 1_920, marker: false)
        harness.push(opusFrame, sequence: 13, timestamp: 2_880, marker: false)
        #expect(harness.frames.map(\.followsLoss) == [false, true, false])
        #expect(harness.depacketizer.statistics.packetsLost == 1)
    }

    @Test("duplicates and out-of-order packets are dropped and counted")
    func duplicates() {
        var harness = DepacketizerHarness(OpusDepacketizer(track: 1))
        harness.push(opusFrame, sequence: 5, timestamp: 4_800, marker: false)
        harness.push(opusFrame, sequence: 5, timestamp: 4_800, marker: false)
        harness.push(opusFrame, sequence: 3, timestamp: 2_880, marker: false)
        harness.push(opusFrame, sequence: 6, timestamp: 5_760, marker: false)
        #expect(harness.frames.count == 2)
        #expect(harness.depacketizer.statistics.packetsOutOfOrder == 2)
    }

    @Test("sequence numbers and timestamps wrap")
    func wraps() {
        var harness = DepacketizerHarness(OpusDepacketizer(track: 1))
        harness.push(opusFrame, sequence: 65_535, timestamp: UInt32.max - 479, marker: false)
        harness.push(opusFrame, sequence: 0, timestamp: 480, marker: false)
        #expect(harness.frames.count == 2)
        #expect(harness.frames[1].mediaTime.ticks - harness.frames[0].mediaTime.ticks == 960)
        #expect(harness.frames[1].sequenceRange == 65_536...65_536)
        #expect(harness.depacketizer.statistics.packetsLost == 0)
    }

    @Test("an empty payload is malformed; the next frame follows loss")
    func malformed() {
        var harness = DepacketizerHarness(OpusDepacketizer(track: 1))
        harness.push([], sequence: 1, timestamp: 0, marker: true)
        harness.push(opusFrame, sequence: 2, timestamp: 960, marker: true)
        #expect(harness.frames.count == 1)
        #expect(harness.frames[0].followsLoss)
        #expect(harness.depacketizer.statistics.packetsMalformed == 1)
        #expect(harness.depacketizer.statistics.framesDiscarded == 1)
    }

    @Test("packetizer: one frame per payload; a frame over maxPayloadSize is an error, not split")
    func packetizer() throws {
        var packetizer = OpusPacketizer(maxPayloadSize: 100)
        var payloads: [([UInt8], Bool)] = []
        let small = Array(opusFrame[0..<80])
        try small.withUnsafeBytes { try packetizer.packetize($0) { payloads.append((Array($0), $1)) } }
        #expect(payloads.count == 1 && payloads[0].0 == small && payloads[0].1)
        #expect(throws: PacketizerError.frameTooLarge(size: opusFrame.count, maxPayloadSize: 100)) {
            try opusFrame.withUnsafeBytes { try packetizer.packetize($0) { _, _ in Issue.record("nothing is emitted") } }
        }
    }

    @Test("packetize then depacketize gives back every frame")
    func roundTrip() async {
        await propertyCheck(count: 100, input: Gen.int(in: 64...1_500), Gen.int(in: 0...1_000)) { mtu, seed in
            var random = SeededRandomNumberGenerator(seed: UInt64(seed))
            var packetizer = OpusPacketizer(maxPayloadSize: mtu)
            var harness = DepacketizerHarness(OpusDepacketizer(track: 1))
            var sent: [[UInt8]] = []
            var sequence = UInt16.random(in: 0...UInt16.max, using: &random)
            var timestamp = UInt32.random(in: 0...UInt32.max, using: &random)
            for _ in 0..<20 {
                let frame = (0..<Int.random(in: 1...mtu, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                sent.append(frame)
                try frame.withUnsafeBytes { buffer in
                    try packetizer.packetize(buffer) { payload, isLast in
                        harness.push(Array(payload), sequence: sequence, timestamp: timestamp, marker: isLast)
                        sequence &+= 1
                    }
                }
                timestamp &+= 960
            }
            #expect(harness.frames.map(\.bytes) == sent)
        }
    }

    @Test("hostile payloads never crash")
    func hostile() {
        var harness = DepacketizerHarness(OpusDepacketizer(track: 1))
        var random = SeededRandomNumberGenerator(seed: 7587)
        for index in 0..<20_000 {
            let payload = (0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            harness.push(payload, sequence: UInt16(truncatingIfNeeded: index * (index % 7 == 0 ? 3 : 1)),
                         timestamp: UInt32(truncatingIfNeeded: index * 960), marker: index % 4 == 3)
        }
        harness.flush()
        let statistics = harness.depacketizer.statistics
        #expect(statistics.packetsReceived == 20_000)
        #expect(statistics.framesEmitted == harness.frames.count)
    }

    @Test("interop: ffmpeg's libopus RTP stream gives back the file's packets", .enabled(if: FFmpeg.isAvailable, "ffmpeg is not on PATH"))
    func ffmpegInterop() throws {
        let file = FFmpeg.temporaryFile("opus.ogg")
        defer { try? FileManager.default.removeItem(at: file) }
        try FFmpeg.run(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "1", "-c:a", "libopus", "-f", "ogg", file.path])
        let expected = try FFmpeg.packetChecksums(of: file)
        let datagrams = try FFmpeg.captureRTP(sending: file)
        var depacketizer = OpusDepacketizer(track: 1)
        let frames = try FFmpeg.depacketize(datagrams, with: &depacketizer)
        #expect(expected.count >= 50)
        #expect(frames.map(\.checksum) == expected)
        #expect(depacketizer.statistics.packetsLost == 0 && depacketizer.statistics.framesDiscarded == 0)
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $1.mediaTime.ticks - $0.mediaTime.ticks == 960 }, "20 ms frames at 48 kHz")
    }
}
