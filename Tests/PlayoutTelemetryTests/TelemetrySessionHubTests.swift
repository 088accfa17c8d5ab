import PlayoutCore
@testable import PlayoutTelemetry
import Testing

/// Drives a hub on exact instants (seconds since the origin).
struct HubScript {
    var hub: TelemetrySessionHub
    var records: [TelemetryRecord] = []
    var rejections: [String] = []
    var ignored: [String] = []

    init(configuration: TelemetrySessionConfiguration = .init()) {
        hub = TelemetrySessionHub(sessionIdPrefix: "e-0", origin: .zero, configuration: configuration)
    }

    static func instant(_ seconds: Double) -> MonotonicInstant { .zero.advanced(by: Duration(exactlySeconds: seconds)!) }

    mutating func at(_ seconds: Double, _ event: TelemetryEvent) {
        collect(hub.handle(event, now: Self.instant(seconds), wallTime: 1_000_000_000_000 + Self.instant(seconds).nanoseconds))
    }

    mutating func heartbeat(at seconds: Double, _ fields: [TelemetryField]) {
        collect(hub.heartbeat(fields, now: Self.instant(seconds), wallTime: 0))
    }

    private mutating func collect(_ outputs: [TelemetrySessionHub.Output]) {
        for output in outputs {
            switch output {
            case .record(let record): records.append(record)
            case .rejected(let reason): rejections.append(reason)
            case .ignored(let event): ignored.append(event)
            }
        }
    }

    var names: [String] { records.map(\.name) }
}

@Suite("Telemetry session hub: states, records, sessions")
struct TelemetrySessionHubTests {
    @Test("a view becomes records with its session id, a gap-free seq from 0, monotonic and wall time")
    func normalView() {
        var script = HubScript()
        script.at(0, .viewInit)
        script.at(0.5, .playerReady)
        script.at(1, .play)
        script.at(3, .playing)
        script.at(10, .pause)
        script.at(12, .play)
        script.at(12.25, .playing)
        script.at(20, .ended)
        script.at(21, .viewEnd)
        #expect(script.names == ["viewinit", "playerready", "play", "playing", "pause", "play", "playing", "ended", "viewend"])
        #expect(script.records.map(\.seq) == Array(0..<9))
        #expect(Set(script.records.map(\.sessionId)) == ["e-0-1"])
        #expect(script.records[3].monotonic == .seconds(3))
        #expect(script.records[6].wallTimeNanoseconds == 1_000_000_000_000 + 12_250_000_000)
        #expect(script.records.allSatisfy { $0.schemaVersion == TelemetryRecord.currentSchemaVersion })
        #expect(script.rejections.isEmpty)
        #expect(script.hub.state == .closed)
    }

    @Test("an invalid transition is rejected with a reason naming the state, and counted", arguments: [
        ([TelemetryEvent.play, .playing, .pause], TelemetryEvent.pause, "pause while paused"),
        ([.play, .playing, .ended], .playing, "playing after ended"),
        ([.play, .playing], .play, "play while playing"),
        ([.play], .rebufferEnd, "rebufferend while loading"),
        ([.play, .playing, .pause], .rebufferStart(.network), "rebufferstart while paused"),
        ([], .ended, "ended while initial"),
        ([.play, .playing, .freezeStart], .freezeStart, "freezestart while frozen"),
        ([.viewEnd], .play, "play after viewend (state closed)"),
        ([.play, .playing], .action("rebufferstart", []), "action \"rebufferstart\" while playing: the name is the player vocabulary's; emit the event itself"),
        ([], .action("", []), "action \"\" while initial: an action needs a name"),
    ])
    func rejects(before: [TelemetryEvent], event: TelemetryEvent, reason: String) {
        var script = HubScript()
        script.at(0, .viewInit)
        for (index, earlier) in before.enumerated() { script.at(Double(index + 1), earlier) }
        let recorded = script.records.count
        script.at(100, event)
        let expected = reason == "playing after ended" ? "playing while ended" : reason
        #expect(script.rejections == [expected])
        #expect(script.hub.rejectedCount == 1)
        #expect(script.records.count == recorded)
    }

    @Test("a fatal error puts the session in the error state, which ignores tracking until videochange")
    func fatalError() {
        var script = HubScript()
        script.at(0, .play)
        script.at(1, .playing)
        script.at(2, .error(TelemetryError(severity: .fatal, code: 42, message: "decoder died")))
        script.at(3, .pause)
        script.at(4, .playing)
        script.at(5, .action("click", []))
        #expect(script.hub.state == .error)
        #expect(script.ignored == ["pause", "playing", "click"])
        #expect(script.hub.ignoredCount == 3)
        script.at(6, .videoChange(videoId: "clip-2"))
        script.at(7, .play)
        script.at(8, .playing)
        #expect(script.names == ["viewinit", "play", "playing", "error", "videochange", "play", "playing"])
        #expect(script.records.last?[field: "videoId"] == .string("clip-2"))
        #expect(script.records[3][field: "severity"] == .string("fatal"))
        #expect(script.records[3][field: "code"] == .int(42))
    }

    @Test("a warning error changes no state")
    func warning() {
        var script = HubScript()
        script.at(0, .play)
        script.at(1, .playing)
        script.at(2, .error(TelemetryError(severity: .warning, code: 1, message: "late frame")))
        #expect(script.hub.state == .playing)
    }

    @Test("every action gets timeSince<Action>: monotonic seconds since its last occurrence in the session")
    func timeSince() {
        var script = HubScript()
        script.at(1, .play)
        script.at(3, .playing)
        script.at(4, .action("adclick", [TelemetryField("ad", .string("a1"))]))
        script.at(6.5, .action("adclick", []))
        script.heartbeat(at: 10, [])
        let firstClick = script.records[3]
        #expect(firstClick[field: "timeSincePlay"] == .double(3))
        #expect(firstClick[field: "timeSincePlaying"] == .double(1))
        #expect(firstClick[field: "timeSinceAdclick"] == nil)
        #expect(firstClick[field: "ad"] == .string("a1"))
        #expect(script.records[4][field: "timeSinceAdclick"] == .double(2.5))
        #expect(script.records[5].kind == .heartbeat)
        #expect(script.records[5][field: "timeSinceAdclick"] == .double(3.5))
        #expect(script.records[5][field: "timeSinceViewinit"] == .double(9))
    }

    @Test("a session inactive longer than the timeout is split: viewend, a new id from seq 0, the same state")
    func inactivitySplit() {
        var script = HubScript(configuration: .init(heartbeatInterval: .seconds(10), inactivityTimeout: .seconds(60)))
        script.at(0, .play)
        script.at(1, .playing)
        script.at(2, .pause)
        script.at(62.5, .play)
        #expect(script.names == ["viewinit", "play", "playing", "pause", "viewend", "viewinit", "play"])
        #expect(script.records[4].sessionId == "e-0-1")
        #expect(script.records[4][field: "reason"] == .string("inactivity"))
        #expect(script.records[5].sessionId == "e-0-2")
        #expect(script.records[5].seq == 0)
        #expect(script.records[6].seq == 1)
        #expect(script.records[6][field: "timeSincePause"] == nil)
        #expect(script.rejections.isEmpty)
    }

    @Test("heartbeats do not keep a session active, and are due every interval while playing or rebuffering")
    func heartbeats() {
        var script = HubScript(configuration: .init(heartbeatInterval: .seconds(10), inactivityTimeout: .seconds(60)))
        #expect(script.hub.poll(now: HubScript.instant(0)) == .idle)
        script.at(0, .play)
        #expect(script.hub.poll(now: HubScript.instant(5)) == .idle)
        script.at(1, .playing)
        #expect(script.hub.poll(now: HubScript.instant(5)) == .wait(until: HubScript.instant(11)))
        #expect(script.hub.poll(now: HubScript.instant(11)) == .heartbeatDue)
        script.heartbeat(at: 11, [TelemetryField("framesRendered", .int(300))])
        #expect(script.hub.poll(now: HubScript.instant(11)) == .wait(until: HubScript.instant(21)))
        for second in stride(from: 21.0, through: 81, by: 10) { script.heartbeat(at: second, []) }
        script.at(82, .pause)
        #expect(script.hub.poll(now: HubScript.instant(100)) == .idle)
        // the pause comes 81 s after the last event (heartbeats do not count): a new session
        #expect(script.names.suffix(3) == ["viewend", "viewinit", "pause"])
        #expect(script.records[3][field: "framesRendered"] == .int(300))
    }

    @Test("attributes join every later record until removed")
    func attributes() {
        var script = HubScript()
        script.at(0, .attribute("cdn", .string("edge-1")))
        script.at(1, .play)
        script.at(2, .attribute("cdn", nil))
        script.at(3, .playing)
        #expect(script.records[1][field: "cdn"] == .string("edge-1"))
        #expect(script.records[2][field: "cdn"] == nil)
    }

    @Test("a rebuffer while seeking is recorded with the seek as its cause; a playout-delay change carries the delay")
    func causes() {
        var script = HubScript()
        script.at(0, .play)
        script.at(1, .playing)
        script.at(2, .seeking)
        script.at(2, .rebufferStart(.network))
        script.at(3, .rebufferEnd)
        script.at(3, .seeked)
        script.at(4, .playoutDelayChange(delay: .seconds(2), requested: true))
        script.at(4, .rebufferStart(.playoutDelayIncrease))
        #expect(script.records[4][field: "cause"] == .string("seek"))
        #expect(script.records[7][field: "delay"] == .double(2))
        #expect(script.records[8][field: "cause"] == .string("playoutdelay"))
    }

    @Test("playing while rebuffering ends the rebuffer first; pause ends a freeze first")
    func implicitEnds() {
        var script = HubScript()
        script.at(0, .play)
        script.at(1, .playing)
        script.at(2, .rebufferStart(.network))
        script.at(3, .playing)
        script.at(4, .freezeStart)
        script.at(5, .pause)
        #expect(script.names == ["viewinit", "play", "playing", "rebufferstart", "rebufferend", "playing", "freezestart", "freezeend", "pause"])
    }
}
