import Dispatch
import Playout

/// Runs one subscription for `subscribe` and `demo`: applies the scheduled overrides, stops on
/// Ctrl-C, and writes either JSON Lines on stdout or the live view and the summary table.
///
/// The JSON Lines are the telemetry engine's: the subscriber reports every QoS sample and contract
/// event to it, and the stream is a backend on stdout with its own bounded queue
/// (``SubscriptionOptions/makeTelemetry()``). Only the summary line is written here, after the
/// engine drained, because it reports on the backends themselves (what could not be delivered,
/// the stream's own drops as `samplesDropped`).
final class SubscriptionSession: @unchecked Sendable {
    let subscriber: Subscriber
    let renderer: Renderer
    let writesJSON: Bool
    /// The telemetry engine the subscriber reports to, shut down (drained) at the end.
    let telemetry: TelemetryInstrument?
    /// The analytics SDK adapter run over the subscription (`--analytics`), finished at the end.
    let analytics: SubscriberAnalytics?
    private let output = LockedValue(Output())

    private struct Output {
        let writer = QoSJSONWriter()
        var viewLines = 0
        var analyticsSummary: SubscriberAnalytics.Summary?
        /// The user's backends' statistics when they lost records (for `--telemetry-strict`).
        var undeliveredTelemetry: TelemetryStatistics?
    }

    /// The name of the `--json` stream's backend (its drops are the summary's `samplesDropped`).
    static let standardOutputBackend = "json stdout"

    /// How long the end of a run waits for telemetry backends to take what is queued.
    static let telemetryDrainTimeout: Duration = .seconds(5)

    /// Whether records a `--telemetry` backend did not receive fail the run (`--telemetry-strict`).
    let strictTelemetry: Bool

    /// Prometheus endpoints that stay up after the summary (`--telemetry-linger`).
    let lingering: LingeringEndpoints?

    init(subscriber: Subscriber, renderer: Renderer, json: Bool, telemetry: TelemetryInstrument? = nil, analytics: SubscriberAnalytics? = nil,
         strictTelemetry: Bool = false, lingering: LingeringEndpoints? = nil) {
        self.subscriber = subscriber
        self.renderer = renderer
        self.telemetry = telemetry
        self.analytics = analytics
        self.strictTelemetry = strictTelemetry
        self.lingering = lingering
        writesJSON = json || !standardOutputIsTerminal
    }

    /// Plays to the end; returns the final sample.
    ///
    func run(title: String) throws -> SubscriberQoS {
        // The live view follows the samples; the JSON stream is a telemetry backend.
        let samples = writesJSON ? nil : subscriber.qos.subscribe { [self] sample in
            guard sample.elapsed > .zero, sample.state != .ended else { return }
            show(sample, title: title)
        }
        // Ctrl-C stops cleanly, with the summary (and ends a Prometheus endpoint's linger).
        let interrupt = onInterrupt { [subscriber, lingering] in
            subscriber.stop()
            lingering?.interrupt()  // and no linger after it
        }
        defer {
            interrupt.cancel()
            samples?.dispose()
        }
        let final: SubscriberQoS
        do {
            try subscriber.start()
            final = subscriber.waitUntilEnded()
        } catch {
            _ = analytics?.finish(timeout: Self.telemetryDrainTimeout)
            telemetry?.shutdown(timeout: Self.telemetryDrainTimeout)
            lingering?.lingerAndStop()
            throw error
        }
        // The adapter has been told the end (its bridge saw the final sample): its records are
        // drained before the summary, which sums them up.
        let analyticsSummary = analytics?.finish(timeout: Self.telemetryDrainTimeout)
        // Telemetry is drained (viewend, KPIs; the JSON stream written) before the summary, which
        // says what was lost.
        let report = telemetry?.shutdown(timeout: Self.telemetryDrainTimeout)
        // The user's backends, apart from the JSON stream on stdout.
        let stream = report?.statistics.backends.first { $0.name == Self.standardOutputBackend }
        var statistics = report?.statistics
        statistics?.backends.removeAll { $0.name == Self.standardOutputBackend }
        if statistics?.backends.isEmpty == true { statistics = nil }
        // What the output could not keep up with (stdout not read) was dropped, not queued
        // without bound: say how much.
        let dropped = subscriber.observerDelivery.samplesDropped + (stream?.dropped ?? 0)
        output.withLock { output in
            output.analyticsSummary = analyticsSummary
            if writesJSON {
                var extra = [("samplesDropped", Double(dropped))]
                if let statistics {
                    extra += [
                        ("telemetryRecords", Double(statistics.records)), ("telemetryUndelivered", Double(statistics.undelivered)),
                        ("telemetryRejectedTransitions", Double(statistics.rejectedTransitions)),
                    ]
                }
                var objects = analyticsSummary.map { [("analytics", $0.json)] } ?? []
                if let startup = subscriber.startup.value { objects.append(("startup", StartupView(startup).json)) }
                writeOut(output.writer.line(for: final, type: "summary", extra: extra, objects: objects) + "\n")
            } else {
                var text = SummaryTable(final, title: title).text
                if let startup = subscriber.startup.value { text += "\n" + StartupView(startup).line }
                if let analyticsSummary { text += "\n" + AnalyticsView(analyticsSummary).lines.joined(separator: "\n") }
                if let statistics { text += "\n" + statistics.description }
                writeOut(text + "\n")
            }
        }
        lingering?.lingerAndStop()
        if let statistics, statistics.undelivered > 0 {
            output.withLock { $0.undeliveredTelemetry = statistics }
            if !strictTelemetry { writeError("playout: \(statistics.description)\n") }
        }
        return final
    }

    /// Under `--telemetry-strict`, fails once ``run(title:)`` returned if a `--telemetry` backend
    /// lost records. Called after the analytics report is written, so that both gates report.
    ///
    /// - Throws: ``TelemetryUndeliveredError``, naming each backend's last error.
    func requireTelemetryDelivered() throws {
        guard strictTelemetry, let statistics = output.withLock({ $0.undeliveredTelemetry }) else { return }
        throw TelemetryUndeliveredError(statistics: statistics)
    }

    /// The adapter's summary, once ``run(title:)`` returned (nil without `--analytics`).
    var analyticsSummary: SubscriberAnalytics.Summary? { output.withLock { $0.analyticsSummary } }

    private func show(_ sample: SubscriberQoS, title: String) {
        let analyticsLines = analytics.map { AnalyticsView($0.snapshot).lines } ?? []
        output.withLock { output in
            let lines = LiveView(sample, title: title).lines + analyticsLines
            var text = output.viewLines > 0 ? "\u{1B}[\(output.viewLines)A" : ""
            for line in lines { text += "\u{1B}[2K" + line + "\n" }
            output.viewLines = lines.count
            writeOut(text)
        }
    }
}

/// The one-screen live view: state, delay, and per track the numbers a viewer cares about.
struct LiveView {
    var lines: [String]

    init(_ sample: SubscriberQoS, title: String) {
        let kinds = [MediaKind.video, .audio].filter { sample.tracks[$0] != nil }
        func row(_ name: String, _ value: (TrackQoS) -> String) -> String {
            padded(name, 16)
                + kinds.map { padded(value(sample.tracks[$0]!), 24) }.joined()
        }
        lines = [
            "\(title)  \(sample.state)  t=\(fixed(sample.elapsed.seconds, 1)) s",
            "playout delay   \(Self.milliseconds(sample.playoutDelay.delay)) (\(sample.playoutDelay.source.rawValue))",
            row("", { $0.kind.rawValue + " " + $0.codec.rawValue }),
            row("bitrate", { Self.bitrate($0.bitrate) }),
            row("fps (rendered)", { fixed($0.framesPerSecond, 1) }),
            row("rendered", { "\($0.framesRendered) of \($0.framesReceived)" }),
            row("dropped", { "\($0.framesDropped) (skipped \($0.framesSkipped))" }),
            row("freezes", { "\($0.freezeCount) (\(fixed($0.totalFreezesDuration.seconds, 2)) s)" }),
            row("delay pauses", { "\($0.delayPauseCount) (\(fixed($0.totalDelayPausesDuration.seconds, 2)) s)" }),
            row("packets lost", { "\($0.packetsLost) of \($0.packetsReceived + $0.packetsLost)" }),
            row("feedback", { "NACK \($0.nackCount), PLI \($0.pliCount), FIR \($0.firCount)" }),
            row("retransmitted", { "\($0.retransmittedPacketsReceived) (late \($0.retransmittedPacketsLate), dup \($0.retransmittedPacketsDuplicated))" }),
            row("round trip", { $0.roundTripTime.map(Self.milliseconds) ?? "–" }),
            row("latency p50", { $0.endToEndLatency.percentile(0.5).map(Self.milliseconds) ?? "–" }),
            row("buffer", { "\(Self.milliseconds($0.bufferedDuration)), \($0.bufferedFrames) frames" }),
        ]
    }

    static func milliseconds(_ duration: Duration) -> String {
        fixed(duration.seconds * 1_000, 1) + " ms"
    }

    static func bitrate(_ bits: Double) -> String {
        bits >= 1_000_000 ? fixed(bits / 1_000_000, 2) + " Mbit/s" : fixed(bits / 1_000, 0) + " kbit/s"
    }
}

/// How the start-up went (``StartupTimeline``), for the summary: each step reached with its time
/// since the subscription started, in milliseconds.
struct StartupView {
    let timeline: StartupTimeline

    init(_ timeline: StartupTimeline) {
        self.timeline = timeline
    }

    /// `start-up: offer_sent 0 ms, answer_received 12 ms, …, first_frame 310 ms`.
    var line: String {
        "start-up: " + timeline.reached.map { "\($0.milestone.rawValue) \(LiveView.milliseconds($0.elapsed))" }.joined(separator: ", ")
    }

    /// `{"offer_sent":0.0004,…}`: seconds since the start, for the JSON summary.
    var json: String {
        "{" + timeline.reached.map { "\"\($0.milestone.rawValue)\":\(QoSJSONWriter.number($0.elapsed.seconds))" }.joined(separator: ",") + "}"
    }
}

/// The table printed at the end of a run in a terminal.
struct SummaryTable {
    var text: String

    init(_ sample: SubscriberQoS, title: String) {
        var lines = LiveView(sample, title: title).lines
        lines[0] = "\(title) summary: \(sample.state), \(fixed(sample.elapsed.seconds, 1)) s"
        for track in sample.tracks.values where track.framesRenderedLate > 0 {
            lines.append("\(track.kind.rawValue): decoding could not keep up: \(track.framesRenderedLate) frames rendered late (> 20 ms)")
        }
        for kind in [MediaKind.video, .audio] {
            guard let track = sample.tracks[kind] else { continue }
            for (name, histogram) in [("latency", track.endToEndLatency), ("render error", track.renderError)] {
                guard let summary = histogram.summary else { continue }
                lines.append(padded("\(kind.rawValue) \(name)", 16)
                    + "p50 \(LiveView.milliseconds(summary.p50))  p99 \(LiveView.milliseconds(summary.p99))  max \(LiveView.milliseconds(summary.max))")
            }
        }
        text = lines.joined(separator: "\n")
    }
}
