import PlayoutSwarm
import Testing

/// A viewer's outcome with plausible values, varied by `viewer`.
func sampleOutcome(_ viewer: Int, shard: Int = 0, state: String = "ended", decoded: Bool = true) -> ViewerOutcome {
    ViewerOutcome(
        viewer: viewer, shard: shard, state: state, decoded: decoded, startupTime: 0.4 + Double(viewer) * 0.01, renderedRatio: 1 - Double(viewer % 7) * 0.001,
        framesRendered: 900 - viewer, freezeCount: viewer % 3, freezeRatio: Double(viewer % 3) * 0.0025, endToEndLatency: 0.25 + Double(viewer) * 0.001,
        jitterBufferDelay: 0.2 + Double(viewer % 5) * 0.003, bitrate: 2_500_000 + Double(viewer) * 1_000, packetsLost: viewer % 4, nackCount: viewer % 6,
        framesDecoded: decoded ? 900 - viewer : nil)
}

@Suite("ViewerOutcome measures")
struct ViewerOutcomeMeasuresTests {
    @Test("every measure, in the documented order and names, nearest-rank across viewers")
    func order() throws {
        let outcomes = (0..<100).map { sampleOutcome($0) }
        let measures = ViewerOutcome.measures(outcomes)
        #expect(measures.map(\.name) == [
            "startupTime", "renderedRatio", "framesRendered", "freezeCount", "freezeRatio", "endToEndLatency", "jitterBufferDelay", "bitrate",
            "packetsLost", "nackCount", "framesDecoded",
        ])
        let startup = try #require(measures.first { $0.name == "startupTime" }?.spread)
        // 100 viewers 0.40 … 1.39: p50 is the 50th (0.89), p95 the 95th (1.34), p99 the 99th (1.38).
        #expect(startup.count == 100)
        #expect(abs(startup.min - 0.40) < 1e-9 && abs(startup.p50 - 0.89) < 1e-9 && abs(startup.p95 - 1.34) < 1e-9)
        #expect(abs(startup.p99 - 1.38) < 1e-9 && abs(startup.max - 1.39) < 1e-9)
        let frames = try #require(measures.first { $0.name == "framesRendered" }?.spread)
        #expect(frames.min == 801 && frames.max == 900)
        // Every measure is one of the swarm's, with its unit (one list for every view of a run).
        let known = Set(SwarmMeasure.known.map(\.name))
        #expect(ViewerOutcome.measureDefinitions.allSatisfy { known.contains($0.name) })
        #expect(SwarmMeasure.named("bitrate").unit == .bitsPerSecond && SwarmMeasure.named("freezeRatio").unit == .ratio)
        #expect(SwarmMeasure.named("startupTime").unit == .seconds && SwarmMeasure.named("nackCount").unit == .count)
        #expect(SwarmMeasure.named("startup.ice_connected").unit == .seconds && SwarmMeasure.named("nope").unit == .count)
    }

    @Test("nil values are left out, not 0; a measure no viewer has is left out of the list")
    func nilValues() throws {
        // Two viewers decoded (100 and 50 frames), three did not: framesDecoded is over the two.
        var outcomes = [sampleOutcome(0), sampleOutcome(1)]
        outcomes[0].framesDecoded = 100
        outcomes[1].framesDecoded = 50
        for viewer in 2..<5 { outcomes.append(sampleOutcome(viewer, decoded: false)) }
        let decoded = try #require(ViewerOutcome.measures(outcomes).first { $0.name == "framesDecoded" }?.spread)
        #expect(decoded.count == 2 && decoded.min == 50 && decoded.max == 100)

        // Nobody decoded, nobody has a latency or start-up time: those measures are absent.
        let failed = (0..<3).map { viewer in
            var outcome = sampleOutcome(viewer, state: "failed: ICE timed out", decoded: false)
            outcome.startupTime = nil
            outcome.endToEndLatency = nil
            outcome.renderedRatio = .nan
            return outcome
        }
        let names = ViewerOutcome.measures(failed).map(\.name)
        #expect(!names.contains("framesDecoded") && !names.contains("endToEndLatency") && !names.contains("startupTime"))
        #expect(!names.contains("renderedRatio"), "a non-finite value is no value")
        #expect(names.contains("framesRendered") && names.contains("bitrate"))
        #expect(ViewerOutcome.measures([]).isEmpty)
    }
}
