import Playout

/// One real subscription for the heartbeat and Mux integration tests: the built-in publisher
/// sends 6.5 s of 320×180 H.264 (no audio) (key frame every second) over SRTP on loopback through 1 % loss
/// and an outage from 3 s to 4.5 s after its first datagram (everything lost: the subscriber
/// stalls); the subscriber holds 230 ms, and 1 s from 1.5 s to 2.5 s after its start (one
/// override: a delay pause, then a skip); it plays for 7 s.
///
/// Loss seed 1 spares the key frames that matter: the stall is the outage's alone (with another
/// seed a lost key frame can stall the delay pause itself, a different story).
///
/// The adapter's story for it: load, start, first frame, the first rendition, a pause and play
/// around the override, a buffer start, a stall warning, a buffer end, the end and the unload.
enum HeartbeatMuxStory {
    /// The instrument for a story: every record to `memory`; heartbeats every 10 s.
    static func makeInstrument(_ memory: InMemoryTelemetryBackend) throws -> TelemetryInstrument {
        try TelemetryInstrument(backends: [memory], configuration: .init(delivery: .init(linger: .milliseconds(20))))
    }

    /// Runs the story: `attach` gets the subscriber before it starts (to make its bridge).
    /// Returns the subscriber's final QoS sample.
    static func run(attach: (Subscriber) throws -> Void) throws -> SubscriberQoS {
        var impairment = NetworkImpairment.Configuration(loss: 0.01, seed: 1)
        impairment.outages = [Duration.seconds(3)..<Duration.milliseconds(4_500)]
        let publisher = try Publisher(options: .init(
            destination: try Publisher.freeLoopbackDestination(),
            video: .init(codec: .h264, width: 320, height: 180, frameRate: 30, bitrate: 300_000, keyframeInterval: 30),
            sendsAudio: false, keyingMaterial: .random(for: .aesCM128HMACSHA1_80), impairment: impairment, duration: .milliseconds(6_500)))
        let subscriber = try Subscriber(
            sessionDescription: publisher.sessionDescription,
            options: .init(duration: .seconds(7), overrides: [ScheduledOverride(delay: .seconds(1), at: .milliseconds(1_500), hold: .seconds(1))]))
        try attach(subscriber)
        try subscriber.start()
        try publisher.start()
        _ = try publisher.waitUntilEnded()
        return subscriber.waitUntilEnded()
    }
}
