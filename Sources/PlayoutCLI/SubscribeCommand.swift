import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import Playout

/// `playout subscribe <source>`: receive, hold for the playout delay, decode, render on time and
/// report QoS.
struct SubscribeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscribe",
        abstract: "Subscribe to a stream (an SDP file for RTP/SRTP, or any libavformat input), render it on time and report QoS.",
        discussion: """
            In a terminal, a live view updates in place and a summary table ends the run; with --json, or \
            when stdout is not a terminal, one JSON object per line: "qos" samples, "event"s, and a final \
            "summary". Ctrl-C stops cleanly with the summary. With --analytics, an SDK adapter runs over the \
            subscription; the run exits 3 when it broke a rule of the SDK's guide (--analytics-report writes \
            the findings as JUnit XML or JSON).

            A WHEP endpoint (an http:// or https:// URL whose path says whep, or any with --whep) is \
            subscribed over WebRTC: the offer is posted, ICE and DTLS-SRTP connect, and the start-up \
            steps (offer, answer, ICE, DTLS, first packet, key frame, frame) are reported; the session is \
            deleted at every end.
            """
    )

    @Argument(help: "An SDP file (e.g. from ffmpeg -sdp_file or playout publish --sdp), a media file (played in real time), a URL libavformat opens (rtsp://, srt://, udp://, srtp://, http://, …), or a WHEP endpoint (https://…/whep/…).")
    var source: String

    @OptionGroup var subscription: SubscriptionOptions<SubscribeDefaults>

    @Option(name: .customLong("srtp-key"), help: SRTPKeyArgument.help("SRTP master key and salt, base64 (AES_CM_128_HMAC_SHA1_80, 30 bytes), instead of the SDP's a=crypto; for srtp:// URLs, the key."))
    var srtpKey: SRTPKeyArgument?

    @OptionGroup(title: "WHEP (WebRTC)") var whep: WHEPArguments

    func run() throws {
        do {
            let lingering = LingeringEndpoints(linger: subscription.telemetryLinger.duration)
            let telemetry = try subscription.makeTelemetry(lingering: lingering)
            let subscriber = try Subscriber(source: source, options: whep.apply(to: subscription.subscriberOptions(srtpKey: srtpKey?.keyingMaterial, telemetry: telemetry)))
            let renderer = try Renderer(subscriber: subscriber, sink: subscription.sink.spec)
            let analytics = try subscription.analytics.make(subscriber: subscriber, writesJSON: subscription.writesJSON)
            let session = SubscriptionSession(
                subscriber: subscriber, renderer: renderer, json: subscription.json, telemetry: telemetry,
                analytics: analytics, strictTelemetry: subscription.telemetryStrict, lingering: lingering)
            let final = try session.run(title: "playout subscribe \(source)")
            try subscription.analytics.conclude(session.analyticsSummary, failed: final.state.isFailed)
            try session.requireTelemetryDelivered()
            if case .failed(let reason) = final.state { throw PlayoutError(.invalidSource, reason) }
        } catch {
            throw PlayoutCommand.failure(error)
        }
    }
}

/// How `subscribe` asks a WHEP endpoint: token, STUN server, interface, TLS checks.
struct WHEPArguments: ParsableArguments {
    @Flag(help: "Take the http(s):// source as a WHEP endpoint even when its path does not say whep.")
    var whep = false

    @Option(help: "The WHEP bearer token (Authorization: Bearer); default: $PLAYOUT_WHEP_TOKEN.")
    var token: String?

    @Option(help: "A STUN server, HOST:PORT, to offer a server-reflexive candidate too (TURN is not supported).")
    var stun: String?

    @Option(name: .customLong("ice-interface"), help: "Gather ICE host candidates on this interface only, e.g. eth0 (default: every interface that is up).")
    var iceInterface: String?

    @Flag(help: "Do not check the https certificate of the WHEP endpoint (said loudly in the log).")
    var insecure = false

    /// `options` with these.
    func apply(to options: Subscriber.Options) -> Subscriber.Options {
        var options = options
        options.whep.always = whep
        options.whep.token = token ?? getenv("PLAYOUT_WHEP_TOKEN").map { String(cString: $0) }
        options.whep.stunServer = stun
        options.whep.iceInterface = iceInterface
        options.whep.insecure = insecure
        return options
    }
}
