import Logging
import PlayoutAnalytics
import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Testing

/// Golden tests from the Mux Data custom Objective-C integration guide (seed 000, core SDK v5):
/// each code example and sequence of the guide played through ``MuxCore`` as the guide writes it,
/// asserting the records it produces and that no finding is raised (issue 27).
@Suite("Mux guide (custom Objective-C integration, core SDK v5): every example and sequence, verbatim")
struct MuxGuideTests {
    typealias Setup = MuxCoreTests.Setup
    static let playerName = "MyVideoPlayer"

    /// "Initialize the SDK": the environment data's muxViewerId and the viewer's application name.
    static let global = MuxGlobalData(muxViewerId: "device-vendor-id", applicationName: "com.example.player")
    /// The guide's `playerData` ("Sample Custom Player" …).
    static let playerData = MuxPlayerData(
        pluginName: "Sample Custom Player", pluginVersion: "1.0.0", softwareName: "AVPlayer", softwareLanguageCode: "en-US", width: 1280, height: 720,
        isFullscreen: false, isPaused: false, playheadTime: .zero)

    /// The guide's "Sample event sequence" (steps 1–4), with customer player data carrying the key.
    static func sampleSequence(_ mux: MuxCore, environmentKey: String? = "env-key-1") {
        mux.dispatchGlobalDataEvent(global)                                                   // 1. global data
        mux.dispatch(.viewInit, player: playerName, playerData: playerData)                   // 2. viewinit
        let customerPlayerData = MuxCustomerPlayerData(environmentKey: environmentKey, playerName: "Custom Player")
        let customerVideoData = MuxCustomerVideoData(id: "video-1", title: "Big Buck Bunny", duration: .seconds(596), streamType: "on-demand")
        mux.dispatch(.data(MuxDataEvent(customerPlayerData: customerPlayerData, customerVideoData: customerVideoData)), player: playerName)  // 3.
        mux.dispatch(.playerReady, player: playerName, playerData: playerData)                // 4. the rest
        mux.dispatch(.play, player: playerName, playerData: playerData)
        mux.dispatch(.playing, player: playerName, playerData: playerData)
    }

    @Test("Sample event sequence: global data, viewinit with player data, customer player and video data (the environment key), playerready, play, playing")
    func sampleEventSequence() throws {
        let setup = try Setup()
        Self.sampleSequence(setup.mux)
        setup.mux.dispatch(.timeUpdate(playhead: .milliseconds(1_500)), player: Self.playerName)
        setup.mux.dispatch(.pause, player: Self.playerName, playerData: MuxPlayerData(isPaused: true, playheadTime: .milliseconds(2_000)))
        setup.finish()
        try setup.memory.expectEvents(["viewinit", "playerready", "play", "playing", "pause", "viewend"])  // viewend: the engine's shutdown
        #expect(setup.findings.isEmpty)
        let records = setup.memory.records
        #expect(records.allSatisfy { $0[field: "mux_viewer_id"] == .string("device-vendor-id") && $0[field: "viewer_application_name"] == .string("com.example.player") })
        #expect(records.allSatisfy { $0[field: "player_mux_plugin_name"] == .string("Sample Custom Player") && $0[field: "player_width"] == .int(1280) })
        #expect(records.filter { $0[field: "env_key"] == .string("env-key-1") }.map(\.name) == ["playerready", "play", "playing", "pause", "viewend"])
        #expect(records.last?[field: "player_name"] == .string("Custom Player"))
        #expect(records.last?[field: "video_duration"] == .int(596_000))  // milliseconds
        #expect(records.last?[field: "player_playhead_time"] == .int(2_000) && records.last?[field: "player_is_paused"] == .bool(true))
        // Every record went out in beacons, with a uuid-style player_instance_id.
        #expect(setup.beacons.beacons.flatMap(\.events).map(\.name) == setup.memory.eventNames())
        guard case .string(let id) = records.first?[field: "player_instance_id"] else { Issue.record("no player_instance_id"); return }
        #expect(id.split(separator: "-").map(\.count) == [8, 4, 4, 4, 12] && id.allSatisfy { $0.isHexDigit || $0 == "-" })
    }

    @Test("Initialize the SDK: a nil environment key in the customer player data opts in to inference — no finding, no env_key, beacons still sent")
    func inferredEnvironmentKey() throws {
        let setup = try Setup()
        Self.sampleSequence(setup.mux, environmentKey: nil)
        setup.mux.dispatch(.viewEnd, player: Self.playerName)
        setup.finish()
        #expect(setup.findings.isEmpty)
        #expect(setup.memory.records.allSatisfy { $0[field: "env_key"] == nil })
        #expect(setup.beacons.beacons.flatMap(\.events).map(\.name) == ["viewinit", "playerready", "play", "playing", "viewend"])
    }

    @Test("Data Events: the resolution change example (width and height) followed by renditionchange; the video data's fields in the guide's units")
    func resolutionChange() throws {
        let setup = try Setup()
        Self.sampleSequence(setup.mux)
        // Prepare the data update … put it within a MUXSDKDataEvent … emit the event
        setup.mux.dispatch(.data(MuxDataEvent(sourceWidth: 1920, sourceHeight: 1080)), player: Self.playerName)
        setup.mux.dispatch(.renditionChange, player: Self.playerName, playerData: Self.playerData)
        setup.mux.dispatch(
            .data(MuxDataEvent(sourceBitrate: 5_000_000, droppedFrames: 3, sourceIsLive: false, sourceDuration: .seconds(596))), player: Self.playerName)
        setup.mux.dispatch(.renditionChange, player: Self.playerName)
        setup.finish()
        #expect(setup.findings.isEmpty)
        let renditions = setup.memory.records.filter { $0.name == "renditionchange" }
        #expect(renditions.map { [$0[field: "width"], $0[field: "height"], $0[field: "bitrate"]] } == [
            [.int(1920), .int(1080), .int(0)], [.int(1920), .int(1080), .int(5_000_000)],
        ])
        let last = try #require(renditions.last)
        #expect(last[field: "video_source_is_live"] == .bool(false) && last[field: "video_source_duration"] == .int(596_000))
        #expect(last[field: "view_dropped_frame_count"] == .int(3))
    }

    @Test("Changing the Video: viewend, viewinit, data with videoChange = YES, then play and playing — a new view with the new video's data only")
    func changingTheVideo() throws {
        let setup = try Setup()
        let mux = setup.mux
        Self.sampleSequence(mux)
        mux.dispatch(.viewEnd, player: Self.playerName, playerData: Self.playerData)                 // 1.
        mux.dispatch(.viewInit, player: Self.playerName, playerData: Self.playerData)                // 2.
        mux.dispatch(.data(MuxDataEvent(video: MuxCustomerVideoData(id: "video-2", title: "Sintel"), videoChange: true)), player: Self.playerName)  // 3.
        mux.dispatch(.play, player: Self.playerName, playerData: Self.playerData)                     // 4.
        mux.dispatch(.playing, player: Self.playerName, playerData: Self.playerData)                  // 5.
        // The same through the helper, with play and playing (the same stream as a separate video).
        mux.videoChange(player: Self.playerName, video: MuxVideoData(id: "video-3"), playerData: Self.playerData, thenPlay: true)
        setup.finish()
        #expect(setup.findings.isEmpty)
        try setup.memory.expectEvents(["viewinit", "playerready", "play", "playing", "viewend"], session: "e-0-1")
        try setup.memory.expectEvents(["viewinit", "play", "playing", "viewend"], session: "e-0-2")
        try setup.memory.expectEvents(["viewinit", "play", "playing", "viewend"], session: "e-0-3")
        let second = setup.memory.records.filter { $0.sessionId == "e-0-2" && $0.name == "play" }
        #expect(second.first?[field: "video_id"] == .string("video-2") && second.first?[field: "video_title"] == .string("Sintel"))
        #expect(second.first?[field: "video_duration"] == nil)  // the first video's, removed by the change
        #expect(second.first?[field: "env_key"] == .string("env-key-1"))  // the player's customer data stays
        #expect(setup.memory.records.last?[field: "video_id"] == .string("video-3"))
        #expect(setup.instrument.currentStatistics().rejectedTransitions == 0)
    }

    /// The guide's three error examples: (severity, business exception, code).
    static let errorExamples: [(MuxError, String)] = [
        (MuxError(), "100123"),                                            // [[MUXSDKErrorEvent alloc] init]: fatal
        (MuxError(severity: .warning, context: nil), "100124"),            // initWithSeverity: MUXSDKErrorSeverityWarning context: nil
        (MuxError(isBusinessException: true), "100125"),                   // setIsBusinessException: YES
    ]

    @Test("Sending Error events: the three examples (fatal, warning, business exception), code and message in the player data; tracking goes on after each (v5)", arguments: 0..<3)
    func errorExample(index: Int) throws {
        let setup = try Setup()
        Self.sampleSequence(setup.mux)
        let (error, code) = Self.errorExamples[index]
        let playerData = MuxPlayerData(playheadTime: .milliseconds(200), errorCode: code, errorMessage: "A playback error has occurred")
        setup.mux.dispatch(.error(error), player: Self.playerName, playerData: playerData)
        setup.mux.dispatch(.pause, player: Self.playerName)
        setup.mux.dispatch(.viewEnd, player: Self.playerName)  // "to explicitly indicate that watch time should no longer be tracked"
        setup.finish()
        #expect(setup.findings.isEmpty)
        try setup.memory.expectEvents(["viewinit", "playerready", "play", "playing", "error", "pause", "viewend"])
        let records = setup.memory.records
        let record = try #require(records.first { $0.name == "error" })
        #expect(record[field: "severity"] == .string(index == 1 ? "warning" : "fatal"))
        #expect(record[field: "businessException"] == .bool(index == 2))
        #expect(record[field: "code"] == .int(Int64(code)!) && record[field: "player_error_code"] == .string(code))
        #expect(record[field: "message"] == .string("A playback error has occurred"))
        #expect(record[field: "player_playhead_time"] == .int(200))
        #expect(records.filter { $0[field: "player_error_message"] != nil }.map(\.name) == ["error"])
        #expect(setup.instrument.currentStatistics().ignoredInErrorState == 0)
    }

    @Test("Playback Events' additions: orientationchange, request bandwidth with a rendition list, ad events via dispatchAdEvent, customer view data, custom dimensions, experiments")
    func additions() throws {
        let setup = try Setup()
        let mux = setup.mux
        Self.sampleSequence(mux)
        mux.dispatch(.data(MuxDataEvent(
            video: MuxVideoData(id: "video-1", experiments: "exp-a"),
            customerPlayerData: MuxCustomerPlayerData(environmentKey: "env-key-1", experimentName: "new-abr"),
            customerViewData: MuxCustomerViewData(viewSessionId: "session-9", viewDrmType: "fairplay"), customData: MuxCustomData([1: "premium", 10: "eu"]))),
            player: Self.playerName)
        mux.dispatch(.orientationChange, player: Self.playerName)
        let renditions = [MuxRendition(width: 1280, height: 720, bitrate: 3_000_000, frameRate: 30, codec: "avc1.64001f", name: "720p"),
                          MuxRendition(width: 640, height: 360, bitrate: 800_000)]
        mux.dispatch(.requestBandwidth(MuxBandwidthMetricData(
            requestType: "media", bytesLoaded: 500_000, requestStart: .milliseconds(100), responseEnd: .milliseconds(350), hostname: "cdn.example.com",
            renditionLists: renditions)), player: Self.playerName)
        mux.dispatchAdEvent(.adBreakStart, player: Self.playerName)
        mux.dispatchAdEvent(.adPlay, player: Self.playerName, adData: MuxAdData(adId: "ad-1", creativeId: "c-1"))
        mux.dispatchAdEvent(.adEnded, player: Self.playerName, adData: MuxAdData(adId: "ad-1"))
        mux.dispatchAdEvent(.adBreakEnd, player: Self.playerName)
        setup.finish()
        #expect(setup.findings.isEmpty)
        let records = setup.memory.records.filter { !["viewinit", "playerready", "play", "playing", "viewend"].contains($0.name) }
        #expect(records.map(\.name) == ["orientationchange", "requestcompleted", "adbreakstart", "adplay", "adended", "adbreakend"])
        #expect(records.allSatisfy {
            $0[field: "view_session_id"] == .string("session-9") && $0[field: "view_drm_type"] == .string("fairplay") && $0[field: "custom_1"] == .string("premium")
                && $0[field: "custom_10"] == .string("eu") && $0[field: "experiment_name"] == .string("new-abr") && $0[field: "video_experiments"] == .string("exp-a")
        })
        let request = records[1]
        #expect(request[field: "request_bytes_loaded"] == .int(500_000) && request[field: "request_start"] == .int(100) && request[field: "request_response_end"] == .int(350))
        #expect(request[field: "request_rendition_lists"] == .string("1280x720@3000000/30.0 avc1.64001f \"720p\", 640x360@800000"))
        #expect(records[3][field: "ad_id"] == .string("ad-1") && records[3][field: "ad_creative_id"] == .string("c-1"))
    }

    @Test("what the guide allows that cannot be taken is a finding naming its section: custom_11, an ad break end with no start, videoChange data before viewinit")
    func refusedWithSection() throws {
        let setup = try Setup()
        let mux = setup.mux
        Self.sampleSequence(mux)
        mux.dispatch(.data(MuxDataEvent(customData: MuxCustomData([11: "x"]))), player: Self.playerName)
        mux.dispatchAdEvent(.adBreakEnd, player: Self.playerName)
        mux.dispatch(.viewEnd, player: Self.playerName)
        mux.dispatch(.data(MuxDataEvent(video: MuxVideoData(id: "v2"), videoChange: true)), player: Self.playerName)  // the old order
        setup.finish()
        #expect(setup.findings == [.invalidMetadata, .unmatchedEnd, .videoChangeOrder])
        #expect(mux.conformance?.findings.map(\.detail).last?.hasSuffix("(guide: Changing the Video)") == true)
    }

    @Test("hostile input in the new data — oversized player, view and ad data, negative playhead and bytes, bad renditions, custom_0 — one invalidMetadata each, nothing sent")
    func hostileNewData() throws {
        let setup = try Setup()
        let mux = setup.mux
        Self.sampleSequence(mux)
        #expect(setup.instrument.flush())
        let before = setup.memory.records.count
        let huge = String(repeating: "é", count: 600)  // 1,200 bytes
        mux.dispatch(.play, player: Self.playerName, playerData: MuxPlayerData(pluginName: huge))
        mux.dispatch(.pause, player: Self.playerName, playerData: MuxPlayerData(playheadTime: .seconds(-1)))
        mux.dispatch(.timeUpdate(playhead: .milliseconds(-5)), player: Self.playerName)
        mux.dispatch(.error(MuxError()), player: Self.playerName, playerData: MuxPlayerData(errorCode: "1"))  // no message
        mux.dispatch(.data(MuxDataEvent(customerViewData: MuxCustomerViewData(viewSessionId: huge))), player: Self.playerName)
        mux.dispatch(.data(MuxDataEvent(customData: MuxCustomData([0: "zero"]))), player: Self.playerName)
        mux.dispatch(.data(MuxDataEvent(sourceDuration: .seconds(-1))), player: Self.playerName)
        mux.dispatch(.requestBandwidth(MuxBandwidthMetricData(requestType: "media", bytesLoaded: -1)), player: Self.playerName)
        mux.dispatch(.requestBandwidth(MuxBandwidthMetricData(requestType: "")), player: Self.playerName)
        mux.dispatch(.requestBandwidth(MuxBandwidthMetricData(requestType: "media", renditionLists: [MuxRendition(width: 1, height: 1, bitrate: 1, frameRate: .infinity)])), player: Self.playerName)
        mux.dispatch(.requestBandwidth(MuxBandwidthMetricData(requestType: "media", renditionLists: Array(repeating: MuxRendition(width: 1, height: 1, bitrate: 1), count: 65))), player: Self.playerName)
        mux.dispatchAdEvent(.adPlay, player: Self.playerName, adData: MuxAdData(adId: huge))
        #expect(setup.findings == Array(repeating: .invalidMetadata, count: 3) + [.invalidError] + Array(repeating: .invalidMetadata, count: 8))
        #expect(setup.instrument.flush())
        #expect(setup.memory.records.count == before)
        setup.finish()
    }

    @Test("debug logging of sent beacons (core SDK v3.9): one debug line per beacon with its events")
    func beaconDebugLogging() throws {
        let collector = LogCollector(configuration: .init(level: .trace))
        let beacons = MuxBeaconBackend(logger: Logger(label: "mux-beacons") { collector.makeHandler(label: $0) })
        let clock = ManualClock()
        var configuration = MuxCore.instrumentConfiguration()
        configuration.delivery = .init(linger: .zero)
        configuration.engineId = "e"
        let instrument = try TelemetryInstrument(backends: [beacons], configuration: configuration, clock: clock, wallClockNanoseconds: 0, driver: .embedded)
        let mux = MuxCore(instrument: instrument, configuration: .init(makePlayerInstanceId: { "00000000-0000-4000-8000-000000000000" }))
        Self.sampleSequence(mux)
        mux.dispatch(.viewEnd, player: Self.playerName)
        instrument.shutdown(timeout: .seconds(1))
        #expect(collector.snapshot().entries.map(\.message) == [
            "beacon sent: 5 events (view e-0-1 seq 0…4): viewinit, playerready, play, playing, viewend",
        ])
    }
}
