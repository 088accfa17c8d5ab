import PlayoutCore
import PlayoutSwarm
import Testing

@Suite("SLOs: parsed, checked against the final aggregate, hostile text refused")
struct SwarmObjectiveTests {
    static func sample(startup: [Double], freezeRatio: [Double], failed: Int = 0) -> SwarmSample {
        SwarmSample(
            elapsed: .seconds(30), viewers: startup.count, connected: startup.count - failed, connecting: 0, failed: failed, ended: 0,
            measures: [("startupTime", Spread(startup)!), ("freezeRatio", Spread(freezeRatio)!)],
            tester: TesterLoad(cpuCores: 1, cores: 2, latePolls: 0, renderErrorP99: nil, droppedTelemetry: 0, residentBytes: 0, saturated: false))
    }

    @Test("The issue's example: startup.p95<2s,freezeRatio.p99<1% — units, aliases, verdicts")
    func example() throws {
        let objectives = try SwarmObjective.parseList("startup.p95<2s, freezeRatio.p99<1%,failed<1")
        #expect(objectives.map(\.measure) == ["startupTime", "freezeRatio", "failed"])
        #expect(objectives.map(\.bound) == [2, 0.01, 1])
        let good = Self.sample(startup: (1...100).map { Double($0) / 100 }, freezeRatio: Array(repeating: 0.001, count: 100))
        #expect(objectives.map { $0.verdict(good).held } == [true, true, true])
        let bad = Self.sample(startup: (1...100).map { Double($0) / 20 }, freezeRatio: Array(repeating: 0.001, count: 99) + [0.5], failed: 2)
        let verdicts = objectives.map { $0.verdict(bad) }
        #expect(verdicts.map(\.held) == [false, true, false])  // p99 of 100 values is the 99th: 0.001
        #expect(verdicts[0].measured == 4.75 && verdicts[2].measured == 2)
    }

    @Test("Comparisons and units: <=, >, >=, ms, k, M, plain numbers")
    func forms() throws {
        #expect(try SwarmObjective(parsing: "endToEndLatency.max<=500ms").bound == 0.5)
        #expect(try SwarmObjective(parsing: "bitrate.p50>2.5M").bound == 2_500_000)
        #expect(try SwarmObjective(parsing: "bitrate.min>=800k").comparison == .atLeast)
        #expect(try SwarmObjective(parsing: "connected>=100").statistic == nil)
        #expect(try SwarmObjective(parsing: "renderedRatio.p50>0.99").comparison == .above)
        #expect(try SwarmObjective.parseList("").isEmpty)
    }

    @Test("A measure no viewer had is a breach, not a pass")
    func unknownMeasure() throws {
        let verdict = try SwarmObjective(parsing: "jitterBufferDelay.p95<100ms").verdict(Self.sample(startup: [1], freezeRatio: [0]))
        #expect(verdict.measured == nil && !verdict.held)
    }

    @Test("Hostile objectives get a clear error naming the objective", arguments: [
        "startupTime<2s", "startupTime.p42<2s", ".p95<2s", "startupTime.p95", "startupTime.p95<", "startupTime.p95<abc",
        "startupTime.p95<2h", "startupTime.p95<nan", "startupTime.p95<inf", "<<<", String(repeating: "x", count: 10_000), "a.p95<1e999",
    ])
    func hostile(text: String) {
        #expect(throws: PlayoutError.self) { try SwarmObjective(parsing: text) }
    }
}
