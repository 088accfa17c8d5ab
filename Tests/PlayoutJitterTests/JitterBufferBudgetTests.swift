import PlayoutCore
import PlayoutJitter
import PlayoutTesting
import Testing

@Suite("JitterBuffer: memory budget")
struct JitterBufferBudgetTests {
    /// 10 s at 50 Mbit/s in packets of 1,450 bytes.
    static let tenSecondsAt50Mbps = 10 * 50_000_000 / 8 / 1_450

    @Test("a 10 s buffer at 50 Mbit/s (≈ 43,000 packets, more than 2^15) holds without drops")
    func tenSecondBuffer() {
        var buffer = Buffer(configuration: .init(maximumReorderDelay: .seconds(11)))
        let count = Self.tenSecondsAt50Mbps
        #expect(count > 1 << 15)
        let start: UInt16 = 60_000  // wraps (twice over the window) while held
        let interval = 10_000.0 / Double(count)
        var out = Drained()
        var allQueued = true
        _ = buffer.insert(start, bytes: 1_450, payload: 0, at: .zero)
        // Packet 1 is held up in the network for 10 s: everything after it waits behind it.
        for index in 2..<count {
            let now = ms(Double(index) * interval)
            allQueued = allQueued && buffer.insert(start &+ UInt16(truncatingIfNeeded: index), bytes: 1_450, payload: index, at: now) == .queued
            if index % 1_000 == 0 { out.append(buffer.drain(now: now)) }
        }
        #expect(allQueued)
        #expect(out.payloads == [0] && out.lost.isEmpty)
        #expect(buffer.statistics.bufferedPackets == count - 2)
        #expect(buffer.statistics.bufferedBytes == (count - 2) * 1_450)
        #expect(buffer.insert(start &+ 1, bytes: 1_450, payload: 1, at: ms(10_000)) == .queued)
        out.append(buffer.drain(now: ms(10_000)))
        let inOrder = out.payloads == Array(0..<count)
        #expect(inOrder, "payloads out of order")
        #expect(out.packets.last?.sequenceNumber == Int64(start) + Int64(count - 1))
        let statistics = buffer.statistics
        #expect(statistics.packetsDropped == 0 && statistics.packetsLost == 0 && statistics.bufferedPackets == 0)
    }

    @Test(
        "a flood at 10× the nominal rate into a stalled consumer stays within the budget, dropping the oldest and counting them",
        arguments: [1_450, 100]  // bytes bind first / packets bind first
    )
    func flood(packetBytes: Int) {
        let configuration = JitterBufferConfiguration(maximumReorderDelay: .seconds(60))
        var buffer = Buffer(configuration: configuration)
        let count = 4 * Self.tenSecondsAt50Mbps  // 4 s at 500 Mbit/s
        _ = buffer.insert(0, bytes: packetBytes, at: .zero)
        #expect(buffer.drain(now: .zero).payloads == [0])
        // Packet 1 never comes, and the consumer does not poll while the flood lasts.
        var withinBudget = true
        var allQueued = true
        for index in 2...(count + 1) {
            let now = MonotonicInstant(nanoseconds: Int64(index) * 23_000)
            allQueued = allQueued && buffer.insert(UInt16(truncatingIfNeeded: index), bytes: packetBytes, payload: index, at: now) == .queued
            let statistics = buffer.statistics
            withinBudget = withinBudget && statistics.bufferedBytes <= configuration.maximumBytes
                && statistics.bufferedPackets <= configuration.maximumPackets
        }
        #expect(withinBudget && allQueued)
        let held = packetBytes == 100 ? configuration.maximumPackets : configuration.maximumBytes / packetBytes
        let statistics = buffer.statistics
        #expect(statistics.bufferedPackets == held)
        #expect(statistics.packetsDropped == count - held)
        #expect(statistics.packetsReceived == count + 1)
        #expect(statistics.packetsLost == 1)  // dropped packets were received; packet 1 never was
        let out = buffer.drain(now: MonotonicInstant(nanoseconds: Int64(count) * 23_000))
        #expect(out.lost == [1...Int64(count + 1 - held)])  // one event: the gap and the dropped packets
        #expect(out.packets.count == held)
        let inOrder = out.payloads == Array((count + 2 - held)...(count + 1))
        #expect(inOrder, "payloads out of order")
        #expect(out.last == .empty)
    }

    @Test("over maximumPackets the oldest packet is dropped and reported with the gap before it")
    func dropOldest() {
        var buffer = Buffer(configuration: .init(maximumPackets: 4))
        _ = buffer.insert(0, at: ms(0))
        _ = buffer.drain(now: ms(0))
        for index in 2...5 { #expect(buffer.insert(UInt16(index), at: ms(1)) == .queued) }
        #expect(buffer.insert(6, at: ms(2)) == .queued)
        let out = buffer.drain(now: ms(2))
        #expect(out.lost == [1...2])
        #expect(out.payloads == [3, 4, 5, 6])
        let statistics = buffer.statistics
        #expect(statistics.packetsDropped == 1 && statistics.packetsLost == 1)
        // The dropped packet was received: a copy of it now is a duplicate; the lost one is late.
        #expect(buffer.insert(2, at: ms(3)) == .duplicate)
        #expect(buffer.insert(1, at: ms(3)) == .late)
        #expect(buffer.statistics.packetsLost == 0)
    }

    @Test("an older packet arriving into a full buffer is the one dropped")
    func newcomerIsOldest() {
        var buffer = Buffer(configuration: .init(maximumBytes: 3_000))
        _ = buffer.insert(0, at: ms(0))
        _ = buffer.drain(now: ms(0))
        _ = buffer.insert(3, bytes: 1_000, at: ms(1))
        _ = buffer.insert(4, bytes: 1_000, at: ms(1))
        _ = buffer.insert(5, bytes: 1_000, at: ms(1))
        #expect(buffer.insert(2, bytes: 1_000, at: ms(2)) == .dropped(.overflow))
        #expect(buffer.insert(9, bytes: 5_000, at: ms(2)) == .dropped(.oversized))
        #expect(buffer.statistics.bufferedBytes == 3_000)
        let out = buffer.drain(now: ms(2))
        #expect(out.lost == [1...2] && out.payloads == [3, 4, 5])
    }
}

@Suite("JitterBuffer: interarrival jitter (RFC 3550 A.8)")
struct JitterBufferJitterTests {
    @Test("alternating 0 / 5 ms extra transit gives the RFC 3550 estimator's value")
    func alternatingTransit() {
        var buffer = Buffer(configuration: .init(clockRate: 8_000))
        var expected = 0.0
        for index in 0..<200 {
            let extra = index.isMultiple(of: 2) ? 0.0 : 5.0
            _ = buffer.insert(UInt16(index), timestamp: UInt32(index * 160), at: ms(1_000 + Double(index) * 20 + extra))
            _ = buffer.drain(now: ms(1_000 + Double(index) * 20 + extra))
            if index > 0 { expected += (40 - expected) / 16 }  // |D| = 5 ms = 40 ticks at 8 kHz
        }
        #expect(abs(buffer.statistics.jitter - expected / 8_000) < 1e-9)
        #expect(abs(buffer.statistics.jitter - 0.005) < 1e-6)  // converged
    }

    @Test("constant transit is zero jitter; reordered, duplicate and late packets do not feed the estimator")
    func constantTransit() {
        var buffer = Buffer()
        for index in [0, 1, 2, 4, 3, 3, 5] {
            _ = buffer.insert(UInt16(index), timestamp: UInt32(index * 3_000), at: ms(Double(index) * 100 / 3))
        }
        #expect(buffer.statistics.jitter < 1e-9)
    }
}

@Suite("JitterBuffer: hostile input")
struct JitterBufferHostileTests {
    @Test("random sequence numbers, timestamps, SSRCs and instants never crash or hang, and memory stays bounded", arguments: [1, 2, 3] as [UInt64])
    func hostile(seed: UInt64) {
        var random = SeededRandomNumberGenerator(seed: seed)
        let configuration = JitterBufferConfiguration(maximumReorderDelay: .milliseconds(50), maximumBytes: 200_000, maximumPackets: 500)
        var buffer = Buffer(configuration: configuration)
        var now: Int64 = 0
        var sequence: UInt16 = .random(in: 0...UInt16.max, using: &random)
        var received = 0
        var released = 0
        var withinBudget = true
        for step in 0..<50_000 {
            switch Int.random(in: 0..<10, using: &random) {
            case 0: sequence = .random(in: 0...UInt16.max, using: &random)
            case 1: sequence &-= .random(in: 0...100, using: &random)
            default: sequence &+= .random(in: 0...3, using: &random)
            }
            switch Int.random(in: 0..<20, using: &random) {
            case 0: now = .random(in: Int64.min...Int64.max, using: &random)
            case 1: now -= .random(in: 0...10_000_000_000, using: &random)
            default: now &+= .random(in: 0...5_000_000, using: &random)
            }
            let ssrc: UInt32 = Int.random(in: 0..<200, using: &random) == 0 ? .random(in: 0...3, using: &random) : 1
            let result = buffer.insert(
                sequenceNumber: SequenceNumber(rawValue: sequence), timestamp: RTPTimestamp(rawValue: .random(in: 0...UInt32.max, using: &random)),
                ssrc: ssrc, isFrameEnd: .random(using: &random), byteCount: .random(in: -10...3_000, using: &random), payload: step,
                now: MonotonicInstant(nanoseconds: now)
            )
            if result != .duplicate { received += 1 }
            if step % 3 == 0 {
                released += buffer.drain(now: MonotonicInstant(nanoseconds: now), limit: 100_000).packets.count
            }
            let statistics = buffer.statistics
            withinBudget = withinBudget && (0...500).contains(statistics.bufferedPackets) && (0...200_000).contains(statistics.bufferedBytes)
        }
        #expect(withinBudget)
        released += buffer.drain(now: MonotonicInstant(nanoseconds: .max), limit: 100_000).packets.count
        let statistics = buffer.statistics
        #expect(statistics.packetsReceived == received)
        #expect(statistics.bufferedPackets == 0)
        #expect(released <= received)
    }

    @Test("a payload dropped or released is not kept alive by the buffer")
    func payloadsAreReleased() {
        final class Token {}
        weak var dropped: Token?
        weak var released: Token?
        var buffer = JitterBuffer<Token>(configuration: .init(maximumPackets: 1))
        do {
            let first = Token()
            let second = Token()
            dropped = first
            released = second
            _ = buffer.insert(sequenceNumber: 1, timestamp: 0, ssrc: 1, isFrameEnd: false, byteCount: 1, payload: first, now: ms(0))
            _ = buffer.insert(sequenceNumber: 3, timestamp: 0, ssrc: 1, isFrameEnd: false, byteCount: 1, payload: second, now: ms(0))
        }
        #expect(dropped == nil)
        #expect(released != nil)
        _ = buffer.poll(now: ms(1_000))  // lost 1...2
        if case .packet(let packet) = buffer.poll(now: ms(1_000)) { #expect(packet.sequenceNumber == 3) } else { Issue.record("no packet") }
        #expect(released == nil)
    }
}
