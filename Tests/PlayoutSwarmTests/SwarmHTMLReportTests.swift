@testable import PlayoutSwarm
import Testing

/// A realistic synthetic swarm run, deterministic by seed: viewers ramping in at 20/s, most playing
/// well, a few freezing, a few failing and one never starting; the decode mode `sample:20`; the
/// tester saturated in one stretch of intervals; two SLOs, one of them breached.
enum SyntheticSwarmRun {
    /// A small seeded generator (SplitMix64), so the run is the same every time.
    struct Random {
        var state: UInt64
        mutating func next() -> Double {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            return Double(z >> 11) / Double(1 << 53)
        }
    }

    /// The measures every sample carries, in the order the swarm writes them.
    static let measureNames = [
        "startupTime", "renderedRatio", "freezeRatio", "freezeCount", "endToEndLatency", "jitterBufferDelay", "framesPerSecond", "bitrate",
        "packetsLost", "nackCount", "framesDecoded",
    ]

    /// Charts a page of this run draws: one per measure, viewers by state, four of the tester's
    /// load and the start-up histogram.
    static var charts: Int { measureNames.count + 1 + 4 + 1 }

    static func report(viewers count: Int = 300, samples sampleCount: Int = 60, saturated: Range<Int> = 30..<35, seed: UInt64 = 30) -> SwarmReport {
        var random = Random(state: seed)
        // Each viewer: when it starts (20/s), its start-up, how it fares.
        struct Viewer {
            var start: Double
            var startup: Double?
            var failed: Bool
            var freezer: Bool
            var decoded: Bool
            var latency: Double
        }
        let viewers: [Viewer] = (0..<count).map { index in
            let failed = index % 97 == 13
            let neverStarted = index == count - 1 && count > 3
            let startup = failed || neverStarted ? nil : 0.25 + random.next() * 0.5 + (random.next() < 0.04 ? 1.5 + random.next() * 2 : 0)
            return Viewer(
                start: Double(index) / 20, startup: startup, failed: failed, freezer: index % 37 == 5, decoded: index % 20 == 0,
                latency: 0.28 + random.next() * 0.08
            )
        }
        var samples: [SwarmSample] = []
        var late = 0
        var dropped = 0
        for second in 1...Swift.max(1, sampleCount) {
            let t = Double(second)
            let busy = saturated.contains(second - 1)
            var values: [String: [Double]] = [:]
            var connected = 0
            var connecting = 0
            var failed = 0
            for viewer in viewers where viewer.start < t {
                if viewer.failed {
                    if t - viewer.start > 2 { failed += 1 } else { connecting += 1 }
                    continue
                }
                guard let startup = viewer.startup, t - viewer.start >= startup else {
                    connecting += 1
                    continue
                }
                connected += 1
                let played = t - viewer.start - startup
                let frozen = viewer.freezer ? Swift.min(played, 0.02 * played + (busy ? 0.3 : 0)) : (busy ? 0.05 : 0)
                values["startupTime", default: []].append(startup)
                values["renderedRatio", default: []].append(Swift.max(0, 1 - frozen / Swift.max(played, 1) - random.next() * 0.002))
                values["freezeRatio", default: []].append(frozen / Swift.max(played, 1))
                values["freezeCount", default: []].append(viewer.freezer ? (played / 10).rounded(.down) + 1 : 0)
                values["endToEndLatency", default: []].append(viewer.latency + random.next() * 0.02 + (busy ? 0.06 : 0))
                values["jitterBufferDelay", default: []].append(0.18 + random.next() * 0.05 + (busy ? 0.04 : 0))
                values["framesPerSecond", default: []].append(30 - random.next() * (busy ? 6 : 0.6))
                values["bitrate", default: []].append(2_500_000 + (random.next() - 0.5) * 300_000)
                values["packetsLost", default: []].append((played * random.next() * 0.4).rounded(.down))
                values["nackCount", default: []].append((played * random.next() * 0.3).rounded(.down))
                if viewer.decoded { values["framesDecoded", default: []].append((played * 30).rounded(.down)) }
            }
            late += busy ? 40 + Int(random.next() * 30) : Int(random.next() * 1.5)
            dropped += busy ? 12 : 0
            let measures = measureNames.compactMap { name in Spread(values[name] ?? []).map { (name: name, spread: $0) } }
            let starting = viewers.filter { $0.start >= t }.count
            samples.append(
                SwarmSample(
                    elapsed: .seconds(second), viewers: count, connected: connected, connecting: connecting + starting, failed: failed, ended: 0,
                    measures: measures,
                    tester: TesterLoad(
                        cpuCores: busy ? 1.96 + random.next() * 0.04 : 0.4 + Double(connected) / Double(Swift.max(count, 1)) * 1.1 + random.next() * 0.1, cores: 2,
                        latePolls: late, renderErrorP99: connected == 0 ? nil : (busy ? 0.045 : 0.004 + random.next() * 0.003),
                        droppedTelemetry: dropped, residentBytes: 60_000_000 + connected * 420_000, saturated: busy
                    )
                )
            )
        }
        // At the end every viewer still playing is ended by the run.
        if var last = samples.popLast() {
            last.ended = last.connected
            last.connected = 0
            samples.append(last)
        }
        let end = Double(Swift.max(1, sampleCount))
        let outcomes = viewers.enumerated().map { index, viewer in
            let played = viewer.startup.map { Swift.max(0, end - viewer.start - $0) } ?? 0
            let frozen = viewer.freezer ? 0.02 * played + 0.3 : 0.05 * Double(saturated.count) / Swift.max(end, 1)
            return ViewerOutcome(
                viewer: index, shard: 0, state: viewer.failed ? "failed: ICE: no candidate pair succeeded in 10 s" : (viewer.startup == nil ? "connecting" : "ended"),
                decoded: viewer.decoded, startupTime: viewer.startup, renderedRatio: played > 0 ? 1 - frozen / played : nil,
                framesRendered: Int(played * 30), freezeCount: viewer.freezer ? Int(played / 10) + 1 : 0, freezeRatio: played > 0 ? frozen / played : nil,
                endToEndLatency: played > 0 ? viewer.latency : nil, jitterBufferDelay: played > 0 ? 0.2 : nil, bitrate: played > 0 ? 2_480_000 : 0,
                packetsLost: Int(played * 0.2), nackCount: Int(played * 0.15), framesDecoded: viewer.decoded ? Int(played * 30) : nil
            )
        }
        let final = samples.last
        return SwarmReport(
            title: "playout swarm srtp-fanout.sdp --viewers \(count) --decode sample:20", run: "r30-synthetic", shard: 0, shardCount: 1,
            started: "2026-11-27T15:00:00Z", decode: "sample:20", samples: samples, startupTimes: viewers.compactMap(\.startup),
            verdicts: [
                SLOVerdict(objective: "startupTime.p95<2s", measured: final?["startupTime"]?.p95, bound: 2, held: (final?["startupTime"]?.p95 ?? 9) < 2),
                SLOVerdict(objective: "freezeRatio.p99<1%", measured: final?["freezeRatio"]?.p99, bound: 0.01, held: (final?["freezeRatio"]?.p99 ?? 1) < 0.01),
            ],
            viewers: outcomes,
            warnings: saturated.isEmpty ? [] : ["the tester, not the server, was the bottleneck in \(saturated.count) intervals: CPU at 1.97 of 2 cores, 200 polls late"]
        )
    }

    /// A run with nothing in it: no sample, no viewer, no SLO, no start-up, no warning.
    static var empty: SwarmReport {
        SwarmReport(title: "", run: "", shard: 0, shardCount: 1, started: "", decode: "none", samples: [], startupTimes: [], verdicts: [], viewers: [], warnings: [])
    }
}

@Suite("SwarmHTMLReport: one self-contained HTML page of a swarm run")
struct SwarmHTMLReportTests {
    static let hostile = [
        "</script><script>alert(1)</script>", "<img src=x onerror=alert(2)>", "\"quoted\" 'single' & ampersand &amp;",
        "naïve 日本語 👀 ünïcödé", "ctrl\u{0}\u{7}\u{1B}chars", String(repeating: "<b>long&", count: 1_250),
    ]

    /// The text between `start` and the next `end` after it.
    func slice(_ text: String, from start: String, to end: String) -> Substring? {
        guard let from = text.firstRange(of: start), let to = text[from.upperBound...].firstRange(of: end) else { return nil }
        return text[from.upperBound..<to.lowerBound]
    }

    /// The cells of the viewer table's row for `viewer` (the text of each `<td>`).
    func row(_ html: String, viewer: Int) -> [String]? {
        guard let body = slice(html, from: "<table id=\"viewers\"", to: "</table>") else { return nil }
        for line in body.split(separator: "\n") where line.hasPrefix("<tr") {
            let cells = line.split(separator: "<td", omittingEmptySubsequences: false).dropFirst().map { cell in
                String(cell[(cell.firstIndex(of: ">").map { cell.index(after: $0) } ?? cell.startIndex)...])
            }
            if cells.first == "\(viewer)" { return cells }
        }
        return nil
    }

    func count(_ needle: String, in text: String) -> Int {
        text.ranges(of: needle).count
    }

    @Test("Every section is there: header, summary, viewers by state, a chart per measure, start-up, tester, viewer table")
    func sections() throws {
        let report = SyntheticSwarmRun.report()
        let html = SwarmHTMLReport.html(report)
        #expect(html.hasPrefix("<!DOCTYPE html>\n<html lang=\"en\">"))
        #expect(html.hasSuffix("</html>\n"))
        for id in ["summary", "states", "percentiles", "startup", "tester", "viewer-table", "slo", "final", "viewers", "verdict"] {
            #expect(html.contains("id=\"\(id)\""), "no element with id \(id)")
        }
        for fact in ["r30-synthetic", "0/1", "2026-11-27T15:00:00Z", "sample:20", "<dt>viewers</dt><dd>300</dd>", "<dt>intervals</dt><dd>60</dd>"] {
            #expect(html.contains(fact), "the header does not say \(fact)")
        }
        #expect(count("<svg class=\"chart\"", in: html) == SyntheticSwarmRun.charts)
        for title in SwarmMeasure.known.filter({ SyntheticSwarmRun.measureNames.contains($0.name) }).map(\.title) {
            #expect(html.contains("<figcaption>\(title) — "), "no chart for \(title)")
        }
        // Percentile lines and their legend; the units on the axes.
        #expect(count("<title>p95</title>", in: html) == SyntheticSwarmRun.measureNames.count)
        for axis in ["start-up time (s)", "rendered on time (%)", "jitter-buffer delay (s)", "NACKs sent", "bitrate (Mbit/s)", "frame rate (frames/s)", "end-to-end latency (s)", "elapsed (s)", "CPU (cores)", "resident memory (MiB)"] {
            #expect(html.contains(">\(axis)</text>"), "no axis labelled \(axis)")
        }
        // The tester was saturated for five intervals: said in the header, shaded in each time chart.
        #expect(html.contains("The tester was saturated in 5 of 60 intervals"))
        #expect(count("<rect class=\"sat\"", in: html) == SyntheticSwarmRun.charts - 1)
        #expect(html.contains("Saturated (shaded): 30–35 s."))
        #expect(html.contains("the tester, not the server, was the bottleneck"))
        // The histogram marks p50/p95/p99.
        let startup = try #require(slice(html, from: "<figure id=\"startup\">", to: "</figure>"))
        for percentile in ["p50 ", "p95 ", "p99 "] { #expect(startup.contains(">\(percentile)")) }
        #expect(startup.contains("\(300 - report.startupTimes.count) of 300 viewers rendered no frame"))
    }

    @Test("The verdict: held, breached (with the breached row red), or none given")
    func verdicts() throws {
        let report = SyntheticSwarmRun.report()
        let html = SwarmHTMLReport.html(report)
        #expect(html.contains("✗ SLOs breached (1 of 2)"))
        let table = try #require(slice(html, from: "<table id=\"slo\">", to: "</table>"))
        #expect(count("<tr class=\"held\">", in: String(table)) == 1)
        #expect(count("<tr class=\"breached\">", in: String(table)) == 1)
        #expect(table.contains("<code>freezeRatio.p99&lt;1%</code>"))
        #expect(table.contains("<td class=\"num\">1 %</td>"), "a ratio's bound reads in percent")
        #expect(table.contains("<td class=\"num\">2 s</td>"), "a time's bound reads in seconds")
        #expect(table.contains("✓ held") && table.contains("✗ breached"))

        var held = report
        held.verdicts = [SLOVerdict(objective: "startupTime.p95<2s", measured: 0.7, bound: 2, held: true)]
        #expect(SwarmHTMLReport.html(held).contains("✓ SLOs held (1 of 1)"))
        var unmeasured = report
        unmeasured.verdicts = [SLOVerdict(objective: "endToEndLatency.p99<500ms", measured: nil, bound: 0.5, held: false)]
        #expect(SwarmHTMLReport.html(unmeasured).contains("— (no viewer had a value)"))
        var none = report
        none.verdicts = []
        #expect(SwarmHTMLReport.html(none).contains("No service-level objectives given"))
    }

    @Test("One table row per viewer, sortable headers, failed viewers marked")
    func viewerRows() throws {
        for viewers in [1, 7, 250, 300] {
            let report = SyntheticSwarmRun.report(viewers: viewers, samples: 5)
            let html = SwarmHTMLReport.html(report)
            let table = try #require(slice(html, from: "<table id=\"viewers\"", to: "</table>"))
            let body = try #require(slice(String(table), from: "<tbody>\n", to: "</tbody>"))
            #expect(body.split(separator: "\n").filter { $0.hasPrefix("<tr") }.count == viewers)
            #expect(count("<tr class=f>", in: String(body)) == report.viewers.filter { $0.state.hasPrefix("failed") }.count)
            let head = try #require(slice(html, from: "<table id=\"viewers\" class=\"sortable\">", to: "</thead>"))
            #expect(count("<th ", in: String(head)) == SwarmHTMLReport.viewerColumns.count)
            #expect(count("data-type=\"num\"", in: String(head)) == SwarmHTMLReport.viewerColumns.filter(\.numeric).count)
            #expect(html.contains("<div id=\"pager\" hidden>") == (viewers > SwarmHTMLReport.pageSize), "a pager only for a long table")
        }
        let html = SwarmHTMLReport.html(SyntheticSwarmRun.report())
        #expect(count("<script>", in: html) == 1 && count("</script>", in: html) == 1)
        #expect(html.contains("addEventListener(\"click\""))
    }

    @Test("Unknown statistics read — (never 0): no frame rendered, not decoded")
    func nulls() throws {
        let never = ViewerOutcome(
            viewer: 7, shard: 2, state: "connecting", decoded: false, startupTime: nil, renderedRatio: nil, framesRendered: 0, freezeCount: 0,
            freezeRatio: nil, endToEndLatency: nil, jitterBufferDelay: nil, bitrate: 0, packetsLost: 0, nackCount: 0, framesDecoded: nil
        )
        // Not decoded: frames decoded is unknown even if a number was (wrongly) filled in.
        let undecoded = ViewerOutcome(
            viewer: 8, shard: 2, state: "ended", decoded: false, startupTime: 0.4, renderedRatio: 0.995, framesRendered: 1_790, freezeCount: 1,
            freezeRatio: 0.004, endToEndLatency: 0.31, jitterBufferDelay: 0.2, bitrate: 2_500_000, packetsLost: 3, nackCount: 2, framesDecoded: 0
        )
        let decoded = ViewerOutcome(
            viewer: 9, shard: 2, state: "ended", decoded: true, startupTime: 0.4125, renderedRatio: 1, framesRendered: 1_800, freezeCount: 0,
            freezeRatio: 0, endToEndLatency: 0.3, jitterBufferDelay: 0.19, bitrate: 2_512_345, packetsLost: 0, nackCount: 0, framesDecoded: 1_800
        )
        var report = SyntheticSwarmRun.empty
        report.viewers = [never, undecoded, decoded]
        let html = SwarmHTMLReport.html(report)
        #expect(row(html, viewer: 7) == ["7", "2", "connecting", "no", "—", "—", "0", "0", "—", "—", "—", "0.0", "0", "0", "—"])
        #expect(row(html, viewer: 8) == ["8", "2", "ended", "no", "0.400", "99.50", "1790", "1", "0.40", "0.310", "0.200", "2500.0", "3", "2", "—"])
        #expect(row(html, viewer: 9) == ["9", "2", "ended", "yes", "0.413", "100.00", "1800", "0", "0.00", "0.300", "0.190", "2512.3", "0", "0", "1800"])
    }

    @Test("Every text from the run is escaped", arguments: hostile)
    func escaping(_ text: String) throws {
        let outcome = ViewerOutcome(
            viewer: 0, shard: 0, state: "failed: " + text, decoded: false, startupTime: nil, renderedRatio: nil, framesRendered: 0, freezeCount: 0,
            freezeRatio: nil, endToEndLatency: nil, jitterBufferDelay: nil, bitrate: 0, packetsLost: 0, nackCount: 0, framesDecoded: nil
        )
        var report = SyntheticSwarmRun.report(viewers: 20, samples: 4)
        report.title = text
        report.run = text
        report.started = text
        report.decode = text
        report.warnings = [text]
        report.viewers.append(outcome)
        report.verdicts.append(SLOVerdict(objective: text, measured: 1, bound: 2, held: true))
        for index in report.samples.indices {
            report.samples[index].measures.append((name: text, spread: Spread(count: 1, min: 1, p50: 1, p95: 1, p99: 1, max: 1)))
        }
        let html = SwarmHTMLReport.html(report)
        let escaped = SwarmHTMLReport.escape(text)
        #expect(html.contains(escaped))
        if text.contains(where: { "<>&\"'".contains($0) }) {
            #expect(!html.contains(text), "the raw text reached the page")
        }
        // Only our own markup: one script, no image, no handler, no foreign element.
        #expect(count("<script", in: html) == 1)
        #expect(count("</script", in: html) == 1)
        #expect(!html.contains("<img") && !html.contains("<b>"))
        #expect(!html.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" })
        // The escape itself.
        #expect(!escaped.contains("<") && !escaped.contains(">") && !escaped.contains("\"") && !escaped.contains("'"))
        #expect(!escaped.replacing("&amp;", with: "").replacing("&lt;", with: "").replacing("&gt;", with: "").replacing("&quot;", with: "").replacing("&#39;", with: "").contains("&"))
    }

    @Test("No http:// or https:// reference, no fetch: only the run's own (escaped) text may hold a URL")
    func noNetwork() {
        let html = SwarmHTMLReport.html(SyntheticSwarmRun.report())
        #expect(!html.contains("http://") && !html.contains("https://"))
        #expect(!html.contains("src=") && !html.contains("url(http") && !html.contains("@import") && !html.contains("@font-face"))
        #expect(html.contains("default-src 'none'"), "a Content-Security-Policy forbids any fetch")
        // The only references: in-page anchors, in-SVG clip paths and an empty data: icon.
        let hrefs = html.ranges(of: "href=\"").map { html[$0.upperBound...].prefix { $0 != "\"" } }
        #expect(hrefs.allSatisfy { $0.hasPrefix("#") || $0 == "data:," })

        var report = SyntheticSwarmRun.report(viewers: 10, samples: 3)
        let url = "https://whep.example.com/whep/live?token=\"><script src=https://evil.example/x.js></script>"
        report.title = "playout swarm \(url)"
        report.warnings = ["WHEP endpoint http://127.0.0.1:8889/whep answered 503"]
        let page = SwarmHTMLReport.html(report)
        let rest = page.replacing(SwarmHTMLReport.escape(report.title), with: "").replacing(SwarmHTMLReport.escape(String(report.title.prefix(199)) + "…"), with: "")
            .replacing(SwarmHTMLReport.escape(report.warnings[0]), with: "")
        #expect(!rest.contains("http://") && !rest.contains("https://"))
        #expect(!page.contains("<script src"))
    }

    @Test("Empty inputs render: no samples, no viewers, no SLOs, no start-up, no measures")
    func empty() throws {
        let html = SwarmHTMLReport.html(SyntheticSwarmRun.empty)
        #expect(html.hasSuffix("</html>\n"))
        #expect(html.contains("No interval samples were recorded."))
        #expect(html.contains("No viewers."))
        #expect(html.contains("No service-level objectives were given"))
        #expect(html.contains("No viewer rendered a frame"))
        #expect(html.contains("No aggregate was recorded."))
        #expect(!html.contains("<svg"))
        #expect(!html.contains("class=\"warnings\""))
        #expect(html.contains("<h1>playout swarm</h1>"), "an untitled run still has a heading")

        // Samples without measures, viewers that never started.
        var report = SyntheticSwarmRun.report(viewers: 4, samples: 3, saturated: 0..<0)
        for index in report.samples.indices { report.samples[index].measures = [] }
        report.startupTimes = []
        let page = SwarmHTMLReport.html(report)
        #expect(page.contains("The samples carry no measures."))
        #expect(page.contains("No viewer rendered a frame"))
        #expect(count("<svg class=\"chart\"", in: page) == 1 + 4)
        #expect(page.contains("The tester kept up in every interval"))
        // No viewer had a render error: that chart says so rather than standing empty.
        var silent = report
        for index in silent.samples.indices { silent.samples[index].tester.renderErrorP99 = nil }
        #expect(count("no viewer had a value</text>", in: SwarmHTMLReport.html(silent)) == 1)
    }

    @Test("Odd numbers draw without NaN: one sample, non-finite and huge values, time going backwards, all viewers equal")
    func oddNumbers() throws {
        let load = TesterLoad(cpuCores: .nan, cores: 0, latePolls: Int.max, renderErrorP99: .infinity, droppedTelemetry: -1, residentBytes: Int.max, saturated: true)
        let weird = Spread(count: 3, min: -.infinity, p50: .nan, p95: 1e300, p99: -1e300, max: .infinity)
        let samples = [
            SwarmSample(elapsed: .seconds(5), viewers: 1, connected: 1, connecting: 0, failed: 0, ended: 0, measures: [("bitrate", weird), ("x", weird)], tester: load),
            SwarmSample(elapsed: .seconds(-3), viewers: 1, connected: 1, connecting: 0, failed: 0, ended: 0, measures: [("startupTime", Spread([0.5])!)], tester: load),
            SwarmSample(elapsed: .seconds(5), viewers: 1, connected: 1, connecting: 0, failed: 0, ended: 0, measures: [], tester: load),
        ]
        for samples in [samples, [samples[1]]] {
            var report = SyntheticSwarmRun.empty
            report.samples = samples
            report.startupTimes = [0.5, 0.5, 0.5, .nan, .infinity]
            let html = SwarmHTMLReport.html(report)
            let numbers = html.replacing("isNaN", with: "")
            #expect(!numbers.contains("nan") && !numbers.contains("NaN") && !numbers.contains("inf"), "a non-finite number reached the page")
            #expect(html.contains("p50 0.5 s"))
        }
        var report = SyntheticSwarmRun.empty
        report.startupTimes = [1e-300, 1e300]
        #expect(SwarmHTMLReport.html(report).contains("<svg class=\"chart\""))
    }

    @Test("Size: linear and modest in viewers and samples, bounded for long runs")
    func size() {
        func bytes(_ report: SwarmReport) -> Int { SwarmHTMLReport.html(report).utf8.count }
        let base = SyntheticSwarmRun.report(viewers: 1_000, samples: 60)
        var twice = base
        twice.viewers += base.viewers.map { var outcome = $0; outcome.viewer += 1_000; return outcome }
        let perRow = Double(bytes(twice) - bytes(base)) / 1_000
        #expect(perRow > 60 && perRow < 130, "\(perRow) bytes per viewer row")

        let short = SyntheticSwarmRun.report(viewers: 50, samples: 60)
        let long = SyntheticSwarmRun.report(viewers: 50, samples: 120)
        let perSample = Double(bytes(long) - bytes(short)) / 60
        #expect(perSample > 100 && perSample < 1_000, "\(perSample) bytes per sample")

        // An hour at 1 s: lines keep at most two points per pixel column.
        let hour = SyntheticSwarmRun.report(viewers: 20, samples: 3_600)
        #expect(bytes(hour) < 800_000, "\(bytes(hour)) bytes for 3 600 samples")
        #expect(SwarmHTMLReport.html(hour).contains(">elapsed (min)</text>"), "a long run's time axis reads in minutes")
        let tenThousand = SyntheticSwarmRun.report(viewers: 10_000, samples: 10)
        #expect(bytes(tenThousand) < 10_000 * 130 + 200_000)
    }

    @Test("Formatting: fixed decimals without locale, trimmed labels, nice steps, axes that fit")
    func formatting() {
        #expect(SwarmHTMLReport.decimal(0.4125, places: 3) == "0.413")
        #expect(SwarmHTMLReport.decimal(-0.0001, places: 2) == "0.00")
        #expect(SwarmHTMLReport.decimal(-2.5, places: 1) == "-2.5")
        #expect(SwarmHTMLReport.decimal(.nan, places: 1) == "—")
        #expect(SwarmHTMLReport.decimal(1e300, places: 1) == "1e+300")
        #expect(SwarmHTMLReport.trimmed(2.50, places: 2) == "2.5")
        #expect(SwarmHTMLReport.trimmed(3, places: 2) == "3")
        #expect(SwarmHTMLReport.trimmed(-0.001, places: 1) == "0")
        #expect(SwarmHTMLReport.niceStep(0.37) == 0.5)
        #expect(SwarmHTMLReport.niceStep(12) == 20)
        #expect(SwarmHTMLReport.niceStep(0) == 1)
        #expect(SwarmHTMLReport.niceStep(.infinity) == 1)
        #expect(SwarmHTMLReport.places(forStep: 0.05) == 2)
        let ratio = SwarmHTMLReport.Axis.covering([97.2, 99.9], ceiling: 100)
        #expect(ratio.low == 97 && ratio.high == 100)
        let counts = SwarmHTMLReport.Axis.covering([0, 3, 17])
        #expect(counts.low == 0 && counts.high == 20 && counts.step == 5)
        let freezes = SwarmHTMLReport.Axis.covering([0, 1], integral: true)
        #expect(freezes.step == 1 && freezes.ticks == [0, 1], "a count's axis has whole ticks")
        let flat = SwarmHTMLReport.Axis.covering([2, 2])
        #expect(flat.low < 2 && flat.high > 2)
        #expect(SwarmHTMLReport.Axis.covering([]).high == 1)
        #expect(SwarmHTMLReport.Scale.of(.bitsPerSecond, largest: 2_500_000).text(2_512_345) == "2.51 Mbit/s")
        #expect(SwarmHTMLReport.Scale.of(.bitsPerSecond, largest: 500_000).text(480_000) == "480 kbit/s")
        #expect(SwarmHTMLReport.Scale.of(.ratio, largest: 1).text(0.0123) == "1.23 %")
        #expect(SwarmHTMLReport.objectiveMeasure("startup.p95<2s").unit == .seconds)
        #expect(SwarmHTMLReport.objectiveMeasure("rebufferPercentage.max<1%").unit == .ratio)
        #expect(SwarmHTMLReport.measure("packetsDiscarded").unit == .count)
    }

    @Test("Long lines keep the lowest and highest point of each pixel column, breaks kept")
    func decimation() {
        var points: [(x: Double, y: Double?)] = []
        for index in 0..<10_000 {
            let value: Double? = index == 5_000 ? nil : Double(index % 7)
            points.append((x: Double(index) / 10, y: value))
        }
        let kept = SwarmHTMLReport.decimated(points, columns: 500)
        #expect(kept.count <= 2 * 1_000 + 2)
        #expect(kept.filter { $0.y == nil }.count == 1)
        #expect(kept.compactMap(\.y).max() == 6 && kept.compactMap(\.y).min() == 0)
        #expect(zip(kept, kept.dropFirst()).allSatisfy { $0.x <= $1.x })
        let short: [(x: Double, y: Double?)] = [(0, 1), (1, 2)]
        #expect(SwarmHTMLReport.decimated(short, columns: 500).count == 2)
        #expect(SwarmHTMLReport.pathData([(1, 2), (3, 4), (5, nil), (6, 7)]) == "M1 2 3 4M6 7h0")
        #expect(SwarmHTMLReport.pathData([(1, nil)]).isEmpty)
    }

    @Test("Saturated intervals: each saturated sample covers the time since the one before, touching ones merge")
    func saturated() {
        let load = { (busy: Bool) in TesterLoad(cpuCores: 1, cores: 2, latePolls: 0, renderErrorP99: nil, droppedTelemetry: 0, residentBytes: 0, saturated: busy) }
        let flags = [true, false, true, true, false, true]
        let samples = flags.enumerated().map { index, busy in
            SwarmSample(elapsed: .seconds(index + 1), viewers: 0, connected: 0, connecting: 0, failed: 0, ended: 0, measures: [], tester: load(busy))
        }
        let intervals = SwarmHTMLReport.saturatedIntervals(samples)
        #expect(intervals.map(\.from) == [0, 2, 5])
        #expect(intervals.map(\.to) == [1, 4, 6])
    }
}
