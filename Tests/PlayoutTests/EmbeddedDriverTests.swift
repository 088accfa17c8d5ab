#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Playout
import PlayoutCore
import PlayoutSender
import PlayoutTesting
import Testing

/// PlayoutTesting's embedded driver: the same `Subscriber` a program starts, on a manual clock with
/// no thread (issue 25 item 4).
@Suite("Embedded driver: a whole Subscriber on a manual clock, no thread")
struct EmbeddedDriverTests {
    static func subscriber(_ stream: SimulatedStream, clock: ManualClock, duration: Duration = .seconds(3), seed: UInt64? = 1) throws -> Subscriber {
        var options = Subscriber.Options(duration: duration, clock: clock)
        options.seed = seed
        return try Subscriber(sessionDescription: stream.sessionDescription, options: options)
    }

    @Test("it runs on the caller's thread: observers are called there, in order, and waitUntilEnded returns the driver's final sample")
    func callerThread() throws {
        let clock = ManualClock()
        let stream = SimulatedStream()
        let subscriber = try Self.subscriber(stream, clock: clock)
        let caller = pthread_self()
        let seen = LockedValue<[(state: SubscriberState, onCaller: Bool)]>([])
        let watch = subscriber.state.subscribe { state in seen.withLock { $0.append((state, pthread_equal(pthread_self(), caller) != 0)) } }
        let driver = try EmbeddedDriver(subscriber)
        let final = driver.run(try stream.datagrams(for: .zero..<Duration.seconds(3), origin: clock.now))
        watch.dispose()
        #expect(seen.withLock { $0.map(\.state) } == [.idle, .connecting, .buffering, .playing, .ended])
        #expect(seen.withLock { $0.allSatisfy(\.onCaller) })
        #expect(driver.isFinished && driver.nextWake == nil)
        #expect(subscriber.waitUntilEnded() == final)
        #expect(clock.now == MonotonicInstant.zero.advanced(by: .seconds(3)))
        // 3 s at 30 fps, the last 240 ms still held when the duration ends.
        #expect(final.video?.framesRendered == 84)
    }

    @Test("stop() between turns ends the run at the next one; datagrams after the end are ignored")
    func stop() throws {
        let clock = ManualClock()
        let stream = SimulatedStream()
        let subscriber = try Self.subscriber(stream, clock: clock, duration: .seconds(10))
        let driver = try EmbeddedDriver(subscriber)
        let datagrams = try stream.datagrams(for: .zero..<Duration.seconds(4), origin: clock.now)
        for datagram in datagrams where datagram.arrival < MonotonicInstant.zero.advanced(by: .seconds(2)) {
            driver.advance(to: datagram.arrival)
            driver.receive(datagram.bytes, track: datagram.track)
        }
        subscriber.stop()
        driver.advance(by: .milliseconds(20))
        #expect(driver.isFinished)
        let final = try #require(driver.finalSample)
        #expect(final.state == .ended)
        driver.receive(datagrams.last!.bytes, track: 0)
        #expect(driver.finalSample == final)
    }

    @Test("a subscriber on a manual clock refuses start(); the embedded driver refuses one on the real clock")
    func wrongClock() throws {
        let stream = SimulatedStream()
        let manual = try Self.subscriber(stream, clock: ManualClock())
        #expect(throws: PlayoutError.self) { try manual.start() }
        let real = try Subscriber(sessionDescription: stream.sessionDescription)
        #expect(throws: PlayoutError.self) { try EmbeddedDriver(real) }
    }

    @Test("the same seed gives the same run, NACKs and reports included")
    func repeatable() throws {
        var network = NetworkImpairment.Configuration(loss: 0.02, jitter: .milliseconds(10), seed: 3)
        network.outages = [Duration.seconds(1)..<Duration.milliseconds(1_500)]
        let stream = SimulatedStream(.init(audio: true, feedback: ["nack", "nack pli"], impairment: network))
        func run() throws -> SubscriberQoS {
            let clock = ManualClock()
            let driver = try EmbeddedDriver(try Self.subscriber(stream, clock: clock))
            return driver.run(try stream.datagrams(for: .zero..<Duration.seconds(3), origin: clock.now))
        }
        // Everything, the decoders' timing too: decode time is measured on the subscription's
        // clock, which is manual here (no component reads a clock of its own).
        func outcome(_ qos: SubscriberQoS) -> [String] {
            qos.tracks.values.sorted { $0.kind.rawValue < $1.kind.rawValue }.map { track in
                "\(track.kind) \(track.packetsReceived) \(track.packetsLost) \(track.nackCount) \(track.pliCount) \(track.rtcpPacketsUnsent) "
                    + "\(track.framesRendered) \(track.framesDropped) \(track.freezeCount) \(track.totalFreezesDuration) \(track.jitter) "
                    + "\(track.renderError.count) \(track.endToEndLatency.count) \(track.jitterBufferDelay) \(track.framesDecoded) \(track.totalDecodeTime)"
            } + ["\(qos.state) \(qos.elapsed)"]
        }
        let first = try run()
        let second = try run()
        #expect(outcome(first) == outcome(second))
        #expect(first.video?.totalDecodeTime == .zero && (first.video?.framesDecoded ?? 0) > 0, "decoding takes no time on a manual clock")
        #expect((first.video?.nackCount ?? 0) > 0 && (first.video?.packetsLost ?? 0) > 0)
    }
}

@Suite("Without decoding: every timing statistic as with it, decode statistics unknown")
struct WithoutDecodingTests {
    @Test("a lossy run with an override: rendered, skipped, late, freezes, delay pauses and render errors as with decoding")
    func sameTiming() throws {
        var network = NetworkImpairment.Configuration(loss: 0.02, seed: 5)
        network.outages = [Duration.seconds(2)..<Duration.milliseconds(2_600)]
        let stream = SimulatedStream(.init(audio: true, impairment: network))
        func run(decoding: Bool) throws -> SubscriberQoS {
            let clock = ManualClock()
            var options = Subscriber.Options(
                duration: .seconds(5), overrides: [ScheduledOverride(delay: .seconds(1), at: .seconds(1), hold: .seconds(2))], clock: clock)
            options.seed = 1
            options.decoding = decoding
            let driver = try EmbeddedDriver(try Subscriber(sessionDescription: stream.sessionDescription, options: options))
            return driver.run(try stream.datagrams(for: .zero..<Duration.seconds(5), origin: clock.now))
        }
        let decoded = try run(decoding: true)
        let undecoded = try run(decoding: false)
        for kind in [MediaKind.video, .audio] {
            let with = try #require(decoded.tracks[kind])
            let without = try #require(undecoded.tracks[kind])
            #expect(without.framesRendered == with.framesRendered && with.framesRendered > 0, "\(kind)")
            #expect(without.framesSkipped == with.framesSkipped && without.framesLate == with.framesLate)
            #expect(without.freezeCount == with.freezeCount && without.totalFreezesDuration == with.totalFreezesDuration)
            #expect(without.delayPauseCount == with.delayPauseCount && without.totalDelayPausesDuration == with.totalDelayPausesDuration)
            #expect(without.renderError.count == with.renderError.count && without.endToEndLatency.count == with.endToEndLatency.count)
            #expect(without.framesDecoded == 0 && without.totalDecodeTime == .zero && with.framesDecoded > 0)
            #expect(!without.decoded && with.decoded)
            #expect(QoSJSONWriter().line(for: undecoded).contains(#""framesDecoded":null"#))
        }
    }

    @Test("a .y4m sink needs decoded pictures: refused without decoding")
    func fileSinkRefused() throws {
        var options = Subscriber.Options(clock: ManualClock())
        options.decoding = false
        let subscriber = try Subscriber(sessionDescription: SimulatedStream().sessionDescription, options: options)
        _ = try Renderer(subscriber: subscriber, sink: .y4m(path: FileManager.default.temporaryDirectory.appendingPathComponent("never.y4m").path))
        #expect(throws: PlayoutError.self) { try EmbeddedDriver(subscriber) }
    }
}
