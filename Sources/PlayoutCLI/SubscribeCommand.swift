import ArgumentParser
import FoundationEssentials
import Playout

/// A duration option such as `230ms` or `1.5s`.
struct DurationArgument: ExpressibleByArgument, Sendable {
    var duration: Duration

    init?(argument: String) {
        guard let duration = try? Duration(parsing: argument) else { return nil }
        self.duration = duration
    }

    init(_ duration: Duration) {
        self.duration = duration
    }

    static var defaultCompletionKind: CompletionKind { .default }
}

/// `playout subscribe <source>`: receive, hold for the playout delay, decode, render on time and
/// report QoS.
struct SubscribeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscribe",
        abstract: "Subscribe to a stream (an SDP file for RTP/SRTP, or any libavformat input), render it on time and report QoS.",
        discussion: """
            In a terminal, a live view updates in place and a summary table ends the run; with --json, or
            when stdout is not a terminal, one JSON object per line: "qos" samples, "event"s, and a final
            "summary". Ctrl-C stops cleanly with the summary.
            """
    )

    @Argument(help: "An SDP file (e.g. from ffmpeg -sdp_file or playout publish --sdp), a media file (played in real time), or a URL libavformat opens (rtsp://, srt://, udp://, http://, …).")
    var source: String

    @Option(name: .customLong("playout-delay"), help: "The playout delay, e.g. 230ms or 1.5s.")
    var playoutDelay = DurationArgument(.milliseconds(230))

    @Option(
        name: .customLong("override"), help: "Override the playout delay: DELAY@AT[/FOR], e.g. 2s@5s/10s. Repeatable.",
        transform: { text in try ScheduledOverride(parsing: text) }
    )
    var overrides: [ScheduledOverride] = []

    @Option(help: "Where rendered frames go: null, file:PATH.y4m (video), file:PATH.wav (audio), or file:PATH.mkv / .mp4 (the received streams remuxed, no re-encode).")
    var sink = "null"

    @Option(help: "How long to play, e.g. 30s (default: until Ctrl-C).")
    var duration: DurationArgument?

    @Option(name: .customLong("qos-interval"), help: "How often to report QoS, e.g. 1s.")
    var qosInterval = DurationArgument(.seconds(1))

    @Option(name: .customLong("srtp-key"), help: "SRTP master key and salt, base64 (AES_CM_128_HMAC_SHA1_80), instead of the SDP's a=crypto.")
    var srtpKey: String?

    @Flag(help: "Write JSON Lines on stdout (also when stdout is not a terminal).")
    var json = false

    func validate() throws {
        guard qosInterval.duration > .zero else { throw ValidationError("--qos-interval must be more than 0s, e.g. 1s") }
        if let duration, duration.duration <= .zero { throw ValidationError("--duration must be more than 0s, e.g. 30s") }
        do {
            _ = try SinkSpec(parsing: sink)
        } catch {
            throw ValidationError(error.message)
        }
    }

    func run() throws {
        _ = PlayoutCommand.logCollector
        do {
            let key = try srtpKey.map { text in
                do {
                    return try SRTPKeyingMaterial(base64: text, suite: .aesCM128HMACSHA1_80)
                } catch {
                    throw PlayoutError(.invalidOption, "--srtp-key: \(error); give the 30-byte master key and salt in base64, e.g. from head -c 30 /dev/urandom | base64")
                }
            }
            let options = Subscriber.Options(
                playoutDelay: .init(delay: playoutDelay.duration), duration: duration?.duration,
                qosInterval: qosInterval.duration, srtpKey: key, overrides: overrides
            )
            let subscriber = try Subscriber(source: source, options: options)
            let renderer = try Renderer(subscriber: subscriber, sink: try SinkSpec(parsing: sink))
            let session = SubscriptionSession(subscriber: subscriber, renderer: renderer, json: json)
            let final = try session.run(title: "playout subscribe \(source)")
            if case .failed(let reason) = final.state { throw PlayoutError(.invalidSource, reason) }
        } catch {
            throw PlayoutCommand.failure(error)
        }
    }
}

extension PlayoutCommand {
    /// A one-line reason on stderr and a non-zero exit, no stack trace.
    static func failure(_ error: any Error) -> any Error {
        if error is ExitCode { return error }
        writeError("playout: \(error)\n")
        return ExitCode.failure
    }
}
