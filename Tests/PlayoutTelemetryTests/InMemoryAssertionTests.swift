import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Testing

/// Issue 28, item 5: the comparisons a test author reaches for, and a session picked by player.
@Suite("In-memory assertions: comparisons and sessions by player")
struct InMemoryAssertionTests {
    /// Two players on one instrument (embedded, manual clock): `web` plays 5 s after a 2 s
    /// startup, `tv` 3 s after 1 s; `tv`'s player is a tag-like field of its records only.
    static func twoPlayers() throws -> InMemoryTelemetryBackend {
        let clock = ManualClock()
        let memory = InMemoryTelemetryBackend()
        let instrument = try TelemetryInstrument(
            backends: [memory], configuration: .init(delivery: .init(linger: .zero), engineId: "e"), clock: clock, driver: .embedded)
        let web = instrument.makeTracker(name: "web")
        web.addAttribute("player_name") { .string("web") }
        let tv = instrument.makeTracker(name: "tv")
        tv.addAttribute("player") { .string("tv") }
        web.ready()
        tv.ready()
        web.emit(.play)
        tv.emit(.play)
        clock.advance(by: .seconds(1))
        tv.emit(.playing)
        clock.advance(by: .seconds(1))
        web.emit(.playing)
        clock.advance(by: .seconds(2))
        tv.endOfService()
        clock.advance(by: .seconds(3))
        instrument.shutdown(timeout: .zero)
        return memory
    }

    @Test("a session is picked by its player, whichever came first; none or two is an error that says so")
    func byPlayer() throws {
        let memory = try Self.twoPlayers()
        let web = try memory.session(player: "web")
        let tv = try memory.session(player: "tv")
        #expect(web != tv && Set(memory.sessionIds) == [web, tv])
        try memory.expectKPI("playing_time", 5, within: 1e-9, session: web)
        try memory.expectKPI("playing_time", 3, within: 1e-9, session: tv)
        #expect(memory.sessionIds(where: "player_name", is: "web") == [web])
        #expect(throws: TelemetryExpectationFailure.self) { try memory.session(player: "radio") }
        do {
            _ = try memory.session(player: "radio")
        } catch {
            #expect("\(error)".contains("no session of player radio"))
        }
    }

    @Test("atLeast, atMost, in: hold on the edges, and a miss says what was expected and what came")
    func comparisons() throws {
        let memory = try Self.twoPlayers()
        let web = try memory.session(player: "web")
        try memory.expectKPI("playing_time", atLeast: 5, session: web)
        try memory.expectKPI("playing_time", atMost: 5, session: web)
        try memory.expectKPI("video_startup_time", in: 2...2, session: web)
        try memory.expectKPI("rebuffer_count", atMost: 0, session: web)
        let misses: [(() throws -> Void, String)] = [
            ({ try memory.expectKPI("playing_time", atLeast: 6, session: web) }, "expected KPI playing_time ≥ 6.0 in session \(web), got 5.0 (1.0 short)"),
            ({ try memory.expectKPI("playing_time", atMost: 4, session: web) }, "expected KPI playing_time ≤ 4.0 in session \(web), got 5.0 (1.0 over)"),
            ({ try memory.expectKPI("video_startup_time", in: 0...1, session: web) }, "expected KPI video_startup_time in 0.0…1.0 in session \(web), got 2.0"),
            ({ try memory.expectKPI("weighted_average_bitrate", atLeast: 1, session: web) }, "but it is undefined (null)"),
            ({ try memory.expectKPI("nonsense", atLeast: 1, session: web) }, "no KPI called nonsense"),
            ({ try memory.expectKPI("playing_time", atLeast: 1, session: "nobody") }, "there is no session nobody"),
        ]
        for (assertion, message) in misses {
            do {
                try assertion()
                Issue.record("passed: \(message)")
            } catch {
                #expect("\(error)".contains(message), "\(error)")
            }
        }
    }
}
