import Playout
import PlayoutCore

extension PlayoutDelayBenchmark {
    /// One self-contained SVG (no script, no external font or style), 1200 × 720: the delay in
    /// effect and the end-to-end latency of the analysed track over time since each run's start,
    /// one line per run; pauses shaded, skips marked, each transition labelled with the rule's
    /// expectation against the median measured; axes in seconds and milliseconds; a legend.
    public static func plot(_ results: [RunResult], title: String = "playout bench playout-delay") -> String {
        var svg = SVG(results: results, title: title)
        return svg.render()
    }
}

/// Draws ``PlayoutDelayBenchmark/plot(_:title:)``.
private struct SVG {
    let results: [PlayoutDelayBenchmark.RunResult]
    let title: String
    let width = 1_200.0
    let height = 720.0
    let left = 90.0
    let right = 30.0
    let top = 175.0
    let bottom = 90.0

    /// What a reader may wonder about: why latency moves a little after the delay does.
    static let footnote = [
        "The delay is drawn from the instant each change was asked; latency where frames rendered. Frames already decoded",
        "ahead (up to 150 ms) keep their render time, so a pause or a skip starts up to that much after the change.",
    ]
    static let delayColour = "#1f5fbf"
    static let latencyColour = "#e07b00"
    static let pauseColour = "#9a9a9a"
    static let skipColour = "#d62728"

    init(results: [PlayoutDelayBenchmark.RunResult], title: String) {
        self.results = results
        self.title = title
    }

    var plotWidth: Double { width - left - right }
    var plotHeight: Double { height - top - bottom }

    /// Per run: the analysed track's rendered frames as (seconds since start, delay ms, latency ms).
    func points(_ result: PlayoutDelayBenchmark.RunResult) -> [(t: Double, delay: Double, latency: Double?)] {
        let track = result.analysis.track
        let start = result.log.start
        return result.log.frames.filter { $0.track == track && !$0.skipped }.sorted { $0.shown < $1.shown }.map {
            (start.duration(to: $0.shown).seconds, $0.delay.seconds * 1_000, $0.endToEndLatency.map { $0.seconds * 1_000 })
        }
    }

    mutating func render() -> String {
        let series = results.map(points)
        let lastPoint: Double = series.flatMap { $0.map(\.t) }.max() ?? 1
        let lastTransition: Double = results.flatMap { $0.analysis.transitions.map(\.at.seconds) }.max() ?? 0
        let end = max(1, lastPoint, lastTransition)
        let asked: [Double] = results.flatMap { $0.log.changes.map { $0.delay.delay.seconds * 1_000 } }
        let plotted: [Double] = series.flatMap { $0.flatMap { [$0.delay, $0.latency ?? 0] } }
        let highest = max(100, plotted.max() ?? 100, asked.max() ?? 0)
        let xStep = Self.niceStep(end / 12)
        let xMax = (end / xStep).rounded(.up) * xStep
        let yStep = Self.niceStep(highest / 8)
        let yMax = (highest * 1.05 / yStep).rounded(.up) * yStep
        func x(_ t: Double) -> Double { left + t / xMax * plotWidth }
        func y(_ ms: Double) -> Double { top + plotHeight - ms / yMax * plotHeight }

        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(f(width))" height="\(f(height))" viewBox="0 0 \(f(width)) \(f(height))" \
            font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="14">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(f(left))" y="28" font-size="20" font-weight="bold">\(escape(title))</text>
            <text x="\(f(left))" y="50" fill="#444">\(escape(subtitle()))</text>

            """
        // Grid and axes.
        var tick = 0.0
        while tick <= yMax + 1e-9 {
            out += "<line x1=\"\(f(left))\" y1=\"\(f(y(tick)))\" x2=\"\(f(left + plotWidth))\" y2=\"\(f(y(tick)))\" stroke=\"#e4e4e4\"/>\n"
            out += "<text x=\"\(f(left - 8))\" y=\"\(f(y(tick) + 5))\" text-anchor=\"end\">\(label(tick))</text>\n"
            tick += yStep
        }
        tick = 0
        while tick <= xMax + 1e-9 {
            out += "<line x1=\"\(f(x(tick)))\" y1=\"\(f(top))\" x2=\"\(f(x(tick)))\" y2=\"\(f(top + plotHeight))\" stroke=\"#f0f0f0\"/>\n"
            out += "<text x=\"\(f(x(tick)))\" y=\"\(f(top + plotHeight + 22))\" text-anchor=\"middle\">\(label(tick))</text>\n"
            tick += xStep
        }
        out += "<rect x=\"\(f(left))\" y=\"\(f(top))\" width=\"\(f(plotWidth))\" height=\"\(f(plotHeight))\" fill=\"none\" stroke=\"#333\"/>\n"
        out += "<text x=\"\(f(left + plotWidth / 2))\" y=\"\(f(top + plotHeight + 44))\" text-anchor=\"middle\">time since the start of each run (s)</text>\n"
        for (line, text) in Self.footnote.enumerated() {
            out += "<text x=\"\(f(left))\" y=\"\(f(height - 24 + Double(line) * 16))\" font-size=\"12\" fill=\"#555\">\(escape(text))</text>\n"
        }
        out += "<text transform=\"translate(24 \(f(top + plotHeight / 2))) rotate(-90)\" text-anchor=\"middle\">delay and latency (ms)</text>\n"

        // What is drawn over time stays inside the plot area.
        out += "<defs><clipPath id=\"plot\"><rect x=\"\(f(left))\" y=\"\(f(top))\" width=\"\(f(plotWidth))\" height=\"\(f(plotHeight))\"/></clipPath></defs>\n"
        out += "<g clip-path=\"url(#plot)\">\n"
        // Pauses shaded, skips marked (every run, translucent: where runs agree it is darker).
        let opacity = results.count > 1 ? 0.45 / Double(results.count) + 0.1 : 0.3
        for result in results {
            for gap in result.analysis.gaps where gap.excess > .zero {
                let from = x(gap.from.seconds)
                let to = x(gap.to.seconds)
                out += "<rect x=\"\(f(from))\" y=\"\(f(top))\" width=\"\(f(max(1, to - from)))\" height=\"\(f(plotHeight))\" fill=\"\(Self.pauseColour)\" fill-opacity=\"\(f(opacity))\"/>\n"
            }
            for gap in result.analysis.gaps where gap.excess < .zero {
                let at = x(gap.to.seconds)
                out += "<line x1=\"\(f(at))\" y1=\"\(f(top))\" x2=\"\(f(at))\" y2=\"\(f(top + plotHeight))\" stroke=\"\(Self.skipColour)\" stroke-width=\"2\" stroke-opacity=\"0.6\"/>\n"
                out += "<path d=\"M \(f(at - 7)) \(f(top + plotHeight)) L \(f(at + 7)) \(f(top + plotHeight)) L \(f(at)) \(f(top + plotHeight - 12)) Z\" fill=\"\(Self.skipColour)\"/>\n"
            }
        }
        // One line per run: the delay in effect (a step at each immediate change, a ramp for a
        // gradual one), wide and light underneath; the latency each frame had, thin, on top.
        for (index, result) in results.enumerated() {
            let delay = delaySteps(result, end: series[index].last?.t ?? end).map { "\(f(x($0.t))),\(f(y($0.ms)))" }
            if !delay.isEmpty {
                out += "<polyline fill=\"none\" stroke=\"\(Self.delayColour)\" stroke-width=\"6\" stroke-opacity=\"0.35\" stroke-linejoin=\"round\" points=\"\(delay.joined(separator: " "))\"/>\n"
            }
        }
        // Latency exists only where frames rendered: the line breaks where none did for more
        // than three frame intervals (a pause), rather than drawing a slope nobody saw.
        for (index, points) in series.enumerated() {
            let breakAfter = results[index].analysis.frameInterval.seconds * 3
            var pieces: [[String]] = [[]]
            var previous: Double?
            for point in points {
                guard let latency = point.latency else { continue }
                if let previous, point.t - previous > breakAfter, !(pieces.last?.isEmpty ?? true) { pieces.append([]) }
                pieces[pieces.count - 1].append("\(f(x(point.t))),\(f(y(latency)))")
                previous = point.t
            }
            for piece in pieces where piece.count > 1 {
                out += "<polyline fill=\"none\" stroke=\"\(Self.latencyColour)\" stroke-width=\"1.5\" stroke-opacity=\"0.9\" points=\"\(piece.joined(separator: " "))\"/>\n"
            }
        }
        out += "</g>\n"
        // Transitions: a dashed line where each was asked, and its label above the plot.
        let summaries = PlayoutDelayBenchmark.summarize(results.map(\.analysis))
        // Labels go in the first of two rows where they clear the previous label (7.5 px a
        // character at 13 px); when neither row is clear, only "#n" is written, at the line —
        // the table has the numbers. Anchored so they stay inside the picture.
        var rowEnds = [-Double.infinity, -Double.infinity]
        for summary in summaries {
            let transition = summary.transition
            let at = x(transition.at.seconds)
            out += "<line x1=\"\(f(at))\" y1=\"\(f(top - 6))\" x2=\"\(f(at))\" y2=\"\(f(top + plotHeight))\" stroke=\"#222\" stroke-dasharray=\"4 4\"/>\n"
            var lines = labelLines(summary)
            let labelWidth = Double(max(lines.0.count, lines.1.count)) * 7.5
            let anchor = at + labelWidth / 2 > width - 10 ? "end" : (at - labelWidth / 2 < 10 ? "start" : "middle")
            let textX = anchor == "end" ? at + 4 : (anchor == "start" ? at - 4 : at)
            let extent = anchor == "end" ? (textX - labelWidth, textX) : (anchor == "start" ? (textX, textX + labelWidth) : (at - labelWidth / 2, at + labelWidth / 2))
            var row = rowEnds.firstIndex { $0 + 12 < extent.0 }
            var labelX = textX
            var labelAnchor = anchor
            if row == nil {
                // No room: the number only, in the row that ends first.
                row = rowEnds[0] <= rowEnds[1] ? 0 : 1
                lines = ("#\(transition.index + 1)", "")
                (labelX, labelAnchor) = (at, "middle")
                rowEnds[row!] = max(rowEnds[row!], at + 15)
            } else {
                rowEnds[row!] = extent.1
            }
            let baseline = 104 + Double(row!) * 34
            out += "<line x1=\"\(f(at))\" y1=\"\(f(baseline + (lines.1.isEmpty ? 6 : 22)))\" x2=\"\(f(at))\" y2=\"\(f(top - 6))\" stroke=\"#222\"/>\n"
            out += "<text x=\"\(f(labelX))\" y=\"\(f(baseline))\" text-anchor=\"\(labelAnchor)\" font-size=\"13\">"
            out += "<tspan font-weight=\"bold\">\(escape(lines.0))</tspan>"
            if !lines.1.isEmpty { out += "<tspan x=\"\(f(labelX))\" dy=\"16\">\(escape(lines.1))</tspan>" }
            out += "</text>\n"
        }
        out += legend()
        out += "</svg>\n"
        return out
    }

    /// The delay in effect over a run, in (seconds, milliseconds): the configured delay from the
    /// start, then each change — a step when immediate, a ramp at its rate when gradual.
    func delaySteps(_ result: PlayoutDelayBenchmark.RunResult, end: Double) -> [(t: Double, ms: Double)] {
        guard let first = result.log.changes.first else { return [] }
        var points = [(t: 0.0, ms: first.delay.delay.seconds * 1_000)]
        for transition in result.analysis.transitions {
            let at = transition.at.seconds
            let before = transition.before.seconds * 1_000
            let after = transition.after.seconds * 1_000
            points.append((at, before))
            switch transition.mode {
            case .immediate:
                points.append((at, after))
            case .gradual:
                points.append((at + transition.expected.settle.seconds, after))
            }
        }
        // A ramp cut short by the next change: that change starts where the ramp had got to
        // (its `before`), so the ramp's end is dropped.
        var cut: [(t: Double, ms: Double)] = []
        for point in points {
            while let last = cut.last, last.t > point.t { cut.removeLast() }
            cut.append(point)
        }
        cut.append((max(end, cut.last?.t ?? end), cut.last?.ms ?? 0))
        return cut
    }

    /// "#1 at 3 s: 230 → 1000 ms" and "pause exp 770 / meas 768 ms".
    func labelLines(_ summary: PlayoutDelayBenchmark.TransitionSummary) -> (String, String) {
        let t = summary.transition
        let ms = PlayoutDelayBenchmark.milliseconds
        let head = "#\(t.index + 1) at \(PlayoutDelayBenchmark.seconds(t.at)) s: \(ms(t.before)) → \(ms(t.after)) ms"
        let detail: String
        switch t.mode {
        case .gradual:
            detail = "settle exp \(ms(t.expected.settle)) / meas " + (summary.settle.map { "\(ms($0.median)) ms" } ?? "– (the next change came first)")
        case .immediate where t.expected.skip > .zero:
            let frames = summary.skippedFrames.map { ", \($0.median) frames" } ?? ""
            detail = "skip exp \(ms(t.expected.skip)) / meas \(summary.skippedDuration.map { ms($0.median) } ?? "–") ms\(frames)"
        case .immediate:
            detail = "pause exp \(ms(t.expected.pause)) / meas \(summary.pause.map { ms($0.median) } ?? "–") ms"
        }
        return (head, detail)
    }

    func subtitle() -> String {
        let runs = results.count
        let kind = results.first?.analysis.kind?.rawValue ?? "no"
        let measured = runs > 1 ? "labels: expected / median measured over \(runs) runs" : "labels: expected / measured"
        return "\(kind) track, " + (runs == 1 ? "1 run" : "\(runs) runs (one line each)") + "; \(measured)"
    }

    func legend() -> String {
        let y = 74.0
        var x = left
        var out = ""
        func item(_ symbol: String, _ text: String, width: Double) {
            out += symbol.replacing("X", with: f(x))
            out += "<text x=\"\(f(x + 34))\" y=\"\(f(y + 5))\">\(escape(text))</text>\n"
            x += width
        }
        item("<line x1=\"X\" y1=\"\(f(y))\" x2=\"\(f(x + 28))\" y2=\"\(f(y))\" stroke=\"\(Self.delayColour)\" stroke-width=\"6\" stroke-opacity=\"0.35\"/>", "delay in effect", width: 170)
        item("<line x1=\"X\" y1=\"\(f(y))\" x2=\"\(f(x + 28))\" y2=\"\(f(y))\" stroke=\"\(Self.latencyColour)\" stroke-width=\"2\"/>", "end-to-end latency", width: 200)
        item("<rect x=\"X\" y=\"\(f(y - 8))\" width=\"28\" height=\"16\" fill=\"\(Self.pauseColour)\" fill-opacity=\"0.4\"/>", "pause (render gap)", width: 190)
        item("<path d=\"M \(f(x + 7)) \(f(y + 7)) L \(f(x + 21)) \(f(y + 7)) L \(f(x + 14)) \(f(y - 6)) Z\" fill=\"\(Self.skipColour)\"/>", "skip", width: 90)
        item("<line x1=\"X\" y1=\"\(f(y))\" x2=\"\(f(x + 28))\" y2=\"\(f(y))\" stroke=\"#222\" stroke-dasharray=\"4 4\"/>", "delay change asked", width: 200)
        return out
    }

    /// 1, 2 or 5 × a power of ten, at least `raw`.
    static func niceStep(_ raw: Double) -> Double {
        guard raw > 0, raw.isFinite else { return 1 }
        var power = 1.0
        while power * 10 <= raw { power *= 10 }
        while power > raw { power /= 10 }
        for factor in [1.0, 2, 5, 10] where power * factor >= raw { return power * factor }
        return power * 10
    }

    func f(_ value: Double) -> String {
        PlayoutDelayBenchmark.decimal(value, places: 1)
    }

    func label(_ value: Double) -> String {
        PlayoutDelayBenchmark.decimal(value, places: 2)
    }

    func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(character)
            }
        }
        return out
    }
}
