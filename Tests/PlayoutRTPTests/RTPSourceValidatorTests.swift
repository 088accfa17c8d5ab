import PlayoutCore
import PlayoutRTP
import PlayoutTesting
import Testing

/// A validator of numbered packets on a manual timeline: audio-like, one packet per 20 ms at 48 kHz.
private struct Harness {
    var validator = RTPSourceValidator<Int>(configuration: .init(clockRate: 48_000))
    var sent = 0
    var played: [Int] = []
    var restarts: [RTPSourceValidation.Restart] = []

    /// Sends packet `id` (its own number unless given) and records what is played.
    @discardableResult
    mutating func send(ssrc: UInt32, sequence: UInt16, timestamp: UInt32, at milliseconds: Int64, id: Int? = nil) -> RTPSourceValidator<Int>.Decision {
        let id = id ?? sent
        sent += 1
        let decision = validator.receive(
            ssrc: ssrc, sequenceNumber: sequence, timestamp: timestamp, payload: id, now: MonotonicInstant(nanoseconds: milliseconds * 1_000_000)
        )
        if case .play(let previous, let restart) = decision {
            if let restart { restarts.append(restart) }
            if let previous { played.append(previous) }
            played.append(id)
        }
        return decision
    }

    /// Sends `count` packets of a regular stream: sequence `first + i`, 960 ticks and 20 ms apart.
    mutating func stream(ssrc: UInt32, first: UInt16 = 1_000, timestamp: UInt32 = 50_000, count: Int, from start: Int64 = 0, index: Int = 0) {
        for i in index..<(index + count) {
            send(ssrc: ssrc, sequence: first &+ UInt16(truncatingIfNeeded: i), timestamp: timestamp &+ UInt32(i * 960), at: start + Int64(i) * 20)
        }
    }

    /// Every packet is played, counted under a reason, or held.
    func accountedFor() -> Bool {
        let statistics = validator.statistics
        let rejected = statistics.packetsFromOtherSources + statistics.packetsOutOfSequence + statistics.packetsImplausibleTimestamp
        return played.count + rejected + validator.packetsHeld == sent
    }
}

@Suite("RTP source validation: RFC 3550 probation, one played source, A.1 sequence and timestamp checks")
struct RTPSourceValidatorTests {
    @Test("a new source plays after two packets in sequence (MIN_SEQUENTIAL); the first is held, not lost")
    func probation() {
        var harness = Harness()
        let first = harness.send(ssrc: 7, sequence: 100, timestamp: 0, at: 0)
        guard case .hold = first else {
            Issue.record("first packet: \(first)")
            return
        }
        #expect(harness.validator.playedSSRC == nil)
        harness.send(ssrc: 7, sequence: 101, timestamp: 960, at: 20)
        #expect(harness.played == [0, 1])
        #expect(harness.restarts == [.newSource(from: nil, to: 7)])
        #expect(harness.validator.playedSSRC == 7)
        #expect(harness.validator.statistics.sourceSwitches == 0, "the first lock is not a switch")
        #expect(harness.accountedFor())
    }

    @Test("a packet out of sequence restarts probation; the held packet is counted as never validated")
    func probationRestarts() {
        var harness = Harness()
        harness.send(ssrc: 7, sequence: 100, timestamp: 0, at: 0)
        harness.send(ssrc: 7, sequence: 300, timestamp: 960, at: 20)
        #expect(harness.played.isEmpty)
        #expect(harness.validator.statistics.packetsInProbation == 1)
        harness.send(ssrc: 7, sequence: 301, timestamp: 1_920, at: 40)
        #expect(harness.played == [1, 2])
        #expect(harness.accountedFor())
    }

    @Test("random SSRCs never pass probation, whatever their number; the played source loses nothing", arguments: [100, 1_000, 20_000])
    func strangers(count: Int) {
        var harness = Harness()
        var random = SeededRandomNumberGenerator(seed: UInt64(count))
        var sequence: UInt16 = 5
        var real = 0
        for i in 0..<count {
            harness.send(
                ssrc: UInt32.random(in: 1...UInt32.max, using: &random), sequence: UInt16.random(in: 0...UInt16.max, using: &random),
                timestamp: UInt32.random(in: 0...UInt32.max, using: &random), at: Int64(i), id: -1
            )
            if i % 10 == 0 {
                harness.send(ssrc: 0xA, sequence: sequence, timestamp: UInt32(real * 960), at: Int64(i), id: real)
                sequence &+= 1
                real += 1
            }
        }
        #expect(harness.played == Array(0..<real), "every real packet, in order")
        #expect(harness.validator.statistics.packetsInProbation + harness.validator.packetsHeld == count)
        #expect(harness.validator.packetsHeld <= RTPSourceValidation.Configuration.defaultMaximumCandidates)
        #expect(harness.validator.statistics.packetsNotPlayed == 0)
        #expect(harness.accountedFor())
    }

    @Test("a second valid source is not played while the first sends; it takes over after exactly the silence timeout")
    func secondSenderWaitsForSilence() {
        var harness = Harness()
        harness.stream(ssrc: 1, count: 50)  // 0 … 980 ms
        // A stale sender: valid (in sequence), never played while source 1 is alive.
        for i in 0..<10 {
            let decision = harness.send(ssrc: 2, sequence: UInt16(7_000 + i), timestamp: UInt32(i * 960), at: 500 + Int64(i) * 20)
            if case .play = decision { Issue.record("played a packet of the second source at \(i)") }
        }
        #expect(harness.validator.statistics.packetsNotPlayed == 10)
        #expect(harness.validator.playedSSRC == 1)
        // Source 1's last packet was at 980 ms: at 1,979 ms it has been silent 999 ms.
        let early = harness.send(ssrc: 2, sequence: 7_010, timestamp: 9_600, at: 1_979)
        #expect({ if case .reject(.notPlayed) = early { true } else { false } }())
        let switched = harness.send(ssrc: 2, sequence: 7_011, timestamp: 10_560, at: 1_980)
        #expect({ if case .play(nil, .newSource(from: 1, to: 2)?) = switched { true } else { false } }(), "\(switched)")
        #expect(harness.validator.statistics.sourceSwitches == 1)
        // Source 1 coming back is now the one not played.
        harness.send(ssrc: 1, sequence: 1_050, timestamp: 50_000 + 50 * 960, at: 2_000)
        #expect(harness.validator.statistics.packetsNotPlayed == 12)
        #expect(harness.accountedFor())
    }

    @Test("a BYE from the played source lets a valid one take over at once; a BYE from another changes nothing")
    func goodbye() {
        var harness = Harness()
        harness.stream(ssrc: 1, count: 10)
        harness.send(ssrc: 2, sequence: 1, timestamp: 0, at: 100)
        harness.send(ssrc: 2, sequence: 2, timestamp: 960, at: 120)
        harness.validator.receiveGoodbye(ssrc: 2)
        harness.validator.receiveGoodbye(ssrc: 99)
        harness.send(ssrc: 2, sequence: 3, timestamp: 1_920, at: 140)
        #expect(harness.validator.playedSSRC == 1)
        harness.validator.receiveGoodbye(ssrc: 1)
        harness.send(ssrc: 2, sequence: 4, timestamp: 2_880, at: 160)
        #expect(harness.validator.playedSSRC == 2)
        #expect(harness.restarts.last == .newSource(from: 1, to: 2))
        #expect(harness.accountedFor())
    }

    @Test("A.1: a gap under MAX_DROPOUT is loss, a step back within MAX_MISORDER is reordering; both play", arguments: [2, 100, 2_999])
    func gapsAndReordering(gap: Int) {
        var harness = Harness()
        harness.stream(ssrc: 1, count: 10)  // 1,000 … 1,009
        // The gap took its time: `gap` packets of 20 ms.
        let sequence = UInt16(1_009 + gap)
        let decision = harness.send(ssrc: 1, sequence: sequence, timestamp: 50_000 + UInt32((9 + gap) * 960), at: Int64(9 + gap) * 20)
        #expect({ if case .play(nil, nil) = decision { true } else { false } }(), "\(decision)")
        // A late packet from before the gap (within 100 back).
        let late = harness.send(ssrc: 1, sequence: sequence &- 50, timestamp: 50_000 &+ UInt32(bitPattern: Int32((9 + gap - 50) * 960)), at: Int64(10 + gap) * 20)
        #expect({ if case .play(nil, nil) = late { true } else { false } }(), "\(late)")
        #expect(harness.accountedFor())
    }

    @Test("A.1 bad_seq: a stray jump is dropped; a jump the next packet confirms resyncs, and both play", arguments: [3_000, 40_000, 65_536 - 101, 65_536 - 1_000])
    func jumps(jump: Int) {
        var harness = Harness()
        harness.stream(ssrc: 1, count: 10)  // 1,000 … 1,009
        let stray = harness.send(ssrc: 1, sequence: UInt16(truncatingIfNeeded: 1_009 + jump), timestamp: 50_000 + 10 * 960, at: 200)
        #expect({ if case .hold = stray { true } else { false } }())
        harness.send(ssrc: 1, sequence: 1_010, timestamp: 50_000 + 10 * 960, at: 200)
        #expect(harness.validator.statistics.packetsOutOfSequence == 1)
        #expect(harness.played.count == 11)
        // The sender restarts its sequence `jump` ahead: two packets in sequence.
        let base = UInt16(truncatingIfNeeded: 1_010 + jump)
        harness.send(ssrc: 1, sequence: base, timestamp: 50_000 + 11 * 960, at: 220)
        let confirmed = harness.send(ssrc: 1, sequence: base &+ 1, timestamp: 50_000 + 12 * 960, at: 240)
        #expect({ if case .play(let previous?, .resync?) = confirmed { previous == 12 } else { false } }(), "\(confirmed)")
        harness.send(ssrc: 1, sequence: base &+ 2, timestamp: 50_000 + 13 * 960, at: 260)
        #expect(harness.played.count == 14)
        #expect(harness.validator.statistics.resyncs == 1)
        #expect(harness.accountedFor())
    }

    @Test("a timestamp step (−5 s, ±2^31) on one packet is foreign; on every packet after it, a new timeline", arguments: [
        UInt32(bitPattern: -5 * 48_000), UInt32(1) << 31, UInt32(10 * 48_000),
    ])
    func timestampSteps(step: UInt32) {
        var harness = Harness()
        harness.stream(ssrc: 1, count: 10)
        // One packet with its timestamp stepped: held, then dropped when the stream goes on.
        harness.send(ssrc: 1, sequence: 1_010, timestamp: 50_000 &+ 10 * 960 &+ step, at: 200)
        harness.send(ssrc: 1, sequence: 1_011, timestamp: 50_000 + 11 * 960, at: 220)
        #expect(harness.validator.statistics.packetsImplausibleTimestamp == 1)
        #expect(harness.played.count == 11)
        // The whole stream steps from here on: the second packet confirms the new timeline.
        harness.send(ssrc: 1, sequence: 1_012, timestamp: 50_000 &+ 12 * 960 &+ step, at: 240)
        harness.send(ssrc: 1, sequence: 1_013, timestamp: 50_000 &+ 13 * 960 &+ step, at: 260)
        harness.send(ssrc: 1, sequence: 1_014, timestamp: 50_000 &+ 14 * 960 &+ step, at: 280)
        #expect(harness.played.count == 14)
        #expect(harness.restarts.last == .resync)
        #expect(harness.accountedFor())
    }

    @Test("a jump of many sequence numbers in no time is foreign, even under MAX_DROPOUT; a real outage of that length is loss")
    func sequenceImpliesTime() {
        var harness = Harness()
        harness.stream(ssrc: 1, count: 100)  // 0 … 1,980 ms; 960 ticks a packet
        // 2,000 packets ahead (40 s of audio) 20 ms later: a stray.
        harness.send(ssrc: 1, sequence: 1_099 + 2_000, timestamp: 50_000 + 100 * 960, at: 2_000)
        harness.send(ssrc: 1, sequence: 1_100, timestamp: 50_000 + 100 * 960, at: 2_000)
        #expect(harness.validator.statistics.packetsImplausibleTimestamp == 1)
        // 500 packets lost in a 10 s outage: played.
        let outage = harness.send(ssrc: 1, sequence: 1_600, timestamp: 50_000 + 600 * 960, at: 12_000)
        #expect({ if case .play(nil, nil) = outage { true } else { false } }())
        #expect(harness.accountedFor())
    }

    @Test("the table of other sources is bounded: a flood of new SSRCs keeps at most its capacity held")
    func boundedTable() {
        var harness = Harness()
        harness.validator = RTPSourceValidator(configuration: .init(clockRate: 48_000, maximumCandidates: 4))
        for i in 0..<100 {
            harness.send(ssrc: UInt32(1_000 + i), sequence: 1, timestamp: 0, at: Int64(i))
        }
        #expect(harness.validator.packetsHeld == 4)
        #expect(harness.validator.statistics.packetsInProbation == 96)
        #expect(harness.accountedFor())
    }
}
