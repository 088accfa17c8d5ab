/// One self-contained HTML page that pictures a swarm run, the way k6's and Locust's HTML reports
/// hand their users a run: what `playout swarm --report run.html` writes.
///
/// The page fetches nothing: its style, its charts (SVG computed here) and the few lines of script
/// that sort the viewer table are inline, and a Content-Security-Policy forbids any fetch. It shows,
/// top to bottom:
/// - the run: title, run id, shard, start, decode mode, viewers, the overall verdict (SLOs held or
///   breached), and the run's warnings — with a notice when the tester itself was saturated;
/// - the SLO verdicts and the final aggregate (each measure's spread across viewers at the end);
/// - viewers connected, connecting, failed and ended over time, beside the start-up distribution
///   (a histogram of every viewer's start-up time, p50/p95/p99 marked);
/// - one chart per measure of the samples (`startupTime`, `renderedRatio`, `freezeRatio`,
///   `endToEndLatency`, `jitterBufferDelay`, `framesPerSecond`, `bitrate`, `packetsLost`,
///   `nackCount`, … as they appear): p50, p95, p99 and max across viewers over elapsed time;
/// - the tester's own load over time: CPU cores used against the cores there are, late polls and
///   dropped telemetry, resident memory, render error — the intervals it was saturated shaded;
/// - every viewer in a table sorted by clicking a column's header (numbers as numbers, unknowns
///   last); a statistic a viewer does not have (no frame rendered, not decoded) reads `—`, never 0.
///
/// Every text that comes from the run is escaped. Times read in seconds, ratios in percent, bitrates
/// in kbit/s or Mbit/s. The page grows linearly with the viewers (about 100 bytes a row) and at most
/// linearly with the samples (a line keeps at most two points per pixel column).
///
/// ```swift
/// let report = SwarmReport(title: "playout swarm stream.sdp", run: "r42", shard: 0, shardCount: 1,
///                          started: "2026-11-27T15:00:00Z", decode: "none", samples: samples,
///                          startupTimes: startups, verdicts: verdicts, viewers: outcomes, warnings: [])
/// let page = SwarmHTMLReport.html(report)   // write it to run.html; open it in any browser
/// ```
public enum SwarmHTMLReport {
    /// The report as one HTML5 document (UTF-8 text).
    ///
    /// - Complexity: O(viewers · log viewers + samples · measures + start-up times).
    public static func html(_ report: SwarmReport) -> String {
        let samples = report.samples.sorted { $0.elapsed < $1.elapsed }
        var out = ""
        out.reserveCapacity(40_000 + report.viewers.count * 120 + samples.count * 600)
        out += """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <link rel="icon" href="data:,">
            <title>\(escape(truncated(report.title.isEmpty ? "playout swarm" : report.title, to: 200))) — swarm report</title>
            <style>\(style)</style>
            </head>
            <body>

            """
        out += header(report, samples: samples)
        out += """
            <nav><a href="#summary">Summary</a><a href="#states">Viewers and start-up</a><a href="#percentiles">Percentiles over time</a>\
            <a href="#startup">Start-up</a><a href="#tester">Tester load</a><a href="#viewer-table">Every viewer</a></nav>

            """
        out += "<section id=\"summary\"><h2>Summary</h2><div class=\"pair\"><div><h3>Service-level objectives</h3>\n"
        out += verdictTable(report.verdicts)
        out += "</div><div><h3>Final aggregate across viewers</h3>\n"
        out += finalTable(samples.last)
        out += "</div></div></section>\n"

        let shaded = saturatedIntervals(samples)
        let times = samples.map { seconds($0.elapsed) }.filter(\.isFinite)
        let xLow = Swift.min(0, times.min() ?? 0)
        let xHigh = Swift.max(xLow + 1, times.max() ?? 1)
        var chartID = 0
        func chart(_ title: String, _ yLabel: String, _ series: [Series], ceiling: Double? = nil, integral: Bool = false) -> String {
            chartID += 1
            let chart = TimeChart(
                series: series, yLabel: yLabel, xLow: xLow, xHigh: xHigh, shaded: shaded, ceiling: ceiling, label: title, id: chartID, integral: integral
            )
            return "<figure><figcaption>\(escape(title))</figcaption>\n\(chart.svg())</figure>\n"
        }
        func noSamples() -> String { "<p class=\"empty\">No interval samples were recorded.</p>\n" }

        // Viewers by state over time, beside the start-up distribution.
        out += "<section id=\"states\"><h2>Viewers over time and start-up</h2>\n<div class=\"charts\">"
        if samples.isEmpty {
            out += "<figure>\(noSamples())</figure>"
        } else {
            func line(_ label: String, _ colour: String, _ value: (SwarmSample) -> Int) -> Series {
                Series(label: label, colour: colour, points: samples.map { (seconds($0.elapsed), Double(value($0))) })
            }
            out += chart(
                "Viewers connected, connecting, failed and ended", "viewers",
                [
                    line("connected", "#2e9d3a", \.connected), line("connecting", "#e8830c", \.connecting),
                    line("failed", "#d62728", \.failed), line("ended", "#6f6f6f", \.ended),
                ],
                integral: true
            )
        }
        let startups = report.startupTimes.filter(\.isFinite)
        out += "<figure id=\"startup\"><figcaption>Start-up distribution: time to the first frame rendered, \(startups.count) viewers</figcaption>\n"
        if let spread = Spread(startups) {
            let never = Swift.max(0, report.viewers.count - startups.count)
            out += histogram(startups, label: "Histogram of start-up times")
            out += "<p class=\"note\">p50 \(trimmed(spread.p50, places: 3)) s · p95 \(trimmed(spread.p95, places: 3)) s · p99 \(trimmed(spread.p99, places: 3)) s · max \(trimmed(spread.max, places: 3)) s"
            out += never > 0 ? " · \(never) of \(report.viewers.count) viewers rendered no frame.</p>" : "</p>"
        } else {
            out += "<p class=\"empty\">No viewer rendered a frame, so there is no start-up time.</p>\n"
        }
        out += "</figure></div>\n</section>\n"

        // One chart per measure: p50/p95/p99/max across viewers.
        out += "<section id=\"percentiles\"><h2>Percentiles across viewers over time</h2>\n"
        let measures = chartedMeasures(samples)
        if measures.isEmpty {
            out += samples.isEmpty ? noSamples() : "<p class=\"empty\">The samples carry no measures.</p>\n"
        } else {
            out += "<p class=\"note\">Each line is one percentile of the viewers’ values in that interval (nearest rank: each point is one viewer’s value).</p>\n<div class=\"charts\">"
            for name in measures {
                let info = measure(name)
                let spreads = samples.map { $0[name] }
                let largest = spreads.compactMap { $0?.max }.filter(\.isFinite).map(Swift.abs).max() ?? 0
                let scale = Scale.of(info.unit, largest: largest)
                let statistics = ["p50", "p95", "p99", "max"]
                let series = statistics.enumerated().map { index, statistic in
                    Series(
                        label: statistic, colour: percentileColours[index], dash: statistic == "max" ? "5 3" : nil, width: statistic == "max" ? 1.5 : 2,
                        points: zip(samples, spreads).map { sample, spread in (seconds(sample.elapsed), spread?.value(of: statistic).map { $0 * scale.factor }) }
                    )
                }
                let yLabel = scale.label(info.axis == name && info.unit == .count ? "count" : info.axis)
                out += chart(info.title == name ? name : "\(info.title) — \(name)", yLabel, series, ceiling: info.unit == .ratio ? 100 : nil, integral: info.unit == .count)
            }
            out += "</div>\n"
        }
        out += "</section>\n"

        // The tester's own load.
        out += "<section id=\"tester\"><h2>The tester’s own load</h2>\n"
        if samples.isEmpty {
            out += noSamples()
        } else {
            out += saturationNotice(samples, intervals: shaded)
            let at = samples.map { seconds($0.elapsed) }
            out += "<div class=\"charts\">"
            out += chart(
                "CPU used by the tester", "CPU (cores)",
                [
                    Series(label: "cores used", colour: "#1f6fb4", points: zip(at, samples).map { ($0, $1.tester.cpuCores) }),
                    Series(label: "cores available", colour: "#6f6f6f", dash: "6 4", width: 1.5, points: zip(at, samples).map { ($0, Double($1.tester.cores)) }),
                ]
            )
            out += chart(
                "Late polls and dropped telemetry (since the start)", "count",
                [
                    Series(label: "late polls", colour: "#e8830c", points: zip(at, samples).map { ($0, Double($1.tester.latePolls)) }),
                    Series(label: "dropped telemetry", colour: "#9467bd", points: zip(at, samples).map { ($0, Double($1.tester.droppedTelemetry)) }),
                ],
                integral: true
            )
            out += chart(
                "Resident memory of the tester", "resident memory (MiB)",
                [Series(label: "resident", colour: "#2e9d3a", points: zip(at, samples).map { ($0, Double($1.tester.residentBytes) / 1_048_576) })]
            )
            out += chart(
                "Render error: how late frames were presented (p99 across viewers)", "render error (s)",
                [Series(label: "p99", colour: percentileColours[2], points: zip(at, samples).map { ($0, $1.tester.renderErrorP99) })]
            )
            out += "</div>\n"
        }
        out += "</section>\n"

        // Every viewer.
        out += "<section id=\"viewer-table\"><h2>Every viewer</h2>\n"
        out += "<p class=\"note\">\(report.viewers.count) viewers. Click a column’s header to sort by it (again to reverse); — marks a value the viewer does not have (no frame rendered, or not decoded), and sorts last.\(report.viewers.count > pageSize ? " \(pageSize) rows a page: the buttons under the table move on or show all." : "")</p>\n"
        out += viewerTable(report.viewers)
        out += "</section>\n"
        out += "<footer>Written by <code>playout swarm --report</code>. Self-contained: nothing on this page was fetched.</footer>\n"
        out += "<script>\(script)</script>\n</body>\n</html>\n"
        return out
    }

    /// The header: title, facts of the run, the overall verdict and the warnings.
    static func header(_ report: SwarmReport, samples: [SwarmSample]) -> String {
        var out = "<header>\n<h1>\(escape(report.title.isEmpty ? "playout swarm" : report.title))</h1>\n"
        let breached = report.verdicts.filter { !$0.held }.count
        if report.verdicts.isEmpty {
            out += "<p class=\"verdict none\" id=\"verdict\">No service-level objectives given</p>\n"
        } else if breached == 0 {
            out += "<p class=\"verdict held\" id=\"verdict\">✓ SLOs held (\(report.verdicts.count) of \(report.verdicts.count))</p>\n"
        } else {
            out += "<p class=\"verdict breached\" id=\"verdict\">✗ SLOs breached (\(breached) of \(report.verdicts.count))</p>\n"
        }
        let last = samples.last
        var facts: [(String, String)] = [
            ("run", report.run),
            ("shard", "\(report.shard)/\(report.shardCount)"),
            ("started", report.started),
            ("decode", report.decode),
            ("viewers", "\(last?.viewers ?? report.viewers.count)"),
        ]
        if let last {
            facts.append(("duration", "\(trimmed(seconds(last.elapsed), places: 1)) s"))
            facts.append(("at the end", "\(last.connected) connected · \(last.connecting) connecting · \(last.failed) failed · \(last.ended) ended"))
        }
        facts.append(("intervals", "\(samples.count)"))
        out += "<dl class=\"facts\">"
        for (name, value) in facts {
            out += "<div><dt>\(escape(name))</dt><dd>\(escape(value))</dd></div>"
        }
        out += "</dl>\n"
        let saturated = samples.filter(\.tester.saturated).count
        if !report.warnings.isEmpty || saturated > 0 {
            out += "<div class=\"warnings\" role=\"alert\"><h2>Warnings</h2><ul>\n"
            if saturated > 0 {
                out += "<li><strong>The tester was saturated in \(saturated) of \(samples.count) intervals</strong> (shaded in the charts): there the results may measure the tester, not the server.</li>\n"
            }
            for warning in report.warnings {
                out += "<li>\(escape(warning))</li>\n"
            }
            out += "</ul></div>\n"
        }
        out += "</header>\n"
        return out
    }

    /// A line over the tester's charts: whether and when it was saturated.
    static func saturationNotice(_ samples: [SwarmSample], intervals: [(from: Double, to: Double)]) -> String {
        guard !intervals.isEmpty else {
            return "<p class=\"note\">The tester kept up in every interval (never saturated).</p>\n"
        }
        let listed = intervals.prefix(12).map { "\(trimmed($0.from, places: 1))–\(trimmed($0.to, places: 1)) s" }.joined(separator: ", ")
        let more = intervals.count > 12 ? " and \(intervals.count - 12) more" : ""
        return "<p class=\"alert\">Saturated (shaded): \(escape(listed))\(more).</p>\n"
    }

    /// The page's style: light colours, sized for a laptop (two charts a row from 1 280 px).
    static let style = """
        :root{color-scheme:light}\
        body{margin:0 auto;max-width:1400px;padding:0 20px 40px;font:14px/1.45 system-ui,"DejaVu Sans",Helvetica,Arial,sans-serif;color:#222;background:#f7f8fa}\
        header{padding:16px 0 4px}h1{font-size:22px;margin:0 0 8px;overflow-wrap:anywhere;max-height:4.4em;overflow:auto}\
        h2{font-size:18px;margin:26px 0 10px;border-bottom:1px solid #dcdfe4;padding-bottom:4px}h3{font-size:15px;margin:6px 0}\
        .verdict{display:inline-block;font-weight:bold;font-size:16px;padding:5px 12px;border-radius:4px;margin:0 0 8px}\
        .verdict.held{background:#dcf3df;color:#17652a;border:1px solid #8fcf99}\
        .verdict.breached{background:#fbe0e0;color:#9b1111;border:1px solid #e79a9a}\
        .verdict.none{background:#eceef2;color:#444;border:1px solid #cfd3da}\
        .facts{display:flex;flex-wrap:wrap;gap:6px 22px;margin:6px 0}.facts div{display:flex;gap:6px;max-width:100%}\
        dt{color:#666}dd{margin:0;font-weight:600;overflow-wrap:anywhere;max-height:4.4em;overflow:auto}\
        .warnings{background:#fff4d6;border:1px solid #e9c46a;border-left:6px solid #e0a100;padding:6px 14px;margin:10px 0;border-radius:4px}\
        .warnings h2{border:0;margin:4px 0;font-size:16px}.warnings ul{margin:4px 0 6px;padding-left:20px}.warnings li{overflow-wrap:anywhere;max-height:5.8em;overflow:auto}\
        nav{position:sticky;top:0;background:#f7f8fa;padding:6px 0;border-bottom:1px solid #dcdfe4;z-index:2}\
        nav a{margin-right:16px;color:#1f5fa8;text-decoration:none}nav a:hover{text-decoration:underline}\
        .pair{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:20px}\
        .charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:16px;margin-bottom:16px}\
        figure{margin:0;background:#fff;border:1px solid #dcdfe4;border-radius:4px;padding:8px 10px}\
        figcaption{font-weight:600;margin-bottom:2px;overflow-wrap:anywhere;max-height:4.4em;overflow:auto}\
        svg.chart{width:100%;height:auto;display:block;font-size:12px;fill:#333}svg .axis{fill:#444}\
        table{border-collapse:collapse;background:#fff;font-variant-numeric:tabular-nums}\
        th,td{border:1px solid #e1e4e8;padding:3px 8px;text-align:left}th{background:#eef1f5;font-weight:600}\
        .num{text-align:right}td.num{white-space:nowrap}#viewers td{text-align:right}#viewers td:nth-child(3),#viewers td:nth-child(4){text-align:left}\
        #viewers td{white-space:nowrap}#viewers td:nth-child(3){max-width:200px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}\
        #slo td,#final td{overflow-wrap:anywhere}#slo code{display:block;max-height:4.4em;overflow:auto}\
        tr.breached td{background:#fbe0e0;color:#8a1010}tr.held td.ok{color:#17652a;font-weight:bold}td.bad{font-weight:bold}td.ok,td.bad{white-space:nowrap}\
        tr.f td{background:#fdeeee}\
        .scroll{max-height:78vh;overflow:auto;border:1px solid #dcdfe4;background:#fff}\
        .scroll thead th{position:sticky;top:0;z-index:1}\
        #pager{margin:6px 0;display:flex;gap:6px;align-items:center}#pager .range{min-width:190px;text-align:center;color:#444}\
        table.sortable th{cursor:pointer;user-select:none;vertical-align:bottom;max-width:96px}table.sortable th:hover{background:#e2e7ee}\
        th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}\
        .note{color:#555;margin:4px 0}.alert{color:#8a4b00;font-weight:600;margin:4px 0}.empty{color:#666;font-style:italic}\
        code{font-family:"DejaVu Sans Mono",monospace;font-size:13px;overflow-wrap:anywhere}\
        footer{margin-top:30px;color:#777;font-size:12px}
        """

    /// Sorts the viewer table by a clicked (or Enter-pressed) header: numbers as numbers, text as
    /// text, `—` last in both directions; a second click reverses. Stable, so equal values keep
    /// the order of the sort before. With more than ``pageSize`` viewers it shows one page of rows
    /// at a time (the others `hidden`, so the browser lays out only a page: a 5 000-row table
    /// re-laid out whole took seconds), with a pager to move or show all; a sort starts at page one.
    static let script = """
        (function () {
          var table = document.getElementById("viewers");
          if (!table || !table.tHead) return;
          var body = table.tBodies[0], heads = table.tHead.rows[0].cells;
          var size = \(pageSize), page = 0, all = false, pager = document.getElementById("pager");
          function show() {
            var rows = body.rows, n = rows.length, pages = Math.max(1, Math.ceil(n / size));
            page = Math.max(0, Math.min(page, pages - 1));
            var from = all ? 0 : page * size, to = all ? n : Math.min(n, from + size);
            for (var i = 0; i < n; i++) {
              var hide = i < from || i >= to;
              if (rows[i].hidden !== hide) rows[i].hidden = hide;
            }
            if (!pager) return;
            pager.querySelector(".range").textContent = all ? "all " + n + " rows" : "rows " + (from + 1) + "\\u2013" + to + " of " + n;
            Array.prototype.forEach.call(pager.querySelectorAll("button"), function (button) {
              var go = button.getAttribute("data-go");
              button.disabled = go === "all" ? all : (!all && ((go === "first" || go === "previous") ? page === 0 : page === pages - 1));
            });
          }
          function key(cell, numeric) {
            var text = cell ? cell.textContent : "";
            if (text === "\\u2014" || text === "") return null;
            if (!numeric) return text;
            var value = parseFloat(text);
            return isNaN(value) ? null : value;
          }
          function sort(column) {
            var head = heads[column], numeric = head.getAttribute("data-type") === "num";
            var direction = head.getAttribute("aria-sort") === "ascending" ? -1 : 1;
            var rows = Array.prototype.map.call(body.rows, function (row, index) {
              return { row: row, key: key(row.cells[column], numeric), index: index };
            });
            rows.sort(function (a, b) {
              if (a.key === null || b.key === null) return a.key === b.key ? a.index - b.index : (a.key === null ? 1 : -1);
              var c = numeric ? a.key - b.key : (a.key < b.key ? -1 : (a.key > b.key ? 1 : 0));
              return c !== 0 ? direction * c : a.index - b.index;
            });
            for (var j = 0; j < heads.length; j++) heads[j].removeAttribute("aria-sort");
            head.setAttribute("aria-sort", direction === 1 ? "ascending" : "descending");
            // Reorder off the document, then put it back once: one layout, not one per row.
            var next = body.nextSibling;
            table.removeChild(body);
            rows.forEach(function (entry) { body.appendChild(entry.row); });
            page = 0;
            show();
            table.insertBefore(body, next);
          }
          Array.prototype.forEach.call(heads, function (head, column) {
            head.tabIndex = 0;
            head.addEventListener("click", function () { sort(column); });
            head.addEventListener("keydown", function (event) {
              if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sort(column); }
            });
          });
          if (pager) {
            pager.hidden = false;
            pager.addEventListener("click", function (event) {
              var go = event.target.getAttribute && event.target.getAttribute("data-go");
              if (!go) return;
              if (go === "all") all = true; else all = false;
              if (go === "first") page = 0;
              if (go === "previous") page -= 1;
              if (go === "next") page += 1;
              if (go === "last") page = Infinity;
              show();
            });
          }
          show();
        })();
        """
}
