import PlayoutCore
import PlayoutJitter
import Testing

/// The gradual playout-delay transition (DESIGN.md "Transition modes"): the render clock runs at
/// most `rate` slower or faster until the delay in effect reaches the new value — no delay pause,
/// no skip — and settles after |Δdelay| / rate. Driven on simulated time, like the immediate mode.
@Suite("PlayoutScheduler: gradual delay transitions")
struct GradualTransitionTests {
    /// Gaps between consecutive renders, in order, with the instant of the later render.
    static func gaps(_ simulation: Simulation) -> [(at: MonotonicInstant, gap: Duration)] {
        zip(simulation.renders, simulation.renders.dropFirst()).map { ($1.at, $0.at.duration(to: $1.at)) }
    }

    /// How long after `change` the renders are again one frame interval apart (± 1 ms), i.e. the
    /// delay in effect reached its target.
    static func settleTime(_ simulation: Simulation, after change: MonotonicInstant) -> Duration? {
        let later = gaps(simulation).filter { $0.at > change }
        guard let last = later.lastIndex(where: { ($0.gap - simulation.interval) > .milliseconds(1) || (simulation.interval - $0.gap) > .milliseconds(1) }) else {
            return .zero
        }
        return change.duration(to: later[last].at)
    }

    @Test("230 ms → 1.23 s at 10 % and 25 %: no pause, no skip, gaps stretched by at most 1 / (1 − rate), settled after Δdelay / rate", arguments: [0.1, 0.25])
    func gradualIncrease(rate: Double) {
        var simulation = Simulation(delay: .milliseconds(230))
        simulation.run(for: .seconds(3))
        let change = simulation.now
        simulation.scheduler.setDelay(.milliseconds(1_230), transition: .gradual(rate: rate), now: change)
        simulation.run(for: .seconds(16))

        let statistics = simulation.scheduler.statistics
        #expect(simulation.skips.isEmpty)
        #expect(statistics.delayPauseCount == 0 && statistics.freezeCount == 0)
        // A frame already released for decoding (up to the decode lead before its render time)
        // keeps its render time, so the first gap stretches by at most that lead × rate more.
        let lead = simulation.scheduler.configuration.decodeLead
        let stretched = (simulation.interval + lead * rate) / (1 - rate)
        #expect(simulation.largestRenderGap <= stretched + .microseconds(1), "\(simulation.largestRenderGap)")
        // Between frames both released after the change: the interval / (1 − rate) at most.
        let later = zip(simulation.renders, simulation.renders.dropFirst()).filter { $0.0.at > change.advanced(by: lead) }.map { $0.0.at.duration(to: $0.1.at) }
        #expect(later.allSatisfy { $0 <= simulation.interval / (1 - rate) + .microseconds(1) })
        let settle = try! #require(Self.settleTime(simulation, after: change))
        let predicted = Duration.seconds(1) / rate
        // Settled when the last stretched gap ends: within one frame interval of Δdelay / rate.
        #expect(settle <= predicted + simulation.interval && settle >= predicted - simulation.interval * 2, "settled after \(settle), predicted \(predicted)")
        // Afterwards every frame is due at its arrival's local time + the new delay, exactly.
        let last = simulation.renders.last!
        #expect(simulation.arrival(of: last.frame.index).advanced(by: .milliseconds(1_230)) == last.at)
        #expect(simulation.scheduler.delayInEffect(at: simulation.now) == .milliseconds(1_230))
    }

    @Test("1.23 s → 230 ms at 10 %: no skip, gaps shortened by at most 1 / 1.1, settled after 10 s, then on time")
    func gradualDecrease() {
        var simulation = Simulation(delay: .milliseconds(1_230))
        simulation.run(for: .seconds(3))
        let change = simulation.now
        simulation.scheduler.setDelay(.milliseconds(230), transition: .gradual(rate: 0.1), now: change)
        simulation.run(for: .seconds(16))

        #expect(simulation.skips.isEmpty)
        #expect(simulation.scheduler.statistics.framesSkipped == 0 && simulation.scheduler.statistics.totalSkippedDuration == .zero)
        let lead = simulation.scheduler.configuration.decodeLead
        let shortest = Self.gaps(simulation).map(\.gap).min()!
        #expect(shortest >= (simulation.interval - lead * 0.1) / 1.1 - .microseconds(1), "\(shortest)")
        let settle = try! #require(Self.settleTime(simulation, after: change))
        #expect(settle <= .seconds(10) + simulation.interval && settle >= .seconds(10) - simulation.interval * 2, "\(settle)")
        let last = simulation.renders.last!
        #expect(simulation.arrival(of: last.frame.index).advanced(by: .milliseconds(230)) == last.at)
    }

    @Test("the delay in effect moves at the rate and stops at the target, in both directions")
    func delayInEffect() {
        var scheduler = PlayoutScheduler<Int>(delay: .seconds(1))
        let t0 = MonotonicInstant(nanoseconds: 5_000_000_000)
        scheduler.setDelay(.seconds(3), transition: .gradual(rate: 0.1), now: t0)
        #expect(scheduler.delay == .seconds(3))
        #expect(scheduler.delayInEffect(at: t0) == .seconds(1))
        #expect(scheduler.delayInEffect(at: t0.advanced(by: .seconds(5))) == .milliseconds(1_500))
        #expect(scheduler.delayInEffect(at: t0.advanced(by: .seconds(20))) == .seconds(3))
        #expect(scheduler.delayInEffect(at: t0.advanced(by: .seconds(60))) == .seconds(3))
        // A change during the ramp starts from where it has got to: last change wins.
        let t1 = t0.advanced(by: .seconds(10))  // in effect: 2 s
        scheduler.setDelay(.milliseconds(500), transition: .gradual(rate: 0.5), now: t1)
        #expect(scheduler.delayInEffect(at: t1) == .seconds(2))
        #expect(scheduler.delayInEffect(at: t1.advanced(by: .seconds(1))) == .milliseconds(1_500))
        #expect(scheduler.delayInEffect(at: t1.advanced(by: .seconds(3))) == .milliseconds(500))
        // An immediate change ends the ramp: the rest of the way at once.
        var other = PlayoutScheduler<Int>(delay: .seconds(1))
        other.setDelay(.seconds(3), transition: .gradual(rate: 0.1), now: t0)
        other.setDelay(.seconds(4), transition: .immediate, now: t0.advanced(by: .seconds(10)))
        #expect(other.delayInEffect(at: t0.advanced(by: .seconds(10))) == .seconds(4))
    }

    @Test("an immediate change during a gradual one pauses for what is left from the delay in effect")
    func immediateDuringGradual() {
        var simulation = Simulation(delay: .milliseconds(230))
        simulation.run(for: .seconds(3))
        simulation.scheduler.setDelay(.milliseconds(2_230), transition: .gradual(rate: 0.1), now: simulation.now)
        simulation.run(for: .seconds(5))  // in effect now: 730 ms
        simulation.scheduler.setDelay(.milliseconds(1_730), transition: .immediate, now: simulation.now)
        simulation.run(for: .seconds(4))
        let statistics = simulation.scheduler.statistics
        #expect(statistics.delayPauseCount == 1)
        let pause = statistics.totalDelayPausesDuration
        #expect(pause >= .milliseconds(1_000) - simulation.interval && pause <= .milliseconds(1_000) + simulation.interval, "\(pause)")
        #expect(simulation.skips.isEmpty)
    }

    @Test("transitions parse from immediate and gradual:RATE; bad rates say what to write", arguments: [
        ("immediate", PlayoutDelayTransition.immediate), ("gradual:10%", .gradual(rate: 0.1)), ("gradual:0.25", .gradual(rate: 0.25)),
        ("gradual:90%", .gradual(rate: 0.9)),
    ])
    func parsing(text: String, expected: PlayoutDelayTransition) throws {
        #expect(try PlayoutDelayTransition(parsing: text) == expected)
    }

    @Test("hostile transitions are one clear error", arguments: ["", "gradual", "gradual:", "gradual:0%", "gradual:-5%", "gradual:100%", "gradual:nan", "gradual:inf", "gradual:1e400", "gradual:10%%", "slow", "gradual:ten"])
    func hostileParsing(text: String) {
        #expect(throws: PlayoutError.self) { try PlayoutDelayTransition(parsing: text) }
        do {
            _ = try PlayoutDelayTransition(parsing: text)
        } catch {
            #expect(error.code == .invalidTransition)
            #expect(error.message.contains("gradual:10%"), "\(error.message)")
        }
    }
}
