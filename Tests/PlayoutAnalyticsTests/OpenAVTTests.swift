import PlayoutAnalytics
import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Testing

/// An OpenAVT instrument on a manual clock delivering to memory, in conformance mode.
final class OpenAVTHarness {
    let clock = ManualClock()
    let memory = InMemoryTelemetryBackend()
    let log = ConformanceLog<OpenAVTRule>()
    let instrument: OpenAVTInstrument

    init(hub: some OpenAVTHub = OpenAVTHubCore(), metricalc: some OpenAVTMetricalc = OpenAVTMetricalcCore(), ringCapacity: Int = 8_192) throws {
        let engine = try TelemetryInstrument(
            configuration: .init(ringCapacity: ringCapacity, hub: .init(heartbeatInterval: .seconds(30)), delivery: .init(linger: .zero), engineId: "o"),
            clock: clock, wallClockNanoseconds: 1_700_000_000_000_000_000, driver: .embedded)
        instrument = try OpenAVTInstrument(engine: engine, hub: hub, metricalc: metricalc, backend: memory, instrumentId: "i", options: .init(conformance: log))
    }

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
}

/// A hub or metric calculator that writes down its lifecycle.
struct OpenAVTRecordingComponent: OpenAVTHub, OpenAVTMetricalc {
    let name: String
    let journal: LockedValue<[String]>
    var core = OpenAVTHubCore()

    mutating func instrumentReady() { journal.withLock { $0.append("\(name) ready") } }
    mutating func endOfService() { journal.withLock { $0.append("\(name) endOfService") } }
    mutating func processEvent(_ event: OpenAVTEvent, state: inout OpenAVTPlaybackState) -> OpenAVTHubResult {
        journal.withLock { $0.append("\(name) \(event.action)") }
        return core.processEvent(event, state: &state)
    }
    mutating func processMetric(_ event: OpenAVTEvent, state: OpenAVTPlaybackState) -> [OpenAVTMetric] {
        [OpenAVTMetric("\(name)Count", .int(1))]
    }
}

@Suite("OpenAVT adapter: the instrument chain over the engine")
struct OpenAVTAdapterTests {
    @Test("a playback: actions become the engine's events, metrics its metric records, in order")
    func playback() throws {
        let harness = try OpenAVTHarness()
        let tracker = harness.instrument.addTracker(name: "player")
        harness.instrument.ready()
        harness.emit([.playerReady, .mediaRequest, .streamLoad, .start, .bufferBegin, .bufferFinish, .pauseBegin, .pauseFinish, .seekBegin, .seekFinish, .end], on: tracker)
        let records = harness.finish()
        try harness.memory.expectEvents([
            "viewinit", "playerready", "MediaRequest", "play", "playing", "rebufferstart", "rebufferend", "pause", "playing", "seeking", "seeked", "ended", "viewend",
        ])
        #expect(harness.metrics("StartTime", records) == [.int(1_000)])  // from MediaRequest
        #expect(harness.metrics("RebufferTime", records) == [.int(500)])
        #expect(harness.metrics("NumRebuffers", records) == [.int(1)])
        #expect(harness.metrics("NumPlays", records) == [.int(1)])
        #expect(harness.metrics("NumEnds", records) == [.int(1)])
        // Played: Start to BufferBegin, BufferFinish to PauseBegin, PauseFinish to SeekBegin, SeekFinish to End.
        let played = harness.metrics("PlayTime", records).compactMap(\.number).reduce(0, +)
        #expect(played == 4 * 500)
        #expect(records.first { $0.name == "playing" }?[field: "streamId"] == .string("i-0-1"))
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
        #expect(harness.instrument.playbackState(trackerId: tracker)?.playbackCount == 2)
        #expect(harness.log.findings.isEmpty, "\(harness.log.findings)")
    }

    @Test("fixed: nothing is dropped silently — a rejected action is counted, logged and reported; every accepted one is delivered")
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
        #expect(harness.instrument.rejectedActions == 1)
        #expect(harness.log.findings.map(\.rule) == [.pauseBlock])
        #expect(harness.instrument.engine.currentStatistics().eventsDropped == 0)
    }

    @Test("setHub, setMetricalc, setBackend: the replaced component gets endOfService, the new one takes over")
    func replaceComponents() throws {
        let journal = LockedValue<[String]>([])
        let harness = try OpenAVTHarness(hub: OpenAVTRecordingComponent(name: "hubA", journal: journal), metricalc: OpenAVTRecordingComponent(name: "calcA", journal: journal))
        let tracker = harness.instrument.addTracker()
        harness.instrument.ready()
        harness.emit([.streamLoad], on: tracker)
        harness.instrument.setHub(OpenAVTRecordingComponent(name: "hubB", journal: journal))
        harness.instrument.setMetricalc(OpenAVTRecordingComponent(name: "calcB", journal: journal))
        harness.emit([.start], on: tracker)
        let second = InMemoryTelemetryBackend(name: "second")
        let statistics = try harness.instrument.setBackend(second)
        #expect(statistics?.name == "memory")
        #expect(harness.memory.isClosed, "the replaced backend is drained and closed")
        harness.emit([.end], on: tracker)
        harness.instrument.shutdown(timeout: .seconds(2))
        #expect(journal.withLock { $0 } == [
            "hubA ready", "calcA ready", "hubA StreamLoad", "hubA endOfService", "hubB ready", "calcA endOfService", "calcB ready", "hubB Start",
            "hubB End", "hubB endOfService", "calcB endOfService",
        ])
        #expect(harness.memory.eventNames() == ["viewinit", "play", "playing"])
        #expect(harness.memory.records.filter { $0.kind == .metric }.map(\.name) == ["calcACount", "calcBCount"])
        #expect(second.eventNames(session: harness.memory.sessionIds.first) == ["ended", "viewend"])
        #expect(second.isClosed)
    }

    @Test("getters add attributes to the records their filter lets through; a quality change takes its rendition from them")
    func getters() throws {
        let harness = try OpenAVTHarness()
        let tracker = harness.instrument.addTracker()
        let bitrate = LockedValue<Int64>(300_000)
        harness.instrument.registerGetter(attribute: "bitrate", trackerId: tracker) { .int(bitrate.withLock { $0 }) }
        harness.instrument.registerGetter(attribute: "width", trackerId: tracker, filter: .only(["renditionchange"])) { .int(320) }
        harness.instrument.registerGetter(attribute: "height", trackerId: tracker, filter: .only(["renditionchange"])) { .int(180) }
        harness.instrument.registerGetter(attribute: "cdn", trackerId: tracker, filter: .except(["playing"])) { .string("edge-1") }
        harness.instrument.ready()
        harness.emit([.streamLoad, .start, .qualityChangeUp], on: tracker)
        #expect(harness.instrument.engine.flush())  // getters attached to records are read on the engine's thread
        harness.instrument.unregisterGetter(attribute: "cdn", trackerId: tracker)
        bitrate.withLock { $0 = 150_000 }
        harness.emit([.qualityChangeDown, .end], on: tracker)
        let records = harness.finish()
        let renditions = records.filter { $0.name == "renditionchange" }
        #expect(renditions.map { $0[field: "bitrate"] } == [.int(300_000), .int(150_000)])
        #expect(renditions.allSatisfy { $0[field: "width"] == .int(320) && $0[field: "height"] == .int(180) })
        #expect(records.first { $0.name == "play" }?[field: "cdn"] == .string("edge-1"))
        #expect(records.first { $0.name == "play" }?[field: "width"] == nil)
        #expect(records.first { $0.name == "playing" }?[field: "cdn"] == nil)
        #expect(records.first { $0.name == "ended" }?[field: "cdn"] == nil)
        try harness.memory.expectKPI("weighted_average_bitrate", 225_000, within: 0)  // 300 kbit/s for 0.5 s, 150 kbit/s for 0.5 s
    }

    @Test("pings: the engine's heartbeats every 30 s while playing, and a Ping action, carry the ping provider's fields")
    func pings() throws {
        let harness = try OpenAVTHarness()
        let tracker = harness.instrument.addTracker()
        harness.instrument.setPingProvider(trackerId: tracker) { [TelemetryField("framesRendered", .int(42))] }
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
    }

    @Test("trackers: each has its own sessions; a removed tracker's view ends and later use is a finding")
    func trackers() throws {
        let harness = try OpenAVTHarness()
        harness.instrument.ready()
        let first = harness.instrument.addTracker(name: "first")
        let second = harness.instrument.addTracker(name: "second")
        harness.emit([.streamLoad, .start], on: first)
        harness.emit([.streamLoad], on: second)
        #expect(harness.instrument.removeTracker(second))
        harness.emit([.start], on: second)
        #expect(!harness.instrument.removeTracker(second))
        harness.emit([.end], on: first)
        _ = harness.finish()
        let sessions = harness.memory.sessionIds
        try harness.memory.expectEvents(["viewinit", "play", "playing", "ended", "viewend"], session: sessions[0])
        try harness.memory.expectEvents(["viewinit", "play", "viewend"], session: sessions[1])
        #expect(harness.log.findings.map(\.rule) == [.knownTracker, .knownTracker])
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
        // Ignored until the next StreamLoad: the error's PlayTime, PauseBegin and its PlayTime, End and its NumEnds.
        #expect(harness.instrument.engine.currentStatistics().ignoredInErrorState == 5)
    }

    @Test("hostile input: odd action names, unknown tracker ids, a flood past the ring — counted, reported, no crash")
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
        for _ in 0..<10_000 { harness.instrument.emit(action: "Flood", trackerId: tracker) }
        _ = harness.finish()
        let statistics = harness.instrument.engine.currentStatistics()
        #expect(statistics.eventsDropped > 0, "the flood overflows the 64-entry ring: counted")
        #expect(harness.log.findings.map(\.rule) == [.readyBeforeEmit, .knownTracker, .knownTracker, .knownTracker])
        #expect(harness.log.calls.count == 1 + 200 + 1 + 10_000)
    }
}

@Suite("OpenAVT adapter: conformance mode")
struct OpenAVTConformanceTests {
    /// One scenario per documented rule: a valid playback with exactly that rule broken once.
    static let scenarios: [(rule: OpenAVTRule, run: @Sendable (OpenAVTHarness) -> Void)] = [
        (.readyBeforeEmit, { harness in
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
    ]

    @Test("every documented rule is covered by a scenario")
    func everyRuleCovered() {
        #expect(Set(Self.scenarios.map(\.rule)) == Set(OpenAVTRule.allCases))
    }

    @Test("each documented rule broken once gives exactly one finding naming it, and the session goes on", arguments: Self.scenarios.indices)
    func oneFindingPerRule(_ index: Int) throws {
        let (rule, run) = Self.scenarios[index]
        let harness = try OpenAVTHarness()
        run(harness)
        _ = harness.finish()
        #expect(harness.log.findings.map(\.rule) == [rule], "\(harness.log.findings)")
        #expect(harness.log.findings.first?.description.hasPrefix("\(rule): ") == true)
    }
}
