import ArgumentParser
import Playout
import PlayoutSender

/// `playout demo`: the publisher and a subscriber on loopback, with embedded defaults.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Publish and subscribe on loopback: synthetic 720p30 H.264 + Opus over SRTP, 230 ms delay, null sink, 20 s.",
        discussion: """
            Impairment options apply to the publisher's output; the playout delay, overrides and sink to the \
            subscriber. What the publisher sent is one line on stderr at the end. With --whep the publisher serves \
            WHEP on loopback (ICE-lite, DTLS-SRTP, BUNDLE) and the subscriber connects over WebRTC, reporting \
            its start-up step by step.
            """
    )

    /// The loopback port when `--port` is not given.
    static let defaultPort: UInt16 = 47_000

    @OptionGroup var subscription: SubscriptionOptions<DemoDefaults>

    @Option(help: "The loopback port: video on PORT, audio on PORT+2, RTCP on PORT+1 and PORT+3.")
    var port = Self.defaultPort

    @Flag(help: "Over WebRTC: the publisher serves WHEP on 127.0.0.1 (a free port) and the subscriber posts its offer there.")
    var whep = false

    @OptionGroup var video: VideoOptions
    @OptionGroup var network: ImpairmentOptions
    @OptionGroup var senderFeedback: SenderFeedbackOptions

    func validate() throws {
        try Publisher.Options.validatePort(of: try SocketAddress(host: "127.0.0.1", port: port), option: "--port \(port)", example: "\(Self.defaultPort)")
    }

    func run() throws {
        do {
            // The publisher sends half a second longer than the subscriber plays. (Written without
            // Optional.map: Swift 6.3.1's optimizer crashes on that form here in release builds.)
            var sendFor: Duration?
            if let limit = subscription.duration.duration { sendFor = limit + .milliseconds(500) }
            let publisher = try Publisher(options: .init(
                destination: try SocketAddress(host: "127.0.0.1", port: port), video: video.settings(),
                keyingMaterial: whep ? nil : .random(for: .aesCM128HMACSHA1_80), impairment: network.configuration(),
                duration: sendFor, retransmission: !senderFeedback.noRetransmission,
                whep: whep ? WHEPEndpoint.Configuration(listen: try SocketAddress(host: "127.0.0.1", port: 0)) : nil
            ))
            let lingering = LingeringEndpoints(linger: subscription.telemetryLinger.duration)
            let telemetry = try subscription.makeTelemetry(lingering: lingering)
            let options = subscription.subscriberOptions(telemetry: telemetry)
            // Over WHEP the endpoint serves once started: the subscriber posts its offer when it starts.
            let subscriber = try publisher.whepEndpoint.map { try Subscriber(source: $0.url, options: options) }
                ?? Subscriber(sessionDescription: publisher.sessionDescription, options: options)
            let renderer = try Renderer(subscriber: subscriber, sink: subscription.sink.spec)
            let analytics = try subscription.analytics.make(subscriber: subscriber, writesJSON: subscription.writesJSON)
            let session = SubscriptionSession(
                subscriber: subscriber, renderer: renderer, json: subscription.json, telemetry: telemetry,
                analytics: analytics, strictTelemetry: subscription.telemetryStrict, lingering: lingering)
            // The publisher starts once the subscriber listens (its sockets bound, or its WHEP
            // offer answered), so its first key frame does not go to a port nobody has bound yet —
            // which left the decoder waiting a second for the sender report that tells it where
            // to send its key-frame request.
            let started = LockedValue(false)
            let startPublisher = subscriber.state.subscribe { state in
                guard state != .idle, !started.withLock({ value in defer { value = true }; return value }) else { return }
                do {
                    try publisher.start()
                } catch {
                    writeError("playout: the publisher did not start: \(error)\n")
                    subscriber.stop()
                }
            }
            defer {
                startPublisher.dispose()
                publisher.stop()
            }
            let final = try session.run(title: "playout demo")
            publisher.stop()
            let sent = try publisher.waitUntilEnded()
            writeError("publisher: \(sent.table.split(separator: "\n").joined(separator: "; "))\n")
            try subscription.analytics.conclude(session.analyticsSummary, failed: final.state.isFailed)
            try session.requireTelemetryDelivered()
            if case .failed(let reason) = final.state { throw PlayoutError(.invalidSource, reason) }
        } catch {
            throw PlayoutCommand.failure(error)
        }
    }
}
