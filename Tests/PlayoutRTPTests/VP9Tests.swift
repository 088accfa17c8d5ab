import Foundation
import PlayoutCore
import PlayoutRTP
import PropertyBased
import PlayoutTesting
import Testing

/// The start of a VP9 profile-0 key frame (VP9 bitstream §6.2): frame_marker 2, profile 0,
/// show_existing_frame 0, frame_type 0, show_frame 1, error_resilient 0, sync code 49 83 42,
/// color_space BT.601 with color_range 0, then 320×240 (width_minus_1 319, height_minus_1 239).
let vp9KeyFrame: [UInt8] = [UInt8](hex: "82 49 83 42 20 13 F0 0E F0") + Array(repeating: 0x11, count: 2_500)
/// An inter frame: frame_type 1.
let vp9InterFrame: [UInt8] = [0x86, 0x00, 0x40] + Array(repeating: 0x22, count: 300)

@Suite("VP9 depacketizer and packetizer (RFC 9628)")
struct VP9Tests {
    @Test("descriptor layouts of RFC 9628 §4.2 are stripped", arguments: [
        ("0C", 1),  // B, E only: as ffmpeg sends
        ("CC 05", 2),  // I (7-bit PictureID), P, B, E
        ("CC 81 23", 3),  // I (15-bit PictureID), P, B, E
        ("EC 81 23 00 07", 5),  // non-flexible: I, P, L, B, E, layer byte and TL0PICIDX
        ("FC 81 23 00 03 05 08", 7),  // flexible: I, P, L, F, B, E, layer byte, P_DIFFs 1 (N = 1), 2 (N = 1), 4
        ("DC 81 23 02", 4),  // flexible without L: one P_DIFF
        ("4E 10 01 40 00 F0", 6),  // P, B, E, V: SS with N_S 0, Y: 320×240
        ("4E 18 01 40 00 F0 02 04 14 02", 10),  // SS with Y and G: 2 pictures, the second with one P_DIFF
        ("4E 08 01 00", 4),  // SS with G only: one picture without references
    ])
    func descriptors(text: String, length: Int) {
        var harness = DepacketizerHarness(VP9Depacketizer(track: 1))
        harness.push([UInt8](hex: text) + vp9InterFrame, sequence: 1, timestamp: 0, marker: true)
        #expect(harness.frames.map(\.bytes) == [vp9InterFrame], "a \(length)-byte descriptor")
        #expect(harness.frames.first?.isKeyframe == false)
    }

    @Test("key frame: B = 1, P = 0 and the uncompressed header's frame_type 0; ffmpeg's P = 0 on inter frames is not enough")
    func keyFrames() {
        var harness = DepacketizerHarness(VP9Depacketizer(track: 1))
        harness.push([UInt8](hex: "0C") + vp9KeyFrame, sequence: 1, timestamp: 0, marker: true)
        harness.push([UInt8](hex: "0C") + vp9InterFrame, sequence: 2, timestamp: 3_000, marker: true)  // P = 0, frame_type 1
        harness.push([UInt8](hex: "CC 80 01") + vp9KeyFrame, sequence: 3, timestamp: 6_000, marker: true)  // P = 1
        #expect(harness.frames.map(\.isKeyframe) == [true, false, false])
    }

    @Test("a multi-packet frame runs from B to E and the marker")
    func multiPacketFrame() {
        var harness = DepacketizerHarness(VP9Depacketizer(track: 4))
        harness.push([UInt8](hex: "88 80 00") + vp9KeyFrame[0..<1_000], sequence: 10, timestamp: 90_000, marker: false, arrival: 1)
        harness.push([UInt8](hex: "80 80 00") + vp9KeyFrame[1_000..<2_000], sequence: 11, timestamp: 90_000, marker: false, arrival: 2)
        harness.push([UInt8](hex: "84 80 00") + vp9KeyFrame[2_000...], sequence: 12, timestamp: 90_000, marker: true, arrival: 3)
        #expect(harness.frames.count == 1)
        let frame = harness.frames[0]
        #expect(frame.bytes == vp9KeyFrame && frame.isKeyframe && frame.codec == .vp9 && frame.track == 4)
        #expect(frame.sequenceRange == 10...12)
        #expect(frame.firstArrival.nanoseconds == 1 && frame.lastArrival.nanoseconds == 3)
    }

    @Test("a lost packet discards its frame and the next frame follows loss", arguments: [0, 1, 2])
    func lostPacket(lost: Int) {
        var harness = DepacketizerHarness(VP9Depacketizer(track: 1))
        harness.push([UInt8](hex: "0C") + vp9InterFrame, sequence: 99, timestamp: 0, marker: true)
        let parts: [[UInt8]] = [[UInt8](hex: "08") + vp9KeyFrame[0..<1_000], [UInt8](hex: "00") + vp9KeyFrame[1_000..<2_000], [UInt8](hex: "04") + vp9KeyFrame[2_000...]]
        for (index, part) in parts.enumerated() where index != lost {
            harness.push(part, sequence: UInt16(100 + index), timestamp: 3_000, marker: index == 2)
        }
        harness.push([UInt8](hex: "0C") + vp9InterFrame, sequence: 103, timestamp: 6_000, marker: true)
        #expect(harness.frames.map(\.mediaTime.ticks) == [0, 6_000])
        #expect(harness.frames.map(\.followsLoss) == [false, true])
        let statistics = harness.depacketizer.statistics
        #expect(statistics.packetsLost == 1 && statistics.framesDiscarded == 1 && statistics.framesEmitted == 2)
    }

    @Test("a frame without E, or packets without B, never make a frame")
    func incompleteRuns() {
        var harness = DepacketizerHarness(VP9Depacketizer(track: 1))
        harness.push([UInt8](hex: "08") + vp9InterFrame, sequence: 1, timestamp: 0, marker: true)  // B but no E, then the marker
        harness.push([UInt8](hex: "04") + vp9InterFrame, sequence: 2, timestamp: 3_000, marker: true)  // E without B
        harness.push([UInt8](hex: "0C") + vp9InterFrame, sequence: 3, timestamp: 6_000, marker: true)
        #expect(harness.frames.map(\.mediaTime.ticks) == [6_000])
        #expect(harness.depacketizer.statistics.framesDiscarded == 2)
    }

    @Test("duplicates and out-of-order packets are dropped; sequence numbers and timestamps wrap")
    func duplicatesAndWrap() {
        var harness = DepacketizerHarness(VP9Depacketizer(track: 1))
        harness.push([UInt8](hex: "0C") + vp9InterFrame, sequence: 65_535, timestamp: UInt32.max - 999, marker: true)
        harness.push([UInt8](hex: "0C") + vp9InterFrame, sequence: 65_535, timestamp: UInt32.max - 999, marker: true)
        harness.push([UInt8](hex: "0C") + vp9InterFrame, sequence: 0, timestamp: 2_000, marker: true)
        harness.push([UInt8](hex: "0C") + vp9InterFrame, sequence: 65_530, timestamp: 2_000, marker: true)
        #expect(harness.frames.count == 2)
        #expect(harness.frames[1].mediaTime.ticks - harness.frames[0].mediaTime.ticks == 3_000)
        #expect(harness.frames[1].sequenceRange == 65_536...65_536)
        #expect(harness.depacketizer.statistics.packetsOutOfOrder == 2)
    }

    @Test("malformed descriptors are counted and discard their frame", arguments: [
        "",  // empty payload
        "8C",  // I without PictureID
        "8C 80",  // 15-bit PictureID cut short
        "AC 05",  // L without the layer byte
        "AC 05 00",  // non-flexible L without TL0PICIDX
        "DC 05 03 03 03 02",  // flexible with four P_DIFFs
        "DC 05 03",  // P_DIFF says another follows, none does
        "0E 10 01 40",  // SS resolution cut short
        "0E 08 02 04",  // SS picture group cut short
        "0C",  // a descriptor and no VP9 data
    ])
    func malformed(text: String) {
        var harness = DepacketizerHarness(VP9Depacketizer(track: 1))
        harness.push([UInt8](hex: text), sequence: 1, timestamp: 0, marker: true)
        #expect(harness.frames.isEmpty)
        #expect(harness.depacketizer.statistics.packetsMalformed == 1)
        harness.push([UInt8](hex: "0C") + vp9InterFrame, sequence: 2, timestamp: 3_000, marker: true)
        #expect(harness.frames.count == 1 && harness.frames[0].followsLoss)
    }

    @Test("packetizer: I with a 15-bit PictureID, B/E, P on inter frames, SS with the resolution on key frames")
    func packetizerShape() {
        var packetizer = VP9Packetizer(maxPayloadSize: 1_000, firstPictureID: 0x7FFF)
        var payloads: [([UInt8], Bool)] = []
        for frame in [vp9KeyFrame, vp9InterFrame] {
            frame.withUnsafeBytes { buffer in packetizer.packetize(buffer) { payloads.append((Array($0), $1)) } }
        }
        #expect(Array(payloads[0].0[0..<8]) == [UInt8](hex: "8A FF FF 10 01 40 00 F0"), "I, B, V; SS: N_S 0, Y, 320×240")
        #expect(Array(payloads[1].0[0..<3]) == [UInt8](hex: "80 FF FF"))
        #expect(Array(payloads[2].0[0..<3]) == [UInt8](hex: "84 FF FF"))
        #expect(Array(payloads[3].0[0..<3]) == [UInt8](hex: "CC 80 00"), "P, B, E; the PictureID wrapped")
        #expect(payloads.map(\.1) == [false, false, true, true])
        #expect(payloads.allSatisfy { $0.0.count <= 1_000 })
    }

    @Test("the uncompressed header gives the key frame and its size", arguments: [
        ("82 49 83 42 20 13 F0 0E F0", true, 320, 240),  // profile 0, BT.601
        ("A2 49 83 42 E0 09 F0 07 70", true, 160, 120),  // profile 1, sRGB: ffmpeg's testsrc key frame
        ("86 00 40", false, nil, nil),  // inter frame
        ("88", false, nil, nil),  // show_existing_frame
    ] as [(String, Bool, Int?, Int?)])
    func frameHeader(text: String, isKey: Bool, width: Int?, height: Int?) {
        var packetizer = VP9Packetizer()
        var first: [UInt8] = []
        [UInt8](hex: text).withUnsafeBytes { buffer in packetizer.packetize(buffer) { payload, _ in first = Array(payload) } }
        #expect(first[0] & 0x40 == (isKey ? 0 : 0x40))
        #expect(first[0] & 0x02 == (width == nil ? 0 : 0x02))
        if let width, let height {
            let size: [UInt8] = [UInt8(width >> 8), UInt8(width & 0xFF), UInt8(height >> 8), UInt8(height & 0xFF)]
            #expect(Array(first[4..<8]) == size)
        }
    }

    @Test("packetize then depacketize gives back every frame, at any MTU")
    func roundTrip() async {
        await propertyCheck(count: 200, input: Gen.int(in: 64...1_500), Gen.int(in: 0...1_000)) { mtu, seed in
            var random = SeededRandomNumberGenerator(seed: UInt64(seed))
            var packetizer = VP9Packetizer(maxPayloadSize: mtu, firstPictureID: UInt16.random(in: 0...UInt16.max, using: &random))
            var harness = DepacketizerHarness(VP9Depacketizer(track: 1))
            var sent: [[UInt8]] = []
            var sequence = UInt16.random(in: 0...UInt16.max, using: &random)
            var timestamp = UInt32.random(in: 0...UInt32.max, using: &random)
            for index in 0..<6 {
                let body = (0..<Int.random(in: 1...6_000, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                let frame = (index % 3 == 0 ? vp9KeyFrame : vp9InterFrame) + body
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
            #expect(harness.frames.map(\.isKeyframe) == [true, false, false, true, false, false])
        }
    }

    @Test("hostile payloads never crash")
    func hostile() {
        var harness = DepacketizerHarness(VP9Depacketizer(track: 1))
        var random = SeededRandomNumberGenerator(seed: 9628)
        for index in 0..<20_000 {
            let payload = (0..<Int.random(in: 0...32, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            harness.push(payload, sequence: UInt16(truncatingIfNeeded: index * (index % 7 == 0 ? 3 : 1)),
                         timestamp: UInt32(index / 3 * 3_000), marker: index % 3 == 2)
        }
        harness.flush()
        let statistics = harness.depacketizer.statistics
        #expect(statistics.packetsReceived == 20_000)
        #expect(statistics.framesEmitted == harness.frames.count)
    }

    @Test("interop: ffmpeg's libvpx-vp9 RTP stream gives back the IVF file's frames", .enabled(if: FFmpeg.isAvailable, "ffmpeg is not on PATH"))
    func ffmpegInterop() throws {
        let file = FFmpeg.temporaryFile("vp9.ivf")
        defer { try? FileManager.default.removeItem(at: file) }
        try FFmpeg.run(["-f", "lavfi", "-i", "testsrc=size=160x120:rate=30", "-t", "1", "-c:v", "libvpx-vp9", "-g", "10",
                        "-deadline", "realtime", "-f", "ivf", file.path])
        let expected = try FFmpeg.packetChecksums(of: file)
        // ffmpeg calls its VP9 packetizer experimental.
        let datagrams = try FFmpeg.captureRTP(sending: file, outputOptions: ["-strict", "experimental"])
        var depacketizer = VP9Depacketizer(track: 1)
        let frames = try FFmpeg.depacketize(datagrams, with: &depacketizer)
        #expect(expected.count == 30)
        #expect(frames.map(\.checksum) == expected)
        #expect(frames.first?.isKeyframe == true)
        #expect(frames.filter(\.isKeyframe).count == 3, "-g 10: a key frame every 10 frames")
        #expect(depacketizer.statistics.packetsLost == 0 && depacketizer.statistics.framesDiscarded == 0)
    }
}
