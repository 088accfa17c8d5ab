import PlayoutCore
import PlayoutTesting
import PropertyBased
import Testing

@Suite("Duration parsing and printing")
struct DurationParsingTests {
    @Test("parses the CLI forms exactly", arguments: [
        ("230ms", Duration.milliseconds(230)),
        ("1.5s", .milliseconds(1_500)),
        ("0.1s", .milliseconds(100)),
        ("2s", .seconds(2)),
        ("0s", .zero),
        ("250us", .microseconds(250)),
        ("250µs", .microseconds(250)),
        ("40ns", .nanoseconds(40)),
        ("2m", .seconds(120)),
        ("1min", .seconds(60)),
        ("1h", .seconds(3_600)),
        (" 10 ms ", .milliseconds(10)),
        (".5s", .milliseconds(500)),
        ("1.s", .seconds(1)),
        ("0.0000000015s", .nanoseconds(2)),  // rounded to the nearest nanosecond
        ("1.2345678914s", .nanoseconds(1_234_567_891)),
    ])
    func parses(text: String, expected: Duration) throws {
        #expect(try Duration(parsing: text) == expected)
    }

    @Test("rejects bad input with an error that says what to type", arguments: [
        ("", DurationParseError.empty),
        ("   ", .empty),
        ("230", .missingUnit("230")),
        ("230 parsecs", .unknownUnit("230 parsecs")),
        ("1.2.3s", .invalidNumber("1.2.3s")),
        (".s", .invalidNumber(".s")),
        ("ms", .invalidNumber("ms")),
        ("-5s", .negative("-5s")),
        ("+5s", .invalidNumber("+5s")),
        ("nan s", .invalidNumber("nan s")),
        ("99999999999999999999s", .outOfRange("99999999999999999999s")),
        ("9999999999h", .outOfRange("9999999999h")),
        ("1e3ms", .unknownUnit("1e3ms")),
    ])
    func rejects(text: String, expected: DurationParseError) {
        #expect(throws: expected) { try Duration(parsing: text) }
        #expect(expected.description.contains("duration"))
    }

    @Test("prints the shortest exact form", arguments: [
        (Duration.milliseconds(230), "230ms"),
        (.milliseconds(1_500), "1.5s"),
        (.zero, "0s"),
        (.seconds(4), "4s"),
        (.microseconds(250), "250us"),
        (.nanoseconds(1_000_001), "1.000001ms"),
        (.nanoseconds(40), "40ns"),
        (.milliseconds(-230), "-230ms"),
        (.seconds(3_600), "3600s"),
    ])
    func prints(duration: Duration, expected: String) {
        #expect(duration.compactDescription == expected)
    }

    @Test("printing then parsing gives back the same duration")
    func roundTrip() async {
        await propertyCheck(count: 2_000, input: Gen.int64(in: 0...4_000_000_000_000)) { nanos in
            let duration = Duration.nanoseconds(nanos)
            #expect((try? Duration(parsing: duration.compactDescription)) == duration)
        }
    }

    @Test("hostile input never crashes")
    func hostileInput() async {
        await propertyCheck(count: 3_000, input: Gen.ascii.string(of: 0...24)) { text in
            _ = try? Duration(parsing: text)
        }
        _ = try? Duration(parsing: String(repeating: "9", count: 100_000) + "s")
        _ = try? Duration(parsing: "1." + String(repeating: "5", count: 100_000) + "s")
    }

    @Test("Duration converts to nanoseconds and seconds")
    func conversions() {
        #expect(Duration.milliseconds(1_500).nanoseconds == 1_500_000_000)
        #expect(Duration.milliseconds(1_500).seconds == 1.5)
        #expect(Duration(exactlySeconds: 0.25) == .milliseconds(250))
        #expect(Duration(exactlySeconds: .nan) == nil)
        #expect(Duration(exactlySeconds: .infinity) == nil)
        #expect(Duration.seconds(Int64.max).nanoseconds == .max, "saturates")
    }
}

@Suite("Clocks")
struct ClockTests {
    @Test("the monotonic clock never goes backwards")
    func monotonic() {
        let clock = MonotonicClock()
        var previous = clock.now
        for _ in 0..<10_000 {
            let now = clock.now
            #expect(now >= previous)
            previous = now
        }
    }

    @Test("instants add and subtract durations exactly")
    func instantArithmetic() {
        let start = MonotonicInstant(nanoseconds: 5)
        let later = start.advanced(by: .milliseconds(33))
        #expect(start.duration(to: later) == .milliseconds(33))
        #expect(later.nanoseconds == 33_000_005)
        #expect(MonotonicInstant.zero < start)
        #expect(later.description == "t+33.000005ms")
    }

    @Test("a manual clock resumes sleepers only when advanced past their deadline, in deadline order")
    func manualClockSleep() async throws {
        let clock = ManualClock()
        let order = Recorder<Int>()
        let late = Task {
            try await clock.sleep(until: .zero.advanced(by: .milliseconds(66)))
            order.append(66)
        }
        let early = Task {
            try await clock.sleep(for: .milliseconds(33))
            order.append(33)
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .milliseconds(32))
        #expect(clock.sleeperCount == 2)
        clock.advance(by: .milliseconds(1))
        try await early.value
        #expect(order.values == [33])
        #expect(clock.sleeperCount == 1)
        clock.advance(to: .zero.advanced(by: .seconds(1)))
        try await late.value
        #expect(order.values == [33, 66])
        #expect(clock.now == .zero.advanced(by: .seconds(1)))
    }

    @Test("a sleep whose deadline has passed returns at once")
    func manualClockPastDeadline() async throws {
        let clock = ManualClock(start: .zero.advanced(by: .seconds(5)))
        try await clock.sleep(until: .zero.advanced(by: .seconds(1)))
        #expect(clock.sleeperCount == 0)
    }

    @Test("cancelling a sleeper throws CancellationError and unregisters it")
    func manualClockCancellation() async {
        let clock = ManualClock()
        let task = Task { try await clock.sleep(for: .seconds(10)) }
        await clock.waitForSleepers(count: 1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.sleeperCount == 0)
    }
}

@Suite("LastWins: the override rule")
struct LastWinsTests {
    @Test("the latest hold is in effect; releasing an earlier one changes nothing; releasing the one in effect leaves none")
    func rule() {
        var holds = LastWins<Int>()
        #expect(holds.value == nil)
        let a = holds.set(1)
        let b = holds.set(2)
        #expect(holds.value == 2)
        #expect(holds.release(a) == nil && holds.value == 2)
        #expect(holds.release(b) == 2 && holds.value == nil)
        #expect(holds.release(b) == nil, "twice is harmless")
        let c = holds.set(3)
        #expect(holds.release(a) == nil && holds.value == 3, "a hold released long ago stays released")
        #expect(c > b && holds.current?.id == c)
    }
}
