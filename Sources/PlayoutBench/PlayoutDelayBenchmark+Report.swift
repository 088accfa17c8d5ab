import Playout
public import PlayoutCore
import PlayoutTelemetry

/// The benchmark's outputs as text, sans-IO: the terminal table, JSON Lines and the per-frame
/// CSV. (The picture is in `PlayoutDelayBenchmark+Plot.swift`.) The caller writes them.
extension PlayoutDelayBenchmark {
    /// The table `playout bench playout-delay` prints: one row per transition, durations in
    /// milliseconds, each measure the median over the runs with its minimum–maximum when there
    /// are several.
    public static func table(_ results: [RunResult]) -> String {
        let summaries = summarize(results.map(\.analysis))
        let runs = results.count
        let headers = [
            "#", "at s", "delay ms", "mode", "pause exp", "pause", "skip exp", "skip", "frames skipped", "error", "settle exp", "settle",
            "latency before", "latency after",
        ]
        var rows: [[String]] = []
        for summary in summaries {
            let t = summary.transition
            rows.append([
                "\(t.index + 1)", seconds(t.at), "\(milliseconds(t.before)) → \(milliseconds(t.after))", describe(t.mode),
                milliseconds(t.expected.pause), cell(summary.pause, runs), milliseconds(t.expected.skip), cell(summary.skippedDuration, runs),
                cell(summary.skippedFrames, runs), cell(summary.error, runs), milliseconds(t.expected.settle), cell(summary.settle, runs),
                cell(summary.latencyBefore, runs), cell(summary.latencyAfter, runs),
            ])
        }
        var widths = headers.map(\.count)
        for row in rows { for (index, value) in row.enumerated() { widths[index] = max(widths[index], value.count) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, value in
                let padding = String(repeating: " ", count: widths[index] - value.count)
                return index == 3 ? value + padding : padding + value
            }.joined(separator: "  ")
        }
        var lines = [line(headers), line(widths.map { String(repeating: "─", count: $0) })]
        lines += rows.map(line)
        if rows.isEmpty { lines.append("(no transition: give --schedule)") }
        let first = results.first?.analysis
        let track = first.map { "\($0.kind?.rawValue ?? "track \($0.track)"), frame interval \(decimal($0.frameInterval.seconds * 1_000, places: 1)) ms" } ?? "no frames"
        let rendered = results.map { "\($0.analysis.framesRendered) rendered + \($0.analysis.framesSkipped) skipped" }.joined(separator: "; ")
        lines.append("")
        lines.append("durations in ms; \(runs > 1 ? "median (min–max) over \(runs) runs" : "1 run"); \(track); frames: \(rendered)")
        let notRecorded = results.reduce(0) { $0 + $1.analysis.framesNotRecorded }
        if notRecorded > 0 { lines.append("warning: \(notRecorded) frames did not fit the frame log; the numbers are incomplete") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// JSON Lines: one `"transition"` object per transition (expected values, and each measure's
    /// `median`, `min`, `max` over the runs, in seconds) and one `"benchmark"` object (per run:
    /// the analysed track's frames from the log, and the subscriber's own counters for it).
    /// Durations are seconds.
    public static func jsonLines(_ results: [RunResult]) -> [String] {
        var lines: [String] = []
        for summary in summarize(results.map(\.analysis)) {
            let t = summary.transition
            var fields: [(String, String)] = [
                ("type", quoted("transition")), ("index", "\(t.index + 1)"), ("at", number(t.at)), ("before", number(t.before)),
                ("after", number(t.after)), ("source", quoted(t.source.rawValue)), ("transition", quoted(describe(t.mode))),
                ("expected", object([("pause", number(t.expected.pause)), ("skip", number(t.expected.skip)), ("settle", number(t.expected.settle))])),
            ]
            fields.append(("pause", json(summary.pause)))
            fields.append(("skippedDuration", json(summary.skippedDuration)))
            fields.append(("skippedFrames", summary.skippedFrames.map { object([("median", "\($0.median)"), ("min", "\($0.minimum)"), ("max", "\($0.maximum)")]) } ?? "null"))
            fields.append(("error", json(summary.error)))
            fields.append(("settle", json(summary.settle)))
            fields.append(("latencyBefore", json(summary.latencyBefore)))
            fields.append(("latencyAfter", json(summary.latencyAfter)))
            fields.append(("runs", "\(results.count)"))
            lines.append(object(fields))
        }
        let first = results.first?.analysis
        lines.append(object([
            ("type", quoted("benchmark")), ("runs", "\(results.count)"), ("track", quoted(first?.kind?.rawValue ?? "")),
            ("frameInterval", first.map { number($0.frameInterval) } ?? "null"),
            ("transitions", "\(first?.transitions.count ?? 0)"),
            ("framesDue", array(results.map { "\($0.analysis.framesDue)" })),
            ("framesRendered", array(results.map { "\($0.analysis.framesRendered)" })),
            ("framesSkipped", array(results.map { "\($0.analysis.framesSkipped)" })),
            ("framesNotRecorded", array(results.map { "\($0.analysis.framesNotRecorded)" })),
            ("subscriberFramesRendered", array(results.map { "\($0.qos.tracks[$0.analysis.kind ?? .video]?.framesRendered ?? 0)" })),
            ("subscriberFramesSkipped", array(results.map { "\($0.qos.tracks[$0.analysis.kind ?? .video]?.framesSkipped ?? 0)" })),
            ("subscriberFramesLate", array(results.map { "\($0.qos.tracks[$0.analysis.kind ?? .video]?.framesLate ?? 0)" })),
            ("delayPauseCount", array(results.map { "\($0.qos.tracks[$0.analysis.kind ?? .video]?.delayPauseCount ?? 0)" })),
            ("freezeCount", array(results.map { "\($0.qos.tracks[$0.analysis.kind ?? .video]?.freezeCount ?? 0)" })),
        ]))
        return lines
    }

    /// The CSV header: names with their units (`_s` seconds, since the run's start unless said).
    public static let csvHeader =
        "run,track,kind,frame,media_time_s,capture_time_unix_s,arrival_s,due_s,shown_s,skipped,delay_s,delay_source,end_to_end_latency_s"

    /// One CSV row per frame and run, every track, in the order recorded: times since the run's
    /// start in seconds (capture time in seconds since 1970 on the sender's clock), `skipped`
    /// 0 or 1, empty where unknown.
    public static func csv(_ results: [RunResult]) -> String {
        var text = csvHeader + "\n"
        for result in results {
            let start = result.log.start
            for frame in result.log.frames {
                let capture = frame.captureTime.map { decimal(Double($0) / 1e9, places: 6) } ?? ""
                let latency = frame.endToEndLatency.map { number($0) } ?? ""
                text += "\(result.run),\(frame.track),\(frame.kind.rawValue),\(frame.index),\(number(frame.mediaTime)),\(capture),"
                text += "\(number(start.duration(to: frame.arrival))),\(number(start.duration(to: frame.due))),\(number(start.duration(to: frame.shown))),"
                text += "\(frame.skipped ? 1 : 0),\(number(frame.delay)),\(frame.source.rawValue),\(latency)\n"
            }
        }
        return text
    }

    // MARK: Formatting

    /// `immediate` or `gradual:10%`, as typed.
    public static func describe(_ transition: PlayoutDelayTransition) -> String {
        switch transition {
        case .immediate: "immediate"
        case .gradual(let rate): "gradual:\(decimal(rate * 100, places: 3))%"
        }
    }

    static func milliseconds(_ duration: Duration) -> String {
        decimal(duration.seconds * 1_000, places: 0)
    }

    static func seconds(_ duration: Duration) -> String {
        decimal(duration.seconds, places: 2)
    }

    /// Seconds to the microsecond, as a JSON or CSV number.
    static func number(_ duration: Duration) -> String {
        decimal(duration.seconds, places: 6)
    }

    /// `value` with at most `places` decimals, trailing zeros removed (`-0` as `0`).
    static func decimal(_ value: Double, places: Int) -> String {
        guard value.isFinite else { return "0" }
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        let scaled = (value * scale).rounded()
        let negative = scaled < 0
        let magnitude = Int64(Swift.abs(scaled))
        let factor = Int64(scale)
        var text = "\(magnitude / factor)"
        if places > 0 {
            var fraction = String(magnitude % factor)
            fraction = String(repeating: "0", count: places - fraction.count) + fraction
            while fraction.last == "0" { fraction.removeLast() }
            if !fraction.isEmpty { text += "." + fraction }
        }
        return negative && magnitude != 0 ? "-" + text : text
    }

    private static func cell(_ spread: Spread<Duration>?, _ runs: Int) -> String {
        guard let spread else { return "–" }
        let median = milliseconds(spread.median)
        guard runs > 1 else { return median }
        return "\(median) (\(milliseconds(spread.minimum))–\(milliseconds(spread.maximum)))"
    }

    private static func cell(_ spread: Spread<Int>?, _ runs: Int) -> String {
        guard let spread else { return "–" }
        guard runs > 1 else { return "\(spread.median)" }
        return "\(spread.median) (\(spread.minimum)–\(spread.maximum))"
    }

    private static func json(_ spread: Spread<Duration>?) -> String {
        guard let spread else { return "null" }
        return object([("median", number(spread.median)), ("min", number(spread.minimum)), ("max", number(spread.maximum))])
    }

    private static func object(_ fields: [(String, String)]) -> String {
        "{" + fields.map { "\(quoted($0.0)):\($0.1)" }.joined(separator: ",") + "}"
    }

    private static func array(_ values: [String]) -> String {
        "[" + values.joined(separator: ",") + "]"
    }

    /// A JSON string.
    private static func quoted(_ text: String) -> String {
        QoSJSONWriter.string(text)
    }
}
