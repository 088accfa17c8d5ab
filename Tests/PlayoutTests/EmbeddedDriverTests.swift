#if canImport(Glibc)
import Glibc
#endif
import Playout
import PlayoutCore
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
        // Everything but the decoders' own timing (totalDecodeTime is CPU time, measured).
        func outcome(_ qos: SubscriberQoS) -> [String] {
            qos.tracks.values.sorted { $0.kind.rawValue < $1.kind.rawValue }.map { track in
                "\(track.kind) \(track.packetsReceived) \(track.packetsLost) \(track.nackCount) \(track.pliCount) \(track.rtcpPacketsUnsent) "
                    + "\(track.framesRendered) \(track.framesDropped) \(track.freezeCount) \(track.totalFreezesDuration) \(track.jitter) "
                    + "\(track.renderError.count) \(track.endToEndLatency.count) \(track.jitterBufferDelay)"
            } + ["\(qos.state) \(qos.elapsed)"]
        }
        let first = try run()
        let second = try run()
        #expect(outcome(first) == outcome(second))
        #expect((first.video?.nackCount ?? 0) > 0 && (first.video?.packetsLost ?? 0) > 0)
    }
}
