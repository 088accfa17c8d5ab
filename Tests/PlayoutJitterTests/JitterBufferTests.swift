import PlayoutCore
import PlayoutJitter
import PlayoutTesting
import Testing

@Suite("JitterBuffer: ordering")
struct JitterBufferOrderingTests {
    @Test("packets reordered by up to 8 positions come out once, in order, with no loss")
    func boundedReordering() {
        var random = SeededRandomNumberGenerator(seed: 7)
        var buffer = Buffer()
        let order = boundedShuffle(count: 5_000, maximum: 8, using: &random)
        var out = Drained()
        for (position, index) in order.enumerated() {
            let now = ms(Double(position))
            #expect(buffer.insert(UInt16(truncatingIfNeeded: 1_000 + index), payload: index, at: now) == .queued)
            out.append(buffer.drain(now: now))
        }
        out.append(buffer.drain(now: ms(1e6)))
        let matches20 = out.payloads == Array(0..<5_000)
        #expect(matches20, "payloads or lost ranges differ")
        #expect(out.lost.isEmpty)
        let statistics = buffer.statistics
        #expect(statistics.packetsReceived == 5_000 && statistics.packetsLost == 0 && statistics.packetsDiscarded == 0)
        #expect(statistics.highestSequenceNumber == 1_000 + 4_999)
    }

    @Test(
        "reordering across the sequence and timestamp wraps keeps order and extends both to 64 bits",
        arguments: [0, 65_534, 65_535, 40_961] as [UInt16], [0, UInt32.max, UInt32.max - 89_999, 3_141_592_653] as [UInt32]
    )
    func wrapMatrix(startSequence: UInt16, startTimestamp: UInt32) {
        var random = SeededRandomNumberGenerator(seed: UInt64(startSequence) << 32 | UInt64(startTimestamp))
        var buffer = Buffer()
        let count = 2_000
        let order = boundedShuffle(count: count, maximum: 5, using: &random)
        var out = Drained()
        for (position, index) in order.enumerated() {
            let now = ms(Double(position) * 0.5)
            let frame = index / 10
            let result = buffer.insert(
                startSequence &+ UInt16(truncatingIfNeeded: index), timestamp: startTimestamp &+ UInt32(frame * 3_000),
                frameEnd: index % 10 == 9, payload: index, at: now
            )
            #expect(result == .queued)
            out.append(buffer.drain(now: now))
        }
        out.append(buffer.drain(now: ms(1e6)))
        let matches48 = out.payloads == Array(0..<count)
        #expect(matches48, "payloads or lost ranges differ")
        #expect(out.lost.isEmpty)
        for (index, packet) in out.packets.enumerated() {
            #expect(packet.sequenceNumber == Int64(startSequence) + Int64(index))
            #expect(packet.timestamp == Int64(startTimestamp) + Int64(index / 10 * 3_000))
            #expect(packet.isFrameEnd == (index % 10 == 9))
        }
    }

    @Test("duplicates are recognized while queued and after release, and counted once")
    func duplicates() {
        var buffer = Buffer()
        #expect(buffer.insert(0, at: ms(0)) == .queued)
        #expect(buffer.insert(1, at: ms(1)) == .queued)
        #expect(buffer.drain(now: ms(1)).payloads == [0, 1])
        #expect(buffer.insert(1, at: ms(2)) == .duplicate)
        #expect(buffer.insert(3, at: ms(3)) == .queued)
        #expect(buffer.insert(3, at: ms(4)) == .duplicate)
        #expect(buffer.insert(0, at: ms(5)) == .duplicate)
        let statistics = buffer.statistics
        #expect(statistics.packetsDuplicated == 3)
        #expect(statistics.packetsReceived == 3)
        #expect(statistics.bytesReceived == 3 * 1_200)
        #expect(statistics.bufferedPackets == 1)
    }

    @Test("a burst of 1 s of 720p30 packets arriving within 1 ms is released in order without drops")
    func burst() {
        var buffer = Buffer()
        let count = 30 * 13
        var out = Drained()
        for index in 0..<count {
            let now = MonotonicInstant(nanoseconds: 5_000_000_000 + Int64(index) * 2_500)
            _ = buffer.insert(UInt16(index), timestamp: UInt32(index / 13 * 3_000), frameEnd: index % 13 == 12, at: now)
            if index % 50 == 0 { out.append(buffer.drain(now: now)) }
        }
        out.append(buffer.drain(now: MonotonicInstant(nanoseconds: 5_001_000_000)))
        let matches85 = out.payloads == Array(0..<count)
        #expect(matches85, "payloads or lost ranges differ")
        #expect(buffer.statistics.packetsDropped == 0 && buffer.statistics.packetsLost == 0)
    }

    @Test("a mute gap (timestamp jump, continuous sequence numbers) passes without waiting")
    func muteGap() {
        var buffer = Buffer(configuration: .init(clockRate: 48_000))
        _ = buffer.insert(0, timestamp: 0, at: ms(0))
        #expect(buffer.drain(now: ms(0)).payloads == [0])
        // 10 minutes of DTX silence, then the next sequence number.
        _ = buffer.insert(1, timestamp: 48_000 * 600, at: ms(600_000))
        let out = buffer.drain(now: ms(600_000))
        #expect(out.payloads == [1])
        #expect(out.packets.first?.timestamp == Int64(48_000 * 600))
        #expect(out.last == .empty)
    }
}

@Suite("JitterBuffer: gaps and loss")
struct JitterBufferLossTests {
    @Test("poll waits exactly until the deadline of the packet after the gap, then declares the gap lost")
    func waitUntilDeadline() {
        var buffer = Buffer()
        _ = buffer.insert(0, at: ms(0))
        #expect(buffer.drain(now: ms(0)).last == .empty)
        _ = buffer.insert(2, at: ms(15))
        #expect(buffer.poll(now: ms(15)) == .wait(until: ms(115)))
        #expect(buffer.poll(now: MonotonicInstant(nanoseconds: 114_999_999)) == .wait(until: ms(115)))
        #expect(buffer.statistics.packetsLost == 1)  // RFC 3550: expected − received, pending or not
        let out = buffer.drain(now: ms(115))
        #expect(out.lost == [1...1])
        #expect(out.payloads == [2])
        #expect(out.last == .empty)
    }

    @Test("the deadline follows maximumReorderDelay changed at run time")
    func runtimeDelay() {
        var buffer = Buffer()
        _ = buffer.insert(0, at: ms(0))
        _ = buffer.insert(2, at: ms(10))
        #expect(buffer.drain(now: ms(10)).last == .wait(until: ms(110)))
        buffer.configuration.maximumReorderDelay = .seconds(2)
        #expect(buffer.poll(now: ms(500)) == .wait(until: ms(2_010)))
    }

    @Test(
        "a packet declared lost that then arrives is late: lost goes down, discarded up",
        arguments: [Duration.milliseconds(1), .milliseconds(100), .seconds(1), .seconds(60)]
    )
    func lateAfterLoss(lateness: Duration) {
        var buffer = Buffer()
        _ = buffer.insert(0, at: ms(0))
        _ = buffer.insert(1, at: ms(1))
        _ = buffer.insert(3, at: ms(2))
        let first = buffer.drain(now: ms(2))
        #expect(first.payloads == [0, 1] && first.last == .wait(until: ms(102)))
        let declared = buffer.drain(now: ms(102))
        #expect(declared.lost == [2...2] && declared.payloads == [3])
        #expect(buffer.statistics.packetsLost == 1)
        #expect(buffer.insert(2, at: ms(102).advanced(by: lateness)) == .late)
        let statistics = buffer.statistics
        #expect(statistics.packetsLost == 0)
        #expect(statistics.packetsDiscarded == 1)
        #expect(statistics.packetsReceived == 4)
        // A second copy of the late packet is a duplicate, not late again.
        #expect(buffer.insert(2, at: ms(200_000)) == .duplicate)
        #expect(buffer.statistics.packetsDiscarded == 1)
    }

    @Test("a hopeless gap of 10,000 packets is one lost event")
    func hopelessGap() {
        var buffer = Buffer(configuration: .init(restartThreshold: 20_000))
        var out = Drained()
        for index in 0..<10 {
            _ = buffer.insert(UInt16(index), at: ms(Double(index)))
        }
        for index in 10_010..<10_020 {
            #expect(buffer.insert(UInt16(index), at: ms(20)) == .queued)
        }
        out.append(buffer.drain(now: ms(20)))
        #expect(out.last == .wait(until: ms(120)))
        out.append(buffer.drain(now: ms(120)))
        #expect(out.lost == [10...10_009])
        #expect(out.payloads == Array(0..<10) + Array(10_010..<10_020))
        #expect(buffer.statistics.packetsLost == 10_000)
        #expect(buffer.statistics.lossEvents == 1)
    }

    @Test("30 % loss in random bursts: every gap resolves at its deadline and lost equals what was withheld")
    func lossBursts() {
        var random = SeededRandomNumberGenerator(seed: 30)
        var buffer = Buffer()
        let count = 5_000
        var withheld = Set<Int>()
        var index = 1
        while index < count - 1 {
            if Double.random(in: 0..<1, using: &random) < 0.3 / 5.5 {
                let length = Int.random(in: 1...10, using: &random)
                for lost in index..<min(index + length, count - 1) { withheld.insert(lost) }
                index += length
            } else {
                index += 1
            }
        }
        let fraction = Double(withheld.count) / Double(count)
        #expect(fraction > 0.2 && fraction < 0.4)
        let arrival = { (index: Int) in ms(Double(index) * 20) }
        var out = Drained()
        var lostAt: [(range: ClosedRange<Int64>, at: MonotonicInstant)] = []
        var now = ms(0)
        /// Polls at every deadline before `until`, as a consumer sleeping on `.wait` would.
        func advance(to until: MonotonicInstant) {
            while true {
                let drained = buffer.drain(now: now)
                out.append(drained)
                for range in drained.lost { lostAt.append((range, now)) }
                guard let deadline = drained.last.waitDeadline, deadline <= until else { break }
                #expect(deadline >= now)
                now = deadline
            }
            now = until
        }
        for index in 0..<count where !withheld.contains(index) {
            advance(to: arrival(index))
            #expect(buffer.insert(UInt16(index), at: now) == .queued)
        }
        advance(to: ms(1e9))
        let matches212 = out.payloads == (0..<count).filter { !withheld.contains($0) }
        #expect(matches212, "payloads or lost ranges differ")
        #expect(out.lostCount == withheld.count)
        let matches214 = Set(out.lost.flatMap { $0.map { Int($0) } }) == withheld
        #expect(matches214, "payloads or lost ranges differ")
        for (range, at) in lostAt {
            // Declared exactly when the packet after the gap has waited 100 ms.
            #expect(at == arrival(Int(range.upperBound) + 1).advanced(by: .milliseconds(100)))
        }
        #expect(buffer.statistics.packetsLost == withheld.count)
        #expect(buffer.statistics.lossEvents == out.lost.count)
    }

    @Test("nothing stalls after seconds without packets")
    func longSilence() {
        var buffer = Buffer()
        _ = buffer.insert(0, at: ms(0))
        _ = buffer.insert(5, at: ms(1))
        _ = buffer.drain(now: ms(1))
        let out = buffer.drain(now: ms(30_000))
        #expect(out.lost == [1...4] && out.payloads == [5] && out.last == .empty)
        _ = buffer.insert(6, at: ms(30_001))
        #expect(buffer.drain(now: ms(30_001)).payloads == [6])
    }
}

@Suite("JitterBuffer: sender restarts")
struct JitterBufferRestartTests {
    @Test("a jump confirmed by the next packet restarts: queued packets flush, then .restart, then the new stream")
    func jumpRestart() {
        var buffer = Buffer()
        for index in 0..<10 { _ = buffer.insert(UInt16(index), timestamp: UInt32(index) * 100, at: ms(0)) }
        _ = buffer.insert(11, timestamp: 1_100, at: ms(1))
        var out = buffer.drain(now: ms(1))
        #expect(out.payloads == Array(0..<10))
        #expect(buffer.insert(40_000, timestamp: 7, at: ms(2)) == .queued)
        #expect(buffer.drain(now: ms(2)).last == .wait(until: ms(101)))  // held, not yet a restart
        #expect(buffer.insert(40_001, timestamp: 8, at: ms(3)) == .queued)
        out = buffer.drain(now: ms(3))
        #expect(out.events == [
            .lost(range: 10...10),
            .packet(.init(sequenceNumber: 11, timestamp: 1_100, ssrc: 1, isFrameEnd: false, byteCount: 1_200, payload: 11, arrival: ms(1))),
            .restart(ssrc: 1),
            .packet(.init(sequenceNumber: 12, timestamp: 7, ssrc: 1, isFrameEnd: false, byteCount: 1_200, payload: 40_000, arrival: ms(2))),
            .packet(.init(sequenceNumber: 13, timestamp: 8, ssrc: 1, isFrameEnd: false, byteCount: 1_200, payload: 40_001, arrival: ms(3))),
        ])
        _ = buffer.insert(40_002, at: ms(4))
        #expect(buffer.drain(now: ms(4)).packets.map(\.sequenceNumber) == [14])
        let statistics = buffer.statistics
        #expect(statistics.restarts == 1)
        #expect(statistics.packetsLost == 1)
        #expect(statistics.packetsReceived == 14)
        #expect(statistics.highestSequenceNumber == 14)
    }

    @Test("a backward jump confirmed by a reordered pair restarts too", arguments: [(5_000, 5_001), (5_001, 5_000)] as [(UInt16, UInt16)])
    func backwardJump(first: UInt16, second: UInt16) {
        var buffer = Buffer()
        for index in 50_000..<50_010 { _ = buffer.insert(UInt16(index), at: ms(0)) }
        _ = buffer.drain(now: ms(0))
        #expect(buffer.insert(first, at: ms(1)) == .queued)
        #expect(buffer.insert(second, at: ms(2)) == .queued)
        let out = buffer.drain(now: ms(2))
        #expect(out.restarts == [1])
        #expect(out.payloads == [5_000, 5_001])
        #expect(out.packets.map(\.sequenceNumber) == [50_010, 50_011])
    }

    @Test("startNewStream: the next packet of the same SSRC begins a new stream, even a step back within the threshold")
    func startNewStream() {
        var buffer = Buffer()
        buffer.startNewStream()  // before the first packet: nothing to restart
        for index in 2_000..<2_010 { _ = buffer.insert(UInt16(index), timestamp: UInt32(index) * 10, at: ms(0)) }
        _ = buffer.drain(now: ms(0))
        // The caller's source validation confirmed a sequence restart 1,000 back (under the
        // buffer's own threshold, so it would be late packets without the call).
        buffer.startNewStream()
        #expect(buffer.insert(1_010, timestamp: 5, at: ms(1)) == .queued)
        #expect(buffer.insert(1_011, timestamp: 6, at: ms(1)) == .queued)
        let out = buffer.drain(now: ms(1))
        #expect(out.restarts == [1])
        #expect(out.payloads == [1_010, 1_011])
        #expect(out.packets.map(\.sequenceNumber) == [2_010, 2_011], "extended numbers go on after the old stream")
        let statistics = buffer.statistics
        #expect(statistics.restarts == 1 && statistics.packetsDuplicated == 0 && statistics.packetsDiscarded == 0 && statistics.packetsLost == 0)
    }

    @Test("one stray packet far from the stream is discarded, not a restart")
    func strayPacket() {
        var buffer = Buffer()
        for index in 0..<10 { _ = buffer.insert(UInt16(index), at: ms(0)) }
        #expect(buffer.insert(40_000, at: ms(1)) == .queued)
        #expect(buffer.insert(10, at: ms(2)) == .queued)
        let out = buffer.drain(now: ms(2))
        #expect(out.payloads == Array(0...10) && out.restarts.isEmpty)
        #expect(buffer.statistics.packetsDiscarded == 1 && buffer.statistics.restarts == 0)
    }

    @Test("a new SSRC restarts at once; its timestamps start afresh")
    func newSSRC() {
        var buffer = Buffer()
        for index in 0..<5 { _ = buffer.insert(UInt16(index), timestamp: 4_000_000_000, ssrc: 1, at: ms(0)) }
        _ = buffer.insert(6, timestamp: 4_000_000_000, ssrc: 1, at: ms(0))
        #expect(buffer.insert(9_000, timestamp: 90, ssrc: 2, at: ms(1)) == .queued)
        let out = buffer.drain(now: ms(1))
        #expect(out.lost == [5...5])
        #expect(out.restarts == [2])
        #expect(out.payloads == [0, 1, 2, 3, 4, 6, 9_000])
        #expect(out.packets.last?.sequenceNumber == 7 && out.packets.last?.timestamp == 90 && out.packets.last?.ssrc == 2)
        _ = buffer.insert(9_001, timestamp: 180, ssrc: 2, at: ms(2))
        #expect(buffer.drain(now: ms(2)).packets.map(\.sequenceNumber) == [8])
        #expect(buffer.statistics.restarts == 1)
    }

    @Test("with the default threshold a 10,000-packet jump is a restart, not loss")
    func longJumpIsRestart() {
        var buffer = Buffer()
        for index in 0..<10 { _ = buffer.insert(UInt16(index), at: ms(0)) }
        for index in 10_010..<10_020 { _ = buffer.insert(UInt16(index), at: ms(1)) }
        let out = buffer.drain(now: ms(1))
        #expect(out.lost.isEmpty && out.restarts == [1])
        #expect(out.payloads == Array(0..<10) + Array(10_010..<10_020))
        #expect(buffer.statistics.packetsLost == 0)
    }
}
