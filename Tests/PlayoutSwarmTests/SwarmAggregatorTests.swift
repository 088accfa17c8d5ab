import Playout
import PlayoutCore
import PlayoutSwarm
import Testing

@Suite("Swarm aggregate: each viewer's measures, their spread, the phases counted")
struct SwarmAggregatorTests {
    static func viewer(_ number: Int, rendered: Int, late: Int = 0, dropped: Int = 0, freezes: Duration = .zero, decoded: Bool = false,
                       phase: ViewerSnapshot.Phase = .connected) -> ViewerSnapshot {
        var track = TrackQoS(kind: .video, codec: .h264)
        track.framesRendered = rendered
        track.framesRenderedLate = late
        track.framesDropped = dropped
        track.totalFreezesDuration = freezes
        track.decoded = decoded
        track.framesDecoded = decoded ? rendered : 0
        track.jitterBufferDelay = .milliseconds(230 * rendered)
        track.jitterBufferEmittedCount = rendered
        var startup = StartupTimeline(start: .zero)
        startup.record(.firstFrame, at: MonotonicInstant(nanoseconds: 500_000_000))
        let qos = SubscriberQoS(elapsed: .seconds(10.5), state: .playing, playoutDelay: .init(delay: .milliseconds(230), source: .configured), tracks: [.video: track])
        return ViewerSnapshot(viewer: number, session: 0, phase: phase, qos: qos, startup: startup)
    }

    @Test("Rendered ratio is on-time frames over frames due; freeze ratio is frozen time over time since the first frame")
    func perViewer() throws {
        var viewer = Self.viewer(0, rendered: 290, late: 10, dropped: 10, freezes: .milliseconds(500))
        #expect(viewer.renderedRatio == 280.0 / 300.0)
        // A viewer that joined between two key frames was never due the frames before its first one.
        viewer.qos?.tracks[.video]?.framesDropped += 25
        viewer.qos?.tracks[.video]?.framesDroppedBeforeFirstKeyframe = 25
        #expect(viewer.renderedRatio == 280.0 / 300.0)
        #expect(viewer.freezeRatio == 0.05)
        #expect(viewer.startupTime == 0.5)
        #expect(try #require(viewer.jitterBufferDelay) == 0.23)
        // Not decoded: no framesDecoded value at all (unknown), never 0.
        #expect(viewer.measures.first { $0.name == "framesDecoded" }?.value == nil)
        #expect(Self.viewer(1, rendered: 5, decoded: true).measures.first { $0.name == "framesDecoded" }?.value == 5)
    }

    @Test("The sample: percentiles across viewers; phases counted; viewers not started yet count as connecting")
    func sample() throws {
        let viewers = (0..<90).map { Self.viewer($0, rendered: 300 - $0) }
            + [Self.viewer(90, rendered: 0, phase: .failed), Self.viewer(91, rendered: 10, phase: .ended)]
        let load = TesterLoad(cpuCores: 0.5, cores: 2, latePolls: 0, renderErrorP99: nil, droppedTelemetry: 0, residentBytes: 1, saturated: false)
        let sample = SwarmAggregator.sample(elapsed: .seconds(10), planned: 100, viewers: viewers, tester: load)
        #expect((sample.connected, sample.connecting, sample.failed, sample.ended) == (90, 8, 1, 1))
        let rendered = try #require(sample["framesRendered"])
        #expect(rendered.count == 92 && rendered.min == 0 && rendered.max == 300)
        #expect(sample["framesDecoded"] == nil, "nobody decoded: the measure is absent")
        #expect(sample.measures.map(\.name).prefix(3) == ["startupTime", "renderedRatio", "framesRendered"])
    }

    @Test("The JSON line: counts, each measure's percentiles and n, the tester; the summary's extras")
    func json() throws {
        let load = TesterLoad(cpuCores: 1.5, cores: 2, latePolls: 3, renderErrorP99: 0.004, droppedTelemetry: 7, residentBytes: 1_000, saturated: true)
        let sample = SwarmAggregator.sample(elapsed: .seconds(2), planned: 2, viewers: [Self.viewer(0, rendered: 60), Self.viewer(1, rendered: 30)], tester: load)
        let line = SwarmJSON.line(sample, type: "summary", extra: [("run", SwarmJSON.string("r \"1\""))])
        #expect(line.hasPrefix(#"{"type":"summary","t":2,"viewers":2,"connected":2,"connecting":0,"failed":0,"ended":0,"startupTime":{"min":0.5,"#))
        #expect(line.contains(#""framesRendered":{"min":30,"p50":30,"p95":60,"p99":60,"max":60,"count":2}"#))
        #expect(line.contains(#""tester":{"cpu":1.5,"cores":2,"latePolls":3,"renderErrorP99":0.004,"droppedTelemetry":7,"residentBytes":1000,"saturated":true}"#))
        #expect(line.hasSuffix(#","run":"r \"1\""}"#))
    }

    @Test("Saturation: CPU near every core, over 1 % of polls late (10 at least), or frames presented over 20 ms late")
    func saturation() {
        #expect(TesterMonitor.assess(cpuCores: 1.85, cores: 2, latePolls: 0, duePolls: 100, renderErrorP99: nil))
        #expect(!TesterMonitor.assess(cpuCores: 1.7, cores: 2, latePolls: 9, duePolls: 100, renderErrorP99: 0.01))
        #expect(TesterMonitor.assess(cpuCores: 0.2, cores: 2, latePolls: 11, duePolls: 1_000, renderErrorP99: nil))
        #expect(!TesterMonitor.assess(cpuCores: 0.2, cores: 2, latePolls: 11, duePolls: 2_000, renderErrorP99: nil))
        #expect(TesterMonitor.assess(cpuCores: 0.2, cores: 2, latePolls: 0, duePolls: 0, renderErrorP99: 0.021))
    }
}
