import Logging
@testable import Playout
import PlayoutCore
import PlayoutJitter
@testable import PlayoutSender
import Testing

@Suite("scheduled overrides: DELAY@AT[/FOR] and the timetable")
struct ScheduledOverrideTests {
    @Test("valid forms parse and print back the same", arguments: [
        ("2s@5s/10s", ScheduledOverride(delay: .seconds(2), at: .seconds(5), hold: .seconds(10))),
        ("500ms@12s", ScheduledOverride(delay: .milliseconds(500), at: .seconds(12))),
        ("0s@0s", ScheduledOverride(delay: .zero, at: .zero)),
        ("1.5s@250ms/0s", ScheduledOverride(delay: .milliseconds(1_500), at: .milliseconds(250), hold: .zero)),
        ("2 s@5s\n", ScheduledOverride(delay: .seconds(2), at: .seconds(5))),  // spaces as durations allow them
    ])
    func valid(text: String, expected: ScheduledOverride) throws {
        let parsed = try ScheduledOverride(parsing: text)
        #expect(parsed == expected)
        #expect(try ScheduledOverride(parsing: parsed.description) == parsed)
    }

    @Test("hostile forms are one clear error that shows the right form", arguments: [
        "", "@", "2s", "2s@", "@5s", "2s@5s/", "2s@5s/1s/2s", "2s@@5s", "-1s@5s", "2s@-5s", "2s@5s/-1s",
        "soon", "2s@later", "nan@5s", "\u{0}@\u{0}", "✓@✓",
    ])
    func hostile(text: String) {
        #expect {
            try ScheduledOverride(parsing: text)
        } throws: { error in
            let message = "\(error)"
            return (error as? PlayoutError)?.code == .invalidOption && message.contains("DELAY@AT[/FOR]") && message.contains("e.g. 2s@5s/10s") && !message.contains("--")
        }
    }

    @Test("random and huge input never traps")
    func random() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("0123456789.@/msh -+eE∞\u{0}✓")
        for _ in 0..<2_000 {
            let length = Int.random(in: 0...24, using: &generator)
            _ = try? ScheduledOverride(parsing: String((0..<length).map { _ in alphabet.randomElement(using: &generator)! }))
        }
        _ = try? ScheduledOverride(parsing: String(repeating: "9", count: 100_000) + "s@1s")
        _ = try? ScheduledOverride(parsing: String(repeating: "2s@", count: 10_000))
    }

    @Test("the timetable sets and releases at their instants; at one instant a set goes first")
    func timetable() throws {
        let controller = try PlayoutDelayController(configuration: .init(delay: .milliseconds(230)))
        let start = MonotonicInstant(nanoseconds: 1_000_000_000)
        let planned = [
            ScheduledOverride(delay: .seconds(2), at: .seconds(3), hold: .seconds(2)),  // released at 5 s
            ScheduledOverride(delay: .milliseconds(500), at: .seconds(5)),  // set at 5 s, held to the end
            ScheduledOverride(delay: .seconds(9), at: .seconds(7), hold: .zero),  // set and released at 7 s
        ]
        var table = OverrideTimetable(planned, start: start)
        let seen = LockedValue<[Duration]>([])
        let watch = controller.effectiveDelay.subscribe { effective in seen.withLock { $0.append(effective.delay) } }
        defer { watch.dispose() }
        var held: [Int: PlayoutDelayOverride] = [:]
        var taken: [SubscriptionStateMachine.Action] = []
        // The actions are plain values; carrying them out is the driver's job, done here by hand.
        func delay(at seconds: Double) throws -> Duration {
            let actions = table.take(now: start.advanced(by: .milliseconds(Int(seconds * 1_000))))
            taken += actions
            for action in actions {
                switch action {
                case .setOverride(let index): held[index] = try controller.overridePlayoutDelay(planned[index].delay)
                case .releaseOverride(let index): held.removeValue(forKey: index)?.dispose()
                default: Issue.record("unexpected \(action)")
                }
            }
            return controller.effectiveDelay.value.delay
        }
        #expect(table.next == start.advanced(by: .seconds(3)))
        #expect(try delay(at: 2.999) == .milliseconds(230))
        #expect(try delay(at: 3) == .seconds(2))
        #expect(table.next == start.advanced(by: .seconds(5)))
        #expect(try delay(at: 4.5) == .seconds(2))
        #expect(try delay(at: 5) == .milliseconds(500))
        #expect(controller.effectiveDelay.value.source == .override)
        // A zero hold sets and releases at once; releasing the override in effect (the last one)
        // returns to the configured delay, as the controller's rules say, even though the 500 ms
        // one is still held.
        #expect(try delay(at: 7) == .milliseconds(230))
        #expect(table.next == nil)
        #expect(try delay(at: 60) == .milliseconds(230))
        #expect(taken == [.setOverride(index: 0), .setOverride(index: 1), .releaseOverride(index: 0), .setOverride(index: 2), .releaseOverride(index: 2)])
        // No brief return to 230 ms at 5 s: the 500 ms override took over before the 2 s one let go.
        #expect(seen.withLock { $0 } == [.milliseconds(230), .seconds(2), .milliseconds(500), .seconds(9), .milliseconds(230)])
    }
}

@Suite("Bandwidth limits: the timetable, last wins")
struct BandwidthLimitTests {
    @Test("RATE@AT[/FOR] parses as --override does; what is not one says what to type", arguments: [
        ("1M@5s/10s", ScheduledBandwidthLimit(bitsPerSecond: 1_000_000, at: .seconds(5), hold: .seconds(10))),
        ("800k@0s", ScheduledBandwidthLimit(bitsPerSecond: 800_000, at: .zero)),
        ("2.5M@1500ms/2s", ScheduledBandwidthLimit(bitsPerSecond: 2_500_000, at: .milliseconds(1_500), hold: .seconds(2))),
    ])
    func parsing(text: String, expected: ScheduledBandwidthLimit) throws {
        #expect(try ScheduledBandwidthLimit(parsing: text) == expected)
        #expect(try ScheduledBandwidthLimit(parsing: expected.description) == expected)
    }

    @Test("refused", arguments: ["1M", "0@1s", "-1M@1s", "1M@1s/2s/3s", "fastM@1s", "1M@later", "2T@1s", ""])
    func refused(text: String) {
        #expect(throws: PlayoutError.self) { try ScheduledBandwidthLimit(parsing: text) }
    }

    @Test("limits and overrides share one timetable: each set and released at its instant, in order")
    func timetable() {
        let start = MonotonicInstant(nanoseconds: 1_000_000_000)
        var table = OverrideTimetable(
            [ScheduledOverride(delay: .seconds(1), at: .seconds(2))],
            bandwidthLimits: [ScheduledBandwidthLimit(bitsPerSecond: 800_000, at: .seconds(2), hold: .seconds(3)), .init(bitsPerSecond: 500_000, at: .seconds(4))],
            start: start
        )
        #expect(table.take(now: start.advanced(by: .milliseconds(1_999))).isEmpty)
        #expect(table.take(now: start.advanced(by: .seconds(2))) == [.setOverride(index: 0), .setBandwidthLimit(index: 0)])
        #expect(table.next == start.advanced(by: .seconds(4)))
        #expect(table.take(now: start.advanced(by: .seconds(5))) == [.setBandwidthLimit(index: 1), .releaseBandwidthLimit(index: 0)])
        #expect(table.next == nil)
    }

    @Test("limitBandwidth: the last limit wins; releasing an earlier one changes nothing; releasing the one in effect returns to none")
    func lastWins() throws {
        let publisher = try Publisher(options: .init(destination: try Publisher.freeLoopbackDestination(), video: .init(width: 320, height: 240), sendsAudio: false))
        let subscriber = try Subscriber(sessionDescription: publisher.sessionDescription)
        #expect(subscriber.bandwidthLimit == nil)
        let first = try subscriber.limitBandwidth(2_000_000)
        let second = try subscriber.limitBandwidth(500_000)
        #expect(subscriber.bandwidthLimit == 500_000)
        first.dispose()
        #expect(subscriber.bandwidthLimit == 500_000)
        second.dispose()
        #expect(subscriber.bandwidthLimit == nil)
        second.dispose()
        #expect(throws: PlayoutError.self) { try subscriber.limitBandwidth(0) }
        do {
            _ = try subscriber.limitBandwidth(1_000_000)  // dropped at once: released
        }
        #expect(subscriber.bandwidthLimit == nil)
    }
}
