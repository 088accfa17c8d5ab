import Foundation
import PlayoutCore
import PlayoutRTP
import PropertyBased
import PlayoutTesting
import Testing

/// The start of a VP8 key frame (RFC 6386 §9.1): frame tag with P = 0 (key frame), version 0,
/// show_frame, then the start code 9D 01 2A and 160×120.
let vp8KeyFrame: [UInt8] = [0x50, 0x3A, 0x00, 0x9D, 0x01, 0x2A, 0xA0, 0x00, 0x78, 0x00] + Array(repeating: 0x11, count: 2_500)
/// An interframe: frame tag with P = 1.
let vp8InterFrame: [UInt8] = [0xF1, 0x03, 0x00] + Array(repeating: 0x22, count: 300)

@Suite("VP8 depacketizer and packetizer (RFC 7741)")
struct VP8Tests {
    @Test("descriptor layouts of RFC 7741 §4.2 are stripped", arguments: [
        ("10", 1),  // X = 0, S = 1, PID 0: one byte
        ("90 80 05", 3),  // X, I with a 7-bit PictureID (M = 0)
        ("90 80 81 23", 4),  // X, I with a 15-bit PictureID (M = 1), as ffmpeg sends
        ("90 C0 81 23 07", 5),  // X, I (15-bit), L: TL0PICIDX
        ("90 F0 81 23 07 40", 6),  // X, I, L, T, K: TID|Y|KEYIDX
        ("90 20 40", 3),  // X, only T: TID|Y|KEYIDX
        ("B0 00", 2),  // X with N = 1 (non-reference) and an empty extension byte
    ])
    func descriptors(text: String, length: Int) {
        var harness = DepacketizerHarness(VP8Depacketizer(track: 1))
        harness.push([UInt8](hex: text) + vp8InterFrame, sequence: 1, timestamp: 0, marker: true)
        #expect(harness.frames.map(\.bytes) == [vp8InterFrame], "a \(length)-byte descriptor")
        #expect(harness.frames.first?.isKeyframe == false)
    }

    @Test("a multi-packet key frame: S = 1 only on the first, marker on the last; P = 0 means key frame")
    func multiPacketKeyFrame() {
        var harness = DepacketizerHarness(VP8Depacketizer(track: 5))
        harness.push([UInt8](hex: "90 80 80 00") + vp8KeyFrame[0..<1_000], sequence: 10, timestamp: 90_000, marker: false, arrival: 1)
        harness.push([UInt8](hex: "80 80 80 00") + vp8KeyFrame[1_000..<2_000], sequence: 11, timestamp: 90_000, marker: false, arrival: 2)
        harness.push([UInt8](hex: "80 80 80 00") + vp8KeyFrame[2_000...], sequence: 12, timestamp: 90_000, marker: true, arrival: 3)
        #expect(harness.frames.count == 1)
        let frame = harness.frames[0]
        #expect(frame.bytes == vp8KeyFrame)
        #expect(frame.isKeyframe && frame.codec == .vp8 && frame.track == 5)
        #expect(frame.sequenceRange == 10...12)
        #expect(frame.mediaTime == MediaTime(ticks: 90_000, clockRate: 90_000))
        #expect(frame.firstArrival.nanoseconds == 1 && frame.lastArrival.nanoseconds == 3)
    }

    @Test("a lost packet discards its frame and the next frame follows loss", arguments: [0, 1, 2])
    func lostPacket(lost: Int) {
        var harness = DepacketizerHarness(VP8Depacketizer(track: 1))
        harness.push([UInt8](hex: "90 80 80 00") + vp8InterFrame, sequence: 99, timestamp: 0, marker: true)
        // Typed: the array literal of sums took ≈ 0.8 s to type-check inferred.
        let parts: [[UInt8]] = [[UInt8](hex: "90 80 80 01") + vp8KeyFrame[0..<1_000], [UInt8](hex: "80 80 80 01") + vp8KeyFrame[1_000..<2_000],
                                [UInt8](hex: "80 80 80 01") + vp8KeyFrame[2_000...]]
        for (index, part) in parts.enumerated() where index != lost {
            harness.push(Array(part), sequence: UInt16(100 + index), timestamp: 3_000, marker: index == 2)
        }
        harness.push([UInt8](hex: "90 80 80 02") + vp8InterFrame, sequence: 103, timestamp: 6_000, marker: true)
        #expect(harness.frames.map(\.mediaTime.ticks) == [0, 6_000])
        #expect(harness.frames.map(\.followsLoss) == [false, true])
        let statistics = harness.depacketizer.statistics
        #expect(statistics.packetsLost == 1 && statistics.framesDiscarded == 1 && statistics.framesEmitted == 2)
    }

    @Test("joining mid-frame: packets without the frame's start are discarded")
    func joinMidFrame() {
        var harness = DepacketizerHarness(VP8Depacketizer(track: 1))
        harness.push([UInt8](hex: "80 80 80 00") + vp8KeyFrame[1_000..<2_000], sequence: 1, timestamp: 0, marker: true)
        harness.push([UInt8](hex: "90 80 80 01") + vp8InterFrame, sequence: 2, timestamp: 3_000, marker: true)
        #expect(harness.frames.map(\.mediaTime.ticks) == [3_000])
        #expect(harness.depacketizer.statistics.framesDiscarded == 1)
    }

    @Test("duplicates and out-of-order packets are dropped; sequence numbers and timestamps wrap")
    func duplicatesAndWrap() {
        var harness = DepacketizerHarness(VP8Depacketizer(track: 1))
        harness.push([UInt8](hex: "90 80 80 00") + vp8InterFrame, sequence: 65_535, timestamp: UInt32.max - 999, marker: true)
        harness.push([UInt8](hex: "90 80 80 00") + vp8InterFrame, sequence: 65_535, timestamp: UInt32.max - 999, marker: true)
        harness.push([UInt8](hex: "90 80 80 01") + vp8InterFrame, sequence: 0, timestamp: 2_000, marker: true)
        harness.push([UInt8](hex: "90 80 80 00") + vp8InterFrame, sequence: 65_534, timestamp: UInt32.max - 3_999, marker: true)
        #expect(harness.frames.count == 2)
        #expect(harness.frames[1].mediaTime.ticks - harness.frames[0].mediaTime.ticks == 3_000)
        #expect(harness.frames[1].sequenceRange == 65_536...65_536)
        #expect(harness.depacketizer.statistics.packetsOutOfOrder == 2)
        #expect(harness.depacketizer.statistics.packetsLost == 0)
    }

    @Test("malformed descriptors are counted and discard their frame", arguments: [
        "",  // empty payload
        "90",  // X without the extension byte
        "90 80",  // I without PictureID
        "90 80 80",  // 15-bit PictureID cut short
        "90 C0 80 01",  // L without TL0PICIDX
        "90 80 80 01",  // a descriptor and no VP8 data
        "10",  // no VP8 data
    ])
    func malformed(text: String) {
        var harness = DepacketizerHarness(VP8Depacketizer(track: 1))
        harness.push([UInt8](hex: text), sequence: 1, timestamp: 0, marker: true)
        #expect(harness.frames.isEmpty)
        #expect(harness.depacketizer.statistics.packetsMalformed == 1)
        harness.push([UInt8](hex: "10") + vp8InterFrame, sequence: 2, timestamp: 3_000, marker: true)
        #expect(harness.frames.count == 1 && harness.frames[0].followsLoss)
    }

    @Test("packetizer: ffmpeg's descriptor (X, S, I, 15-bit PictureID counting frames), marker on the last")
    func packetizerShape() {
        var packetizer = VP8Packetizer(maxPayloadSize: 1_000, firstPictureID: 0x7FFF)
        var payloads: [([UInt8], Bool)] = []
        for frame in [vp8KeyFrame, vp8InterFrame] {
            frame.withUnsafeBytes { buffer in packetizer.packetize(buffer) { payloads.append((Array($0), $1)) } }
        }
        #expect(payloads.map { Array($0.0[0..<4]) } == [
            [0x90, 0x80, 0xFF, 0xFF], [0x80, 0x80, 0xFF, 0xFF], [0x80, 0x80, 0xFF, 0xFF], [0x90, 0x80, 0x80, 0x00],
        ], "the PictureID wraps at 15 bits")
        #expect(payloads.map(\.1) == [false, false, true, true])
        #expect(payloads.allSatisfy { $0.0.count <= 1_000 })
    }

    @Test("packetize then depacketize gives back every frame, at any MTU")
    func roundTrip() async {
        await propertyCheck(count: 200, input: Gen.int(in: 64...1_500), Gen.int(in: 0...1_000)) { mtu, seed in
            var random = SeededRandomNumberGenerator(seed: UInt64(seed))
            var packetizer = VP8Packetizer(maxPayloadSize: mtu, firstPictureID: UInt16.random(in: 0...UInt16.max, using: &random))
            var harness = DepacketizerHarness(VP8Depacketizer(track: 1))
            var sent: [[UInt8]] = []
            var sequence = UInt16.random(in: 0...UInt16.max, using: &random)
            var timestamp = UInt32.random(in: 0...UInt32.max, using: &random)
            for _ in 0..<6 {
                let frame = (0..<Int.random(in: 1...6_000, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                sent.append(frame)
                frame.withUnsafeBytes { buffer in
                    packetizer.packetize(buffer) { payload, isLast in
                        #expect(payload.count <= mtu)
                        harness.push(Array(payload), sequence: sequence, timestamp: timestamp, marker: isLast)
                        sequence &+= 1
                    }
                }
                timestamp &+= 3_000
            }
            #expect(harness.frames.map(\.bytes) == sent)
            #expect(harness.frames.map(\.isKeyframe) == sent.map { $0[0] & 1 == 0 })
        }
    }

    @Test("hostile payloads never crash")
    func hostile() {
        var harness = DepacketizerHarness(VP8Depacketizer(track: 1))
        var random = SeededRandomNumberGenerator(seed: 7741)
        for index in 0..<20_000 {
            var payload = (0..<Int.random(in: 0...32, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            if !payload.isEmpty, index % 2 == 0 { payload[0] = [0x90, 0x80, 0x10][index % 3] }
            harness.push(payload, sequence: UInt16(truncatingIfNeeded: index * (index % 7 == 0 ? 3 : 1)),
                         timestamp: UInt32(index / 3 * 3_000), marker: index % 3 == 2)
        }
        harness.flush()
        let statistics = harness.depacketizer.statistics
        #expect(statistics.packetsReceived == 20_000)
        #expect(statistics.framesEmitted == harness.frames.count)
    }

    @Test("interop: ffmpeg's libvpx RTP stream gives back the IVF file's frames", .enabled(if: FFmpeg.isAvailable, "ffmpeg is not on PATH"))
    func ffmpegInterop() throws {
        let file = FFmpeg.temporaryFile("vp8.ivf")
        defer { try? FileManager.default.removeItem(at: file) }
        try FFmpeg.run(["-f", "lavfi", "-i", "testsrc=size=160x120:rate=30", "-t", "1", "-c:v", "libvpx", "-g", "10", "-f", "ivf", file.path])
        let expected = try FFmpeg.packetChecksums(of: file)
        let datagrams = try FFmpeg.captureRTP(sending: file)
        var depacketizer = VP8Depacketizer(track: 1)
        let frames = try FFmpeg.depacketize(datagrams, with: &depacketizer)
        #expect(expected.count == 30)
        #expect(frames.map(\.checksum) == expected)
        #expect(frames.filter(\.isKeyframe).count == 3, "-g 10: a key frame every 10 frames")
        #expect(frames.first?.isKeyframe == true)
        #expect(depacketizer.statistics.packetsLost == 0 && depacketizer.statistics.framesDiscarded == 0)
    }
}
