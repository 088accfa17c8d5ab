import PlayoutAnalytics
import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Testing

/// An OpenAVT instrument on a manual clock, in conformance mode: the engine delivers to memory,
/// the OpenAVT backend is New Relic's shape.
final class OpenAVTHarness {
    let clock = ManualClock()
    let memory = InMemoryTelemetryBackend()
    let newRelic = OpenAVTNewRelicBackend()
    let log = ConformanceLog<OpenAVTRule>()
    let instrument: OpenAVTInstrument

    init(hub: some OpenAVTHub = OpenAVTHubCore(), metricalc: (any OpenAVTMetricalc)? = OpenAVTMetricalcCore(), ringCapacity: Int = 8_192) throws {
        let engine = try TelemetryInstrument(
            configuration: .init(ringCapacity: ringCapacity, hub: .init(heartbeatInterval: .seconds(30)), delivery: .init(linger: .zero), engineId: "o"),
            clock: clock, wallClockNanoseconds: 1_700_000_000_000_000_000, driver: .embedded)
        instrument = try OpenAVTInstrument(engine: engine, hub: hub, metricalc: metricalc, backend: memory, instrumentId: "i", options: .init(conformance: log))
        instrument.setBackend(newRelic)
    }

    /// The New Relic events' action names.
    var actionNames: [String] { newRelic.collector.events.map { "\($0.attributes["actionName"] ?? .string("?"))" } }

    /// Emits `actions` on `tracker`, `step` apart.
    func emit(_ actions: [OpenAVTAction], on tracker: Int, step: Duration = .milliseconds(500)) {
        for action in actions {
            instrument.emit(action: action, trackerId: tracker)
            clock.advance(by: step)
        }
    }

    func finish() -> [TelemetryRecord] {
        instrument.shutdown(timeout: .seconds(2))
        return memory.records
    }

    func metrics(_ name: String, _ records: [TelemetryRecord]) -> [TelemetryValue] {
        records.filter { $0.kind == .metric && $0.name == name }.compactMap { $0[field: "value"] }
    }

    /// The New Relic events of action `name`.
    func events(_ name: String) -> [OpenAVTNewRelicCollector.CustomEvent] {
        newRelic.collector.events.filter { $0.attributes["actionName"] == .string(name) }
    }
}

/// A hub or metric calculator that writes down its lifecycle.
struct OpenAVTRecordingComponent: OpenAVTHub, OpenAVTMetricalc {
    let name: String
    let journal: LockedValue<[String]>
    var core = OpenAVTHubCore()

    mutating func instrumentReady(instrument: OpenAVTInstrument) { journal.withLock { $0.append("\(name) ready") } }
    mutating func endOfService() { journal.withLock { $0.append("\(name) endOfService") } }
    mutating func processEvent(event: OpenAVTEvent, tracker: any OpenAVTTracker) -> OpenAVTEvent? {
        journal.withLock { $0.append("\(name) \(event.action)") }
        return core.processEvent(event: event, tracker: tracker)
    }
    mutating func processMetric(event: OpenAVTEvent, tracker: any OpenAVTTracker) -> [OpenAVTMetric] {
        [OpenAVTMetric(name: "\(name)Count", type: .counter, value: 1)]
    }
}

@Suite("OpenAVT adapter: the instrument chain over the engine")
struct OpenAVTAdapterTests {
    @Test("a playback: the backend gets OpenAVT's events and metrics, the engine its records, in order")
    func playback() throws {
        let harness = try OpenAVTHarness()
        let tracker = harness.instrument.addTracker(name: "player")
        harness.instrument.ready()
        let actions: [OpenAVTAction] = [
            .playerReady, .mediaRequest, .streamLoad, .start, .bufferBegin, .bufferFinish, .pauseBegin, .pauseFinish, .seekBegin, .seekFinish, .end,
        ]
        harness.emit(actions, on: tracker)
        let records = harness.finish()
        try harness.memory.expectEvents([
            "viewinit", "playerready", "MediaRequest", "play", "playing", "rebufferstart", "rebufferend", "pause", "playing", "seeking", "seeked", "ended", "viewend",
        ])
        #expect(harness.actionNames == actions.map(\.name))
        #expect(harness.metrics("StartTime", records) == [.int(1_000)])  // from MediaRequest
        #expect(harness.metrics("RebufferTime", records) == [.int(500)])
        #expect(harness.metrics("NumRebuffers", records) == [.int(1)])
        #expect(harness.metrics("NumPlays", records) == [.int(1)])
        #expect(harness.metrics("NumEnds", records) == [.int(1)])
        // Played: Start to BufferBegin, BufferFinish to PauseBegin, PauseFinish to SeekBegin, SeekFinish to End.
        let played = harness.metrics("PlayTime", records).compactMap(\.number).reduce(0, +)
        #expect(played == 4 * 500)
        #expect(records.first { $0.name == "playing" }?[field: "streamId"] == .string("i-0-1"))
        // OpenAVT's attributes, in its units: integer milliseconds under its action names.
        let end = try #require(harness.events("End").first)
        #expect(end.attributes["timeSinceStart"] == .int(3_500))
        #expect(end.attributes["timeSinceStreamLoad"] == .int(4_000))
        #expect(end.attributes["timeSincePauseBegin"] == .int(2_000))
        #expect(end.attributes["timeSinceEnd"] == nil, "an action's own time since comes from its previous event")
        #expect(end.attributes["accumPauseTime"] == .int(500))
        #expect(end.attributes["accumBufferTime"] == .int(500))
        #expect(end.attributes["accumSeekTime"] == .int(500))
        #expect(end.attributes["senderId"] == .string("i-0"))
        #expect(end.attributes["streamId"] == .string("i-0-1"))
        #expect(end.attributes["inPlaybackBlock"] == .bool(false))
        #expect(harness.newRelic.collector.metrics.first { $0.name == "StartTime" } == .init(name: "StartTime", category: "OAVT", value: .int(1_000)))
        // The engine's own records keep Playout's model (seconds, record names), without OpenAVT's time-since.
        let mediaRequest = try #require(records.first { $0.name == "MediaRequest" })
        #expect(mediaRequest[field: "timeSincePlayerReady"] == nil)
        #expect(mediaRequest[field: "senderId"] == .string("i-0"))
        #expect(harness.log.findings.isEmpty, "\(harness.log.findings)")
        #expect(harness.instrument.rejectedActions == 0)
    }

    @Test("fixed: a second playback on the same tracker gets a fresh stream id and its own start time")
    func secondPlayback() throws {
        let harness = try OpenAVTHarness()
        let tracker = harness.instrument.addTracker()
        harness.instrument.ready()
        harness.emit([.mediaRequest, .streamLoad, .start, .end], on: tracker, step: .seconds(1))
        harness.clock.advance(by: .seconds(10))
        harness.emit([.streamLoad], on: tracker, step: .milliseconds(300))  // no MediaRequest this time
        harness.emit([.start, .end], on: tracker, step: .seconds(1))
        let records = harness.finish()
        try harness.memory.expectEvents(["viewinit", "MediaRequest", "play", "playing", "ended", "videochange", "play", "playing", "ended", "viewend"])
        #expect(harness.metrics("StartTime", records) == [.int(2_000), .int(300)])
        let streamIds = records.filter { $0.name == "playing" }.map { $0[field: "streamId"] }
        #expect(streamIds == [.string("i-0-1"), .string("i-0-2")])
        #expect(harness.events("Start").map { $0.attributes["countStarts"] } == [.int(1), .int(2)])
        #expect(harness.instrument.getTracker(tracker)?.getState().didFinish == true)
        #expect(harness.log.findings.isEmpty, "\(harness.log.findings)")
    }

    @Test("fixed: nothing is dropped silently — a refused action is counted, logged and reported; every accepted one is delivered")
    func nothingSilent() throws {
        let harness = try OpenAVTHarness()
        let tracker = harness.instrument.addTracker()
        harness.instrument.ready()
        harness.emit([.streamLoad, .start], on: tracker)
        for _ in 0..<1_000 {
            harness.instrument.emit(action: "Custom", trackerId: tracker)
        }
        harness.emit([.pauseFinish, .end], on: tracker)
        let records = harness.finish()
        #expect(records.filter { $0.name == "Custom" }.count == 1_000)
        #expect(harness.events("Custom").count == 1_000)
        #expect(harness.instrument.rejectedActions == 1)
        #expect(harness.log.findings.map(\.rule) == [.pauseBlock])
        #expect(harness.instrument.engine.currentStatistics().eventsDropped == 0)
        #expect(harness.instrument.droppedBackendItems == 0)
    }

    @Test("setHub, setMetricalc, setBackend: the replaced component gets endOfService, the new one instrumentReady at the next ready()")
    func replaceComponents() throws {
        let journal = LockedValue<[String]>([])
        let harness = try OpenAVTHarness(hub: OpenAVTRecordingComponent(name: "HubA", journal: journal), metricalc: OpenAVTRecordingComponent(name: "CalcA", journal: journal))
        let tracker = harness.instrument.addTracker()
        harness.instrument.ready()
        harness.emit([.streamLoad], on: tracker)
        harness.instrument.setHub(OpenAVTRecordingComponent(name: "HubB", journal: journal))
        harness.instrument.setMetricalc(OpenAVTRecordingComponent(name: "CalcB", journal: journal))
        harness.instrument.ready()
        harness.emit([.start], on: tracker)
        let second = InMemoryTelemetryBackend(name: "second")
        let statistics = try harness.instrument.setBackend(second)
        #expect(statistics?.name == "memory")
        #expect(harness.memory.isClosed, "the replaced backend is drained and closed")
        let newRelic = OpenAVTNewRelicBackend()
        harness.instrument.setBackend(newRelic)
        harness.instrument.ready()
        harness.emit([.end], on: tracker)
        harness.instrument.shutdown(timeout: .seconds(2))
        #expect(journal.withLock { $0 } == [
            "CalcA ready", "HubA ready", "HubA StreamLoad", "HubA endOfService", "CalcA endOfService", "CalcB ready", "HubB ready", "HubB Start",
            "CalcB ready", "HubB ready", "HubB End", "HubB endOfService", "CalcB endOfService",
        ])
        #expect(harness.memory.eventNames() == ["viewinit", "play", "playing"])
        #expect(harness.memory.records.filter { $0.kind == .metric }.map(\.name) == ["CalcACount", "CalcBCount"])
        #expect(second.eventNames(session: harness.memory.sessionIds.first) == ["ended", "viewend"])
        #expect(second.isClosed)
        #expect(harness.actionNames == ["StreamLoad", "Start"])
        #expect(newRelic.collector.events.map { $0.attributes["actionName"] } == [.string("End")])
        #expect(harness.log.findings.isEmpty, "\(harness.log.findings)")
    }

    @Test("getters add attributes to the events their filter lets through (by OpenAVT action); a quality change takes its rendition from them")
    func getters() throws {
        let harness = try OpenAVTHarness()
        let tracker = harness.instrument.addTracker()
        let bitrate = LockedValue<Int64>(300_000)
        let quality: (OpenAVTEvent, OpenAVTAttribute) -> Bool = { event, _ in
            event.getAction() == .qualityChangeUp || event.getAction() == .qualityChangeDown
        }
        harness.instrument.registerGetter(attribute: .bitrate, getter: { bitrate.withLock { $0 } }, trackerId: tracker)
        harness.instrument.registerGetter(attribute: .resolutionWidth, getter: { 320 }, trackerId: tracker, filter: quality)
        harness.instrument.registerGetter(attribute: .resolutionHeight, getter: { 180 }, trackerId: tracker, filter: quality)
        harness.instrument.registerGetter(attribute: "cdn", getter: { "edge-1" }, trackerId: tracker) { event, _ in event.getAction() != .start }
        harness.instrument.ready()
        harness.emit([.streamLoad, .start, .qualityChangeUp], on: tracker)
        #expect(harness.instrument.callGetter(attribute: "cdn", trackerId: tracker) == .string("edge-1"))
        harness.instrument.unregisterGetter(attribute: "cdn", trackerId: tracker)
        #expect(harness.instrument.callGetter(attribute: "cdn", trackerId: tracker) == nil)
        bitrate.withLock { $0 = 150_000 }
        harness.emit([.qualityChangeDown, .end], on: tracker)
        let records = harness.finish()
        let renditions = records.filter { $0.name == "renditionchange" }
        #expect(renditions.map { $0[field: "bitrate"] } == [.int(300_000), .int(150_000)])
        #expect(renditions.allSatisfy { $0[field: "width"] == .int(320) && $0[field: "height"] == .int(180) })
        #expect(harness.events("StreamLoad").first?.attributes["cdn"] == .string("edge-1"))
        #expect(harness.events("StreamLoad").first?.attributes["resolutionWidth"] == nil)
        #expect(harness.events("Start").first?.attributes["cdn"] == nil)
        #expect(harness.events("End").first?.attributes["cdn"] == nil)
        #expect(harness.events("QualityChangeUp").first?.attributes["resolutionWidth"] == .int(320))
        try harness.memory.expectKPI("weighted_average_bitrate", 225_000, within: 0)  // 300 kbit/s for 0.5 s, 150 kbit/s for 0.5 s
    }

    @Test("pings: each of the engine's heartbeats (every 30 s while playing) and a Ping action pass the chain as Ping and carry the ping provider's fields")
    func pings() throws {
        let harness = try OpenAVTHarness()
        let tracker = harness.instrument.addTracker()
        harness.instrument.setPingProvider(trackerId: tracker) { [TelemetryField("framesRendered", .int(42))] }
        harness.instrument.registerGetter(attribute: .position, getter: { 7_000 }, trackerId: tracker) { event, _ in event.getAction() == .ping }
        harness.instrument.ready()
        harness.emit([.streamLoad, .start], on: tracker)
        #expect(harness.instrument.engine.flush())
        harness.clock.advance(by: .seconds(30))
        #expect(harness.instrument.engine.flush())
        harness.emit([.ping, .end], on: tracker)
        let records = harness.finish()
        let heartbeats = records.filter { $0.kind == .heartbeat }
        #expect(heartbeats.count == 2)
        #expect(heartbeats.allSatisfy { $0[field: "framesRendered"] == .int(42) })
        let pings = harness.events("Ping")
        #expect(pings.count == 2)
        #expect(pings.allSatisfy { $0.attributes["position"] == .int(7_000) })
        #expect(pings.first?.attributes["timeSinceStart"] == .int(30_500))
        #expect(harness.events("Start").first?.attributes["position"] == nil)
        #expect(harness.log.calls.count == 4, "the engine's pings are the instrument's, not calls")
        #expect(harness.log.findings.isEmpty, "\(harness.log.findings)")
    }

    @Test("trackers: each has its own sessions; a removed tracker gets endOfService, its view ends, and later use is a finding")
    func trackers() throws {
        let harness = try OpenAVTHarness()
        let first = harness.instrument.addTracker(name: "first")
        let second = harness.instrument.addTracker(name: "second")
        harness.instrument.ready()
        harness.emit([.streamLoad, .start], on: first)
        harness.emit([.streamLoad], on: second)
        #expect(harness.instrument.removeTracker(second))
        harness.emit([.start], on: second)
        #expect(!harness.instrument.removeTracker(second))
        harness.emit([.end], on: first)
        let stranger = OpenAVTBasicTracker(name: "never added")
        harness.instrument.emit(action: .start, tracker: stranger)
        harness.instrument.registerGetter(attribute: .position, getter: { 1 }, tracker: stranger)
        _ = harness.finish()
        let sessions = harness.memory.sessionIds
        try harness.memory.expectEvents(["viewinit", "play", "playing", "ended", "viewend"], session: sessions[0])
        try harness.memory.expectEvents(["viewinit", "play", "viewend"], session: sessions[1])
        #expect(harness.log.findings.map(\.rule) == [.knownTracker, .knownTracker, .knownTracker, .knownTracker])
        #expect(harness.events("StreamLoad").map { $0.attributes["senderId"] } == [.string("i-0"), .string("i-1")])
    }

    @Test("an error with its context; a fatal one puts the session in the error state until the next StreamLoad")
    func errors() throws {
        let harness = try OpenAVTHarness()
        let tracker = harness.instrument.addTracker()
        harness.instrument.ready()
        harness.emit([.streamLoad, .start], on: tracker)
        harness.instrument.emit(error: TelemetryError(severity: .fatal, code: 7, message: "decoder gone"), trackerId: tracker)
        harness.emit([.pauseBegin, .end, .streamLoad, .start, .end], on: tracker)
        let records = harness.finish()
        try harness.memory.expectEvents(["viewinit", "play", "playing", "error", "videochange", "play", "playing", "ended", "viewend"])
        #expect(records.first { $0.name == "error" }?[field: "code"] == .int(7))
        #expect(harness.events("Error").first?.attributes["errorDescription"] == .string("decoder gone"))
        #expect(harness.events("Error").first?.attributes["countErrors"] == .int(1))
        // Ignored until the next StreamLoad: the error's PlayTime, PauseBegin and its PlayTime, End and its NumEnds.
        #expect(harness.instrument.engine.currentStatistics().ignoredInErrorState == 5)
    }

    @Test("hostile input: odd action names, unknown tracker ids, a flood past the ring and the backend queue — counted, reported, bounded, no crash")
    func hostile() throws {
        let harness = try OpenAVTHarness(ringCapacity: 64)
        let tracker = harness.instrument.addTracker()
        harness.instrument.emit(action: .start, trackerId: tracker)  // before ready()
        harness.instrument.ready()
        for id in [-1, 99, Int.max] { harness.instrument.emit(action: .start, trackerId: id) }
        var random = SeededRandomNumberGenerator(seed: 4)
        for _ in 0..<200 {
            let bytes = (0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            harness.instrument.emit(action: OpenAVTAction(name: String(decoding: bytes, as: UTF8.self)), trackerId: tracker)
        }
        harness.instrument.emit(action: OpenAVTAction(name: String(repeating: "x", count: 100_000)), trackerId: tracker)
        for index in 0..<1_100 { harness.instrument.emit(action: OpenAVTAction(name: "bad\(index)"), trackerId: tracker) }
        for _ in 0..<2_000 { harness.instrument.emit(action: "Flood", trackerId: tracker) }
        _ = harness.finish()
        let statistics = harness.instrument.engine.currentStatistics()
        #expect(statistics.eventsDropped > 0, "the flood overflows the 64-entry ring: counted")
        let findings = harness.log.findings
        #expect(findings.filter { $0.rule != .actionNameCase }.map(\.rule) == [.readyBeforeEmit, .knownTracker, .knownTracker, .knownTracker])
        #expect(findings.filter { $0.rule == .actionNameCase }.count == 1_024, "one per distinct name, at most 1,024 names")
        #expect(findings.allSatisfy { $0.detail.utf8.count < 400 }, "a long name is cut in the finding")
        #expect(harness.log.calls.count == 1 + 3 + 200 + 1 + 1_100 + 2_000)
        let collector = harness.newRelic.collector
        #expect(collector.events.count + collector.droppedEvents + collector.refusals.count == 1 + 200 + 1 + 1_100 + 2_000)
        // The 100,000-character action: its own event's actionName is too long for New Relic, then
        // its timeSince attribute's name on the events after it (until forgotten).
        #expect(collector.refusals.first == .valueTooLong(attribute: "actionName", bytes: 100_000, maximum: 4_096))
        #expect(collector.refusals.dropFirst().allSatisfy { if case .invalidAttributeName = $0 { true } else { false } })
        #expect(collector.refusals.count > 1)
        let timeSince = collector.events.map { $0.attributes.keys.filter { $0.hasPrefix("timeSince") }.count }
        #expect(timeSince.max() == OpenAVTInstrument.maximumTimeSinceAttributes, "past 64 distinct actions the stalest is forgotten")
    }
}

@Suite("OpenAVT adapter: conformance mode")
struct OpenAVTConformanceTests {
    /// A metric calculator whose metric breaks the naming convention.
    struct LowerCaseMetricalc: OpenAVTMetricalc {
        func processMetric(event: OpenAVTEvent, tracker: any OpenAVTTracker) -> [OpenAVTMetric] {
            event.action == .start ? [OpenAVTMetric(name: "startTime", type: .gauge, value: 0)] : []
        }
    }

    /// One scenario per documented rule: a valid playback with exactly that rule broken once.
    static let scenarios: [(rule: OpenAVTRule, run: @Sendable (OpenAVTHarness) -> Void)] = [
        (.readyBeforeEmit, { harness in
            let tracker = harness.instrument.addTracker()
            harness.emit([.streamLoad], on: tracker)
            harness.instrument.ready()
            harness.emit([.start, .end], on: tracker)
        }),
        (.readyAfterChange, { harness in
            harness.instrument.ready()
            let tracker = harness.instrument.addTracker()
            harness.emit([.streamLoad], on: tracker)
            harness.instrument.ready()
            harness.emit([.start, .end], on: tracker)
        }),
        (.knownTracker, { harness in
            harness.instrument.ready()
            harness.emit([.start], on: 5)
        }),
        (.oncePerPlayback, { harness in
            let tracker = harness.instrument.addTracker()
            harness.instrument.ready()
            harness.emit([.streamLoad, .start, .start, .end], on: tracker)
        }),
        (.pauseBlock, { harness in
            let tracker = harness.instrument.addTracker()
            harness.instrument.ready()
            harness.emit([.streamLoad, .pauseBegin, .start, .end], on: tracker)
        }),
        (.bufferBlock, { harness in
            let tracker = harness.instrument.addTracker()
            harness.instrument.ready()
            harness.emit([.streamLoad, .start, .bufferFinish, .end], on: tracker)
        }),
        (.seekBlock, { harness in
            let tracker = harness.instrument.addTracker()
            harness.instrument.ready()
            harness.emit([.streamLoad, .start, .seekBegin, .seekBegin, .seekFinish, .end], on: tracker)
        }),
        (.finishAfterStart, { harness in
            let tracker = harness.instrument.addTracker()
            harness.instrument.ready()
            harness.emit([.streamLoad, .end, .start, .end], on: tracker)
        }),
        (.actionNameCase, { harness in
            let tracker = harness.instrument.addTracker()
            harness.instrument.ready()
            harness.emit([.streamLoad, .start, "customAction", "customAction", .end], on: tracker)
        }),
        (.attributeNameCase, { harness in
            let tracker = harness.instrument.addTracker()
            harness.instrument.registerGetter(attribute: "Custom_Attribute", getter: { 1 }, trackerId: tracker)
            harness.instrument.ready()
            harness.emit([.streamLoad, .start, .end], on: tracker)
        }),
    ]

    @Test("every documented rule is covered by a scenario")
    func everyRuleCovered() {
        #expect(Set(Self.scenarios.map(\.rule) + [.metricNameCase]) == Set(OpenAVTRule.allCases))
    }

    @Test("each documented rule broken once gives exactly one finding naming it and the guide's section, and the session goes on", arguments: Self.scenarios.indices)
    func oneFindingPerRule(_ index: Int) throws {
        let (rule, run) = Self.scenarios[index]
        let harness = try OpenAVTHarness()
        run(harness)
        _ = harness.finish()
        #expect(harness.log.findings.map(\.rule) == [rule], "\(harness.log.findings)")
        #expect(harness.log.findings.first?.description.hasPrefix("\(rule): ") == true)
        #expect(harness.log.findings.first?.detail.hasSuffix("(guide: \(rule.guideSection))") == true)
    }

    @Test("metricNameCase: a metric not in upper camel case gives one finding naming Custom Metrics")
    func metricName() throws {
        let harness = try OpenAVTHarness(metricalc: LowerCaseMetricalc())
        let tracker = harness.instrument.addTracker()
        harness.instrument.ready()
        harness.emit([.streamLoad, .start, .end, .streamLoad, .start, .end], on: tracker)
        _ = harness.finish()
        #expect(harness.log.findings.map(\.rule) == [.metricNameCase])
        #expect(harness.log.findings.first?.detail == "\"startTime\" is not in upper camel case (guide: Custom Metrics)")
        #expect(harness.newRelic.collector.metrics.map(\.name) == ["startTime", "startTime"], "reported, and still delivered")
    }
}
