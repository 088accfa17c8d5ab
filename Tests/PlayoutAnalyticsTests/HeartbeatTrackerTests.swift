import Dispatch
import Logging
import PlayoutAnalytics
import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Testing

/// A player whose info the test sets (the delegate is the adapter's input, so the test writes it).
final class ScriptedPlayer: HeartbeatPlayerDelegate {
    struct Info {
        var video: HeartbeatVideoInfo? = HeartbeatVideoInfo(
            id: "v1", name: "News at ten", length: .seconds(600), playhead: .zero, streamType: .vod, playerName: "test-player")
        var adBreak: HeartbeatAdBreakInfo? = HeartbeatAdBreakInfo(name: "pre-roll", position: 1, startTime: .zero, playerName: "ads")
        var ad: HeartbeatAdInfo? = HeartbeatAdInfo(id: "ad1", name: "Ad one", length: .seconds(15), position: 1)
        var chapter: HeartbeatChapterInfo? = HeartbeatChapterInfo(name: "Intro", length: .seconds(60), position: 1, startTime: .zero)
        var qos: HeartbeatQoSInfo? = HeartbeatQoSInfo(bitrate: 1_500_000, fps: 30, droppedFrames: 3, width: 1280, height: 720)
    }

    let info = LockedValue(Info())
    let errors = LockedValue<[HeartbeatErrorInfo]>([])
    let unloads = DispatchSemaphore(value: 0)

    var videoInfo: HeartbeatVideoInfo? { info.withLock { $0.video } }
    var adBreakInfo: HeartbeatAdBreakInfo? { info.withLock { $0.adBreak } }
    var adInfo: HeartbeatAdInfo? { info.withLock { $0.ad } }
    var chapterInfo: HeartbeatChapterInfo? { info.withLock { $0.chapter } }
    var qosInfo: HeartbeatQoSInfo? { info.withLock { $0.qos } }
    func onError(_ error: HeartbeatErrorInfo) { errors.withLock { $0.append(error) } }
    func onVideoUnloaded() { unloads.signal() }

    /// Waits (real time, bounded) for `onVideoUnloaded`.
    func waitForUnload() -> Bool { unloads.wait(timeout: .now() + 10) == .success }
}

@Suite("Adobe video heartbeat adapter: calls, rules, error state, trace, quiet mode, plug-ins")
struct HeartbeatTrackerTests {
    static let wallStart: Int64 = 1_700_000_000_000_000_000  // 2023-11-14T22:13:20Z

    struct Setup {
        let clock = ManualClock()
        let memory = InMemoryTelemetryBackend()
        let player = ScriptedPlayer()
        let collector = LogCollector(configuration: .init(level: .trace))
        let instrument: TelemetryInstrument
        let heartbeat: HeartbeatTracker

        init(_ configuration: HeartbeatTracker.Configuration = .init(publisher: "org1", debugLogging: true), quiet: Bool = false) throws {
            instrument = try TelemetryInstrument(
                backends: [memory], configuration: .init(delivery: .init(linger: .zero), engineId: "e"), clock: clock,
                wallClockNanoseconds: HeartbeatTrackerTests.wallStart, driver: .embedded)
            let collector = collector
            heartbeat = HeartbeatTracker(
                instrument: instrument, delegate: player, configuration: configuration,
                options: .conformance(logger: Logger(label: "heartbeat") { collector.makeHandler(label: $0) }, quiet: quiet),
                wallClockNanoseconds: HeartbeatTrackerTests.wallStart)
        }

        var findings: [HeartbeatRule] { heartbeat.conformance?.findings.map(\.rule) ?? [] }
    }

    @Test("the guide's story — load, start, buffer, pause/play, bitrate change, ad, chapter, seek, error, complete, unload — in the engine's vocabulary")
    func story() throws {
        let setup = try Setup()
        let heartbeat = setup.heartbeat
        heartbeat.trackVideoLoad()
        heartbeat.trackSessionStart()
        setup.clock.advance(by: .seconds(2))
        heartbeat.trackPlay()
        heartbeat.trackBufferStart()
        setup.clock.advance(by: .seconds(1))
        heartbeat.trackBufferComplete()
        heartbeat.trackPause()
        heartbeat.trackPlay()
        heartbeat.trackBitrateChange()
        heartbeat.trackAdStart()
        heartbeat.trackAdComplete()
        heartbeat.trackChapterStart()
        heartbeat.trackChapterComplete()
        heartbeat.trackSeekStart()
        heartbeat.trackSeekComplete()
        heartbeat.trackApplicationError("E42")
        setup.player.info.withLock { $0.qos?.droppedFrames = 9 }
        heartbeat.trackComplete()
        heartbeat.trackVideoUnload()
        #expect(setup.player.waitForUnload())
        // onVideoUnloaded came after the unload reached the backend.
        try setup.memory.expectEvents([
            "viewinit", "playerready", "play", "playing", "rebufferstart", "rebufferend", "pause", "play", "playing", "renditionchange",
            "adstart", "adcomplete", "chapterstart", "chaptercomplete", "seeking", "seeked", "error", "ended", "viewend",
        ])
        let records = setup.memory.records
        let rendition = try #require(records.first { $0.name == "renditionchange" })
        #expect(rendition[field: "bitrate"] == .int(1_500_000) && rendition[field: "width"] == .int(1280))
        #expect(rendition[field: "fps"] == .double(30) && rendition[field: "droppedFrames"] == .int(3))
        #expect(rendition[field: "videoId"] == .string("v1") && rendition[field: "streamType"] == .string("vod"))
        #expect(records.allSatisfy { $0[field: "publisher"] == .string("org1") })
        let ended = try #require(records.first { $0.name == "ended" })
        #expect(ended[field: "droppedFrames"] == .int(9))
        #expect(ended[field: "startupTime"] == .double(2))  // session start → first play
        #expect(records.first { $0.name == "adstart" }?[field: "adId"] == .string("ad1"))
        #expect(records.first { $0.name == "chapterstart" }?[field: "chapterName"] == .string("Intro"))
        #expect(records.first { $0.name == "error" }?[field: "severity"] == .string("warning"))
        try setup.memory.expectKPI("video_startup_time", 2, within: 0)  // the same instants as startupTime
        try setup.memory.expectKPI("rebuffer_count", 1, within: 0)
        #expect(setup.findings.isEmpty)
        #expect(setup.heartbeat.conformance?.calls.count == 17)
        setup.instrument.shutdown(timeout: .seconds(1))
    }

    /// One scenario per rule: a valid sequence with exactly one call that breaks it.
    static let breaks: [(HeartbeatRule, @Sendable (HeartbeatTracker, ScriptedPlayer) -> Void)] = [
        (.callBeforeVideoLoad, { heartbeat, _ in heartbeat.trackPlay() }),
        (.loadWhileLoaded, { heartbeat, _ in
            heartbeat.trackVideoLoad()
            heartbeat.trackVideoLoad()
        }),
        (.invalidVideoInfo, { heartbeat, player in
            player.info.withLock { $0.video = nil }
            heartbeat.trackVideoLoad()
        }),
        (.invalidAdInfo, { heartbeat, player in
            heartbeat.trackVideoLoad()
            heartbeat.trackPlay()
            player.info.withLock { $0.ad = nil }
            heartbeat.trackAdStart()
        }),
        (.invalidChapterInfo, { heartbeat, player in
            heartbeat.trackVideoLoad()
            player.info.withLock { $0.chapter?.position = 0 }
            heartbeat.trackChapterStart()
        }),
        (.invalidQoSInfo, { heartbeat, player in
            heartbeat.trackVideoLoad()
            player.info.withLock { $0.qos = nil }
            heartbeat.trackBitrateChange()
        }),
        (.completeWithoutStart, { heartbeat, _ in
            heartbeat.trackVideoLoad()
            heartbeat.trackPlay()
            heartbeat.trackBufferComplete()
        }),
        (.callInErrorState, { heartbeat, _ in
            heartbeat.trackVideoLoad()
            heartbeat.trackPlay()
            heartbeat.trackVideoPlayerError("decoder")
            heartbeat.trackPause()
        }),
        (.callAfterComplete, { heartbeat, _ in
            heartbeat.trackVideoLoad()
            heartbeat.trackPlay()
            heartbeat.trackComplete()
            heartbeat.trackPlay()
        }),
        (.invalidConfiguration, { heartbeat, _ in
            heartbeat.configure(.init(trackingServer: "hb.example.com", jobId: "", publisher: "p"))
        }),
        (.callAfterDestroy, { heartbeat, _ in
            heartbeat.trackVideoLoad()
            heartbeat.destroy()
            heartbeat.trackPlay()
        }),
        (.adTransitionCall, { heartbeat, _ in
            heartbeat.trackVideoLoad()
            heartbeat.trackPlay()
            heartbeat.trackAdStart()
            heartbeat.trackPause()  // the ad's start pauses the main video by itself
        }),
        (.invalidErrorId, { heartbeat, _ in
            heartbeat.trackVideoLoad()
            heartbeat.trackApplicationError("")
        }),
    ]

    @Test("every rule has a scenario")
    func everyRuleCovered() {
        #expect(Set(Self.breaks.map(\.0)) == Set(HeartbeatRule.allCases))
    }

    @Test("each documented rule broken once gives exactly one finding naming it, one onError, and the session goes on",
          arguments: HeartbeatRule.allCases)
    func ruleBrokenOnce(rule: HeartbeatRule) throws {
        let setup = try Setup()
        let scenario = try #require(Self.breaks.first { $0.0 == rule }?.1)
        scenario(setup.heartbeat, setup.player)
        #expect(setup.findings == [rule])
        #expect(setup.player.errors.withLock { $0.map(\.rule) } == [rule])
        let finding = try #require(setup.heartbeat.conformance?.findings.first)
        #expect(finding.description.hasPrefix("\(rule.rawValue): "))
        #expect(setup.instrument.flush())
        #expect(setup.instrument.currentStatistics().rejectedTransitions == 0)  // nothing invalid reached the engine
        setup.instrument.shutdown(timeout: .seconds(1))
    }

    @Test("after a player error tracking calls are ignored until the next load, which goes on in the same view with videochange")
    func errorState() throws {
        let setup = try Setup()
        let heartbeat = setup.heartbeat
        heartbeat.trackVideoLoad()
        heartbeat.trackPlay()
        heartbeat.trackVideoPlayerError("500")
        heartbeat.trackPause()
        heartbeat.trackBitrateChange()
        setup.player.info.withLock { $0.video?.id = "v2" }
        heartbeat.trackVideoLoad()
        heartbeat.trackPlay()
        heartbeat.trackComplete()
        heartbeat.trackVideoUnload()
        #expect(setup.player.waitForUnload())
        try setup.memory.expectEvents(["viewinit", "playerready", "play", "playing", "error", "videochange", "play", "playing", "ended", "viewend"])
        #expect(setup.memory.records.first { $0.name == "error" }?[field: "code"] == .int(500))
        #expect(setup.findings == [.callInErrorState, .callInErrorState])
        setup.instrument.shutdown(timeout: .seconds(1))
    }

    @Test("hostile metadata — oversized, empty, negative, not finite — is refused with a finding naming it; nothing reaches the engine")
    func hostileMetadata() throws {
        let setup = try Setup()
        let heartbeat = setup.heartbeat
        let huge = String(repeating: "\u{1F600}\u{0}\n", count: 100_000)
        setup.player.info.withLock { $0.video?.id = huge }
        heartbeat.trackVideoLoad()
        setup.player.info.withLock { $0.video = HeartbeatVideoInfo(id: "v", name: "", length: .seconds(-2), playhead: .zero, streamType: .live, playerName: "p") }
        heartbeat.trackVideoLoad()
        setup.player.info.withLock { $0.video?.length = nil }
        heartbeat.trackVideoLoad()
        for bitrate in [Double.nan, -.infinity, .infinity, -1] {
            setup.player.info.withLock { $0.qos?.bitrate = bitrate }
            heartbeat.trackBitrateChange()
        }
        setup.player.info.withLock { $0.adBreak?.name = huge }
        heartbeat.trackAdStart()
        heartbeat.trackVideoPlayerError(huge)
        heartbeat.trackApplicationError("\u{0}")  // a strange id is still an id
        #expect(setup.findings == [.invalidVideoInfo, .invalidVideoInfo] + Array(repeating: .invalidQoSInfo, count: 4) + [.invalidAdInfo, .invalidErrorId])
        #expect(setup.heartbeat.conformance?.findings.first?.detail.hasPrefix("videoInfo.id is \(huge.utf8.count) bytes; at most 1024 (guide: ") == true)
        #expect(setup.heartbeat.conformance?.calls.allSatisfy { $0.arguments.allSatisfy { $0.count <= 64 } } == true)
        #expect(setup.instrument.flush())
        try setup.memory.expectEvents(["viewinit", "playerready", "error"])
        setup.instrument.shutdown(timeout: .seconds(1))
    }

    @Test("debugLogging writes the SDK's trace lines through swift-log: [LEVEL] [time][Class] #method > message")
    func traceLines() throws {
        let setup = try Setup()
        setup.heartbeat.trackVideoLoad()
        setup.clock.advance(by: .milliseconds(1_250))
        setup.heartbeat.trackPlay()
        setup.heartbeat.trackSeekComplete()
        let lines = setup.collector.snapshot().entries.map(\.message)
        #expect(lines == [
            "[INFO] [2023-11-14T22:13:20.000Z][VideoHeartbeat] #init > version \(HeartbeatTracker.version)",
            "[DEBUG] [2023-11-14T22:13:20.000Z][VideoPlayerPlugin] #trackVideoLoad > viewinit, playerready",
            "[DEBUG] [2023-11-14T22:13:21.250Z][VideoPlayerPlugin] #trackPlay > play, playing",
            "[WARN] [2023-11-14T22:13:21.250Z][VideoPlayerPlugin] #trackSeekComplete > completeWithoutStart: trackSeekComplete without trackSeekStart",
        ])
        #expect(setup.collector.snapshot().entries.map(\.level) == [.info, .debug, .debug, .warning])
        setup.instrument.shutdown(timeout: .seconds(1))
        let quiet = try Setup(.init(debugLogging: false))
        quiet.heartbeat.trackPlay()
        #expect(quiet.collector.snapshot().entries.isEmpty)
        quiet.instrument.shutdown(timeout: .seconds(1))
    }

    @Test("quiet mode sends nothing, yet checks the rules and still calls onVideoUnloaded")
    func quietMode() throws {
        let setup = try Setup(.init(), quiet: true)
        setup.heartbeat.trackVideoLoad()
        setup.heartbeat.trackPlay()
        setup.heartbeat.trackSeekComplete()
        setup.heartbeat.trackVideoUnload()
        #expect(setup.player.waitForUnload())
        #expect(setup.instrument.flush())
        #expect(setup.memory.records.isEmpty)
        #expect(setup.findings == [.completeWithoutStart])
        setup.instrument.shutdown(timeout: .seconds(1))
        #expect(setup.memory.records.isEmpty)
    }

    @Test("plug-ins: the player plug-in disabled ignores calls; the heartbeat plug-in disabled sends no heartbeats; version")
    func plugins() throws {
        let setup = try Setup()
        let heartbeat = setup.heartbeat
        heartbeat.disable(.videoPlayer)
        #expect(!heartbeat.isEnabled(.videoPlayer))
        heartbeat.trackVideoLoad()
        heartbeat.enable(.videoPlayer)
        heartbeat.trackVideoLoad()
        heartbeat.trackPlay()
        setup.clock.advance(by: .seconds(10))
        #expect(setup.instrument.flush())
        heartbeat.disable(.heartbeat)
        setup.clock.advance(by: .seconds(10))
        #expect(setup.instrument.flush())
        let beats = setup.memory.records.filter { $0.name == "heartbeat" }
        #expect(beats.count == 1)  // the one before the heartbeat plug-in was disabled
        #expect(beats.first?[field: "bitrate"] == .double(1_500_000) && beats.first?[field: "startupTime"] == .double(0))
        #expect(setup.findings.isEmpty)  // the load while disabled was not taken: no loadWhileLoaded
        #expect(HeartbeatTracker.version.hasPrefix("1.4"))
        setup.instrument.shutdown(timeout: .seconds(1))
    }
}
