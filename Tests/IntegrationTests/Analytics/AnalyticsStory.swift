import Playout
import PlayoutCore
import PlayoutSender
import PlayoutTelemetry

/// One real subscription for the adapters' integration tests: the built-in publisher sends 320×180
/// H.264 (key frame every second, no audio) on loopback through 1 % loss (seeded) and an outage
/// (everything lost: the subscriber stalls and comes back); the subscriber holds 230 ms, and 1 s
/// from 1.5 s to 2.5 s after its start (one override: a delay pause, then a skip). Every QoS sample
/// it publishes is kept, so a test can check that an adapter's QoS numbers are the subscriber's own.
struct AnalyticsStory {
    /// What differs between the stories the adapters tell.
    struct Script {
        /// The loss's seed, and the network's jitter.
        var seed: UInt64
        var jitter: Duration = .zero
        /// The outage, from the publisher's first datagram.
        var outage: Range<Duration>
        /// How long the publisher sends and the subscriber plays.
        var sending: Duration
        var playing: Duration
        /// Whether the stream is SRTP.
        var encrypted: Bool
    }

    /// The one playout-delay override.
    static let override = ScheduledOverride(delay: .seconds(1), at: .milliseconds(1_500), hold: .seconds(1))

    /// The subscriber's final sample.
    var final: SubscriberQoS
    /// Every QoS sample the subscriber published, in order (the final one last).
    var samples: [SubscriberQoS]

    /// The instrument for a story: every record to `memory`, delivered within 20 ms.
    static func makeInstrument(_ memory: InMemoryTelemetryBackend) throws -> TelemetryInstrument {
        try TelemetryInstrument(backends: [memory], configuration: .init(delivery: .init(linger: .milliseconds(20))))
    }

    /// Runs `script`: `attach` connects an adapter's bridge to the subscriber before it starts and
    /// returns what to call with the final sample once it ended (nil: nothing).
    static func run(_ script: Script, attach: (Subscriber) throws -> ((SubscriberQoS) -> Void)?) throws -> AnalyticsStory {
        var impairment = NetworkImpairment.Configuration(loss: 0.01, jitter: script.jitter, seed: script.seed)
        impairment.outages = [script.outage]
        let publisher = try Publisher(options: .init(
            destination: try Publisher.freeLoopbackDestination(),
            video: .init(codec: .h264, width: 320, height: 180, frameRate: 30, bitrate: 300_000, keyframeInterval: 30),
            sendsAudio: false, keyingMaterial: script.encrypted ? .random(for: .aesCM128HMACSHA1_80) : nil, impairment: impairment,
            duration: script.sending))
        let subscriber = try Subscriber(
            sessionDescription: publisher.sessionDescription, options: .init(duration: script.playing, overrides: [override]))
        let samples = LockedValue<[SubscriberQoS]>([])
        let watch = subscriber.qos.subscribe { sample in samples.withLock { $0.append(sample) } }
        let finish = try attach(subscriber)
        try subscriber.start()
        try publisher.start()
        _ = try publisher.waitUntilEnded()
        let final = subscriber.waitUntilEnded()
        watch.dispose()
        finish?(final)
        return AnalyticsStory(final: final, samples: samples.withLock { $0 } + [final])
    }

    /// Whether `fields` are the heartbeat fields of one of the subscriber's samples.
    func isSubscriberQoS(_ fields: [TelemetryField]) -> Bool {
        samples.contains { SubscriberTelemetryTranslator.heartbeatFields($0) == fields }
    }
}

extension AnalyticsStory.Script {
    /// The heartbeat and Mux story: 6.5 s over SRTP, the outage from 3 s to 4.5 s. Loss seed 1
    /// spares the key frames that matter: the stall is the outage's alone (with another seed a lost
    /// key frame can stall the delay pause itself, a different story). The adapters' story for it:
    /// load, start, first frame, the first rendition, a pause and play around the override, a
    /// buffer start, a stall warning, a buffer end, the end and the unload.
    static let heartbeatMux = Self(seed: 1, outage: Duration.seconds(3)..<Duration.milliseconds(4_500), sending: .milliseconds(6_500), playing: .seconds(7), encrypted: true)
    /// The Nielsen and OpenAVT story: 7 s in the clear with 5 ms of jitter, the outage from 3 s to 5 s.
    static let nielsenOpenAVT = Self(seed: 7, jitter: .milliseconds(5), outage: Duration.seconds(3)..<Duration.seconds(5), sending: .seconds(7), playing: .milliseconds(7_600), encrypted: false)
}
