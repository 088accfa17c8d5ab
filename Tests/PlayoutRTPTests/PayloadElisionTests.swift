import PlayoutCore
import PlayoutRTP
import PlayoutTesting
import Testing

/// Issue 30: a viewer that neither decodes nor writes its frames only times them, and its
/// depacketizer counts each payload instead of copying it (3 % of a 500-viewer swarm's CPU, on
/// the worker that renders). Everything but the bytes must stay exactly as when they are copied.
@Suite("Payload elision: frames that carry their size, not their bytes")
struct PayloadElisionTests {
    /// Pushes the same packets through a depacketizer that copies and one that elides, and
    /// checks that they emit the same frames but for the bytes, whose count is the copied size.
    static func compare<D: Depacketizer>(_ make: () -> D, packets: [(payload: [UInt8], sequence: UInt16, timestamp: UInt32, marker: Bool)]) {
        var copying = DepacketizerHarness(make())
        var eliding = DepacketizerHarness(make())
        eliding.depacketizer.elidePayloads()
        for (index, packet) in packets.enumerated() {
            copying.push(packet.payload, sequence: packet.sequence, timestamp: packet.timestamp, marker: packet.marker, arrival: Int64(index))
            eliding.push(packet.payload, sequence: packet.sequence, timestamp: packet.timestamp, marker: packet.marker, arrival: Int64(index))
        }
        copying.flush()
        eliding.flush()
        #expect(eliding.depacketizer.statistics == copying.depacketizer.statistics)
        #expect(eliding.frames.count == copying.frames.count)
        #expect(!copying.frames.isEmpty)
        for (kept, elided) in zip(copying.frames, eliding.frames) {
            #expect(elided.bytes.isEmpty && kept.elidedByteCount == 0)
            #expect(elided.byteCount == kept.bytes.count && elided.byteCount > 0)
            #expect(elided.mediaTime == kept.mediaTime && elided.isKeyframe == kept.isKeyframe && elided.followsLoss == kept.followsLoss)
            #expect(elided.sequenceRange == kept.sequenceRange && elided.firstArrival == kept.firstArrival && elided.lastArrival == kept.lastArrival)
        }
    }

    /// Random payloads, half of them starting like single units, aggregations or fragments, with
    /// skipped sequence numbers (loss) and markers every fourth packet.
    static func hostile(seed: UInt64, firstBytes: [UInt8]) -> [(payload: [UInt8], sequence: UInt16, timestamp: UInt32, marker: Bool)] {
        var random = SeededRandomNumberGenerator(seed: seed)
        return (0..<20_000).map { index in
            var payload = (0..<Int.random(in: 0...96, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            if !payload.isEmpty, index % 2 == 0 { payload[0] = firstBytes[index % firstBytes.count] }
            return (payload, UInt16(truncatingIfNeeded: index * (index % 7 == 0 ? 3 : 1)), UInt32(index / 4 * 3_000), index % 4 == 3)
        }
    }

    /// Access units packetized at `mtu`: every unit kind the packetizer makes (single, aggregated,
    /// fragmented), a key frame first.
    static func packetized(_ units: [[[UInt8]]], packetize: (UnsafeRawBufferPointer, (UnsafeRawBufferPointer, Bool) -> Void) -> Void)
        -> [(payload: [UInt8], sequence: UInt16, timestamp: UInt32, marker: Bool)]
    {
        var packets: [(payload: [UInt8], sequence: UInt16, timestamp: UInt32, marker: Bool)] = []
        for (index, frame) in units.enumerated() {
            annexB(frame).withUnsafeBytes { buffer in
                packetize(buffer) { payload, isLast in
                    packets.append((Array(payload), UInt16(truncatingIfNeeded: 65_530 + packets.count), UInt32(index * 3_000), isLast))
                }
            }
        }
        return packets
    }

    @Test("H.264: the same frames, statistics and discards, hostile or packetized; the SDP's parameter sets counted")
    func h264() {
        Self.compare({ H264Depacketizer(track: 1, parameterSets: [sps, pps]) }, packets: Self.hostile(seed: 264, firstBytes: [0x78, 0x7C, 0x65]))
        let frames = [[idrSlice], [nonIDRSlice], [sps, pps, idrSlice], [nonIDRSlice, nonIDRSlice]]
        for mtu in [100, 1_200, 4_000] {
            for aggregates in [false, true] {
                var packetizer = H264Packetizer(maxPayloadSize: mtu, aggregates: aggregates)
                Self.compare({ H264Depacketizer(track: 1, parameterSets: [sps, pps]) }, packets: Self.packetized(frames) { packetizer.packetize($0, emit: $1) })
            }
        }
    }

    @Test("H.265: the same frames, statistics and discards, hostile or packetized")
    func h265() {
        Self.compare({ H265Depacketizer(track: 1, parameterSets: [h265VPS]) }, packets: Self.hostile(seed: 7798, firstBytes: [0x60, 0x62, 0x26]))
        let idr = h265IDR
        let trailing = h265Trail
        for mtu in [100, 1_200] {
            var packetizer = H265Packetizer(maxPayloadSize: mtu, aggregates: true)
            Self.compare({ H265Depacketizer(track: 1, parameterSets: [h265VPS]) }, packets: Self.packetized([[idr], [trailing], [h265VPS, idr]]) { packetizer.packetize($0, emit: $1) })
        }
    }

    @Test("formats whose frames are small go on copying when told to elide")
    func othersCopy() {
        var harness = DepacketizerHarness(OpusDepacketizer(track: 2, clockRate: 48_000))
        harness.depacketizer.elidePayloads()
        harness.push([0xFC, 1, 2, 3], sequence: 1, timestamp: 960, marker: false)
        #expect(harness.frames.map(\.bytes) == [[0xFC, 1, 2, 3]] && harness.frames.first?.elidedByteCount == 0)
    }
}
