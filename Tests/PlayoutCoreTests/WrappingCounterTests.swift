import PlayoutCore
import PropertyBased
import PlayoutTesting
import Testing

@Suite("Wrap-aware sequence numbers and timestamps")
struct WrappingCounterTests {
    @Test("serial-number order across the wrap (RFC 1982)")
    func serialOrder() {
        #expect(SequenceNumber(65535).precedes(0))
        #expect(!SequenceNumber(0).precedes(65535))
        #expect(SequenceNumber(65535).distance(to: 1) == 2)
        #expect(SequenceNumber(1).distance(to: 65535) == -2)
        #expect(SequenceNumber(0).distance(to: 32767) == 32767)
        #expect(SequenceNumber(0).distance(to: 32768) == -32768, "exactly half the range counts as behind")
        #expect(RTPTimestamp(4_294_967_295).distance(to: 89_999) == 90_000)
        #expect(RTPTimestamp(0).advanced(by: -1) == RTPTimestamp(4_294_967_295))
        #expect(SequenceNumber(65535).advanced(by: 2).rawValue == 1)
        #expect(SequenceNumber(7).description == "7")
    }

    @Test("unwrapping extends across the wrap and places late packets before it")
    func unwrapExample() {
        var unwrapper = SequenceNumberUnwrapper()
        #expect(unwrapper.unwrap(65534) == 65534)
        #expect(unwrapper.unwrap(65535) == 65535)
        #expect(unwrapper.unwrap(0) == 65536)
        #expect(unwrapper.unwrap(1) == 65537)
        #expect(unwrapper.unwrap(65533) == 65533, "late, from before the wrap")
        #expect(unwrapper.highest == 65537)
        #expect(unwrapper.peek(2) == 65538)
        #expect(unwrapper.highest == 65537, "peek records nothing")
        unwrapper.reset()
        #expect(unwrapper.unwrap(10) == 10)
    }

    @Test("a packet reordered before the first unwraps below it")
    func unwrapBeforeFirst() {
        var unwrapper = SequenceNumberUnwrapper()
        #expect(unwrapper.unwrap(0) == 0)
        #expect(unwrapper.unwrap(65535) == -1)
        var timestamps = RTPTimestampUnwrapper()
        #expect(timestamps.unwrap(RTPTimestamp(rawValue: 4_294_967_295)) == 4_294_967_295)
        #expect(timestamps.unwrap(RTPTimestamp(rawValue: 2_999)) == 4_294_967_296 + 2_999)
    }

    /// Sends `count` consecutive values starting at `start`, shuffles them within windows of
    /// `window` (bounded reordering), and checks that every value unwraps to its true position.
    func checkUnwrapping<Counter: WrappingCounter>(
        _ type: Counter.Type, start: UInt64, count: Int, window: Int, stride: UInt64, seed: UInt64
    ) {
        let modulus = UInt64(1) << Counter.RawValue.bitWidth
        var generator = SeededRandomNumberGenerator(seed: seed)
        var order = Array(0..<count)
        var index = 0
        while index < count {
            let end = min(index + window, count)
            order[index..<end].shuffle(using: &generator)
            index = end
        }
        var unwrapper = WrappingCounterUnwrapper<Counter>()
        var firstTrue: Int64?
        var firstExtended: Int64?
        for position in order {
            let trueValue = start + UInt64(position) * stride
            let counter = Counter(rawValue: Counter.RawValue(truncatingIfNeeded: trueValue % modulus))
            let extended = unwrapper.unwrap(counter)
            if firstTrue == nil {
                firstTrue = Int64(trueValue)
                firstExtended = extended
            }
            #expect(extended - firstExtended! == Int64(trueValue) - firstTrue!,
                    "start \(start) position \(position)")
        }
    }

    @Test("sequence numbers unwrap exactly with reordering across the wrap",
          arguments: [UInt64(0), 65534, 65535, 40_000, 12_345])
    func sequenceWrapMatrix(start: UInt64) {
        for (window, seed) in [(1, 1), (8, 2), (64, 3), (1_000, 4)] as [(Int, UInt64)] {
            checkUnwrapping(SequenceNumber.self, start: start, count: 200_000, window: window, stride: 1, seed: seed)
        }
    }

    @Test("RTP timestamps unwrap exactly with reordering across the wrap",
          arguments: [0, 4_294_967_295, 4_294_967_295 - 90_000, 2_000_000_000] as [UInt64])
    func timestampWrapMatrix(start: UInt64) {
        // 90 kHz video at 30 fps: 3000 ticks a frame; 48 kHz Opus: 960 a packet.
        for (stride, seed) in [(3_000, 5), (960, 6), (1, 7)] as [(UInt64, UInt64)] {
            checkUnwrapping(RTPTimestamp.self, start: start, count: 20_000, window: 16, stride: stride, seed: seed)
        }
    }

    @Test("property: any start, any bounded reordering")
    func unwrapProperty() async {
        await propertyCheck(
            count: 100,
            input: Gen.uint16(), Gen.int(in: 1...2_000), Gen.uint64()
        ) { start, window, seed in
            checkUnwrapping(SequenceNumber.self, start: UInt64(start), count: 20_000, window: window, stride: 1, seed: seed)
        }
    }
}
