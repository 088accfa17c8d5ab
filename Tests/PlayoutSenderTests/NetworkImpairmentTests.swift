@testable import Playout
import PlayoutCore
@testable import PlayoutSender
import PlayoutTesting
import Testing

/// The publisher's network impairment on a simulated timeline: datagrams carry their submission
/// index, are submitted at exact instants, and polled at exactly the instants the simulation asks
/// for. No sockets, no sleeping.
@Suite("Network impairment: loss, jitter, reordering, duplication and a bandwidth cap, sans-IO")
struct NetworkImpairmentTests {
    /// A datagram as it left the simulation.
    struct Sent: Equatable {
        var index: Int
        var bytes: Int
        var at: MonotonicInstant
    }

    static let start = MonotonicInstant(nanoseconds: 1_000_000_000)

    /// The instant of the `index`th datagram sent every `interval` from ``start``.
    static func instant(_ index: Int, every interval: Duration) -> MonotonicInstant {
        start.advanced(by: interval * index)
    }

    /// A datagram of `size` bytes (at least 4) whose first 4 bytes are `index`, big-endian.
    static func datagram(_ index: Int, size: Int = 4) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: max(size, 4))
        for shift in 0..<4 { bytes[shift] = UInt8(truncatingIfNeeded: index >> (24 - 8 * shift)) }
        return bytes
    }

    static func index(of bytes: [UInt8]) -> Int {
        bytes.prefix(4).reduce(0) { $0 << 8 | Int($1) }
    }

    /// Submits `count` datagrams of `size` bytes, one every `interval`, and polls at every instant
    /// the simulation asks for until it is idle; returns what was sent, when, in sending order.
    static func run(_ impairment: inout NetworkImpairment, count: Int, every interval: Duration, size: Int = 4) -> [Sent] {
        var sent: [Sent] = []
        sent.reserveCapacity(count)
        var next = 0
        var now = instant(0, every: interval)
        while true {
            while next < count, instant(next, every: interval) <= now {
                impairment.submit(datagram(next, size: size), now: now)
                next += 1
            }
            var wake: MonotonicInstant?
            polling: while true {
                switch impairment.poll(now: now) {
                case .send(let bytes, _):
                    sent.append(Sent(index: index(of: bytes), bytes: bytes.count, at: now))
                case .wait(until: let instant):
                    #expect(instant > now, "a wait is always in the future")
                    wake = instant
                    break polling
                case .idle:
                    break polling
                }
            }
            let nextSubmission = next < count ? instant(next, every: interval) : nil
            switch (wake, nextSubmission) {
            case (nil, nil): return sent
            case (let wake?, nil): now = wake
            case (nil, let submission?): now = submission
            case (let wake?, let submission?): now = min(wake, submission)
            }
        }
    }

    static func impairment(_ configuration: NetworkImpairment.Configuration) throws -> NetworkImpairment {
        try NetworkImpairment(configuration: configuration)
    }

    static func expectStatisticsAddUp(_ statistics: NetworkImpairment.Statistics, sent: [Sent]) {
        #expect(
            statistics.datagramsSubmitted - statistics.datagramsLost - statistics.datagramsDroppedByBandwidth - statistics.datagramsDroppedAtEnd
                + statistics.datagramsDuplicated == statistics.datagramsSent
        )
        #expect(statistics.datagramsSent == sent.count)
        #expect(statistics.bytesSent == sent.reduce(0) { $0 + $1.bytes })
    }

    /// Datagrams sent after one that was submitted after them.
    static func overtaken(_ sent: [Sent]) -> Int {
        var highest = -1
        var count = 0
        for datagram in sent {
            if datagram.index < highest { count += 1 } else { highest = datagram.index }
        }
        return count
    }

    static func standardDeviation(_ values: [Double]) -> (mean: Double, deviation: Double) {
        let mean = values.reduce(0, +) / Double(values.count)
        let variance = values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(values.count - 1)
        return (mean, variance.squareRoot())
    }

    // MARK: - No impairment

    @Test("with nothing impaired every datagram is sent once, unchanged, in order, the instant it is submitted")
    func identity() throws {
        let configuration = NetworkImpairment.Configuration()
        #expect(configuration.isNone)
        var impairment = try Self.impairment(configuration)
        #expect(impairment.poll(now: Self.start) == .idle)
        for index in 0..<1_000 {
            let now = Self.instant(index, every: .milliseconds(1))
            let bytes = Self.datagram(index, size: 4 + index % 100)
            impairment.submit(bytes, now: now)
            #expect(impairment.poll(now: now) == .send(bytes, label: 0))
            #expect(impairment.poll(now: now) == .idle)
        }
        #expect(impairment.statistics.datagramsSubmitted == 1_000)
        #expect(impairment.statistics.datagramsSent == 1_000)
        #expect(impairment.statistics.datagramsLost + impairment.statistics.datagramsDuplicated + impairment.statistics.datagramsReordered == 0)
    }

    @Test("isNone is false as soon as one thing is impaired", arguments: [
        NetworkImpairment.Configuration(loss: 0.01),
        NetworkImpairment.Configuration(burstLoss: .init(rate: 0.01, meanBurstLength: 2)),
        NetworkImpairment.Configuration(jitter: .milliseconds(1)),
        NetworkImpairment.Configuration(reorder: 0.01),
        NetworkImpairment.Configuration(duplicate: 0.01),
        NetworkImpairment.Configuration(bandwidth: 1_000_000),
    ])
    func isNone(configuration: NetworkImpairment.Configuration) {
        #expect(!configuration.isNone)
    }

    // MARK: - Loss

    @Test("2 % random loss over 100,000 datagrams loses 2 % ± 0.3 %, independently of each other")
    func randomLoss() throws {
        var impairment = try Self.impairment(.init(loss: 0.02))
        var lost = 0
        var lostAfterLost = 0
        var previousLost = false
        let bytes = Self.datagram(0)
        for index in 0..<100_000 {
            let now = Self.instant(index, every: .microseconds(100))
            impairment.submit(bytes, now: now)
            let isLost = impairment.poll(now: now) == .idle
            if isLost {
                lost += 1
                if previousLost { lostAfterLost += 1 }
            }
            previousLost = isLost
        }
        #expect(impairment.statistics.datagramsLost == lost)
        #expect(abs(Double(lost) / 100_000 - 0.02) < 0.003)
        // Bernoulli: a loss right after a loss is no likelier than any other (2 % ± 1 %).
        #expect(abs(Double(lostAfterLost) / Double(lost) - 0.02) < 0.01)
        #expect(impairment.statistics.datagramsSent == 100_000 - lost)
    }

    @Test("burst loss of 20 % in bursts of 4 packets: the rate and the mean burst length come out as configured")
    func burstLoss() throws {
        var impairment = try Self.impairment(.init(burstLoss: .init(rate: 0.2, meanBurstLength: 4)))
        let sent = Self.run(&impairment, count: 100_000, every: .microseconds(100))
        let lost = 100_000 - sent.count
        #expect(impairment.statistics.datagramsLost == lost)
        #expect(abs(Double(lost) / 100_000 - 0.2) < 0.01, "loss rate \(Double(lost) / 100_000)")
        // Bursts are the gaps between consecutive delivered indices (plus any at either end).
        var bursts: [Int] = []
        var expected = 0
        for datagram in sent {
            if datagram.index > expected { bursts.append(datagram.index - expected) }
            expected = datagram.index + 1
        }
        if expected < 100_000 { bursts.append(100_000 - expected) }
        let meanBurst = Double(bursts.reduce(0, +)) / Double(bursts.count)
        #expect(abs(meanBurst - 4) < 0.25, "mean burst length \(meanBurst)")
        // About 100,000 × 20 % / 4 bursts; random loss at the same rate would give 16,000 of 1.25.
        #expect(bursts.count > 4_500 && bursts.count < 5_500)
    }

    // MARK: - Determinism

    static let everything = NetworkImpairment.Configuration(
        loss: 0.02, burstLoss: .init(rate: 0.02, meanBurstLength: 3), jitter: .milliseconds(3),
        reorder: 0.05, reorderDelay: .milliseconds(8), duplicate: 0.03, bandwidth: 700_000,
        queueLimit: .milliseconds(50)
    )

    @Test("the same seed gives the same output instant for instant; another seed gives another")
    func determinism() throws {
        func run(seed: UInt64) throws -> [Sent] {
            var configuration = Self.everything
            configuration.seed = seed
            var impairment = try Self.impairment(configuration)
            return Self.run(&impairment, count: 3_000, every: .milliseconds(1), size: 100)
        }
        let first = try run(seed: 7)
        #expect(first.count > 2_000)
        #expect(try run(seed: 7) == first)
        #expect(try run(seed: 8) != first)
    }

    @Test("turning jitter on does not change which datagrams are lost")
    func independentStreams() throws {
        var lossOnly = try Self.impairment(.init(loss: 0.1, seed: 3))
        var lossAndJitter = try Self.impairment(.init(loss: 0.1, jitter: .milliseconds(2), seed: 3))
        let a = Self.run(&lossOnly, count: 2_000, every: .milliseconds(20)).map(\.index)
        let b = Self.run(&lossAndJitter, count: 2_000, every: .milliseconds(20)).map(\.index)
        #expect(a == b)
    }

    // MARK: - Jitter

    @Test("jitter: the extra delay is half-normal with the configured standard deviation, never negative")
    func jitterDistribution() throws {
        var impairment = try Self.impairment(.init(jitter: .milliseconds(5)))
        // 100 ms apart: far more than the delays, so the FIFO never holds a datagram back.
        let sent = Self.run(&impairment, count: 10_000, every: .milliseconds(100))
        #expect(sent.map(\.index) == Array(0..<10_000))
        let delays = sent.map { Self.instant($0.index, every: .milliseconds(100)).duration(to: $0.at).seconds * 1_000 }
        #expect(delays.allSatisfy { $0 >= 0 })
        let (mean, deviation) = Self.standardDeviation(delays)
        #expect(abs(deviation - 5) < 0.25, "standard deviation \(deviation) ms")
        // The mean of |Z| σ / √(1 − 2/π) is σ √(2/π) / √(1 − 2/π) ≈ 1.3236 σ.
        #expect(abs(mean - 6.618) < 0.3, "mean \(mean) ms")
    }

    @Test("jitter larger than the spacing keeps the order: each datagram leaves no earlier than the one before")
    func jitterKeepsOrder() throws {
        var impairment = try Self.impairment(.init(jitter: .milliseconds(20)))
        let sent = Self.run(&impairment, count: 5_000, every: .milliseconds(1))
        #expect(sent.map(\.index) == Array(0..<5_000))
        #expect(zip(sent, sent.dropFirst()).allSatisfy { $0.at <= $1.at })
        // The FIFO did hold datagrams back: some left later than their own draw would say, but the
        // queue stays bounded by a few times the jitter.
        #expect(sent.allSatisfy { Self.instant($0.index, every: .milliseconds(1)).duration(to: $0.at) < .milliseconds(200) })
        #expect(impairment.statistics.datagramsReordered == 0)
    }

    // MARK: - Reordering

    @Test("5 % reordering by 10 ms: the held-back datagrams are overtaken and counted; every datagram is sent exactly once")
    func reorder() throws {
        var impairment = try Self.impairment(.init(reorder: 0.05, reorderDelay: .milliseconds(10)))
        let sent = Self.run(&impairment, count: 10_000, every: .milliseconds(1))
        #expect(sent.map(\.index).sorted() == Array(0..<10_000))
        #expect(sent.map(\.index) != Array(0..<10_000))
        let overtaken = Self.overtaken(sent)
        #expect(impairment.statistics.datagramsReordered == overtaken)
        #expect(abs(Double(overtaken) / 10_000 - 0.05) < 0.01)
        // Every datagram left at its submission instant or exactly 10 ms later.
        let delays = sent.map { Self.instant($0.index, every: .milliseconds(1)).duration(to: $0.at) }
        #expect(delays.allSatisfy { $0 == .zero || $0 == .milliseconds(10) })
        #expect(delays.count { $0 == .milliseconds(10) } == overtaken)
        Self.expectStatisticsAddUp(impairment.statistics, sent: sent)
    }

    @Test("a datagram held back less than the spacing is not overtaken, so not counted as reordered")
    func reorderWithoutOvertaking() throws {
        var impairment = try Self.impairment(.init(reorder: 0.5, reorderDelay: .milliseconds(1)))
        let sent = Self.run(&impairment, count: 1_000, every: .milliseconds(5))
        #expect(sent.map(\.index) == Array(0..<1_000))
        #expect(impairment.statistics.datagramsReordered == 0)
    }

    // MARK: - Duplication

    @Test("10 % duplication sends 10 % ± 1 % of the datagrams twice, and the rest once")
    func duplicate() throws {
        var impairment = try Self.impairment(.init(duplicate: 0.1))
        let sent = Self.run(&impairment, count: 20_000, every: .milliseconds(1))
        var copies = [Int](repeating: 0, count: 20_000)
        for datagram in sent { copies[datagram.index] += 1 }
        #expect(copies.allSatisfy { $0 == 1 || $0 == 2 })
        let twice = copies.count { $0 == 2 }
        #expect(impairment.statistics.datagramsDuplicated == twice)
        #expect(abs(Double(twice) / 20_000 - 0.1) < 0.01)
        #expect(sent.map(\.index) == sent.map(\.index).sorted(), "a copy follows its original")
        #expect(impairment.statistics.datagramsReordered == 0)
        Self.expectStatisticsAddUp(impairment.statistics, sent: sent)
    }

    // MARK: - Bandwidth

    @Test("a 1 Mbit/s cap on 2 Mbit/s of input drops about half, sends at 1 Mbit/s, and never queues longer than the limit")
    func bandwidthCap() throws {
        // 1,000-byte datagrams every 4 ms: 2 Mbit/s for 10 s.
        var impairment = try Self.impairment(.init(bandwidth: 1_000_000))
        let sent = Self.run(&impairment, count: 2_500, every: .milliseconds(4), size: 1_000)
        let statistics = impairment.statistics
        #expect(statistics.datagramsLost == 0, "tail drops are not loss")
        let dropped = Double(statistics.datagramsDroppedByBandwidth) / 2_500
        #expect(dropped > 0.45 && dropped < 0.55, "dropped \(dropped)")
        #expect(sent.map(\.index) == sent.map(\.index).sorted())
        // Each datagram takes 8 ms on the link: back to back, exactly 1 Mbit/s.
        #expect(zip(sent, sent.dropFirst()).allSatisfy { $0.at.duration(to: $1.at) >= .milliseconds(8) })
        let seconds = sent.first!.at.duration(to: sent.last!.at).seconds
        let rate = Double((sent.count - 1) * 8_000) / seconds
        #expect(abs(rate - 1_000_000) < 10_000, "rate \(rate) bit/s")
        // Queued at most 200 ms before the first bit, plus 8 ms on the link.
        #expect(sent.allSatisfy { Self.instant($0.index, every: .milliseconds(4)).duration(to: $0.at) <= .milliseconds(208) })
        Self.expectStatisticsAddUp(statistics, sent: sent)
    }

    @Test("under the cap nothing is dropped and each datagram is delayed by its serialization time")
    func bandwidthUnderCap() throws {
        var impairment = try Self.impairment(.init(bandwidth: 1_000_000))
        let sent = Self.run(&impairment, count: 500, every: .milliseconds(16), size: 1_000)
        #expect(sent.map(\.index) == Array(0..<500))
        #expect(sent.allSatisfy { Self.instant($0.index, every: .milliseconds(16)).duration(to: $0.at) == .milliseconds(8) })
        #expect(impairment.statistics.datagramsDroppedByBandwidth == 0)
    }

    @Test("memory stays bounded: with a cap the queue holds no more than the queue limit's worth")
    func boundedQueue() throws {
        // 10 Mbit/s into 1 Mbit/s with a 100 ms limit: at most 100 ms / 8 ms + 1 = 13 datagrams wait.
        var impairment = try Self.impairment(.init(bandwidth: 1_000_000, queueLimit: .milliseconds(100)))
        var largest = 0
        let bytes = [UInt8](repeating: 0, count: 1_000)
        for index in 0..<5_000 {
            let now = Self.instant(index, every: .microseconds(800))
            impairment.submit(bytes, now: now)
            while case .send = impairment.poll(now: now) {}
            largest = max(largest, impairment.pendingCount)
        }
        #expect(largest <= 14)
        #expect(largest >= 12, "the queue did fill")
    }

    // MARK: - Everything at once

    @Test("with everything on, the statistics add up and every datagram leaves at most once per copy")
    func statisticsAddUp() throws {
        var impairment = try Self.impairment(Self.everything)
        let sent = Self.run(&impairment, count: 5_000, every: .milliseconds(1), size: 100)
        let statistics = impairment.statistics
        #expect(statistics.datagramsSubmitted == 5_000)
        #expect(statistics.datagramsLost > 0)
        #expect(statistics.datagramsDroppedByBandwidth > 0)
        #expect(statistics.datagramsDuplicated > 0)
        #expect(statistics.datagramsReordered == Self.overtaken(sent))
        #expect(statistics.datagramsReordered > 0)
        Self.expectStatisticsAddUp(statistics, sent: sent)
        #expect(impairment.poll(now: .init(nanoseconds: .max)) == .idle)
    }

    // MARK: - Validation and parsing

    @Test("invalid settings are refused with a message that names the setting as the API spells it, and an example", arguments: [
        (NetworkImpairment.Configuration(loss: 1.5), "NetworkImpairment.Configuration.loss must be from 0 to 1, i.e. 0% to 100% (got 1.5, i.e. 150%), e.g. 0.02 for 2%"),
        (NetworkImpairment.Configuration(loss: -0.1), "e.g. 0.02 for 2%"),
        (NetworkImpairment.Configuration(loss: .nan), "NetworkImpairment.Configuration.loss"),
        (NetworkImpairment.Configuration(reorder: 2), "NetworkImpairment.Configuration.reorder must be from 0 to 1"),
        (NetworkImpairment.Configuration(duplicate: .infinity), "NetworkImpairment.Configuration.duplicate"),
        (NetworkImpairment.Configuration(jitter: .milliseconds(-1)), "NetworkImpairment.Configuration.jitter must be 0 or more (got -1ms), e.g. .milliseconds(20)"),
        (NetworkImpairment.Configuration(jitter: .seconds(7_200)), "NetworkImpairment.Configuration.jitter must be at most 1h"),
        (NetworkImpairment.Configuration(reorderDelay: .milliseconds(-5)), "NetworkImpairment.Configuration.reorderDelay must be 0 or more (got -5ms), e.g. .milliseconds(10)"),
        (NetworkImpairment.Configuration(bandwidth: 0), "NetworkImpairment.Configuration.bandwidth must be more than 0 bits per second (got 0), e.g. 2_000_000 for 2 Mbit/s"),
        (NetworkImpairment.Configuration(queueLimit: .seconds(-1)), "NetworkImpairment.Configuration.queueLimit must be 0 or more"),
        (NetworkImpairment.Configuration(burstLoss: .init(rate: 1, meanBurstLength: 4)), "NetworkImpairment.Configuration.burstLoss rate must be at least 0 and below 1, i.e. below 100% (got 1, i.e. 100%)"),
        (NetworkImpairment.Configuration(burstLoss: .init(rate: 0.05, meanBurstLength: 0.5)), "NetworkImpairment.Configuration.burstLoss meanBurstLength must be 1 packet or more (got 0.5), e.g. 8"),
        (NetworkImpairment.Configuration(burstLoss: .init(rate: 0.7, meanBurstLength: 2)), "needs bursts of at least 2.34 packets"),
        (NetworkImpairment.Configuration(burstLoss: .init(rate: 0.8, meanBurstLength: 2)), "NetworkImpairment.Configuration.burstLoss: a loss rate of 80% needs bursts of at least 4 packets on average (got a mean burst length of 2): raise the mean burst length or lower the rate"),
    ])
    func invalid(configuration: NetworkImpairment.Configuration, message: String) {
        let error = #expect(throws: PlayoutError.self) { try NetworkImpairment(configuration: configuration) }
        #expect(error?.code == .invalidImpairment)
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("--") == false, "library messages name the API, not command-line options")
    }

    @Test("the edges of every range are accepted")
    func validEdges() throws {
        _ = try NetworkImpairment(configuration: .init(
            loss: 1, burstLoss: .init(rate: 0.5, meanBurstLength: 1), jitter: .zero, reorder: 1,
            reorderDelay: .zero, duplicate: 1, bandwidth: 1, queueLimit: .zero
        ))
        _ = try NetworkImpairment(configuration: .init(burstLoss: .init(rate: 0, meanBurstLength: 1)))
        // The suggestion in the message for 80%/2 is accepted.
        _ = try NetworkImpairment(configuration: .init(burstLoss: .init(rate: 0.8, meanBurstLength: 4)))
        _ = try NetworkImpairment(configuration: .init(burstLoss: .init(rate: 0.7, meanBurstLength: 2.34)))
    }

    @Test("percentages parse as typed on the command line", arguments: [
        ("2%", 0.02), ("0.02", 0.02), (" 12.5 % ", 0.125), ("100%", 1.0), ("0", 0.0), ("0%", 0.0), ("1", 1.0), (".5%", 0.005),
    ])
    func parsePercentage(text: String, expected: Double) throws {
        #expect(abs(try NetworkImpairment.parsePercentage(text) - expected) < 1e-12)
    }

    @Test("bad percentages are refused with a message that says what to type", arguments: [
        ("abc", "'abc' is not a percentage: write e.g. 2% or 0.02"),
        ("", "is not a percentage"),
        ("%", "is not a percentage"),
        ("nan", "is not a percentage"),
        ("1e400", "is not a percentage"),
        ("150%", "'150%' is not between 0% and 100%"),
        ("-1%", "is not between 0% and 100%"),
        ("2", "'2' is more than 1: write 2% for 2 percent"),
    ])
    func parsePercentageErrors(text: String, message: String) {
        let error = #expect(throws: PlayoutError.self) { try NetworkImpairment.parsePercentage(text) }
        #expect(error?.code == .invalidImpairment)
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
    }
}

// MARK: - The end of a run (issue 14, item 7)

extension NetworkImpairmentTests {
    /// What a publisher's run does, on a manual clock: submits a datagram every `interval` until
    /// `duration`, sending what the simulation releases; then drains for at most the drain
    /// limit. Returns what was sent and when the drain ended.
    static func publish(
        _ impairment: inout NetworkImpairment, duration: Duration, every interval: Duration = .milliseconds(10)
    ) -> (sent: [Sent], end: MonotonicInstant, drainEnded: MonotonicInstant) {
        let clock = ManualClock(start: start)
        let end = start.advanced(by: duration)
        var sent: [Sent] = []
        var index = 0
        var nextSubmission = start
        while clock.now < end {
            while nextSubmission <= clock.now {
                impairment.submit(datagram(index), now: clock.now)
                index += 1
                nextSubmission = nextSubmission.advanced(by: interval)
            }
            var wake = min(nextSubmission, end)
            polling: while true {
                switch impairment.poll(now: clock.now) {
                case .send(let bytes, _): sent.append(Sent(index: Self.index(of: bytes), bytes: bytes.count, at: clock.now))
                case .wait(until: let instant):
                    wake = min(wake, instant)
                    break polling
                case .idle: break polling
                }
            }
            clock.advance(to: wake)
        }
        let deadline = clock.now.advanced(by: impairment.configuration.drainLimit)
        draining: while true {
            switch impairment.drain(now: clock.now, deadline: deadline) {
            case .send(let bytes, _): sent.append(Sent(index: Self.index(of: bytes), bytes: bytes.count, at: clock.now))
            case .wait(until: let instant):
                #expect(instant <= deadline, "the drain never waits past its deadline")
                clock.advance(to: instant)
            case .idle: break draining
            }
        }
        return (sent, end, clock.now)
    }

    @Test("the drain limit is twice the jitter, between 1 s and 2 s", arguments: [
        (Duration.zero, Duration.seconds(1)), (.milliseconds(20), .seconds(1)), (.milliseconds(500), .seconds(1)),
        (.milliseconds(750), .milliseconds(1_500)), (.seconds(1), .seconds(2)), (.seconds(10), .seconds(2)), (.seconds(3_600), .seconds(2)),
    ])
    func drainLimit(jitter: Duration, limit: Duration) {
        #expect(NetworkImpairment.Configuration(jitter: jitter).drainLimit == limit)
    }

    @Test("a 2 s run with 10 s of jitter ends 2 s after its end at the latest; what the network still holds is dropped and counted, deterministically")
    func largeJitterIsBounded() throws {
        var impairment = try Self.impairment(.init(jitter: .seconds(10), seed: 3))
        let run = Self.publish(&impairment, duration: .seconds(2))
        #expect(run.drainEnded <= run.end.advanced(by: .seconds(2)), "ended \(run.end.duration(to: run.drainEnded)) after the end")
        let statistics = impairment.statistics
        #expect(statistics.datagramsSubmitted == 200)
        #expect(statistics.datagramsDroppedAtEnd > 150, "almost everything waits behind the first long delay: \(statistics)")
        #expect(statistics.datagramsDroppedAtEnd + statistics.datagramsSent == 200)
        #expect(impairment.pendingCount == 0)
        #expect(impairment.poll(now: run.drainEnded) == .idle)
        Self.expectStatisticsAddUp(statistics, sent: run.sent)
        #expect(run.sent.allSatisfy { $0.at <= run.end.advanced(by: .seconds(2)) })
        // The same seed gives the same run, instant for instant.
        var again = try Self.impairment(.init(jitter: .seconds(10), seed: 3))
        let replay = Self.publish(&again, duration: .seconds(2))
        #expect(replay.sent == run.sent && replay.drainEnded == run.drainEnded && again.statistics == statistics)
    }

    @Test("a 1 h jitter, a 1 h reorder delay and a full 1 h bandwidth queue are all bounded by the same drain", arguments: [
        NetworkImpairment.Configuration(jitter: .seconds(3_600)),
        NetworkImpairment.Configuration(reorder: 0.5, reorderDelay: .seconds(3_600)),
        NetworkImpairment.Configuration(bandwidth: 1_000, queueLimit: .seconds(3_600)),  // 32 ms a datagram, one every 10 ms
    ])
    func everyHoldIsBounded(configuration: NetworkImpairment.Configuration) throws {
        var impairment = try Self.impairment(configuration)
        let run = Self.publish(&impairment, duration: .seconds(2))
        #expect(run.end.duration(to: run.drainEnded) <= .seconds(2))
        #expect(impairment.statistics.datagramsDroppedAtEnd > 0 && impairment.pendingCount == 0)
        Self.expectStatisticsAddUp(impairment.statistics, sent: run.sent)
    }

    @Test("a jitter of 20 ms drains completely, well before the limit: nothing dropped at the end")
    func smallJitterDrainsCompletely() throws {
        var impairment = try Self.impairment(.init(jitter: .milliseconds(20), seed: 5))
        let run = Self.publish(&impairment, duration: .seconds(2))
        #expect(impairment.statistics.datagramsDroppedAtEnd == 0)
        #expect(impairment.statistics.datagramsSent == 200)
        #expect(run.end.duration(to: run.drainEnded) < .milliseconds(200), "idle as soon as the last datagram left")
        Self.expectStatisticsAddUp(impairment.statistics, sent: run.sent)
    }

    @Test("a datagram due at the drain deadline exactly is sent; one due a nanosecond later is dropped, with what follows it")
    func deadlineEdge() throws {
        var impairment = try Self.impairment(.init(reorder: 1, reorderDelay: .seconds(2)))
        let deadline = Self.start.advanced(by: .seconds(2))
        impairment.submit(Self.datagram(0), now: Self.start)  // leaves at the deadline
        impairment.submit(Self.datagram(1), now: Self.start.advanced(by: .nanoseconds(1)))
        impairment.submit(Self.datagram(2), now: Self.start.advanced(by: .seconds(1)))
        #expect(impairment.drain(now: Self.start.advanced(by: .seconds(1)), deadline: deadline) == .wait(until: deadline))
        #expect(impairment.drain(now: deadline, deadline: deadline) == .send(Self.datagram(0), label: 0))
        #expect(impairment.drain(now: deadline, deadline: deadline) == .idle)
        #expect(impairment.statistics.datagramsDroppedAtEnd == 2 && impairment.statistics.datagramsSent == 1 && impairment.pendingCount == 0)
    }

    @Test("hostile ends: a deadline already past sends what is due and drops the rest; draining nothing counts nothing; duplicates are dropped copy by copy")
    func hostileEnds() throws {
        var impairment = try Self.impairment(.init(jitter: .seconds(1), duplicate: 1, seed: 9))
        #expect(impairment.drain(now: Self.start, deadline: Self.start.advanced(by: .seconds(-5))) == .idle)
        #expect(impairment.statistics == NetworkImpairment.Statistics())
        for index in 0..<10 { impairment.submit(Self.datagram(index), now: Self.start) }
        #expect(impairment.pendingCount == 20)
        var sent = 0
        let late = Self.start.advanced(by: .seconds(2))
        while case .send = impairment.drain(now: late, deadline: Self.start) { sent += 1 }
        #expect(sent + impairment.statistics.datagramsDroppedAtEnd == 20 && impairment.pendingCount == 0)
        #expect(impairment.discardPending() == 0)
        // A stop: everything held is dropped at once.
        impairment.submit(Self.datagram(10), now: late)
        #expect(impairment.discardPending() == 2)
        #expect(impairment.statistics.datagramsDroppedAtEnd + sent == 22)
    }

    @Test("An outage loses exactly the datagrams submitted inside its window, measured from the first datagram")
    func outageWindow() throws {
        var configuration = NetworkImpairment.Configuration()
        configuration.outages = [Duration.milliseconds(100)..<Duration.milliseconds(200)]
        #expect(!configuration.isNone)
        var impairment = try Self.impairment(configuration)
        let sent = Self.run(&impairment, count: 30, every: .milliseconds(10))
        // Datagrams 10…19 were submitted at 100…190 ms.
        #expect(sent.map(\.index) == Array(0..<10) + Array(20..<30))
        #expect(impairment.statistics.datagramsLost == 10)
        #expect(impairment.statistics.datagramsLostInOutage == 10)
        Self.expectStatisticsAddUp(impairment.statistics, sent: sent)
    }

    @Test("A negative outage bound is refused, naming the setting")
    func negativeOutage() {
        var configuration = NetworkImpairment.Configuration()
        configuration.outages = [Duration.milliseconds(-5)..<Duration.milliseconds(200)]
        #expect(throws: PlayoutError.self) { try NetworkImpairment(configuration: configuration) }
    }
}
