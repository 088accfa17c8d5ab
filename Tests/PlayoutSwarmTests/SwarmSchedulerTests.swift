import PlayoutCore
import PlayoutSwarm
import Testing

@Suite("Swarm scheduler: ramp, churn and the end, on a manual timeline")
struct SwarmSchedulerTests {
    static let start = MonotonicInstant(nanoseconds: 1_000_000_000)

    static func at(_ seconds: Double) -> MonotonicInstant {
        start.advanced(by: .nanoseconds(Int64(seconds * 1e9)))
    }

    @Test("Without a ramp every viewer of the shard starts at once, by its number in the whole run")
    func allAtOnce() {
        var scheduler = SwarmScheduler(viewers: 10..<15, ramp: nil, churn: nil, duration: .seconds(5), seed: 1, start: Self.start)
        #expect(scheduler.advance(now: Self.start) == (10..<15).map { .start(viewer: $0, session: 0) })
        #expect(scheduler.nextDeadline == Self.at(5))
        #expect(scheduler.advance(now: Self.at(4.999)) == [])
        #expect(scheduler.advance(now: Self.at(5)) == [.end])
        #expect(scheduler.isEnded && scheduler.nextDeadline == nil && scheduler.advance(now: Self.at(6)) == [])
    }

    @Test("A ramp of 20/s starts viewer k at k/20 s; a late advance starts every viewer due, in order")
    func ramp() {
        var scheduler = SwarmScheduler(viewers: 0..<100, ramp: 20, churn: nil, duration: nil, seed: 1, start: Self.start)
        #expect(scheduler.advance(now: Self.start) == [.start(viewer: 0, session: 0)])
        #expect(scheduler.nextDeadline == Self.at(0.05))
        #expect(scheduler.advance(now: Self.at(0.049)) == [])
        #expect(scheduler.advance(now: Self.at(0.05)) == [.start(viewer: 1, session: 0)])
        // A controller that woke late (a busy machine) catches up.
        #expect(scheduler.advance(now: Self.at(0.21)) == (2...4).map { .start(viewer: $0, session: 0) })
        #expect(scheduler.joined == 5)
        _ = scheduler.advance(now: Self.at(10))
        #expect(scheduler.joined == 100 && scheduler.nextDeadline == nil)
    }

    @Test("Churn: lifetimes drawn with the mean asked for; each leave is followed by the next session's start; seeded")
    func churn() {
        func run(seed: UInt64) -> [(Double, SwarmScheduler.Action)] {
            var scheduler = SwarmScheduler(viewers: 0..<200, ramp: nil, churn: .seconds(10), duration: .seconds(60), seed: seed, start: Self.start)
            var log: [(Double, SwarmScheduler.Action)] = []
            var now = Self.start
            while let next = scheduler.nextDeadline {
                now = max(now, next)
                for action in scheduler.advance(now: now) { log.append((Self.start.duration(to: now).seconds, action)) }
            }
            return log
        }
        let log = run(seed: 7)
        #expect(log.map(\.1) == run(seed: 7).map(\.1), "the same seed, the same plan")
        #expect(log.map(\.1) != run(seed: 8).map(\.1))
        let leaves = log.filter { if case .leave = $0.1 { true } else { false } }
        // 200 viewers × 60 s / 10 s mean ≈ 1,200 sessions ending early (Poisson: ± 3σ ≈ ± 105).
        #expect((1_050...1_350).contains(leaves.count))
        for (index, entry) in log.enumerated() {
            guard case .leave(let viewer, let session) = entry.1 else { continue }
            #expect(log[index + 1].1 == .start(viewer: viewer, session: session + 1))
        }
        #expect(log.last?.1 == .end && log.last?.0 == 60)
        // Every viewer's sessions are numbered 0, 1, 2 … in order.
        var sessions: [Int: Int] = [:]
        for case (_, .start(let viewer, let session)) in log {
            #expect(session == sessions[viewer, default: -1] + 1)
            sessions[viewer] = session
        }
    }

    @Test("Decode modes: all, none, sample:K (viewers 0, K, 2K …); bad forms refused with the accepted ones")
    func decode() throws {
        #expect(try SwarmDecode(parsing: "all") == .all)
        #expect(try SwarmDecode(parsing: "none") == .none)
        #expect(try SwarmDecode(parsing: "sample:20") == .sample(20))
        #expect(try SwarmDecode(parsing: "sample:1") == .all)
        #expect((0..<100).filter { SwarmDecode.sample(20).decodes(viewer: $0) } == [0, 20, 40, 60, 80])
        for bad in ["", "some", "sample:", "sample:0", "sample:-3", "sample:x", "SAMPLE:2", "sample:99999999999999999999"] {
            #expect(throws: PlayoutError.self) { try SwarmDecode(parsing: bad) }
        }
    }
}
