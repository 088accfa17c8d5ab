import Logging
import PlayoutAnalytics
import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Testing

/// A valid app id, content metadata of a live stream, and a channel.
enum NielsenFixtures {
    static let appId: NielsenValue = "PE4D5C2A1-0B1C-4D2E-8F3A-5B6C7D8E9F00"
    static let channel: [String: NielsenValue] = ["channelName": "playout-news"]
    static let live: [String: NielsenValue] = [
        "type": "content", "assetid": "EP-001", "program": "Playout News", "title": "Playout News S1E1", "length": "0",
        "airdate": "2026-01-01T12:00:00Z", "isfullepisode": "y", "adloadtype": "2",
    ]
    static var onDemand: [String: NielsenValue] {
        var metadata = live
        metadata["assetid"] = "EP-002"
        metadata["length"] = "600"
        return metadata
    }
    /// 2023-11-14T22:13:20Z, the wall time at the start of every test.
    static let wallStart: Int64 = 1_700_000_000_000_000_000
}

/// An SDK on a manual clock reporting to an in-memory backend.
final class NielsenHarness {
    let clock = ManualClock()
    let memory = InMemoryTelemetryBackend()
    let instrument: TelemetryInstrument
    let log = ConformanceLog<NielsenRule>()

    init() throws {
        instrument = try TelemetryInstrument(
            backends: [memory], configuration: .init(delivery: .init(linger: .zero), engineId: "n"), clock: clock,
            wallClockNanoseconds: NielsenFixtures.wallStart, driver: .embedded)
    }

    func makeSDK(appInfo: [String: NielsenValue] = ["appid": NielsenFixtures.appId], name: String = "nielsen", logger: Logger? = nil) -> NielsenAppSDK {
        NielsenAppSDK(
            appInfo: appInfo, instrument: instrument, name: name, options: .init(conformance: log, logger: logger ?? Logger(label: "test")),
            clock: clock, wallClockNanoseconds: NielsenFixtures.wallStart)
    }

    /// play, loadMetadata, then `seconds` playheads a second apart (live: the Unix time).
    func playLive(_ sdk: NielsenAppSDK, seconds: Int) {
        sdk.play(NielsenFixtures.channel)
        sdk.loadMetadata(NielsenFixtures.live)
        ticks(sdk, seconds)
    }

    func ticks(_ sdk: NielsenAppSDK, _ seconds: Int) {
        for _ in 0..<seconds {
            sdk.playheadPosition(sdk.utcSeconds())
            clock.advance(by: .seconds(1))
        }
    }

    func finish() -> [TelemetryRecord] {
        instrument.shutdown(timeout: .seconds(2))
        return memory.records
    }
}

@Suite("Nielsen DCR adapter: lifecycle, calls, telemetry")
struct NielsenAdapterTests {
    @Test("the lifecycle: initial, idle once initialized, processing while a session plays, idle after stop and end, disabled and back")
    func lifecycle() throws {
        var machine = NielsenStateMachine()
        #expect(machine.state == .initial)
        _ = machine.initialize(appInfo: ["appid": NielsenFixtures.appId])
        #expect(machine.state == .idle)
        _ = machine.play(NielsenFixtures.channel)
        #expect(machine.state == .processing)
        _ = machine.loadMetadata(NielsenFixtures.live)
        _ = machine.stop()
        #expect(machine.state == .idle)
        _ = machine.playheadPosition(1_700_000_001, now: .zero, utcSeconds: 1_700_000_001)
        #expect(machine.state == .processing)
        _ = machine.end()
        #expect(machine.state == .idle)
        _ = machine.appDisableApi(true)
        #expect(machine.state == .disabled)
        let ignored = machine.play(NielsenFixtures.channel)
        #expect(ignored.events.isEmpty)
        _ = machine.appDisableApi(false)
        #expect(machine.state == .idle)

        var failed = NielsenStateMachine()
        _ = failed.initialize(appInfo: ["appid": "not-an-app-id"])
        #expect(failed.state == .disabled)
        _ = failed.appDisableApi(false)
        #expect(failed.state == .disabled, "no valid app id: it stays disabled")
    }

    @Test("a session's calls become the engine's events: play, loadmetadata, playing, pause, playing again, ended; playheads as metrics")
    func events() throws {
        let harness = try NielsenHarness()
        let sdk = harness.makeSDK()
        harness.playLive(sdk, seconds: 3)
        sdk.stop()
        harness.clock.advance(by: .seconds(5))
        sdk.loadMetadata(NielsenFixtures.live)  // resuming after an interruption
        harness.ticks(sdk, 2)
        sdk.end()
        let records = harness.finish()
        try harness.memory.expectEvents(["viewinit", "play", "loadmetadata", "playing", "pause", "loadmetadata", "playing", "ended", "viewend"])
        let playheads = records.filter { $0.kind == .metric && $0.name == "playheadposition" }
        #expect(playheads.map { $0[field: "value"] } == [0, 1, 2, 8, 9].map { TelemetryValue.int(1_700_000_000 + $0) })
        #expect(records.first { $0.name == "playing" }?[field: "assetid"] == .string("EP-001"))
        #expect(harness.log.findings.isEmpty, "\(harness.log.findings)")
        #expect(harness.log.calls.map(\.name).collapsingRuns(of: ["playheadPosition"]) == [
            "initialize", "play", "loadMetadata", "playheadPosition…", "stop", "loadMetadata", "playheadPosition…", "end",
        ])
        try harness.memory.expectKPI("playing_time", 5, within: 0)  // 0 s to 3 s and 8 s to 10 s
    }

    @Test("a new asset after end is a videochange in the same view")
    func nextAsset() throws {
        let harness = try NielsenHarness()
        let sdk = harness.makeSDK()
        harness.playLive(sdk, seconds: 2)
        sdk.end()
        sdk.play(NielsenFixtures.channel)
        sdk.loadMetadata(NielsenFixtures.onDemand)
        for position in 0..<3 {
            sdk.playheadPosition(Int64(position))
            harness.clock.advance(by: .seconds(1))
        }
        sdk.end()
        _ = harness.finish()
        try harness.memory.expectEvents([
            "viewinit", "play", "loadmetadata", "playing", "ended", "play", "videochange", "loadmetadata", "playing", "ended", "viewend",
        ])
        #expect(harness.log.findings.isEmpty, "\(harness.log.findings)")
    }

    @Test("several instances at once: each has its own view, its own state and its own findings")
    func severalInstances() throws {
        let harness = try NielsenHarness()
        let first = harness.makeSDK(name: "first")
        let second = harness.makeSDK(name: "second")
        first.play(NielsenFixtures.channel)
        second.play(NielsenFixtures.channel)
        first.loadMetadata(NielsenFixtures.live)
        second.loadMetadata(NielsenFixtures.onDemand)
        for position in 0..<3 {
            first.playheadPosition(first.utcSeconds())
            second.playheadPosition(Int64(position))
            harness.clock.advance(by: .seconds(1))
        }
        first.stop()
        #expect(first.state == .idle && second.state == .processing)
        second.end()
        first.end()
        _ = harness.finish()
        let sessions = harness.memory.sessionIds
        #expect(sessions.count == 2)
        for session in sessions {
            try harness.memory.expectEvents(["viewinit", "play", "loadmetadata", "playing"], session: session, match: .inOrder)
        }
        try harness.memory.expectEvents(["viewinit", "play", "loadmetadata", "playing", "pause", "ended", "viewend"], session: sessions[0])
        try harness.memory.expectEvents(["viewinit", "play", "loadmetadata", "playing", "ended", "viewend"], session: sessions[1])
        #expect(harness.log.findings.isEmpty)
    }

    @Test("user opt-out keeps measuring (the guide's SDK 5.1 and later): the records are marked optout; the Bool form is the URL form")
    func optOut() throws {
        let harness = try NielsenHarness()
        let sdk = harness.makeSDK()
        harness.playLive(sdk, seconds: 2)
        sdk.userOptOut(true)
        #expect(sdk.optOutStatus)
        harness.ticks(sdk, 3)
        sdk.stop()
        sdk.end()
        let records = harness.finish()
        try harness.memory.expectEvents(["viewinit", "play", "loadmetadata", "playing", "pause", "ended", "viewend"])
        let playheads = records.filter { $0.name == "playheadposition" }
        #expect(playheads.count == 5)
        #expect(playheads.map { $0[field: "optout"] == .bool(true) } == [false, false, true, true, true])
        #expect(harness.log.calls.filter { $0.name == "userOptOut" }.map(\.arguments) == [["nielsenappsdk://1"]])
        #expect(harness.log.findings.isEmpty, "opting out is no violation")
    }

    @Test("debug levels: NONE logs nothing, ERROR the broken rules, WARN also ignored calls, INFO every call, DEBUG every event sent")
    func debugLevels() throws {
        func lines(_ level: String) throws -> [String] {
            let harness = try NielsenHarness()
            let captured = NielsenCapturedLog()
            let sdk = harness.makeSDK(appInfo: ["appid": NielsenFixtures.appId, "nol_devDebug": .string(level)], logger: Logger(label: "test") { _ in captured })
            #expect(sdk.debugLevel.rawValue == level)
            sdk.play(NielsenFixtures.channel)
            sdk.playheadPosition(sdk.utcSeconds())  // before loadMetadata: an error
            sdk.appDisableApi(true)
            sdk.stop()  // ignored: a warning
            _ = harness.finish()
            return captured.lines
        }
        #expect(try lines("NONE").isEmpty)
        #expect(try lines("ERROR") == ["error [nielsen nielsen] metadataBeforePlayhead: playheadPosition 1700000000 before loadMetadata"])
        #expect(try lines("WARN").last == "warning [nielsen nielsen] disabledInstance: stop ignored: the instance is disabled (appDisableApi)")
        let info = try lines("INFO")
        #expect(info.filter { $0.hasPrefix("info") }.count == 5)
        #expect(info.contains("info [nielsen nielsen] play(channelName=playout-news)"))
        #expect(try lines("DEBUG").contains("debug [nielsen nielsen] sent play"))
    }
}

@Suite("Nielsen DCR adapter: the playhead schedule on a manual clock")
struct NielsenPlayheadScheduleTests {
    @Test("once a second while playing; none while holding; on demand the position counts only time played")
    func cadence() {
        var schedule = NielsenPlayheadSchedule()
        schedule.add(1, mode: .onDemand)
        let t0 = MonotonicInstant.zero
        #expect(schedule.nextDue == nil)
        schedule.play(1, now: t0)
        #expect(schedule.poll(now: t0) == [.playhead(1, .seconds(0))])
        #expect(schedule.poll(now: t0.advanced(by: .milliseconds(999))).isEmpty)
        #expect(schedule.nextDue == t0.advanced(by: .seconds(1)))
        #expect(schedule.poll(now: t0.advanced(by: .seconds(1))) == [.playhead(1, .seconds(1))])
        schedule.hold(1, now: t0.advanced(by: .milliseconds(1_500)))
        #expect(schedule.nextDue == nil)
        #expect(schedule.poll(now: t0.advanced(by: .seconds(10))).isEmpty)
        schedule.play(1, now: t0.advanced(by: .seconds(10)))
        #expect(schedule.poll(now: t0.advanced(by: .seconds(10))) == [.playhead(1, .seconds(1))])  // 1.5 s played
        #expect(schedule.poll(now: t0.advanced(by: .seconds(11))) == [.playhead(1, .seconds(2))])
    }

    @Test("a late poll reports once and does not burst; live ticks ask for the Unix time")
    func lateAndLive() {
        var schedule = NielsenPlayheadSchedule()
        schedule.add(7, mode: .live)
        schedule.play(7, now: .zero)
        #expect(schedule.poll(now: .zero) == [.playhead(7, .utcNow)])
        let late = MonotonicInstant.zero.advanced(by: .milliseconds(4_300))
        #expect(schedule.poll(now: late) == [.playhead(7, .utcNow)])
        #expect(schedule.poll(now: late).isEmpty)
        #expect(schedule.nextDue == late.advanced(by: .seconds(1)))
    }

    @Test("holding longer than asked makes stop due, once")
    func stopAfterHolding() {
        func at(_ seconds: Int64) -> MonotonicInstant { MonotonicInstant.zero.advanced(by: .seconds(seconds)) }
        var schedule = NielsenPlayheadSchedule()
        schedule.add(1, mode: .live)
        schedule.add(2, mode: .live)
        schedule.play(1, now: .zero)
        _ = schedule.poll(now: .zero)
        schedule.hold(1, now: at(2), stopAfter: .seconds(30))
        #expect(schedule.nextDue == at(32))
        #expect(schedule.poll(now: at(31)).isEmpty)
        #expect(schedule.poll(now: at(32)) == [.stop(1)])
        #expect(schedule.poll(now: at(60)).isEmpty)
        schedule.remove(1)
        #expect(schedule.nextDue == nil)
    }

    @Test("one ticker drives several instances on a manual clock, each once a second, with no finding")
    func tickerDrivesInstances() throws {
        let harness = try NielsenHarness()
        let ticker = try NielsenPlayheadTicker(clock: harness.clock, runsThread: false)
        let live = harness.makeSDK(name: "live")
        let onDemand = harness.makeSDK(name: "vod")
        let liveId = ticker.add(live, mode: .live)
        let vodId = ticker.add(onDemand, mode: .onDemand)
        live.play(NielsenFixtures.channel)
        live.loadMetadata(NielsenFixtures.live)
        onDemand.play(NielsenFixtures.channel)
        onDemand.loadMetadata(NielsenFixtures.onDemand)
        ticker.play(liveId)
        ticker.play(vodId)
        for _ in 0..<4 {
            #expect(ticker.step() == .seconds(1))
            harness.clock.advance(by: .seconds(1))
        }
        ticker.hold(vodId, stopAfter: .seconds(2))
        for _ in 0..<3 {
            ticker.step()
            harness.clock.advance(by: .seconds(1))
        }
        #expect(onDemand.state == .idle, "stopped after holding 2 s")
        ticker.remove(liveId)
        #expect(ticker.step() == nil)
        let records = harness.finish()
        let playheads = Dictionary(grouping: records.filter { $0.name == "playheadposition" }, by: \.sessionId).mapValues { $0.map { $0[field: "value"]! } }
        #expect(playheads.values.map(\.count).sorted() == [4, 7])
        #expect(playheads.values.contains([0, 1, 2, 3].map { TelemetryValue.int($0) }))
        #expect(harness.log.findings.isEmpty, "\(harness.log.findings)")
    }
}

/// Captures log lines as `level message`.
final class NielsenCapturedLog: LogHandler, @unchecked Sendable {
    private let storage = LockedValue<[String]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    var lines: [String] { storage.withLock { $0 } }
    func log(event: LogEvent) {
        storage.withLock { $0.append("\(event.level) \(event.message)") }
    }
}
