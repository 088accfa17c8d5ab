@testable import Playout
import PlayoutCore
import PlayoutJitter
import PlayoutRTP
import PlayoutTelemetry
import PlayoutTesting
import Testing

/// Whole subscriptions on a manual clock: a real encoder, packetizer and SRTP on the sending side,
/// the subscriber's own tracks, playout loops, real decoders and state machine on the receiving
/// side, with exact instants. The deterministic twins of the real-time tests in
/// `PublishSubscribeTests` and `SubscribeTests` (overrides, stalls, restarts, reconnects, a wrong key).
@Suite("Subscriptions on a manual clock: exact instants, real media")
struct SubscriptionTests {
    static let key = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
    static let frameInterval = Duration.seconds(1) / 30

    /// Every count of every track is a consistent snapshot: rendered ≤ decoded ≤ received.
    static func expectConsistent(_ sample: SubscriberQoS, sourceLocation: SourceLocation = #_sourceLocation) {
        for track in sample.tracks.values {
            #expect(track.framesRendered <= track.framesDecoded, "\(track.kind): rendered \(track.framesRendered) > decoded \(track.framesDecoded)", sourceLocation: sourceLocation)
            #expect(track.framesDecoded <= track.framesReceived, "\(track.kind): decoded \(track.framesDecoded) > received \(track.framesReceived)", sourceLocation: sourceLocation)
        }
    }

    @Test("clean SRTP audio + video: every frame renders at arrival + 230 ms; latency is exactly delay + transit")
    func clean() throws {
        let simulation = try SimulatedSubscription(
            session: SimulatedSubscription.session(key: Self.key, audio: true),
            options: .init(duration: .seconds(4), qosInterval: .milliseconds(500))
        )
        let start = simulation.clock.now
        let datagrams = try SimulatedSender(key: Self.key).datagrams(video: Duration.zero..<Duration.seconds(3), audio: Duration.zero..<Duration.seconds(3), origin: start)
        let final = simulation.run(datagrams)
        let video = try #require(final.video)
        let audio = try #require(final.audio)
        #expect(video.framesRendered == 90 && audio.framesRendered == 150)
        #expect(video.framesDropped == 0 && audio.framesDropped == 0)
        #expect(video.frameWidth == 320 && video.frameHeight == 240)
        // Presented exactly at the render time, which is the first packet's arrival + the delay;
        // the sender's capture time is its send time, 10 ms before arrival.
        #expect(video.renderError.percentile(1.0) == .zero)
        for track in [video, audio] {
            #expect(track.endToEndLatency.percentile(0.0) == .milliseconds(240))
            #expect(track.endToEndLatency.maximum == .milliseconds(240), "\(track.kind)")
        }
        // The first video frame arrives at 10 ms and renders at 240 ms; the state follows at the
        // next 20 ms check (the one at 240 ms ran just before the render).
        #expect(simulation.firstInstant(of: .connecting) == .zero)
        #expect(simulation.firstInstant(of: .buffering) == .zero)
        #expect(simulation.firstInstant(of: .playing) == .milliseconds(260))
        #expect(simulation.states.last?.state == .ended)
        #expect(simulation.firstInstant(of: .ended) == .seconds(4))
        // Samples every 500 ms, exactly, each consistent; the final one is the summary.
        #expect(simulation.samples.dropFirst().dropLast().map(\.elapsed) == (1...7).map { .milliseconds(500 * $0) })
        for sample in simulation.samples { Self.expectConsistent(sample) }
        #expect(final.elapsed == .seconds(4))
        #expect(abs(video.framesPerSecond - 90.0 / 4) < 1e-9, "the final sample's rate covers the whole run")
        #expect(simulation.samples[4].video.map { $0.framesPerSecond } == 30, "1.5 s…2 s: 15 frames in 0.5 s")
    }

    @Test("overrides 230 ms → 2 s at 3 s → 500 ms at 6 s: the delay changes at those instants, pauses 1.77 s and skips 1.5 s")
    func overrides() throws {
        let simulation = try SimulatedSubscription(
            session: SimulatedSubscription.session(key: Self.key, audio: true),
            options: .init(duration: .seconds(9), qosInterval: .seconds(1), overrides: [
                ScheduledOverride(delay: .seconds(2), at: .seconds(3)),
                ScheduledOverride(delay: .milliseconds(500), at: .seconds(6)),
            ])
        )
        let start = simulation.clock.now
        let final = simulation.run(try SimulatedSender(key: Self.key).datagrams(video: Duration.zero..<Duration.seconds(8), audio: Duration.zero..<Duration.seconds(8), origin: start))
        #expect(simulation.delays.map { start.duration(to: $0.at) } == [.zero, .seconds(3), .seconds(6)])
        #expect(simulation.delays.map(\.delay) == [
            EffectivePlayoutDelay(delay: .milliseconds(230), source: .configured),
            EffectivePlayoutDelay(delay: .seconds(2), source: .override),
            EffectivePlayoutDelay(delay: .milliseconds(500), source: .override),
        ])
        #expect(final.playoutDelay == EffectivePlayoutDelay(delay: .milliseconds(500), source: .override))
        for (kind, interval) in [(MediaKind.video, Self.frameInterval), (.audio, .milliseconds(20))] {
            let track = try #require(final.tracks[kind])
            #expect(track.delayPauseCount == 1, "\(kind)")
            #expect(abs(track.totalDelayPausesDuration - .milliseconds(1_770)) <= interval, "\(kind) paused \(track.totalDelayPausesDuration)")
            #expect(abs(track.totalSkippedDuration - .milliseconds(1_500)) <= interval, "\(kind) skipped \(track.totalSkippedDuration)")
            #expect(track.freezeCount == 0, "a pause the user asked for is not a freeze")
            #expect(track.playoutDelay == EffectivePlayoutDelay(delay: .milliseconds(500), source: .override))
        }
        #expect(!simulation.states.contains { $0.state == .stalled }, "a delay pause is not a stall")
        for sample in simulation.samples { Self.expectConsistent(sample) }
    }

    @Test("the same input gives the same subscription: two runs agree on every frame count and instant")
    func deterministic() throws {
        func run() throws -> (SubscriberQoS, [Duration]) {
            let simulation = try SimulatedSubscription(
                session: SimulatedSubscription.session(key: Self.key),
                options: .init(duration: .seconds(5), overrides: [ScheduledOverride(delay: .seconds(1), at: .seconds(2), hold: .seconds(1))])
            )
            let start = simulation.clock.now
            var datagrams = try SimulatedSender(key: Self.key).datagrams(video: Duration.zero..<Duration.seconds(4), origin: start)
            datagrams.removeAll { $0.bytes.count > 1_000 && $0.bytes[3] % 7 == 0 }  // a loss pattern fixed by the content
            let final = simulation.run(datagrams)
            return (final, simulation.states.map { start.duration(to: $0.at) })
        }
        let (first, firstStates) = try run()
        let (second, secondStates) = try run()
        #expect(firstStates == secondStates)
        let a = try #require(first.video)
        let b = try #require(second.video)
        #expect(a.framesRendered == b.framesRendered && a.framesSkipped == b.framesSkipped && a.packetsLost == b.packetsLost)
        #expect(a.totalDelayPausesDuration == b.totalDelayPausesDuration && a.totalSkippedDuration == b.totalSkippedDuration)
        #expect(a.framesDroppedWaitingForKeyframe == b.framesDroppedWaitingForKeyframe && a.freezeCount == b.freezeCount)
        #expect(a.endToEndLatency == b.endToEndLatency && a.renderError == b.renderError)
    }

    @Test("a sender that stops: everything held renders, stalled exactly 1 s after the last render, ended at the duration")
    func senderStops() throws {
        let simulation = try SimulatedSubscription(
            session: SimulatedSubscription.session(key: Self.key), options: .init(duration: .seconds(5), stallTimeout: .seconds(1))
        )
        let start = simulation.clock.now
        let final = simulation.run(try SimulatedSender(key: Self.key).datagrams(video: Duration.zero..<Duration.seconds(2), origin: start))
        #expect(final.video?.framesRendered == 60, "the buffer drained first")
        // The last frame (media 59/30 s) arrived 10 ms later and rendered 230 ms after that; a
        // playing subscription's next state check is the first instant that render is more
        // than the stall timeout old.
        let lastRender = Duration.seconds(59) / 30 + .milliseconds(10 + 230)
        let stalled = try #require(simulation.firstInstant(of: .stalled))
        #expect(stalled > lastRender + .seconds(1) && stalled <= lastRender + .seconds(1) + .microseconds(1), "stalled at \(stalled)")
        #expect(simulation.states.map(\.state) == [.idle, .connecting, .buffering, .playing, .stalled, .ended])
        #expect(simulation.firstInstant(of: .ended) == .seconds(5))
    }

    @Test("a second source is played only once the first was silent for sourceSwitchTimeout (3 s), not the stall timeout")
    func sourceSwitchTimeout() throws {
        var options = Subscriber.Options(duration: .seconds(9))
        options.sourceSwitchTimeout = .seconds(3)
        let simulation = try SimulatedSubscription(session: SimulatedSubscription.session(key: Self.key), options: options)
        let start = simulation.clock.now
        // The first sender stops at 2 s; a second one sends from 2.5 s to 6 s.
        let first = try SimulatedSender(key: Self.key).datagrams(video: Duration.zero..<Duration.seconds(2), origin: start)
        let second = try SimulatedSender(key: Self.key, ssrc: 0xCAFE, firstSequenceNumber: 100, firstTimestamp: 12_345)
            .datagrams(video: Duration.zero..<Duration.seconds(3.5), origin: start.advanced(by: .milliseconds(2_500)))
        let final = simulation.run(first + second)
        let video = try #require(final.video)
        // Switched ≈ 5 s (3 s after the first sender's last packet; with the 1 s stall timeout it
        // would be ≈ 3 s), then played from the second sender's next key frame (5.5 s): 15 frames.
        #expect(video.sourceSwitches == 1, "\(video)")
        #expect(video.framesRendered == 60 + 15, "\(video.framesRendered)")
        let buffering = simulation.states.filter { $0.state == .buffering }.map { start.duration(to: $0.at) }
        #expect(buffering.count == 2 && buffering[1] > .seconds(5) && buffering[1] < .milliseconds(5_600), "\(buffering)")
        #expect(video.packetsFromSourcesNotPlayed > 0)
    }

    @Test("a sender that comes back with a new SSRC, sequence and timestamp base is played again")
    func senderComesBack() throws {
        let simulation = try SimulatedSubscription(session: SimulatedSubscription.session(key: Self.key), options: .init(duration: .seconds(8)))
        let start = simulation.clock.now
        let first = try SimulatedSender(key: Self.key).datagrams(video: Duration.zero..<Duration.seconds(2), origin: start)
        let second = try SimulatedSender(key: Self.key, ssrc: 0xCAFE, firstSequenceNumber: 100, firstTimestamp: 12_345)
            .datagrams(video: Duration.zero..<Duration.seconds(2), origin: start.advanced(by: .seconds(4)))
        let final = simulation.run(first + second)
        let states = simulation.states.map(\.state)
        // Stalled a second after the first send's last render (3.2067 s), then a state check
        // every 20 ms from there: buffering at the first after the new stream's first frames
        // queue (4.010 s → 4.0267 s); playing at the first that sees one rendered (4.010 s
        // arrival + 230 ms; the timeline's fastest path puts it a few µs before 4.2467 s);
        // stalled again after the second send.
        #expect(states == [.idle, .connecting, .buffering, .playing, .stalled, .buffering, .playing, .stalled, .ended], "\(states)")
        let stalled = Duration.nanoseconds(3_206_666_667)
        #expect(simulation.states.map { start.duration(to: $0.at) }[4...6] == [stalled, stalled + .milliseconds(820), stalled + .milliseconds(1_040)])
        #expect(final.video?.framesRendered == 120, "both sends rendered whole")
        #expect(final.video?.restarts == 1)
    }

    @Test("a disk that fills up while playing fails the run at the frame that did not fit, not at the next look at the tracks", .enabled(if: SmallDisk.canMount, "needs root and mount rights"))
    func diskFillsWhilePlaying() throws {
        let disk = try SmallDisk()  // 512 KiB: four 320×240 frames of .y4m
        defer { disk.remove() }
        let clock = ManualClock()
        let stream = SimulatedStream()
        let subscriber = try Subscriber(sessionDescription: stream.sessionDescription, options: .init(duration: .seconds(3), clock: clock))
        _ = try Renderer(subscriber: subscriber, sink: .y4m(path: disk.path + "/out.y4m"))
        let start = clock.now
        let final = try EmbeddedDriver(subscriber).run(try stream.datagrams(for: .zero..<Duration.seconds(3), origin: start))
        guard case .failed(let reason) = final.state else {
            Issue.record("state \(final.state)")
            return
        }
        #expect(reason.contains("No space left on device"), "\(reason)")
        #expect(final.video?.framesRendered == 4)
        // The fifth frame (media 4/30 s) arrived 10 ms after it was sent and was due 230 ms
        // later; playing since 0.26 s, the tracks would next be looked at after 1.24 s.
        let due = Duration.seconds(4) / 30 + .milliseconds(10 + 230)
        #expect(abs(final.elapsed - due) < .milliseconds(1), "failed at \(final.elapsed)")
    }

    @Test("the sender's playout-delay range applies at the packet that changed it, also while playing (the tracks are then looked at only now and then)")
    func senderRangeWhilePlaying() throws {
        var session = SimulatedSubscription.session(key: nil)
        session.media[0].extensionMaps.append(ExtensionMap(id: 6, uri: PlayoutDelayLimits.uri))
        var options = Subscriber.Options(duration: .seconds(3))
        options.decoding = false
        let simulation = try SimulatedSubscription(session: session, options: options)
        let start = simulation.clock.now
        let limits = PlayoutDelayLimits(minimum: .milliseconds(500), maximum: .milliseconds(800))
        // A frame of one IDR slice every 33 ms; from 1 s on (playing since 0.26 s) each carries the range.
        let datagrams = try (0..<60).map { index in
            var builder = RTPPacketBuilder(
                marker: true, payloadType: session.media[0].payloadTypes[0], sequenceNumber: SequenceNumber(rawValue: UInt16(index)),
                timestamp: RTPTimestamp(rawValue: UInt32(index * 3_000)), ssrc: 9
            )
            if index >= 30 { builder.extensions = [.init(id: 6, bytes: limits.bytes)] }
            return SimulatedDatagram(arrival: start.advanced(by: .milliseconds(100 + 1_000 * index / 30)), track: 0, bytes: try builder.serialized(payload: [0x65, 0x88, 0x84]))
        }
        let final = simulation.run(datagrams)
        #expect(simulation.states.map(\.state).contains(.playing) && final.video?.framesRendered ?? 0 > 0)
        let raised = try #require(simulation.delays.first { $0.delay.delay == .milliseconds(500) })
        #expect(raised.at == datagrams[30].arrival, "raised at \(start.duration(to: raised.at))")
    }

    @Test("a wrong SRTP key fails the subscription at the state check after 50 failed packets")
    func wrongKey() throws {
        let simulation = try SimulatedSubscription(session: SimulatedSubscription.session(key: Self.key), options: .init(duration: .seconds(5)))
        let start = simulation.clock.now
        let datagrams = try SimulatedSender(key: .random(for: .aesCM128HMACSHA1_80)).datagrams(video: Duration.zero..<Duration.seconds(4), origin: start)
        let final = simulation.run(datagrams)
        guard case .failed(let reason) = final.state else {
            Issue.record("state \(final.state)")
            return
        }
        #expect(reason.contains("wrong key"))
        // The 50th datagram's arrival, then the next 20 ms state check.
        let fiftieth = start.duration(to: datagrams.sorted { $0.arrival < $1.arrival }[49].arrival)
        let failed = try #require(simulation.firstInstant(of: final.state))
        #expect(failed >= fiftieth && failed < fiftieth + .milliseconds(20), "failed at \(failed), 50th packet at \(fiftieth)")
        #expect(final.elapsed == failed, "a failure ends the subscription at once")
        #expect(final.video?.framesRendered == 0)
    }

    @Test("a source lost and restored: connecting at once, buffering when restored, playing again from the restarted stream")
    func reconnect() throws {
        let simulation = try SimulatedSubscription(session: SimulatedSubscription.session(key: Self.key), options: .init(duration: .seconds(6)))
        let start = simulation.clock.now
        let first = try SimulatedSender(key: Self.key).datagrams(video: Duration.zero..<Duration.seconds(2), origin: start)
        let second = try SimulatedSender(key: Self.key, ssrc: 0xD00D).datagrams(video: Duration.zero..<Duration.seconds(2), origin: start.advanced(by: .seconds(3)))
        // The driver's part: the input fails at 2.3 s; the decisions say to reopen it after their
        // backoff, 200 ms then 400 ms (the first reopen fails): at 2.5 s and 2.9 s, carried out
        // 1–2 ms later (steps run before what is due at their instant).
        let lost = start.advanced(by: .milliseconds(2_300))
        let error = PlayoutError(.invalidSource, "gone")
        let final = simulation.run(first + second, at: [
            (lost, { $0.subscription.sourceFailed(.input, error: error) }),
            (start.advanced(by: .milliseconds(2_499)), { simulation in
                #expect(!simulation.subscription.takeDueInputReopen(), "not due before the backoff")
            }),
            (start.advanced(by: .milliseconds(2_501)), { simulation in
                #expect(simulation.subscription.takeDueInputReopen(), "the reopen is due")
                simulation.subscription.inputReopenFailed(error)
            }),
            (start.advanced(by: .milliseconds(2_902)), { simulation in
                #expect(simulation.subscription.takeDueInputReopen(), "the second reopen is due")
                for track in simulation.subscription.tracks { track.restart() }
                simulation.subscription.inputReopened()
            }),
        ])
        let timeline = simulation.states.map { (start.duration(to: $0.at), $0.state) }
        // Playing at the first state check after the restored stream's first render (3.240 s):
        // the checks run every 20 ms from the reopen (2.902 s), so 3.242 s.
        let expected: [(Duration, SubscriberState)] = [
            (.zero, .idle), (.zero, .connecting), (.zero, .buffering), (.milliseconds(260), .playing),
            (.milliseconds(2_300), .connecting), (.milliseconds(2_902), .buffering), (.milliseconds(3_242), .playing), (.seconds(6), .ended),
        ]
        #expect(timeline.map(\.0) == expected.map(\.0) && timeline.map(\.1) == expected.map(\.1), "\(timeline)")
        #expect(final.video?.framesRendered == 120)
    }
}

private func abs(_ duration: Duration) -> Duration {
    duration < .zero ? .zero - duration : duration
}


/// The gradual transition through a whole subscription (real encoder, SRTP, pipelines, decoders)
/// on a manual clock: the library API's `overridePlayoutDelay(_:transition:)` as scheduled
/// overrides use it.
@Suite("Subscription on a manual clock: gradual playout-delay transitions")
struct GradualSubscriptionTests {
    static let key = SubscriptionTests.key

    @Test("230 ms → 1.23 s at 25 % at 2 s, released at 7 s: no delay pause, no skip, no freeze; the delay in effect settles after 4 s each way")
    func gradualOverride() throws {
        let simulation = try SimulatedSubscription(
            session: SimulatedSubscription.session(key: Self.key, audio: true),
            options: .init(duration: .seconds(12), qosInterval: .seconds(1), overrides: [
                ScheduledOverride(delay: .milliseconds(1_230), at: .seconds(2), hold: .seconds(5), transition: .gradual(rate: 0.25)),
            ])
        )
        let start = simulation.clock.now
        let final = simulation.run(try SimulatedSender(key: Self.key).datagrams(video: Duration.zero..<Duration.seconds(11), audio: Duration.zero..<Duration.seconds(11), origin: start))
        #expect(simulation.delays.map { start.duration(to: $0.at) } == [.zero, .seconds(2), .seconds(7)])
        #expect(simulation.delays.last?.delay == EffectivePlayoutDelay(delay: .milliseconds(230), source: .configured, transition: .gradual(rate: 0.25)))
        for kind in [MediaKind.video, .audio] {
            let track = try #require(final.tracks[kind])
            #expect(track.delayPauseCount == 0 && track.totalDelayPausesDuration == .zero, "\(kind)")
            #expect(track.framesSkipped == 0 && track.totalSkippedDuration == .zero, "\(kind)")
            #expect(track.freezeCount == 0, "\(kind)")
        }
        // 11 s of media: every frame rendered, the last one at its arrival + 230 ms (settled back).
        let video = try #require(final.video)
        #expect(video.framesRendered == 330, "\(video.framesRendered)")
        // The ramp reached 1.23 s at 6 s and held it until the release: latency = delay + transit.
        let latency = try #require(video.endToEndLatency.summary)
        #expect(abs(latency.max - .milliseconds(1_240)) <= .milliseconds(2), "\(latency.max)")
        for sample in simulation.samples { SubscriptionTests.expectConsistent(sample) }
    }
}
