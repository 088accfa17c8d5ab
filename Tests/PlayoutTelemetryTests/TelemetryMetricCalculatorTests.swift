import PlayoutCore
@testable import PlayoutTelemetry
import Testing

@Suite("Telemetry metric calculator: Mux's KPIs on scripted sessions")
struct TelemetryMetricCalculatorTests {
    func kpis(_ script: HubScript) -> TelemetryKPIs {
        var calculator = TelemetryMetricCalculator()
        for record in script.records { calculator.consume(record) }
        return calculator.kpis()
    }

    /// A 51 s view: 2 s startup, one 2 s network rebuffer, a 1 s stall from a delay increase, a
    /// pause, a 0.5 s freeze, two renditions and two delays.
    func fullView() -> HubScript {
        var script = HubScript()
        script.at(0, .viewInit)
        script.at(0.5, .playerReady)
        script.at(1, .play)
        script.at(1, .renditionChange(bitrate: 1_000_000, width: 640, height: 360))
        script.at(1, .playoutDelayChange(delay: .milliseconds(230), requested: false))
        script.at(3, .playing)
        script.at(13, .rebufferStart(.network))
        script.at(15, .rebufferEnd)
        script.at(20, .renditionChange(bitrate: 3_000_000, width: 1280, height: 720))
        script.at(25, .playoutDelayChange(delay: .milliseconds(1230), requested: true))
        script.at(25, .rebufferStart(.playoutDelayIncrease))
        script.at(26, .rebufferEnd)
        script.at(30, .freezeStart)
        script.at(30.5, .freezeEnd(duration: nil))
        script.at(33, .pause)
        script.at(40, .play)
        script.at(40.5, .playing)
        script.heartbeat(at: 50.5, [
            TelemetryField("framesRendered", .int(990)), TelemetryField("framesDropped", .int(10)),
            TelemetryField("endToEndLatency", .double(0.3)),
        ])
        script.at(50.5, .ended)
        script.at(51, .viewEnd)
        return script
    }

    @Test("a full view: every KPI by its published formula, exactly")
    func fullViewKPIs() {
        let script = fullView()
        #expect(script.rejections.isEmpty)
        let kpis = kpis(script)
        #expect(kpis.playerStartupTime == .milliseconds(500))
        #expect(kpis.videoStartupTime == .seconds(2))
        #expect(kpis.exitsBeforeVideoStart == false)
        #expect(kpis.videoStartupFailure == false)
        #expect(kpis.playbackFailure == false)
        // playing: 3–13, 15–25, 26–33, 40.5–50.5 = 37 s; the 25–26 stall was asked for.
        #expect(kpis.playingTime == .seconds(37))
        #expect(kpis.rebufferCount == 1)
        #expect(kpis.rebufferDuration == .seconds(2))
        // watch time = startup 2 + playing 37 + rebuffering 2 = 41 s
        #expect(kpis.rebufferPercentage == 2.0 / 41.0 * 100)
        #expect(kpis.rebufferFrequency == 1.0 / (41.0 / 60))
        // 1 Mbit/s for 15 s of playing, 3 Mbit/s for 22 s
        #expect(abs(kpis.weightedAverageBitrate! - 81_000_000.0 / 37) < 1e-6)
        #expect(kpis.droppedFramePercentage == 1.0)
        let freezePercentage: Double = 0.5 / 37 * 100  // typed apart: inferred in #expect, ≈ 1 s to type-check
        #expect(kpis.freezePercentage == freezePercentage)
        // 230 ms for 20 s of playing, 1230 ms for 17 s
        #expect(kpis.playoutDelay == .init(p50: .milliseconds(230), p95: .milliseconds(1230), p99: .milliseconds(1230), max: .milliseconds(1230)))
        #expect(kpis.endToEndLatency == .init(p50: .milliseconds(300), p95: .milliseconds(300), p99: .milliseconds(300), max: .milliseconds(300)))
    }

    @Test("a view that ends before its first frame: an exit before video start; the playing KPIs are undefined, not 0")
    func exitBeforeStart() {
        var script = HubScript()
        script.at(0, .viewInit)
        script.at(1, .play)
        script.at(5, .viewEnd)
        let kpis = kpis(script)
        #expect(kpis.exitsBeforeVideoStart == true)
        #expect(kpis.videoStartupFailure == false)
        #expect(kpis.playbackFailure == false)
        #expect(kpis.videoStartupTime == nil)
        #expect(kpis.playerStartupTime == nil)
        #expect(kpis.playingTime == nil)
        #expect(kpis.rebufferCount == nil)
        #expect(kpis.rebufferPercentage == nil)
        #expect(kpis.rebufferFrequency == nil)
        #expect(kpis.weightedAverageBitrate == nil)
        #expect(kpis.droppedFramePercentage == nil)
        #expect(kpis.freezePercentage == nil)
        #expect(kpis.playoutDelay == nil)
        #expect(kpis.endToEndLatency == nil)
        #expect(kpis["playing_time"] == nil)
        #expect(kpis["exits_before_video_start"] == .bool(true))
    }

    @Test("a fatal error before the first frame is a startup failure and a playback failure, not an exit")
    func startupFailure() {
        var script = HubScript()
        script.at(0, .play)
        script.at(2, .error(TelemetryError(severity: .fatal, code: 7, message: "no route")))
        script.at(3, .viewEnd)
        let kpis = kpis(script)
        #expect(kpis.videoStartupFailure == true)
        #expect(kpis.playbackFailure == true)
        #expect(kpis.exitsBeforeVideoStart == false)
    }

    @Test("a fatal error after the first frame is a playback failure only; playing time stops at the error")
    func playbackFailure() {
        var script = HubScript()
        script.at(0, .play)
        script.at(1, .playing)
        script.at(4, .error(TelemetryError(severity: .fatal, code: 7, message: "gone")))
        script.at(9, .viewEnd)
        let kpis = kpis(script)
        #expect(kpis.videoStartupFailure == false)
        #expect(kpis.playbackFailure == true)
        #expect(kpis.playingTime == .seconds(3))
    }

    @Test("stalls during a seek or from a requested delay increase are not rebuffers")
    func excludedStalls() {
        var script = HubScript()
        script.at(0, .play)
        script.at(1, .playing)
        script.at(5, .seeking)
        script.at(5, .rebufferStart(.network))
        script.at(7, .rebufferEnd)
        script.at(7, .seeked)
        script.at(10, .rebufferStart(.playoutDelayIncrease))
        script.at(14, .rebufferEnd)
        script.at(20, .viewEnd)
        let kpis = kpis(script)
        #expect(kpis.rebufferCount == 0)
        #expect(kpis.rebufferDuration == .zero)
        #expect(kpis.rebufferPercentage == 0)
        #expect(kpis.playingTime == .seconds(4 + 3 + 6))
    }

    @Test("no play at all: only playback_failure is defined")
    func nothing() {
        var script = HubScript()
        script.at(0, .viewInit)
        let kpis = kpis(script)
        #expect(kpis.namedValues.filter { $0.value != nil }.map(\.name) == ["playback_failure"])
    }

    @Test("open intervals close at the time asked: a live session's KPIs")
    func liveKPIs() {
        var script = HubScript()
        script.at(0, .play)
        script.at(1, .playing)
        script.at(5, .rebufferStart(.network))
        var calculator = TelemetryMetricCalculator()
        for record in script.records { calculator.consume(record) }
        let kpis = calculator.kpis(at: .seconds(6))
        #expect(kpis.playingTime == .seconds(4))
        #expect(kpis.rebufferDuration == .seconds(1))
        #expect(kpis.exitsBeforeVideoStart == false)
    }

    @Test("a freeze measured by the player counts its measured duration")
    func measuredFreeze() {
        var script = HubScript()
        script.at(0, .play)
        script.at(0, .playing)
        script.at(10, .freezeEnd(duration: .milliseconds(400)))
        script.at(20, .viewEnd)
        let freezePercentage: Double = 0.4 / 20 * 100
        #expect(kpis(script).freezePercentage == freezePercentage)
    }
}
