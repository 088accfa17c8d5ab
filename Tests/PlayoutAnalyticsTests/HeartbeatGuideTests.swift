import PlayoutAnalytics
import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Testing

/// A delegate that destroys its heartbeat in `onVideoUnloaded`, as the guide's graceful
/// termination does.
final class DestroyingPlayer: HeartbeatPlayerDelegate {
    let heartbeat = LockedValue<HeartbeatTracker?>(nil)
    let destroyed = LockedValue(false)
    var videoInfo: HeartbeatVideoInfo? {
        HeartbeatVideoInfo(id: "v1", name: "News", length: .seconds(600), playhead: .seconds(5), streamType: .vod, playerName: "test-player")
    }
    var qosInfo: HeartbeatQoSInfo? { HeartbeatQoSInfo(bitrate: 1_000_000, fps: 25, droppedFrames: 0) }
    func onVideoUnloaded() {
        // It is now safe to terminate the VideoHeartbeat instance.
        heartbeat.withLock { $0 }?.destroy()
        destroyed.withLock { $0 = true }
    }
}

/// The guide's examples (video heartbeat SDK 1.4 for iOS, `seeds/004`) played through the adapter.
@Suite("Adobe video heartbeat adapter: the guide's examples and sequences")
struct HeartbeatGuideTests {
    typealias Setup = HeartbeatTrackerTests.Setup

    @Test("Instantiation and configuration: a plug-in list, then configure(ConfigData(trackingServer, jobId, publisher)) with the optional values")
    func configuration() throws {
        let clock = ManualClock()
        let memory = InMemoryTelemetryBackend()
        let instrument = try TelemetryInstrument(
            backends: [memory], configuration: .init(delivery: .init(linger: .zero), engineId: "e"), clock: clock,
            wallClockNanoseconds: HeartbeatTrackerTests.wallStart, driver: .embedded)
        let player = ScriptedPlayer()
        let analytics = HeartbeatAnalyticsPlugin()
        let plugins: [any HeartbeatPlugin] = [analytics]
        let heartbeat = HeartbeatTracker(instrument: instrument, delegate: player, plugins: plugins, options: .conformance())
        var config = HeartbeatTracker.Configuration(trackingServer: "heartbeats.example.com", jobId: "sc_va", publisher: "publisher-id")
        #expect(config.ovp == "unknown" && config.sdk == "unknown" && config.channel.isEmpty && !config.debugLogging && !config.quietMode)
        config.channel = "news"
        #expect(heartbeat.configure(config))
        heartbeat.trackVideoLoad()
        heartbeat.trackPlay()
        analytics.disable()
        heartbeat.trackPause()
        analytics.enable()
        heartbeat.trackPlay()
        #expect(instrument.flush())
        let playing = try #require(memory.records.first { $0.name == "playing" })
        #expect(playing[field: "jobId"] == .string("sc_va") && playing[field: "trackingServer"] == .string("heartbeats.example.com"))
        #expect(playing[field: "channel"] == .string("news") && playing[field: "ovp"] == .string("unknown"))
        #expect(analytics.calls.map(\.call) == [.trackVideoLoad, .trackPlay, .trackPlay])  // not the pause, while disabled
        #expect(heartbeat.plugins.map(\.name) == ["AdobeAnalyticsPlugin"])
        #expect(heartbeat.conformance?.findings.isEmpty == true)
        instrument.shutdown(timeout: .seconds(1))
    }

    @Test("Graceful termination: trackComplete, trackVideoUnload, destroy from onVideoUnloaded — one view, no finding")
    func gracefulTermination() throws {
        let memory = InMemoryTelemetryBackend()
        let instrument = try TelemetryInstrument(
            backends: [memory], configuration: .init(delivery: .init(linger: .zero), engineId: "e"), clock: ManualClock(), driver: .embedded)
        let player = DestroyingPlayer()
        let heartbeat = HeartbeatTracker(instrument: instrument, delegate: player, options: .conformance())  // Implementing Without Plug-ins
        player.heartbeat.withLock { $0 = heartbeat }
        heartbeat.trackVideoLoad()
        heartbeat.trackPlay()
        // The playback of the main video has completed.
        heartbeat.trackComplete()
        // The main video asset was unloaded.
        heartbeat.trackVideoUnload()
        #expect(instrument.flush())
        #expect(player.destroyed.withLock { $0 })
        heartbeat.trackVideoLoad()  // after destroy: refused
        instrument.shutdown(timeout: .seconds(1))
        try memory.expectEvents(["viewinit", "playerready", "play", "playing", "ended", "viewend"])
        #expect(heartbeat.conformance?.findings.map(\.rule) == [.callAfterDestroy])
    }

    @Test("Handle Player Events: the guide's pause, seek, seek, seek complete, play sequence is valid")
    func pauseAndSeeks() throws {
        let setup = try Setup()
        let heartbeat = setup.heartbeat
        heartbeat.trackVideoLoad()
        heartbeat.trackPlay()
        heartbeat.trackPause()  // Signals that the user paused the playback.
        heartbeat.trackSeekStart()  // Signals that the user started a seek operation.
        heartbeat.trackSeekStart()  // Signals that the user started another seek operation (before the first one was completed).
        heartbeat.trackSeekComplete()  // Signals that the second seek operation has completed.
        heartbeat.trackPlay()  // Signals that the user resumed playback.
        #expect(setup.instrument.flush())
        try setup.memory.expectEvents(["viewinit", "playerready", "play", "playing", "pause", "seeking", "seeked", "play", "playing"])
        #expect(setup.findings.isEmpty)
        setup.instrument.shutdown(timeout: .seconds(1))
    }

    @Test("VideoInfo: a live stream's length is -1, as the guide sets it; -1 for VOD and other negatives are refused")
    func liveLength() throws {
        let setup = try Setup()
        setup.player.info.withLock {
            $0.video = HeartbeatVideoInfo(id: "live1", name: "Live", length: .seconds(-1), playhead: .seconds(12), streamType: .live, playerName: "p")
        }
        setup.heartbeat.trackVideoLoad()
        setup.heartbeat.trackPlay()
        #expect(setup.instrument.flush())
        #expect(setup.memory.records.first { $0.name == "playing" }?[field: "videoLength"] == .double(-1))
        #expect(setup.findings.isEmpty)
        func refused(_ length: Duration, _ type: HeartbeatStreamType) -> Bool {
            var machine = HeartbeatStateMachine()
            let video = HeartbeatVideoInfo(id: "v", name: "", length: length, playhead: .zero, streamType: type, playerName: "p")
            return machine.handle(.trackVideoLoad, info: .init(video: video), now: .zero).broken?.rule == .invalidVideoInfo
        }
        #expect(!refused(.seconds(-1), .linear) && refused(.seconds(-1), .vod) && refused(.seconds(-2), .live))
        setup.instrument.shutdown(timeout: .seconds(1))
    }

    @Test("AdBreakInfo.startTime is optional (the main content's playhead at trackAdStart); AdInfo has cpm")
    func adInfo() throws {
        let setup = try Setup()
        setup.player.info.withLock {
            $0.video?.playhead = .seconds(42)
            $0.adBreak = HeartbeatAdBreakInfo(position: 1, playerName: "ads")
            $0.ad = HeartbeatAdInfo(id: "ad1", length: .seconds(15), position: 1, cpm: "12.50")
        }
        setup.heartbeat.trackVideoLoad()
        setup.heartbeat.trackPlay()
        setup.heartbeat.trackAdStart()
        setup.heartbeat.trackAdComplete()
        #expect(setup.instrument.flush())
        let start = try #require(setup.memory.records.first { $0.name == "adstart" })
        #expect(start[field: "adBreakStartTime"] == .double(42) && start[field: "adCpm"] == .string("12.50"))
        #expect(setup.findings.isEmpty)
        setup.instrument.shutdown(timeout: .seconds(1))
    }

    @Test("QoS: appended to every call when it changed; trackQoSUpdateInfo injects the latest; fps truncated to its integer part")
    func qos() throws {
        let setup = try Setup()
        setup.heartbeat.trackVideoLoad()
        setup.heartbeat.trackPlay()
        setup.player.info.withLock { $0.qos = HeartbeatQoSInfo(bitrate: 800_000, fps: 29.97, droppedFrames: 7) }
        setup.heartbeat.trackQoSUpdateInfo()
        setup.heartbeat.trackPause()
        #expect(setup.instrument.flush())
        let records = setup.memory.records
        #expect(records.first { $0.name == "playing" }?[field: "bitrate"] == .double(1_500_000))
        let pause = try #require(records.first { $0.name == "pause" })
        #expect(pause[field: "bitrate"] == .double(800_000) && pause[field: "fps"] == .double(29) && pause[field: "droppedFrames"] == .int(7))
        #expect(setup.findings.isEmpty)
        setup.instrument.shutdown(timeout: .seconds(1))
    }

    @Test("Monitor the Error State: invalid video info (an empty id) enters it; calls are ignored until the next valid trackVideoLoad")
    func errorStateOnInvalidInfo() throws {
        let setup = try Setup()
        setup.player.info.withLock { $0.video?.id = "" }
        setup.heartbeat.trackVideoLoad()
        setup.heartbeat.trackPlay()
        setup.player.info.withLock { $0.video?.id = "v1" }
        setup.heartbeat.trackVideoLoad()
        setup.heartbeat.trackPlay()
        #expect(setup.instrument.flush())
        try setup.memory.expectEvents(["viewinit", "playerready", "play", "playing"])
        #expect(setup.findings == [.invalidVideoInfo, .callInErrorState])
        let details = setup.player.errors.withLock { $0.map(\.details) }
        #expect(details.first == "invalidVideoInfo (guide: Implement the Player Delegate: 1. Gather video content data)")
        setup.instrument.shutdown(timeout: .seconds(1))
    }

    @Test("an invalid configuration: configure refuses it, trackVideoLoad enters the error state until a valid configure")
    func invalidConfiguration() throws {
        let setup = try Setup()
        #expect(!setup.heartbeat.configure(.init(trackingServer: "hb.example.com", publisher: "p")))  // no jobId
        setup.heartbeat.trackVideoLoad()
        #expect(setup.heartbeat.configure(.init(trackingServer: "hb.example.com", jobId: "j", publisher: "p")))
        setup.heartbeat.trackVideoLoad()
        #expect(setup.instrument.flush())
        try setup.memory.expectEvents(["viewinit", "playerready"])
        #expect(setup.findings == [.invalidConfiguration, .invalidConfiguration])
        setup.instrument.shutdown(timeout: .seconds(1))
    }

    @Test("Troubleshoot: tracing activated at run time — heartbeatConfig.debugLogging = YES, then configure")
    func tracingAtRunTime() throws {
        let setup = try Setup(.init(publisher: "org1"))
        setup.heartbeat.trackVideoLoad()
        #expect(setup.collector.snapshot().entries.isEmpty)
        var heartbeatConfig = HeartbeatTracker.Configuration(trackingServer: "hb.example.com", jobId: "sc_va", publisher: "org1")
        // Activate tracking/logging.
        heartbeatConfig.debugLogging = true
        // Apply the configuration.
        setup.heartbeat.configure(heartbeatConfig)
        setup.heartbeat.trackPlay()
        #expect(setup.collector.snapshot().entries.map(\.message) == [
            "[INFO] [2023-11-14T22:13:20.000Z][VideoHeartbeat] #configure > configured",
            "[DEBUG] [2023-11-14T22:13:20.000Z][VideoPlayerPlugin] #trackPlay > play, playing",
        ])
        #expect(setup.findings.isEmpty)
        setup.instrument.shutdown(timeout: .seconds(1))
    }

    @Test("every finding's detail names the guide's section")
    func findingsNameTheSection() throws {
        for (rule, scenario) in HeartbeatTrackerTests.breaks {
            let setup = try Setup()
            scenario(setup.heartbeat, setup.player)
            let finding = try #require(setup.heartbeat.conformance?.findings.first)
            #expect(finding.detail.hasSuffix("(guide: \(rule.guideSection))"), "\(finding)")
            setup.instrument.shutdown(timeout: .seconds(1))
        }
    }
}
