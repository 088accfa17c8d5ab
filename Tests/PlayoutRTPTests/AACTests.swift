import Foundation
import PlayoutCore
import PlayoutRTP
import PropertyBased
import PlayoutTesting
import Testing

/// Builds an AAC-hbr payload (RFC 3640 §3.3.6: sizelength 13, indexlength 3, indexdeltalength 3):
/// AU-headers-length in bits, 16-bit AU headers (size << 3 | index 0), then the units.
func aacHBRPayload(_ units: [[UInt8]], sizes: [Int]? = nil) -> [UInt8] {
    let sizes = sizes ?? units.map(\.count)
    var payload: [UInt8] = [UInt8(sizes.count * 16 >> 8), UInt8(sizes.count * 16 & 0xFF)]
    for size in sizes { payload += [UInt8(size >> 5), UInt8(size << 3 & 0xFF)] }
    return payload + units.flatMap { $0 }
}

let aacUnitA: [UInt8] = [0x21, 0x10, 0x05] + Array(repeating: 0x40, count: 200)
let aacUnitB: [UInt8] = [0x21, 0x1B, 0x94] + Array(repeating: 0x41, count: 300)
let aacUnitC: [UInt8] = [0x21, 0x1A, 0x54] + Array(repeating: 0x42, count: 3_000)

@Suite("MPEG4-GENERIC AAC-hbr depacketizer and packetizer (RFC 3640)")
struct AACTests {
    @Test("ffmpeg's layout (RFC 3640 §3.2.1, §3.3.6): one AU header section, several AUs make several frames 1,024 ticks apart")
    func severalAccessUnits() {
        var harness = DepacketizerHarness(AACDepacketizer(track: 2, clockRate: 48_000))
        // 00 20: 32 bits of AU headers; 06 58: AU-size 203, index 0; 09 78: AU-size 303, delta 0.
        let payload = [UInt8](hex: "00 20 06 58 09 78") + aacUnitA + aacUnitB
        #expect(payload == aacHBRPayload([aacUnitA, aacUnitB]))
        harness.push(payload, sequence: 7, timestamp: 48_000, marker: true, arrival: 3)
        #expect(harness.frames.map(\.bytes) == [aacUnitA, aacUnitB])
        #expect(harness.frames.map(\.mediaTime) == [MediaTime(ticks: 48_000, clockRate: 48_000), MediaTime(ticks: 49_024, clockRate: 48_000)])
        #expect(harness.frames.allSatisfy { $0.isKeyframe && $0.codec == .aac && $0.sequenceRange == 7...7 && $0.track == 2 })
        harness.push(aacHBRPayload([aacUnitC]), sequence: 8, timestamp: 50_048, marker: true)
        #expect(harness.frames.count == 3 && harness.frames[2].bytes == aacUnitC && !harness.frames[2].followsLoss)
        #expect(harness.depacketizer.statistics.framesEmitted == 3)
    }

    @Test("a fragmented AU (§3.2.3.2: each fragment repeats the AU header with the whole size) is reassembled")
    func fragmented() {
        var harness = DepacketizerHarness(AACDepacketizer(track: 1, clockRate: 44_100))
        let chunks = [aacUnitC[0..<1_000], aacUnitC[1_000..<2_000], aacUnitC[2_000...]]
        for (index, chunk) in chunks.enumerated() {
            harness.push(aacHBRPayload([Array(chunk)], sizes: [aacUnitC.count]), sequence: UInt16(index), timestamp: 0, marker: index == 2)
        }
        #expect(harness.frames.map(\.bytes) == [aacUnitC])
        #expect(harness.frames[0].sequenceRange == 0...2)
    }

    @Test("a lost fragment discards the AU; the next frame follows loss", arguments: [0, 1, 2])
    func lostFragment(lost: Int) {
        var harness = DepacketizerHarness(AACDepacketizer(track: 1, clockRate: 48_000))
        harness.push(aacHBRPayload([aacUnitA]), sequence: 99, timestamp: 0, marker: true)
        let chunks = [aacUnitC[0..<1_000], aacUnitC[1_000..<2_000], aacUnitC[2_000...]]
        for (index, chunk) in chunks.enumerated() where index != lost {
            harness.push(aacHBRPayload([Array(chunk)], sizes: [aacUnitC.count]), sequence: UInt16(100 + index), timestamp: 1_024, marker: index == 2)
        }
        harness.push(aacHBRPayload([aacUnitB]), sequence: 103, timestamp: 2_048, marker: true)
        #expect(harness.frames.map(\.mediaTime.ticks) == [0, 2_048])
        #expect(harness.frames.map(\.followsLoss) == [false, true])
        let statistics = harness.depacketizer.statistics
        #expect(statistics.packetsLost == 1 && statistics.framesDiscarded == 1)
    }

    @Test("duplicates and out-of-order packets are dropped; sequence numbers and timestamps wrap")
    func duplicatesAndWrap() {
        var harness = DepacketizerHarness(AACDepacketizer(track: 1, clockRate: 48_000))
        harness.push(aacHBRPayload([aacUnitA, aacUnitB]), sequence: 65_535, timestamp: UInt32.max - 1_023, marker: true)
        harness.push(aacHBRPayload([aacUnitA, aacUnitB]), sequence: 65_535, timestamp: UInt32.max - 1_023, marker: true)
        harness.push(aacHBRPayload([aacUnitA]), sequence: 0, timestamp: 1_024, marker: true)
        harness.push(aacHBRPayload([aacUnitA]), sequence: 65_000, timestamp: 1_024, marker: true)
        #expect(harness.frames.map { $0.mediaTime.ticks - harness.frames[0].mediaTime.ticks } == [0, 1_024, 2_048])
        #expect(harness.frames[2].sequenceRange == 65_536...65_536)
        #expect(harness.depacketizer.statistics.packetsOutOfOrder == 2)
        #expect(harness.depacketizer.statistics.packetsLost == 0)
    }

    @Test("malformed AU header sections are counted and discard the packet", arguments: [
        "",  // empty
        "00",  // half an AU-headers-length
        "00 00",  // no AU headers
        "00 10 19",  // AU header cut short
        "00 0C 19 58",  // 12 bits: not a whole AU header
        "00 10 19 58 01 02",  // AU-size 203 with 2 bytes, marker set, no fragment to continue
        "00 20 00 18 00 18 01 02 03 04",  // sizes 3 + 3 with 4 bytes of data
        "00 10 00 08 01 02",  // sizes 1 with 2 bytes of data
        "00 10 00 00",  // AU-size 0
        "00 10 00 0A 01",  // AU-Index 2: interleaving
        "00 20 00 08 00 09 01 02",  // AU-Index-delta 1: interleaving
    ])
    func malformed(text: String) {
        var harness = DepacketizerHarness(AACDepacketizer(track: 1, clockRate: 48_000))
        harness.push([UInt8](hex: text), sequence: 1, timestamp: 0, marker: true)
        #expect(harness.frames.isEmpty)
        #expect(harness.depacketizer.statistics.packetsMalformed + harness.depacketizer.statistics.framesDiscarded >= 1)
        harness.push(aacHBRPayload([aacUnitA]), sequence: 2, timestamp: 1_024, marker: true)
        #expect(harness.frames.count == 1 && harness.frames[0].followsLoss)
    }

    @Test("other field widths: sizelength 6, indexlength 2, indexdeltalength 2 (RFC 3640 §3.3.5 low bit-rate field sizes)")
    func otherWidths() {
        var harness = DepacketizerHarness(AACDepacketizer(track: 1, clockRate: 8_000, sizeLength: 6, indexLength: 2, indexDeltaLength: 2))
        // Two 8-bit headers (sizes 3 and 2): 00 10, 0C 08, then the units.
        harness.push([UInt8](hex: "00 10 0C 08 AA BB CC DD EE"), sequence: 1, timestamp: 0, marker: true)
        #expect(harness.frames.map(\.bytes) == [[0xAA, 0xBB, 0xCC], [0xDD, 0xEE]])
        var packetizer = AACPacketizer(sizeLength: 6, indexLength: 2, indexDeltaLength: 2)
        var payloads: [[UInt8]] = []
        [[UInt8]([0xAA, 0xBB, 0xCC]), [0xDD, 0xEE]].withUnsafeBufferPointers { units in
            try! packetizer.packetize(accessUnits: units) { payload, _, _ in payloads.append(Array(payload)) }
        }
        #expect(payloads == [[UInt8](hex: "00 10 0C 08 AA BB CC DD EE")])
    }

    @Test("packetizer: several AUs per packet with the marker set, large AUs fragmented, oversized AUs rejected")
    func packetizerShape() throws {
        var packetizer = AACPacketizer(maxPayloadSize: 1_200)
        var payloads: [([UInt8], Int, Bool)] = []
        try [aacUnitA, aacUnitB, aacUnitC, aacUnitA].withUnsafeBufferPointers { units in
            try packetizer.packetize(accessUnits: units) { payloads.append((Array($0), $1, $2)) }
        }
        #expect(payloads[0].0 == aacHBRPayload([aacUnitA, aacUnitB]))
        #expect(payloads.map(\.1) == [0, 2, 2, 2, 3], "each payload's first AU")
        #expect(payloads.map(\.2) == [true, false, false, true, true])
        #expect(payloads.allSatisfy { $0.0.count <= 1_200 })
        let huge = [UInt8](repeating: 0, count: 8_192)
        #expect(throws: PacketizerError.frameSizeNotRepresentable(size: 8_192, maximum: 8_191)) {
            try huge.withUnsafeBytes { try packetizer.packetize($0) { _, _ in Issue.record("nothing is emitted") } }
        }
    }

    @Test("packetize then depacketize gives back every AU with its timestamp, at any MTU")
    func roundTrip() async {
        await propertyCheck(count: 200, input: Gen.int(in: 64...1_500), Gen.int(in: 1...12), Gen.int(in: 0...1_000)) { mtu, count, seed in
            var random = SeededRandomNumberGenerator(seed: UInt64(seed))
            var packetizer = AACPacketizer(maxPayloadSize: mtu)
            var harness = DepacketizerHarness(AACDepacketizer(track: 1, clockRate: 48_000))
            var sequence = UInt16.random(in: 0...UInt16.max, using: &random)
            let base = UInt32.random(in: 0...UInt32.max, using: &random)
            let units = (0..<count).map { _ in
                (0..<Int.random(in: 1...(seed % 3 == 0 ? 3_000 : 400), using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            }
            try units.withUnsafeBufferPointers { buffers in
                try packetizer.packetize(accessUnits: buffers) { payload, first, marker in
                    #expect(payload.count <= mtu)
                    harness.push(Array(payload), sequence: sequence, timestamp: base &+ UInt32(first * 1_024), marker: marker)
                    sequence &+= 1
                }
            }
            #expect(harness.frames.map(\.bytes) == units)
            // Typed apart from #expect: inferred inside it, this line took 1.5 s to type-check.
            let first: Int64 = harness.frames[0].mediaTime.ticks
            let offsets: [Int64] = harness.frames.map { $0.mediaTime.ticks - first }
            let expected: [Int64] = (0..<count).map { Int64($0) * 1_024 }
            #expect(offsets == expected)
        }
    }

    @Test("hostile payloads never crash")
    func hostile() {
        var harness = DepacketizerHarness(AACDepacketizer(track: 1, clockRate: 48_000))
        var random = SeededRandomNumberGenerator(seed: 3640)
        for index in 0..<20_000 {
            var payload = (0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            if payload.count >= 2, index % 2 == 0 { payload[0] = 0; payload[1] = [0x10, 0x20, 0x30][index % 3] }
            harness.push(payload, sequence: UInt16(truncatingIfNeeded: index * (index % 7 == 0 ? 3 : 1)),
                         timestamp: UInt32(truncatingIfNeeded: index / 2 * 1_024), marker: index % 2 == 1)
        }
        harness.flush()
        let statistics = harness.depacketizer.statistics
        #expect(statistics.packetsReceived == 20_000)
        #expect(statistics.framesEmitted == harness.frames.count)
    }

    @Test("interop: ffmpeg's AAC-hbr RTP stream gives back the file's access units",
          .enabled(if: FFmpeg.isAvailable, "ffmpeg is not on PATH"),
          arguments: ["", "?pkt_size=200"])  // default packets (several AUs each), and small ones (AUs fragmented)
    func ffmpegInterop(urlQuery: String) throws {
        let file = FFmpeg.temporaryFile("aac.m4a")
        defer { try? FileManager.default.removeItem(at: file) }
        try FFmpeg.run(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "1", "-c:a", "aac", "-f", "mp4", file.path])
        let expected = try FFmpeg.packetChecksums(of: file)
        let datagrams = try FFmpeg.captureRTP(sending: file, urlQuery: urlQuery)
        var depacketizer = AACDepacketizer(track: 1, clockRate: 48_000)
        let frames = try FFmpeg.depacketize(datagrams, with: &depacketizer)
        // ffmpeg's AAC packetizer never sends the AUs still gathered for a packet when the input
        // ends (its trailer does not flush them): a tail of up to one packet's worth is missing.
        #expect(expected.count == 48)
        #expect(frames.count >= expected.count - 8 && frames.count <= expected.count)
        #expect(frames.map(\.checksum) == Array(expected.prefix(frames.count)))
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $1.mediaTime.ticks - $0.mediaTime.ticks == 1_024 })
        #expect(depacketizer.statistics.packetsLost == 0 && depacketizer.statistics.framesDiscarded == 0)
        if !urlQuery.isEmpty {
            #expect(datagrams.count > frames.count, "small packets: some AUs fragmented")
        }
    }
}

extension Array where Element == [UInt8] {
    /// Calls `body` with a buffer pointer for each element, valid during the call.
    func withUnsafeBufferPointers<R>(_ body: ([UnsafeRawBufferPointer]) throws -> R) rethrows -> R {
        func recurse(_ index: Int, _ buffers: [UnsafeRawBufferPointer]) throws -> R {
            guard index < count else { return try body(buffers) }
            return try self[index].withUnsafeBytes { try recurse(index + 1, buffers + [$0]) }
        }
        return try recurse(0, [])
    }
}
