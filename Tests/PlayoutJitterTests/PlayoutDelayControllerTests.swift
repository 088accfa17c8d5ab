import InMemoryLogging
import Logging
import PlayoutCore
import PlayoutJitter
import PlayoutTesting
import Testing

/// Records every value an observable delivers.
final class DelayRecorder: Sendable {
    let values = LockedValue<[EffectivePlayoutDelay]>([])
    func append(_ value: EffectivePlayoutDelay) { values.withLock { $0.append(value) } }
    var all: [EffectivePlayoutDelay] { values.withLock { $0 } }
}

@Suite("Playout-delay controller: override rules")
struct PlayoutDelayControllerTests {
    func makeController(delay: Duration = .milliseconds(230)) throws -> (PlayoutDelayController, InMemoryLogHandler) {
        let handler = InMemoryLogHandler()
        let controller = try PlayoutDelayController(configuration: .init(delay: delay), logger: Logger(label: "test") { _ in handler })
        return (controller, handler)
    }

    @Test("the default delay is 230 ms, configured")
    func defaultDelay() throws {
        let (controller, _) = try makeController()
        #expect(controller.effectiveDelay.value == EffectivePlayoutDelay(delay: .milliseconds(230), source: .configured))
    }

    @Test("an override is absolute and in effect until released")
    func absolute() throws {
        let (controller, _) = try makeController(delay: .seconds(1))
        let override = try controller.overridePlayoutDelay(.seconds(5))
        #expect(controller.effectiveDelay.value == EffectivePlayoutDelay(delay: .seconds(5), source: .override), "5 s, not 1 s + 5 s")
        override.dispose()
        #expect(controller.effectiveDelay.value == EffectivePlayoutDelay(delay: .seconds(1), source: .configured))
    }

    @Test("overrides A then B: releasing A does nothing, releasing B restores the configured delay")
    func lastOverrideWins() throws {
        let (controller, _) = try makeController()
        let recorder = DelayRecorder()
        let subscription = controller.effectiveDelay.subscribe { recorder.append($0) }
        let a = try controller.overridePlayoutDelay(.seconds(2))
        let b = try controller.overridePlayoutDelay(.seconds(3))
        a.dispose()
        #expect(controller.effectiveDelay.value.delay == .seconds(3), "releasing an earlier override has no effect")
        b.dispose()
        #expect(controller.effectiveDelay.value == EffectivePlayoutDelay(delay: .milliseconds(230), source: .configured),
                "back to the configured delay, not to A")
        #expect(recorder.all.map(\.delay) == [.milliseconds(230), .seconds(2), .seconds(3), .milliseconds(230)])
        withExtendedLifetime(subscription) {}
    }

    @Test("releasing B first, then A: A is no longer in effect, so releasing it changes nothing")
    func releaseOrder() throws {
        let (controller, _) = try makeController()
        let a = try controller.overridePlayoutDelay(.seconds(2))
        let b = try controller.overridePlayoutDelay(.seconds(3))
        b.dispose()
        #expect(controller.effectiveDelay.value.source == .configured)
        a.dispose()
        #expect(controller.effectiveDelay.value == EffectivePlayoutDelay(delay: .milliseconds(230), source: .configured))
    }

    @Test("double release is harmless, and dropping the handle releases")
    func doubleRelease() throws {
        let (controller, _) = try makeController()
        let a = try controller.overridePlayoutDelay(.seconds(2))
        a.dispose()
        var b: PlayoutDelayOverride? = try controller.overridePlayoutDelay(.seconds(4))
        a.dispose()  // again: must not release B
        #expect(controller.effectiveDelay.value.delay == .seconds(4))
        withExtendedLifetime(b) {}
        b = nil
        #expect(controller.effectiveDelay.value.source == .configured)
    }

    @Test("negative, NaN, infinite and above-cap values are refused and change nothing")
    func rejects() throws {
        let (controller, _) = try makeController()
        let held = try controller.overridePlayoutDelay(.seconds(2))
        #expect(throws: PlayoutDelayError.negative(.milliseconds(-1))) { try controller.overridePlayoutDelay(.milliseconds(-1)) }
        #expect(throws: PlayoutDelayError.notFinite(.infinity)) { try controller.overridePlayoutDelay(seconds: .infinity) }
        #expect(throws: PlayoutDelayError.self) { try controller.overridePlayoutDelay(seconds: .nan) }
        #expect(throws: PlayoutDelayError.aboveMaximum(.seconds(31), maximum: .seconds(30))) { try controller.overridePlayoutDelay(.seconds(31)) }
        #expect(controller.effectiveDelay.value.delay == .seconds(2), "a refused override leaves the one in effect")
        withExtendedLifetime(held) {}
        #expect(throws: PlayoutDelayError.self) { try PlayoutDelayController(configuration: .init(delay: .seconds(60))) }
    }

    @Test("above 10 s an override is accepted with one warning")
    func warnsAboveTenSeconds() throws {
        let (controller, log) = try makeController()
        let small = try controller.overridePlayoutDelay(.seconds(10))
        #expect(log.entries.filter { $0.level == .warning }.isEmpty)
        let large = try controller.overridePlayoutDelay(.seconds(12))
        let warnings = log.entries.filter { $0.level == .warning }
        #expect(warnings.count == 1)
        #expect(warnings.first?.message.description.contains("12s") == true)
        #expect(controller.effectiveDelay.value.delay == .seconds(12))
        withExtendedLifetime((small, large)) {}
    }

    @Test("a custom cap", arguments: [Duration.seconds(5), .seconds(60)])
    func customCap(cap: Duration) throws {
        let controller = try PlayoutDelayController(configuration: .init(maximum: cap))
        #expect(throws: PlayoutDelayError.self) { try controller.overridePlayoutDelay(cap + .milliseconds(1)) }
        let atCap = try controller.overridePlayoutDelay(cap)
        #expect(controller.effectiveDelay.value.delay == cap)
        withExtendedLifetime(atCap) {}
    }

    @Test("concurrent overrides and releases always end on the state's value")
    func concurrent() async throws {
        let (controller, _) = try makeController()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<8 {
                group.addTask {
                    for step in 0..<200 {
                        let held = try? controller.overridePlayoutDelay(.milliseconds(Int64(index * 1_000 + step)))
                        if step % 3 == 0 { held?.dispose() }
                    }
                }
            }
        }
        // Every handle has been released (the dropped ones released on deinit).
        #expect(controller.effectiveDelay.value == EffectivePlayoutDelay(delay: .milliseconds(230), source: .configured))
    }

    @Test("the sender's range moves the configured delay into it; an override wins over it; never above the cap")
    func senderRange() throws {
        let (controller, _) = try makeController()
        controller.setSenderRange(.milliseconds(500) ... .seconds(1))
        #expect(controller.effectiveDelay.value == EffectivePlayoutDelay(delay: .milliseconds(500), source: .sender))
        controller.setSenderRange(.zero ... .milliseconds(100))
        #expect(controller.effectiveDelay.value == EffectivePlayoutDelay(delay: .milliseconds(100), source: .sender))
        // Within the range: the configured delay as it is.
        controller.setSenderRange(.milliseconds(100) ... .milliseconds(400))
        #expect(controller.effectiveDelay.value == EffectivePlayoutDelay(delay: .milliseconds(230), source: .configured))
        controller.setSenderRange(.milliseconds(500) ... .seconds(1))
        let override = try controller.overridePlayoutDelay(.seconds(2))
        #expect(controller.effectiveDelay.value == EffectivePlayoutDelay(delay: .seconds(2), source: .override), "absolute, outside the sender's range")
        override.dispose()
        #expect(controller.effectiveDelay.value == EffectivePlayoutDelay(delay: .milliseconds(500), source: .sender))
        controller.setSenderRange(.seconds(40) ... .seconds(40.95))
        #expect(controller.effectiveDelay.value == EffectivePlayoutDelay(delay: PlayoutDelay.defaultMaximum, source: .sender), "the cap holds")
        controller.setSenderRange(nil)
        #expect(controller.effectiveDelay.value == EffectivePlayoutDelay(delay: .milliseconds(230), source: .configured))
    }
}
