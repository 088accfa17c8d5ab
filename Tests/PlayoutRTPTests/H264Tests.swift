import PlayoutCore
import PlayoutRTP
import PropertyBased
import PlayoutTesting
import Testing

/// Feeds RTP packets built from payloads to a depacketizer and collects the frames.
struct DepacketizerHarness<D: Depacketizer> {
    var depacketizer: D
    var frames: [EncodedFrame] = []
    var builder = RTPPacketBuilder(payloadType: 96, ssrc: 0xABCD)

    init(_ depacketizer: D) {
        self.depacketizer = depacketizer
    }

    mutating func push(_ payload: [UInt8], sequence: UInt16, timestamp: UInt32, marker: Bool, arrival: Int64 = 0) {
        builder.sequenceNumber = SequenceNumber(rawValue: sequence)
        builder.timestamp = RTPTimestamp(rawValue: timestamp)
        builder.marker = marker
        let bytes = try! builder.serialized(payload: payload)
        bytes.withUnsafeBytes { buffer in
            let packet = try! RTPPacket(parsing: buffer)
            depacketizer.push(packet, arrival: MonotonicInstant(nanoseconds: arrival)) { frames.append($0) }
        }
    }

    mutating func flush() {
        depacketizer.flush { frames.append($0) }
    }
}

let sps: [UInt8] = [0x67, 0x42, 0xC0, 0x1E, 0xD9, 0x00, 0xA0, 0x47, 0xFE, 0xC8]
let pps: [UInt8] = [0x68, 0xCE, 0x38, 0x80]
let idrSlice: [UInt8] = [0x65, 0x88, 0x84] + Array(repeating: 0xAB, count: 3_000)
let nonIDRSlice: [UInt8] = [0x41, 0x9A, 0x02] + Array(repeating: 0xCD, count: 500)

func annexB(_ units: [[UInt8]]) -> [UInt8] {
    units.flatMap { [0, 0, 0, 1] + $0 }
}

@Suite("H.264 depacketizer and packetizer (RFC 6184)")
struct H264Tests {
    @Test("single NAL unit packets make one access unit in Annex B form")
    func singleNALUnits() {
        var harness = DepacketizerHarness(H264Depacketizer(track: 1))
        harness.push([0x09, 0xF0], sequence: 10, timestamp: 3_000, marker: false, arrival: 5)  // access unit delimiter
        harness.push(nonIDRSlice, sequence: 11, timestamp: 3_000, marker: true, arrival: 9)
        #expect(harness.frames.count == 1)
        let frame = harness.frames[0]
        #expect(frame.bytes == annexB([[0x09, 0xF0], nonIDRSlice]))
        #expect(!frame.isKeyframe)
        #expect(frame.mediaTime == MediaTime(ticks: 3_000, clockRate: 90_000))
        #expect(frame.firstArrival.nanoseconds == 5 && frame.lastArrival.nanoseconds == 9)
        #expect(frame.sequenceRange == 10...11)
        #expect(frame.codec == .h264 && frame.track == 1)
        #expect(!frame.followsLoss)
    }

    @Test("STAP-A (RFC 6184 §5.7.1 Figure 7: SPS and PPS aggregated) then FU-A (§5.8) make a key frame")
    func stapAThenFUA() {
        var harness = DepacketizerHarness(H264Depacketizer(track: 1))
        // STAP-A: indicator (NRI 3, type 24), then size + NAL for SPS and PPS.
        let stap: [UInt8] = [0x78] + [0, UInt8(sps.count)] + sps + [0, UInt8(pps.count)] + pps
        harness.push(stap, sequence: 1, timestamp: 0, marker: false)
        // FU-A fragments of the IDR slice: indicator 0x7C (NRI 3, type 28), header S/E + type 5.
        let body = Array(idrSlice[1...])
        harness.push([0x7C, 0x85] + body[0..<1_000], sequence: 2, timestamp: 0, marker: false)
        harness.push([0x7C, 0x05] + body[1_000..<2_000], sequence: 3, timestamp: 0, marker: false)
        harness.push([0x7C, 0x45] + body[2_000...], sequence: 4, timestamp: 0, marker: true)
        #expect(harness.frames.count == 1)
        #expect(harness.frames[0].isKeyframe)
        #expect(harness.frames[0].bytes == annexB([sps, pps, idrSlice]))
        #expect(harness.depacketizer.statistics.framesEmitted == 1)
    }

    @Test("a lost FU-A fragment discards the frame; the next frame is flagged as following loss")
    func lostFragment() {
        var harness = DepacketizerHarness(H264Depacketizer(track: 1))
        let body = Array(idrSlice[1...])
        harness.push([0x7C, 0x85] + body[0..<1_000], sequence: 100, timestamp: 0, marker: false)
        // sequence 101 (the middle fragment) is lost
        harness.push([0x7C, 0x45] + body[2_000...], sequence: 102, timestamp: 0, marker: true)
        harness.push(nonIDRSlice, sequence: 103, timestamp: 3_000, marker: true)
        #expect(harness.frames.count == 1)
        #expect(harness.frames[0].mediaTime.ticks == 3_000)
        #expect(harness.frames[0].followsLoss)
        let statistics = harness.depacketizer.statistics
        #expect(statistics.packetsLost == 1)
        #expect(statistics.framesDiscarded == 1)
        #expect(statistics.framesEmitted == 1)
    }

    @Test("fragments without their start, or a start without its end, never make a frame")
    func orphanFragments() {
        var harness = DepacketizerHarness(H264Depacketizer(track: 1))
        let body = Array(idrSlice[1...])
        // The stream starts mid-FU-A (as when joining late): discarded.
        harness.push([0x7C, 0x05] + body[0..<10], sequence: 1, timestamp: 0, marker: false)
        harness.push([0x7C, 0x45] + body[10..<20], sequence: 2, timestamp: 0, marker: true)
        // A start whose end never comes, then the next timestamp.
        harness.push([0x7C, 0x85] + body[0..<10], sequence: 3, timestamp: 3_000, marker: false)
        harness.push(nonIDRSlice, sequence: 4, timestamp: 6_000, marker: true)
        #expect(harness.frames.map(\.mediaTime.ticks) == [6_000])
        #expect(harness.depacketizer.statistics.framesDiscarded == 2)
    }

    @Test("a new timestamp ends a frame whose marker was lost with nothing else missing")
    func timestampEndsFrame() {
        var harness = DepacketizerHarness(H264Depacketizer(track: 1))
        harness.push(nonIDRSlice, sequence: 1, timestamp: 0, marker: false)
        harness.push(nonIDRSlice, sequence: 2, timestamp: 3_000, marker: true)
        #expect(harness.frames.map(\.mediaTime.ticks) == [0, 3_000])
    }

    @Test("duplicates and out-of-order packets are dropped and counted")
    func duplicates() {
        var harness = DepacketizerHarness(H264Depacketizer(track: 1))
        harness.push(nonIDRSlice, sequence: 5, timestamp: 0, marker: true)
        harness.push(nonIDRSlice, sequence: 5, timestamp: 0, marker: true)
        harness.push(nonIDRSlice, sequence: 4, timestamp: 0, marker: true)
        harness.push(nonIDRSlice, sequence: 6, timestamp: 3_000, marker: true)
        #expect(harness.frames.count == 2)
        #expect(harness.depacketizer.statistics.packetsOutOfOrder == 2)
    }

    @Test("sequence numbers and timestamps wrap")
    func wraps() {
        var harness = DepacketizerHarness(H264Depacketizer(track: 1))
        harness.push(nonIDRSlice, sequence: 65_535, timestamp: 4_294_965_000, marker: true)
        harness.push(nonIDRSlice, sequence: 0, timestamp: 704, marker: true)
        #expect(harness.frames.count == 2)
        #expect(harness.frames[1].mediaTime.ticks - harness.frames[0].mediaTime.ticks == 3_000)
        #expect(harness.frames[1].sequenceRange == 65_536...65_536)
        #expect(harness.depacketizer.statistics.packetsLost == 0)
    }

    @Test("SDP parameter sets go before the first key frame that lacks an in-band SPS")
    func parameterSetInjection() {
        var harness = DepacketizerHarness(H264Depacketizer(track: 1, parameterSets: [sps, pps]))
        harness.push(nonIDRSlice, sequence: 1, timestamp: 0, marker: true)  // not a key frame: untouched
        harness.push(idrSlice, sequence: 2, timestamp: 3_000, marker: true)
        harness.push(idrSlice, sequence: 3, timestamp: 6_000, marker: true)  // only the first
        #expect(harness.frames[0].bytes == annexB([nonIDRSlice]))
        #expect(harness.frames[1].bytes == annexB([sps, pps, idrSlice]))
        #expect(harness.frames[2].bytes == annexB([idrSlice]))

        var inBand = DepacketizerHarness(H264Depacketizer(track: 1, parameterSets: [sps, pps]))
        inBand.push(sps, sequence: 1, timestamp: 0, marker: false)
        inBand.push(pps, sequence: 2, timestamp: 0, marker: false)
        inBand.push(idrSlice, sequence: 3, timestamp: 0, marker: true)
        #expect(inBand.frames[0].bytes == annexB([sps, pps, idrSlice]), "in-band parameter sets are not doubled")
    }

    @Test("malformed and unsupported payloads are counted and discard their frame", arguments: [
        [UInt8](),  // empty payload
        [0x78, 0x00, 0x05, 0x67],  // STAP-A claiming 5 bytes with 1
        [0x78],  // STAP-A with no unit
        [0x7C, 0x85],  // FU-A with no data
        [0x79, 0x00, 0x01],  // STAP-B (interleaved mode)
        [0x7D, 0x85, 0x00],  // FU-B
        [0x00, 0x01],  // reserved type 0
        [0x1F, 0x01],  // reserved type 31
    ])
    func malformed(payload: [UInt8]) {
        var harness = DepacketizerHarness(H264Depacketizer(track: 1))
        harness.push(payload, sequence: 1, timestamp: 0, marker: true)
        #expect(harness.frames.isEmpty)
        #expect(harness.depacketizer.statistics.packetsMalformed == 1)
        harness.push(nonIDRSlice, sequence: 2, timestamp: 3_000, marker: true)
        #expect(harness.frames.count == 1)
        #expect(harness.frames[0].followsLoss)
    }

    @Test("packetizer: small NAL units are aggregated, large ones fragmented, the marker is on the last")
    func packetizerShape() {
        var packetizer = H264Packetizer(maxPayloadSize: 1_200)
        let frame = annexB([sps, pps, idrSlice])
        var payloads: [([UInt8], Bool)] = []
        frame.withUnsafeBytes { buffer in
            packetizer.packetize(buffer) { payloads.append((Array($0), $1)) }
        }
        #expect(payloads[0].0[0] & 0x1F == 24, "SPS + PPS in one STAP-A")
        #expect(payloads.dropFirst().allSatisfy { $0.0[0] & 0x1F == 28 }, "the IDR slice in FU-A fragments")
        #expect(payloads.allSatisfy { $0.0.count <= 1_200 })
        #expect(payloads.map(\.1) == Array(repeating: false, count: payloads.count - 1) + [true])
    }

    @Test("packetize then depacketize gives back every access unit, at any MTU")
    func roundTrip() async {
        await propertyCheck(
            count: 200,
            input: Gen.int(in: 16...1_500), Gen.int(in: 1...6), Gen.int(in: 0...1_000)
        ) { mtu, nalCount, seed in
            var random = SeededRandomNumberGenerator(seed: UInt64(seed))
            var packetizer = H264Packetizer(maxPayloadSize: mtu, aggregates: seed % 2 == 0)
            var harness = DepacketizerHarness(H264Depacketizer(track: 1))
            var sent: [[UInt8]] = []
            var sequence = UInt16.random(in: 0...UInt16.max, using: &random)
            for index in 0..<5 {
                let units: [[UInt8]] = (0..<nalCount).map { _ in
                    let type = UInt8.random(in: 1...23, using: &random)
                    let body = (0..<Int.random(in: 1...4_000, using: &random)).map { _ in UInt8.random(in: 1...255, using: &random) }
                    return [0x60 | type] + body
                }
                let frame = annexB(units)
                sent.append(frame)
                var payloads: [([UInt8], Bool)] = []
                frame.withUnsafeBytes { buffer in
                    packetizer.packetize(buffer) { payloads.append((Array($0), $1)) }
                }
                #expect(payloads.allSatisfy { $0.0.count <= mtu })
                for (payload, isLast) in payloads {
                    harness.push(payload, sequence: sequence, timestamp: UInt32(index * 3_000), marker: isLast)
                    sequence &+= 1
                }
            }
            #expect(harness.frames.map(\.bytes) == sent)
        }
    }

    @Test("recycled frame storage is reused for later frames, without changing their bytes")
    func recycling() {
        var harness = DepacketizerHarness(H264Depacketizer(track: 1))
        var addresses: Set<UnsafeRawPointer> = []
        for index in 0..<20 {
            harness.push(nonIDRSlice, sequence: UInt16(index), timestamp: UInt32(index * 3_000), marker: true)
            let frame = harness.frames.removeLast()
            #expect(frame.bytes == annexB([nonIDRSlice]))
            frame.bytes.withUnsafeBytes { _ = addresses.insert($0.baseAddress!) }
            harness.depacketizer.recycle(frame.bytes)
        }
        #expect(addresses.count <= 2, "storage cycles through the pool instead of being allocated per frame")
    }

    @Test("hostile payloads never crash")
    func hostile() {
        var harness = DepacketizerHarness(H264Depacketizer(track: 1, parameterSets: [sps]))
        var random = SeededRandomNumberGenerator(seed: 264)
        for index in 0..<20_000 {
            var payload = (0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            if !payload.isEmpty, index % 2 == 0 { payload[0] = [0x78, 0x7C, 0x65][index % 3] }
            harness.push(payload, sequence: UInt16(truncatingIfNeeded: index * (index % 7 == 0 ? 3 : 1)),
                         timestamp: UInt32(index / 4 * 3_000), marker: index % 4 == 3)
        }
        harness.flush()
        let statistics = harness.depacketizer.statistics
        #expect(statistics.packetsReceived == 20_000)
        #expect(statistics.framesEmitted == harness.frames.count)
    }
}
