import Foundation
import PlayoutCore
import PlayoutRTP
import PropertyBased
import PlayoutTesting
import Testing

/// H.265 NAL units: 2-byte headers F(1) Type(6) LayerId(6) TID+1(3) (ITU-T H.265 §7.3.1.2).
let h265VPS: [UInt8] = [0x40, 0x01, 0x0C, 0x01, 0xFF, 0xFF, 0x04, 0x08]
let h265SPS: [UInt8] = [0x42, 0x01, 0x01, 0x04, 0x08, 0x00, 0x00, 0x03]
let h265PPS: [UInt8] = [0x44, 0x01, 0xC1, 0x73, 0xD1, 0x89]
/// IDR_W_RADL (type 19): a key frame slice.
let h265IDR: [UInt8] = [0x26, 0x01, 0xAF, 0x05] + Array(repeating: 0xAB, count: 3_000)
/// TRAIL_R (type 1): an inter slice.
let h265Trail: [UInt8] = [0x02, 0x01, 0xD0, 0x29] + Array(repeating: 0xCD, count: 400)

@Suite("H.265 depacketizer and packetizer (RFC 7798)")
struct H265Tests {
    @Test("single NAL unit packets (§4.4.1) make one access unit in Annex B form")
    func singleNALUnits() {
        var harness = DepacketizerHarness(H265Depacketizer(track: 1))
        harness.push([0x46, 0x01, 0x10], sequence: 10, timestamp: 3_000, marker: false, arrival: 5)  // access unit delimiter
        harness.push(h265Trail, sequence: 11, timestamp: 3_000, marker: true, arrival: 9)
        #expect(harness.frames.count == 1)
        let frame = harness.frames[0]
        #expect(frame.bytes == annexB([[0x46, 0x01, 0x10], h265Trail]))
        #expect(!frame.isKeyframe && frame.codec == .h265)
        #expect(frame.sequenceRange == 10...11)
        #expect(frame.firstArrival.nanoseconds == 5 && frame.lastArrival.nanoseconds == 9)
    }

    @Test("an AP (§4.4.2, Figure 7: payload header type 48, then size + NAL unit) then FUs (§4.4.3) make a key frame")
    func apThenFU() {
        var harness = DepacketizerHarness(H265Depacketizer(track: 1))
        // AP: payload header 60 01 (type 48, LayerId 0, TID 1), then VPS, SPS, PPS each after a 16-bit size —
        // the layout ffmpeg sends: 60 01 00 17 40 01 0c 01 …
        let ap: [UInt8] = [UInt8](hex: "60 01") + [0, UInt8(h265VPS.count)] + h265VPS + [0, UInt8(h265SPS.count)] + h265SPS
            + [0, UInt8(h265PPS.count)] + h265PPS
        harness.push(ap, sequence: 1, timestamp: 0, marker: false)
        // FU: payload header 62 01 (type 49), FU header S/E + type 19, then the NAL unit's payload.
        let body = Array(h265IDR[2...])
        harness.push([UInt8](hex: "62 01 93") + body[0..<1_000], sequence: 2, timestamp: 0, marker: false)
        harness.push([UInt8](hex: "62 01 13") + body[1_000..<2_000], sequence: 3, timestamp: 0, marker: false)
        harness.push([UInt8](hex: "62 01 53") + body[2_000...], sequence: 4, timestamp: 0, marker: true)
        #expect(harness.frames.count == 1)
        #expect(harness.frames[0].isKeyframe)
        #expect(harness.frames[0].bytes == annexB([h265VPS, h265SPS, h265PPS, h265IDR]))
    }

    @Test("IRAP NAL unit types 16…23 are key frames, others not", arguments: Array(UInt8(0)...UInt8(40)))
    func keyFrameTypes(type: UInt8) {
        var harness = DepacketizerHarness(H265Depacketizer(track: 1))
        harness.push([type << 1, 0x01, 0x80, 0x00], sequence: 1, timestamp: 0, marker: true)
        #expect(harness.frames.first?.isKeyframe == (16...23).contains(type))
    }

    @Test("a lost packet discards its frame; the next frame follows loss", arguments: [0, 1, 2])
    func lostPacket(lost: Int) {
        var harness = DepacketizerHarness(H265Depacketizer(track: 1))
        harness.push(h265Trail, sequence: 99, timestamp: 0, marker: true)
        let body = Array(h265IDR[2...])
        let first: [UInt8] = [UInt8](hex: "62 01 93") + body[0..<1_000]
        let middle: [UInt8] = [UInt8](hex: "62 01 13") + body[1_000..<2_000]
        let last: [UInt8] = [UInt8](hex: "62 01 53") + body[2_000...]
        let parts = [first, middle, last]
        for (index, part) in parts.enumerated() where index != lost {
            harness.push(part, sequence: UInt16(100 + index), timestamp: 3_000, marker: index == 2)
        }
        harness.push(h265Trail, sequence: 103, timestamp: 6_000, marker: true)
        #expect(harness.frames.map(\.mediaTime.ticks) == [0, 6_000])
        #expect(harness.frames.map(\.followsLoss) == [false, true])
        let statistics = harness.depacketizer.statistics
        #expect(statistics.packetsLost == 1 && statistics.framesDiscarded == 1)
    }

    @Test("duplicates and out-of-order packets are dropped; sequence numbers and timestamps wrap")
    func duplicatesAndWrap() {
        var harness = DepacketizerHarness(H265Depacketizer(track: 1))
        harness.push(h265Trail, sequence: 65_535, timestamp: UInt32.max - 999, marker: true)
        harness.push(h265Trail, sequence: 65_535, timestamp: UInt32.max - 999, marker: true)
        harness.push(h265Trail, sequence: 0, timestamp: 2_000, marker: true)
        harness.push(h265Trail, sequence: 65_000, timestamp: 2_000, marker: true)
        #expect(harness.frames.count == 2)
        #expect(harness.frames[1].mediaTime.ticks - harness.frames[0].mediaTime.ticks == 3_000)
        #expect(harness.frames[1].sequenceRange == 65_536...65_536)
        #expect(harness.depacketizer.statistics.packetsOutOfOrder == 2)
    }

    @Test("SDP parameter sets go before the first key frame that lacks an in-band VPS/SPS")
    func parameterSetInjection() {
        var harness = DepacketizerHarness(H265Depacketizer(track: 1, parameterSets: [h265VPS, h265SPS, h265PPS]))
        harness.push(h265Trail, sequence: 1, timestamp: 0, marker: true)
        harness.push(h265IDR, sequence: 2, timestamp: 3_000, marker: true)
        harness.push(h265IDR, sequence: 3, timestamp: 6_000, marker: true)
        #expect(harness.frames.map(\.bytes) == [annexB([h265Trail]), annexB([h265VPS, h265SPS, h265PPS, h265IDR]), annexB([h265IDR])])

        var inBand = DepacketizerHarness(H265Depacketizer(track: 1, parameterSets: [h265VPS, h265SPS, h265PPS]))
        for (index, unit) in [h265VPS, h265SPS, h265PPS, h265IDR].enumerated() {
            inBand.push(unit, sequence: UInt16(index), timestamp: 0, marker: index == 3)
        }
        #expect(inBand.frames[0].bytes == annexB([h265VPS, h265SPS, h265PPS, h265IDR]), "in-band parameter sets are not doubled")
    }

    @Test("malformed and unsupported payloads are counted and discard their frame", arguments: [
        "",  // empty
        "02",  // half a payload header
        "60 01 00 09 40 01",  // AP claiming 9 bytes with 2
        "60 01",  // AP with no unit
        "60 01 00 01 40",  // AP unit shorter than a NAL header
        "62 01 93",  // FU with no data
        "64 01 00 00",  // PACI (type 50)
        "7E 01 00 00",  // type 63
    ])
    func malformed(text: String) {
        var harness = DepacketizerHarness(H265Depacketizer(track: 1))
        harness.push([UInt8](hex: text), sequence: 1, timestamp: 0, marker: true)
        #expect(harness.frames.isEmpty)
        #expect(harness.depacketizer.statistics.packetsMalformed == 1)
        harness.push(h265Trail, sequence: 2, timestamp: 3_000, marker: true)
        #expect(harness.frames.count == 1 && harness.frames[0].followsLoss)
    }

    @Test("fragments without their start, or a start without its end, never make a frame")
    func orphanFragments() {
        var harness = DepacketizerHarness(H265Depacketizer(track: 1))
        let body = Array(h265IDR[2...])
        harness.push([UInt8](hex: "62 01 13") + body[0..<10], sequence: 1, timestamp: 0, marker: false)
        harness.push([UInt8](hex: "62 01 53") + body[10..<20], sequence: 2, timestamp: 0, marker: true)
        harness.push([UInt8](hex: "62 01 93") + body[0..<10], sequence: 3, timestamp: 3_000, marker: false)
        harness.push(h265Trail, sequence: 4, timestamp: 6_000, marker: true)
        #expect(harness.frames.map(\.mediaTime.ticks) == [6_000])
        #expect(harness.depacketizer.statistics.framesDiscarded == 2)
    }

    @Test("packetizer: parameter sets in one AP, the IDR slice in FUs, the marker on the last")
    func packetizerShape() {
        var packetizer = H265Packetizer(maxPayloadSize: 1_200)
        var payloads: [([UInt8], Bool)] = []
        annexB([h265VPS, h265SPS, h265PPS, h265IDR]).withUnsafeBytes { buffer in
            packetizer.packetize(buffer) { payloads.append((Array($0), $1)) }
        }
        #expect(Array(payloads[0].0[0..<4]) == [0x60, 0x01, 0x00, UInt8(h265VPS.count)], "as ffmpeg sends it")
        #expect(payloads.dropFirst().allSatisfy { $0.0[0] >> 1 == 49 && $0.0[2] & 0x3F == 19 })
        #expect(payloads.allSatisfy { $0.0.count <= 1_200 })
        #expect(payloads.map(\.1) == Array(repeating: false, count: payloads.count - 1) + [true])
    }

    @Test("packetize then depacketize gives back every access unit, at any MTU")
    func roundTrip() async {
        await propertyCheck(count: 200, input: Gen.int(in: 64...1_500), Gen.int(in: 1...6), Gen.int(in: 0...1_000)) { mtu, nalCount, seed in
            var random = SeededRandomNumberGenerator(seed: UInt64(seed))
            var packetizer = H265Packetizer(maxPayloadSize: mtu, aggregates: seed % 2 == 0)
            var harness = DepacketizerHarness(H265Depacketizer(track: 1))
            var sent: [[UInt8]] = []
            var sequence = UInt16.random(in: 0...UInt16.max, using: &random)
            for index in 0..<5 {
                let units: [[UInt8]] = (0..<nalCount).map { _ in
                    let type = UInt8.random(in: 0...40, using: &random)
                    let header1 = UInt8.random(in: 1...255, using: &random)
                    let body = (0..<Int.random(in: 0...4_000, using: &random)).map { _ in UInt8.random(in: 1...255, using: &random) }
                    return [type << 1 | UInt8.random(in: 0...1, using: &random), header1] + body
                }
                let frame = annexB(units)
                sent.append(frame)
                frame.withUnsafeBytes { buffer in
                    packetizer.packetize(buffer) { payload, isLast in
                        #expect(payload.count <= mtu)
                        harness.push(Array(payload), sequence: sequence, timestamp: UInt32(index * 3_000), marker: isLast)
                        sequence &+= 1
                    }
                }
            }
            #expect(harness.frames.map(\.bytes) == sent)
        }
    }

    @Test("hostile payloads never crash")
    func hostile() {
        var harness = DepacketizerHarness(H265Depacketizer(track: 1, parameterSets: [h265VPS]))
        var random = SeededRandomNumberGenerator(seed: 7798)
        for index in 0..<20_000 {
            var payload = (0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            if !payload.isEmpty, index % 2 == 0 { payload[0] = [0x60, 0x62, 0x26][index % 3] }
            harness.push(payload, sequence: UInt16(truncatingIfNeeded: index * (index % 7 == 0 ? 3 : 1)),
                         timestamp: UInt32(index / 4 * 3_000), marker: index % 4 == 3)
        }
        harness.flush()
        let statistics = harness.depacketizer.statistics
        #expect(statistics.packetsReceived == 20_000)
        #expect(statistics.framesEmitted == harness.frames.count)
    }

    @Test("interop: ffmpeg's libx265 RTP stream gives back the file's access units",
          .enabled(if: FFmpeg.hasEncoder("libx265"), "ffmpeg with libx265 is not on PATH"))
    func ffmpegInterop() throws {
        // MPEG-TS keeps Annex B with 4-byte start codes, in-band parameter sets and timestamps.
        let file = FFmpeg.temporaryFile("h265.ts")
        defer { try? FileManager.default.removeItem(at: file) }
        try FFmpeg.run(["-f", "lavfi", "-i", "testsrc=size=160x120:rate=30", "-t", "1", "-c:v", "libx265",
                        "-x265-params", "log-level=none:keyint=10", "-f", "mpegts", file.path])
        let expected = try FFmpeg.packets(of: file, rawFormat: "hevc")
        let datagrams = try FFmpeg.captureRTP(sending: file)
        var depacketizer = H265Depacketizer(track: 1)
        let frames = try FFmpeg.depacketize(datagrams, with: &depacketizer)
        #expect(expected.count == 30)
        // The file mixes 3- and 4-byte start codes; ours are all 4 bytes: compare NAL units.
        #expect(frames.map { nalUnits($0.bytes) } == expected.map(nalUnits))
        #expect(frames.allSatisfy { $0.bytes.starts(with: [0, 0, 0, 1]) })
        #expect(frames.first?.isKeyframe == true)
        #expect(frames.filter(\.isKeyframe).count == 3, "keyint=10")
        #expect(depacketizer.statistics.packetsLost == 0 && depacketizer.statistics.framesDiscarded == 0)
    }
}
