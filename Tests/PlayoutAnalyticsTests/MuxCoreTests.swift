import Logging
import PlayoutAnalytics
import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Testing

@Suite("Mux adapter: global data, per-player dispatch, rules, video change, beacons, view split")
struct MuxCoreTests {
    static let wallStart: Int64 = 1_700_000_000_000_000_000  // 2023-11-14T22:13:20Z
    static let global = MuxGlobalData(environmentKey: "env-1", viewerUserId: "viewer-7", deviceCategory: "tv")

    struct Setup {
        let clock = ManualClock()
        let memory = InMemoryTelemetryBackend()
        let beacons: MuxBeaconBackend
        let collector = LogCollector(configuration: .init(level: .trace))
        let instrument: TelemetryInstrument
        let mux: MuxCore

        init(inactivity: Duration = MuxCore.defaultViewInactivityTimeout, beaconInterval: Duration = .seconds(10)) throws {
            beacons = MuxBeaconBackend(interval: beaconInterval)
            var configuration = MuxCore.instrumentConfiguration(viewInactivityTimeout: inactivity)
            configuration.delivery = .init(linger: .zero)
            configuration.engineId = "e"
            instrument = try TelemetryInstrument(
                backends: [memory, beacons], configuration: configuration, clock: clock, wallClockNanoseconds: MuxCoreTests.wallStart, driver: .embedded)
            let collector = collector
            mux = MuxCore(
                instrument: instrument, configuration: .init(debugLogging: true),
                options: .conformance(logger: Logger(label: "mux") { collector.makeHandler(label: $0) }), wallClockNanoseconds: MuxCoreTests.wallStart)
        }

        var findings: [MuxRule] { mux.conformance?.findings.map(\.rule) ?? [] }

        /// Everything delivered (records in memory, beacons sent), then shut down.
        func finish() {
            instrument.shutdown(timeout: .seconds(1))
        }
    }

    @Test("the guide's story: viewinit, data, playerready, play, playing, rendition, rebuffer, warning, pause/play, ended, viewend — with global and video data")
    func story() throws {
        let setup = try Setup()
        let mux = setup.mux
        mux.dispatchGlobalDataEvent(Self.global)
        mux.dispatch(.viewInit, player: "main")
        mux.dispatch(.data(MuxDataEvent(video: MuxVideoData(id: "v1", title: "News", duration: .seconds(600), streamType: "on-demand"))), player: "main")
        mux.dispatch(.playerReady, player: "main")
        mux.dispatch(.play, player: "main")
        setup.clock.advance(by: .milliseconds(1_500))
        mux.dispatch(.playing, player: "main")
        mux.dispatch(.data(MuxDataEvent(sourceWidth: 1280, sourceHeight: 720, sourceBitrate: 3_000_000)), player: "main")
        mux.dispatch(.renditionChange, player: "main")
        mux.dispatch(.timeUpdate(playhead: .seconds(3)), player: "main")
        mux.dispatch(.rebufferStart, player: "main")
        mux.dispatch(.error(MuxError(code: 3, message: "segment timeout", context: "cdn", severity: .warning, businessException: false)), player: "main")
        setup.clock.advance(by: .seconds(2))
        mux.dispatch(.rebufferEnd, player: "main")
        mux.dispatch(.pause, player: "main")
        mux.dispatch(.play, player: "main")
        mux.dispatch(.playing, player: "main")
        mux.dispatch(.data(MuxDataEvent(droppedFrames: 12)), player: "main")
        mux.dispatch(.ended, player: "main")
        mux.dispatch(.viewEnd, player: "main")
        setup.finish()
        try setup.memory.expectEvents([
            "viewinit", "playerready", "play", "playing", "renditionchange", "rebufferstart", "error", "rebufferend", "pause", "play",
            "playing", "ended", "viewend",
        ])
        #expect(setup.findings.isEmpty)
        let records = setup.memory.records
        #expect(records.allSatisfy { $0[field: "env_key"] == .string("env-1") && $0[field: "viewer_user_id"] == .string("viewer-7") })
        #expect(records.allSatisfy { $0[field: "player_name"] == .string("main") })
        let rendition = try #require(records.first { $0.name == "renditionchange" })
        #expect(rendition[field: "bitrate"] == .int(3_000_000) && rendition[field: "width"] == .int(1280) && rendition[field: "height"] == .int(720))
        #expect(rendition[field: "video_title"] == .string("News"))
        let error = try #require(records.first { $0.name == "error" })
        #expect(error[field: "severity"] == .string("warning") && error[field: "businessException"] == .bool(false))
        #expect(error[field: "player_error_context"] == .string("cdn") && error[field: "player_playhead_time"] == .int(3_000))  // ms, as the guide's player data
        #expect(records.first { $0.name == "playerready" }?[field: "video_duration"] == .int(600_000))
        // Core SDK v5: error details go with the error event only.
        #expect(records.filter { $0[field: "player_error_context"] != nil }.map(\.name) == ["error"])
        #expect(records.first { $0.name == "ended" }?[field: "view_dropped_frame_count"] == .int(12))
        try setup.memory.expectKPI("video_startup_time", 1.5, within: 0)
        try setup.memory.expectKPI("rebuffer_duration", 2, within: 0)
        // One beacon (under 10 s, closed by viewend), with every record, timestamps not going back.
        let beacons = setup.beacons.beacons
        #expect(beacons.count == 1)
        #expect(beacons.first?.events.map(\.name) == setup.memory.eventNames())
        #expect(beacons.first?.events.map(\.viewerTime).first == Self.wallStart / 1_000_000)
    }

    @Test("errors carry severity and the business-exception flag; after a fatal one tracking goes on (core SDK v5) until viewend or a video change")
    func errorsAndVideoChange() throws {
        let setup = try Setup()
        let mux = setup.mux
        mux.dispatchGlobalDataEvent(Self.global)
        mux.dispatch(.viewInit, player: "p")
        mux.dispatch(.data(MuxDataEvent(video: MuxVideoData(id: "v1", title: "First", series: "S1"))), player: "p")
        mux.dispatch(.play, player: "p")
        mux.dispatch(.error(MuxError(code: 403, message: "no entitlement", context: "drm", severity: .fatal, businessException: true)), player: "p")
        mux.dispatch(.playing, player: "p")  // v5: still tracked after the fatal error
        mux.videoChange(player: "p", video: MuxVideoData(id: "v2", title: "Next"))
        mux.dispatch(.play, player: "p")
        mux.destroyPlayer("p")
        setup.finish()
        try setup.memory.expectEvents(["viewinit", "play", "error", "playing", "viewend"], session: "e-0-1")
        try setup.memory.expectEvents(["viewinit", "play", "viewend"], session: "e-0-2")
        let records = setup.memory.records
        let error = try #require(records.first { $0.name == "error" })
        #expect(error[field: "businessException"] == .bool(true) && error[field: "code"] == .int(403) && error[field: "severity"] == .string("fatal"))
        #expect(error[field: "player_error_code"] == .string("403") && error[field: "player_error_context"] == .string("drm"))
        #expect(records.filter { $0[field: "player_error_code"] != nil }.map(\.name) == ["error"])  // the context does not stick
        let secondView = records.filter { $0.sessionId == "e-0-2" && $0.name == "play" }
        #expect(secondView.first?[field: "video_id"] == .string("v2") && secondView.first?[field: "video_title"] == .string("Next"))
        #expect(secondView.first?[field: "video_series"] == nil)  // the old video's fields are gone
        #expect(setup.instrument.currentStatistics().ignoredInErrorState == 0)
        #expect(setup.instrument.currentStatistics().rejectedTransitions == 0)
        try setup.memory.expectKPI("playback_failure", 1, within: 0, session: "e-0-1")
        #expect(setup.findings.isEmpty)
        #expect(mux.playerNames.isEmpty)
    }

    /// One scenario per rule: a valid sequence with exactly one event that breaks it.
    static let breaks: [(MuxRule, @Sendable (MuxCore) -> Void)] = [
        (.missingEnvironmentKey, { mux in
            mux.dispatch(.viewInit, player: "p")
            mux.dispatch(.playerReady, player: "p")  // no customer player data, no global key
        }),
        (.viewInitFirst, { mux in
            mux.dispatchGlobalDataEvent(global)
            mux.dispatch(.play, player: "p")
        }),
        (.videoChangeOrder, { mux in
            mux.dispatchGlobalDataEvent(global)
            mux.dispatch(.viewInit, player: "p")
            mux.dispatch(.viewInit, player: "p")  // the new video's viewinit without viewend first
        }),
        (.renditionChangeWithoutData, { mux in
            mux.dispatchGlobalDataEvent(global)
            mux.dispatch(.viewInit, player: "p")
            mux.dispatch(.data(MuxDataEvent(sourceWidth: 640, sourceHeight: 360)), player: "p")
            mux.dispatch(.play, player: "p")
            mux.dispatch(.renditionChange, player: "p")  // not immediately after the video data
        }),
        (.unmatchedEnd, { mux in
            mux.dispatchGlobalDataEvent(global)
            mux.dispatch(.viewInit, player: "p")
            mux.dispatch(.seeked, player: "p")
        }),
        (.invalidError, { mux in
            mux.dispatchGlobalDataEvent(global)
            mux.dispatch(.viewInit, player: "p")
            mux.dispatch(.error(MuxError(code: 1, message: "")), player: "p")
        }),
        (.invalidMetadata, { mux in
            mux.dispatchGlobalDataEvent(global)
            mux.dispatch(.viewInit, player: "p")
            mux.dispatch(.data(MuxDataEvent(sourceBitrate: .nan)), player: "p")
        }),
    ]

    @Test("every rule has a scenario")
    func everyRuleCovered() {
        #expect(Set(Self.breaks.map(\.0)) == Set(MuxRule.allCases))
    }

    @Test("each documented rule broken once gives exactly one finding naming it; nothing invalid reaches the engine", arguments: MuxRule.allCases)
    func ruleBrokenOnce(rule: MuxRule) throws {
        let setup = try Setup()
        let scenario = try #require(Self.breaks.first { $0.0 == rule }?.1)
        scenario(setup.mux)
        #expect(setup.findings == [rule])
        #expect(setup.mux.conformance?.findings.first?.description.hasPrefix("\(rule.rawValue): ") == true)
        #expect(setup.mux.conformance?.findings.first?.detail.hasSuffix("(guide: \(rule.guideSection))") == true)
        #expect(setup.instrument.flush())
        #expect(setup.instrument.currentStatistics().rejectedTransitions == 0)
        setup.finish()
    }

    @Test("hostile input — oversized strings, empty names, too many players, negative and non-finite numbers — is refused with findings, bounded")
    func hostileInput() throws {
        let setup = try Setup()
        let mux = setup.mux
        let huge = String(repeating: "\u{0}é\u{FFFF}", count: 50_000)
        mux.dispatchGlobalDataEvent(MuxGlobalData(environmentKey: huge))
        mux.dispatchGlobalDataEvent(Self.global)
        mux.dispatch(.viewInit, player: huge)
        mux.dispatch(.viewInit, player: "")
        mux.dispatch(.data(MuxDataEvent(video: MuxVideoData(id: huge))), player: "p")
        mux.dispatch(.data(MuxDataEvent(video: MuxVideoData(id: ""))), player: "p")
        mux.dispatch(.data(MuxDataEvent(sourceWidth: -1)), player: "p")
        mux.dispatch(.data(MuxDataEvent(droppedFrames: -5)), player: "p")
        mux.dispatch(.data(MuxDataEvent(video: MuxVideoData(id: "v", duration: .seconds(-1)))), player: "p")
        mux.dispatch(.viewInit, player: "p")
        mux.dispatch(.error(MuxError(code: 1, message: huge)), player: "p")
        for index in 0..<(MuxLimits.maximumPlayers + 5) { mux.dispatch(.viewInit, player: "player-\(index)") }
        #expect(setup.findings == Array(repeating: .invalidMetadata, count: 8) + [.invalidError] + Array(repeating: .invalidMetadata, count: 6))
        #expect(mux.playerNames.count == MuxLimits.maximumPlayers)
        #expect(mux.conformance?.calls.allSatisfy { $0.arguments.allSatisfy { $0.count <= 64 } } == true)
        setup.finish()
    }

    @Test("global data reaches every player's records, and replacing it replaces theirs")
    func globalData() throws {
        let setup = try Setup()
        let mux = setup.mux
        mux.dispatchGlobalDataEvent(Self.global)
        mux.dispatch(.viewInit, player: "a")
        mux.dispatch(.viewInit, player: "b")
        mux.dispatchGlobalDataEvent(MuxGlobalData(environmentKey: "env-2"))
        mux.dispatch(.play, player: "a")
        mux.dispatch(.play, player: "b")
        setup.finish()
        let plays = setup.memory.records.filter { $0.name == "play" }
        #expect(plays.count == 2)
        #expect(plays.allSatisfy { $0[field: "env_key"] == .string("env-2") && $0[field: "viewer_user_id"] == nil })
        #expect(Set(plays.compactMap { $0[field: "player_name"] }) == [.string("a"), .string("b")])
        #expect(setup.memory.sessionIds.count == 2)
    }

    @Test("replacing the global data keeps what a player's customer player data set (its environment key, its viewer): neither removed nor overwritten")
    func globalDataKeepsCustomerPlayerData() throws {
        let setup = try Setup()
        let mux = setup.mux
        mux.dispatchGlobalDataEvent(Self.global)  // env-1, viewer-7, tv
        mux.dispatch(.viewInit, player: "a")
        mux.dispatch(.data(MuxDataEvent(customerPlayerData: MuxCustomerPlayerData(environmentKey: "env-a", viewerUserId: "viewer-a"))), player: "a")
        mux.dispatch(.viewInit, player: "b")
        mux.dispatch(.play, player: "a")
        mux.dispatch(.play, player: "b")
        // The key and viewer both in the new global data, and neither: each case once.
        mux.dispatchGlobalDataEvent(MuxGlobalData(environmentKey: "env-2", viewerUserId: "viewer-2", deviceCategory: "phone"))
        mux.dispatch(.pause, player: "a")
        mux.dispatch(.pause, player: "b")
        mux.dispatchGlobalDataEvent(MuxGlobalData(deviceCategory: "desktop"))
        mux.dispatch(.playing, player: "a")
        setup.finish()
        #expect(setup.findings.isEmpty)
        func record(_ name: String, _ player: String) -> TelemetryRecord? {
            setup.memory.records.first { $0.name == name && $0[field: "player_name"] == .string(player) }
        }
        let a = try #require(record("pause", "a"))
        #expect(a[field: "env_key"] == .string("env-a") && a[field: "viewer_user_id"] == .string("viewer-a"))
        #expect(a[field: "viewer_device_category"] == .string("phone"))
        let b = try #require(record("pause", "b"))  // no customer data: the global data's
        #expect(b[field: "env_key"] == .string("env-2") && b[field: "viewer_user_id"] == .string("viewer-2"))
        let later = try #require(record("playing", "a"))  // global data without a key removes none of the player's
        #expect(later[field: "env_key"] == .string("env-a") && later[field: "viewer_user_id"] == .string("viewer-a"))
        #expect(later[field: "viewer_device_category"] == .string("desktop"))
    }

    @Test("beacons: batched every 10 s of the records' monotonic time, closed at viewend, timestamps never going back")
    func beacons() throws {
        let setup = try Setup()
        let mux = setup.mux
        mux.dispatchGlobalDataEvent(Self.global)
        mux.dispatch(.viewInit, player: "p")
        mux.dispatch(.play, player: "p")
        setup.clock.advance(by: .seconds(4))
        mux.dispatch(.playing, player: "p")
        setup.clock.advance(by: .seconds(6))
        mux.dispatch(.pause, player: "p")  // 10 s after the first: a new beacon
        setup.clock.advance(by: .seconds(1))
        mux.dispatch(.play, player: "p")
        mux.dispatch(.viewEnd, player: "p")
        setup.finish()
        let beacons = setup.beacons.beacons
        #expect(beacons.map { $0.events.map(\.name) } == [["viewinit", "play", "playing"], ["pause", "play", "viewend"]])
        #expect(beacons.map(\.opened) == [.zero, .seconds(10)])
        #expect(beacons.flatMap(\.events).map(\.time) == [.zero, .zero, .seconds(4), .seconds(10), .seconds(11), .seconds(11)])
        // The batcher itself: a record timed before its view's previous one keeps the later time.
        var batcher = MuxBeaconBatcher()
        func record(_ seq: UInt64, _ time: Duration, _ name: String) -> TelemetryRecord {
            TelemetryRecord(sessionId: "s", seq: seq, monotonic: time, wallTimeNanoseconds: 0, kind: .event, name: name, fields: [TelemetryField("player_instance_id", .string("k"))])
        }
        _ = batcher.add(record(0, .seconds(5), "play"))
        _ = batcher.add(record(1, .seconds(3), "playing"))
        #expect(batcher.flush()?.events.map(\.time) == [.seconds(5), .seconds(5)])
        #expect(batcher.clampedTimestamps == 1)
        // Records of other trackers (no player_instance_id) are not Mux's.
        #expect(batcher.add(TelemetryRecord(sessionId: "x", seq: 0, monotonic: .zero, wallTimeNanoseconds: 0, kind: .event, name: "viewend", fields: [])).isEmpty)
    }

    @Test("a view is split after the configured inactivity: the next event ends it and goes on in a new view")
    func inactivitySplit() throws {
        let setup = try Setup(inactivity: .seconds(60))
        let mux = setup.mux
        mux.dispatchGlobalDataEvent(Self.global)
        mux.dispatch(.viewInit, player: "p")
        mux.dispatch(.play, player: "p")
        mux.dispatch(.pause, player: "p")
        setup.clock.advance(by: .seconds(61))
        mux.dispatch(.play, player: "p")
        setup.finish()
        try setup.memory.expectEvents(["viewinit", "play", "pause", "viewend"], session: "e-0-1")
        try setup.memory.expectEvents(["viewinit", "play", "viewend"], session: "e-0-2")
        #expect(setup.memory.records.first { $0.name == "viewend" }?[field: "reason"] == .string("inactivity"))
    }

    @Test("debug logging writes the trace shape through swift-log")
    func traceLines() throws {
        let setup = try Setup()
        setup.mux.dispatch(.play, player: "p")
        setup.mux.dispatchGlobalDataEvent(Self.global)
        #expect(setup.collector.snapshot().entries.map(\.message) == [
            "[WARN] [2023-11-14T22:13:20.000Z][MuxCore] #play > viewInitFirst: play with no view open: dispatch viewinit first (guide: Sample event sequence)",
            "[DEBUG] [2023-11-14T22:13:20.000Z][MuxCore] #dispatchGlobalDataEvent > environment key set: true",
        ])
        setup.finish()
    }
}
