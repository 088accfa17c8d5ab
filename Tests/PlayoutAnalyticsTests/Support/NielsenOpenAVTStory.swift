import Playout
import PlayoutCore
import PlayoutTelemetry

/// The story the Nielsen and OpenAVT integration tests tell with a real subscription: the
/// built-in publisher sends 7 s of 320×180 H.264 through 1 % loss (seeded) and a 2 s outage
/// (3 s to 5 s after its first datagram: the subscriber stalls and comes back); the subscriber
/// holds one override (1 s, from 1.5 s for 1 s) and plays 7.6 s. Every QoS sample it publishes
/// is kept, so a test can check that an adapter's QoS numbers are the subscriber's own.
struct NielsenOpenAVTStory {
    /// The outage, from the publisher's first datagram.
    static let outage = Duration.seconds(3)..<Duration.seconds(5)
    /// The one playout-delay override.
    static let override = ScheduledOverride(delay: .seconds(1), at: .milliseconds(1_500), hold: .seconds(1))

    /// The subscriber's final sample.
    var final: SubscriberQoS
    /// Every QoS sample the subscriber published, in order (the final one last).
    var samples: [SubscriberQoS]

    /// Runs the story: `attach` connects an adapter's bridge to the subscriber before it starts
    /// and returns what to call with the final sample once it ended.
    static func run(attach: (Subscriber) throws -> (SubscriberQoS) -> Void) throws -> NielsenOpenAVTStory {
        var impairment = NetworkImpairment.Configuration(loss: 0.01, jitter: .milliseconds(5), seed: 7)
        impairment.outages = [outage]
        let publisher = try Publisher(options: .init(
            destination: try Publisher.freeLoopbackDestination(),
            video: .init(codec: .h264, width: 320, height: 180, frameRate: 30, bitrate: 300_000, keyframeInterval: 30),
            sendsAudio: false, impairment: impairment, duration: .seconds(7)))
        let subscriber = try Subscriber(
            sessionDescription: publisher.sessionDescription,
            options: .init(duration: .milliseconds(7_600), overrides: [override]))
        let samples = LockedValue<[SubscriberQoS]>([])
        let watch = subscriber.qos.subscribe { sample in samples.withLock { $0.append(sample) } }
        let finish = try attach(subscriber)
        try subscriber.start()
        try publisher.start()
        _ = try publisher.waitUntilEnded()
        let final = subscriber.waitUntilEnded()
        watch.dispose()
        finish(final)
        return NielsenOpenAVTStory(final: final, samples: samples.withLock { $0 } + [final])
    }

    /// Whether `fields` are the heartbeat fields of one of the subscriber's samples.
    func isSubscriberQoS(_ fields: [TelemetryField]) -> Bool {
        samples.contains { SubscriberTelemetryTranslator.heartbeatFields($0) == fields }
    }
}

extension Array where Element == String {
    /// The names with each run of a repeated name collapsed to `name…` (playheads, pings).
    func collapsingRuns(of repeated: Set<String>) -> [String] {
        var result: [String] = []
        for name in self {
            let shown = repeated.contains(name) ? name + "…" : name
            if result.last != shown || !repeated.contains(name) { result.append(shown) }
        }
        return result
    }
}
