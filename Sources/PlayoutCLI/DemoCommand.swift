import ArgumentParser
import FoundationEssentials
import Playout

/// `playout demo`: the publisher and a subscriber on loopback, with embedded defaults.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Publish and subscribe on loopback: synthetic 720p30 H.264 + Opus over SRTP, 230 ms delay, null sink, 20 s.",
        discussion: "Impairment options apply to the publisher's output; overrides to the subscriber."
    )

    @Option(help: "How long to run.")
    var duration = DurationArgument(.seconds(20))

    @Option(name: .customLong("playout-delay"), help: "The playout delay.")
    var playoutDelay = DurationArgument(.milliseconds(230))

    @Option(
        name: .customLong("override"), help: "Override the playout delay: DELAY@AT[/FOR], e.g. 2s@5s/10s. Repeatable.",
        transform: { text in try ScheduledOverride(parsing: text) }
    )
    var overrides: [ScheduledOverride] = []

    @Option(help: "The loopback port (video; audio on +2, RTCP on +1 and +3).")
    var port: UInt16 = 47_000

    @Option(name: .customLong("qos-interval"), help: "How often to report QoS.")
    var qosInterval = DurationArgument(.seconds(1))

    @OptionGroup var video: VideoOptions
    @OptionGroup var network: ImpairmentOptions

    @Flag(help: "Write JSON Lines on stdout (also when stdout is not a terminal).")
    var json = false

    func run() throws {
        _ = PlayoutCommand.logCollector
        do {
            let destination = try SocketAddress(host: "127.0.0.1", port: port)
            let publisher = try Publisher(options: .init(
                destination: destination, video: try video.settings(), keyingMaterial: .random(for: .aesCM128HMACSHA1_80),
                impairment: try network.configuration(), duration: duration.duration + .milliseconds(500)
            ))
            let subscriber = try Subscriber(
                sessionDescription: publisher.sessionDescription,
                options: .init(
                    playoutDelay: .init(delay: playoutDelay.duration), duration: duration.duration, qosInterval: qosInterval.duration,
                    overrides: overrides
                )
            )
            let renderer = try Renderer(subscriber: subscriber, sink: .null)
            let session = SubscriptionSession(subscriber: subscriber, renderer: renderer, json: json)
            try publisher.start()
            defer { publisher.stop() }
            let final = try session.run(title: "playout demo")
            publisher.stop()
            let sent = try publisher.waitUntilEnded()
            writeError("publisher: \(sent.table.split(separator: "\n").joined(separator: "; "))\n")
            if case .failed(let reason) = final.state { throw PlayoutError(.invalidSource, reason) }
        } catch let error as ValidationError {
            throw error
        } catch {
            throw PlayoutCommand.failure(error)
        }
    }
}
