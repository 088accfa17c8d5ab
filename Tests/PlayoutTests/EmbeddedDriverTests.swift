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
        // 3 s at 30 fps, the last 240 ms still held when the duration ends: frames 0…82 (media
        // up to 2.733 s, due 240 ms later). Frame 83, due at 3.007 s, was released for decoding
        // 20 ms ahead but is not shown: the run ended before its time.
        #expect(final.video?.framesRendered == 83)
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
        var elided: [Bool: [Bool]] = [:]
        func run(decoding: Bool) throws -> SubscriberQoS {
            let clock = ManualClock()
            var options = Subscriber.Options(
                duration: .seconds(5), overrides: [ScheduledOverride(delay: .seconds(1), at: .seconds(1), hold: .seconds(2))], clock: clock)
            options.seed = 1
            options.decoding = decoding
            let driver = try EmbeddedDriver(try Subscriber(sessionDescription: stream.sessionDescription, options: options))
            elided[decoding] = driver.subscription.tracks.map(\.elidesPayloads)
            return driver.run(try stream.datagrams(for: .zero..<Duration.seconds(5), origin: clock.now))
        }
        let decoded = try run(decoding: true)
        let undecoded = try run(decoding: false)
        // Undecoded frames are only timed: their payloads are counted, not copied (video's
        // H.264; audio's Opus frames are small and go on being copied).
        #expect(elided == [true: [false, false], false: [true, true]])
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

    /// The loop decodes ahead (bursts of up to three frames released 150 ms early); a delay
    /// change re-times what it holds by the rule every other frame follows. 230 ms → 500 ms at
    /// 1.3 s, released at 1.6 s (→ 230 ms while the pause is under way): the frames decoded
    /// before the increase pause with the rest, those decoded under 500 ms and still held at the
    /// release are skipped as late by the decrease. Before, they kept their render times: a frame
    /// presented inside the pause, and three 500 ms frames after the release (−80 ms of pause,
    /// +91 ms of skip measured by `bench` in one run of three).
    @Test("frames decoded ahead follow a delay change: none presented inside a pause, none on the old delay after a decrease", arguments: [true, false])
    func decodedAheadRetimed(decoding: Bool) throws {
        let clock = ManualClock()
        let stream = SimulatedStream()
        var options = Subscriber.Options(
            duration: .seconds(3), overrides: [ScheduledOverride(delay: .milliseconds(500), at: .milliseconds(1_300), hold: .milliseconds(300))],
            frameLogCapacity: 1_000, clock: clock)
        options.decoding = decoding
        let subscriber = try Subscriber(sessionDescription: stream.sessionDescription, options: options)
        let driver = try EmbeddedDriver(subscriber)
        let final = driver.run(try stream.datagrams(for: .zero..<Duration.seconds(3), origin: clock.now))
        let log = try #require(subscriber.frameLog).snapshot()
        let start = MonotonicInstant.zero
        let at = { (seconds: Double) in start.advanced(by: .seconds(seconds)) }
        let rendered = log.frames.filter { $0.kind == .video && !$0.skipped }
        let interval = Duration.seconds(1) / 30
        // The pause: from the last frame due before the increase to the first due under 500 ms.
        let inside = rendered.filter { $0.shown > at(1.3) && $0.shown < at(1.57).advanced(by: .zero - interval) }
        #expect(inside.isEmpty, "presented inside the pause: \(inside.map { "\($0.mediaTime) at \(start.duration(to: $0.shown)) with \($0.delay)" })")
        // After the release, every frame presented is on the 230 ms schedule.
        let stale = rendered.filter { $0.shown >= at(1.6) && abs(($0.delay - .milliseconds(230)).seconds) > 0.000_001 }
        #expect(stale.isEmpty, "on the old delay after the decrease: \(stale.map { "\($0.mediaTime) at \(start.duration(to: $0.shown)) with \($0.delay)" })")
        let off = rendered.filter { $0.shown != $0.due && $0.shown < at(3) }  // the end presents what is held
        #expect(off.isEmpty, "a manual clock presents each frame at its render time: \(off.map { "\($0.mediaTime) due \(start.duration(to: $0.due)) shown \(start.duration(to: $0.shown))" })")
        // The log and the counters agree: what the loop skipped counts as skipped by the decrease.
        let video = try #require(final.video)
        #expect(video.framesRendered == rendered.count)
        #expect(video.framesSkipped + video.framesLate == log.frames.count { $0.kind == .video && $0.skipped }, "\(video.framesSkipped) + \(video.framesLate)")
        #expect(video.framesSkipped >= 7 && video.delayPauseCount == 1, "skipped \(video.framesSkipped), delay pauses \(video.delayPauseCount)")
    }

    /// The remux sink writes a frame as it leaves the loop, stamped with its render time then:
    /// before, frames were written as they were decoded (up to three ahead), and those re-timed by
    /// the increase kept their old stamps — inside the pause.
    @Test("a remuxed file carries the render times frames were presented at, across a delay change")
    func remuxedAfterRetime() throws {
        let clock = ManualClock()
        let stream = SimulatedStream()
        let options = Subscriber.Options(
            duration: .seconds(3), overrides: [ScheduledOverride(delay: .milliseconds(500), at: .milliseconds(1_300), hold: .milliseconds(300))],
            frameLogCapacity: 1_000, clock: clock)
        let subscriber = try Subscriber(sessionDescription: stream.sessionDescription, options: options)
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("playout-retimed-\(UInt32.random(in: 0...UInt32.max)).mkv")
        defer { try? FileManager.default.removeItem(at: output) }
        _ = try Renderer(subscriber: subscriber, sink: .remux(path: output.path))
        _ = try EmbeddedDriver(subscriber).run(try stream.datagrams(for: .zero..<Duration.seconds(3), origin: clock.now))
        let rendered = try #require(subscriber.frameLog).snapshot().frames.filter { $0.kind == .video && !$0.skipped }
        let stamps = try FFmpeg.probe(["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", output.path])
            .split(separator: "\n").compactMap { Double($0) }
        #expect(stamps.count >= rendered.count && rendered.count > 60)
        // Matroska keeps milliseconds.
        let missing = rendered.filter { frame in
            let due = MonotonicInstant.zero.duration(to: frame.due).seconds
            return !stamps.contains { abs($0 - due) <= 0.0015 }
        }
        #expect(missing.isEmpty, "rendered but stamped otherwise: \(missing.map { "\($0.mediaTime) due \(MonotonicInstant.zero.duration(to: $0.due))" })")
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
