extension SwarmHTMLReport {
    /// The per-viewer table's columns: header, whether it sorts as numbers, and the cell of one
    /// viewer (nil: unknown, written `—`).
    static let viewerColumns: [(header: String, numeric: Bool, cell: @Sendable (ViewerOutcome) -> String?)] = [
        ("viewer", true, { "\($0.viewer)" }),
        ("shard", true, { "\($0.shard)" }),
        ("state", false, { $0.state }),
        ("decoded", false, { $0.decoded ? "yes" : "no" }),
        ("start-up (s)", true, { $0.startupTime.map { decimal($0, places: 3) } }),
        ("rendered on time (%)", true, { $0.renderedRatio.map { decimal($0 * 100, places: 2) } }),
        ("frames rendered", true, { "\($0.framesRendered)" }),
        ("freezes", true, { "\($0.freezeCount)" }),
        ("frozen (%)", true, { $0.freezeRatio.map { decimal($0 * 100, places: 2) } }),
        ("end-to-end latency (s)", true, { $0.endToEndLatency.map { decimal($0, places: 3) } }),
        ("jitter-buffer delay (s)", true, { $0.jitterBufferDelay.map { decimal($0, places: 3) } }),
        ("bitrate (kbit/s)", true, { decimal($0.bitrate / 1_000, places: 1) }),
        ("packets lost", true, { "\($0.packetsLost)" }),
        ("NACKs", true, { "\($0.nackCount)" }),
        // A viewer that did not decode has no decode statistics: unknown, never 0.
        ("frames decoded", true, { outcome in outcome.decoded ? outcome.framesDecoded.map { "\($0)" } : nil }),
    ]

    /// Rows the viewer table shows at a time (when it has more, a pager moves between pages).
    static let pageSize = 250

    /// Cells longer than this get a `title` with the whole text (the cell itself is cut by CSS).
    static let longCell = 40

    /// The sortable per-viewer table: one row per viewer, in viewer order; end tags left out
    /// (HTML5 allows it), so a row costs about 100 bytes.
    static func viewerTable(_ viewers: [ViewerOutcome]) -> String {
        var out = "<div class=\"scroll\"><table id=\"viewers\" class=\"sortable\">\n<thead><tr>"
        for column in viewerColumns {
            out += "<th scope=\"col\"\(column.numeric ? " data-type=\"num\" class=\"num\"" : "")>\(escape(column.header))</th>"
        }
        out += "</tr></thead>\n<tbody>\n"
        if viewers.isEmpty {
            out += "<tr><td colspan=\"\(viewerColumns.count)\" class=\"empty\">No viewers.</td></tr>\n"
        }
        for viewer in viewers.sorted(by: { ($0.viewer, $0.shard) < ($1.viewer, $1.shard) }) {
            out += viewer.state.hasPrefix("failed") ? "<tr class=f>" : "<tr>"
            for column in viewerColumns {
                guard let text = column.cell(viewer) else {
                    out += "<td>—"
                    continue
                }
                if text.count > longCell {
                    let escaped = escape(text)
                    out += "<td title=\"\(escaped)\">\(escaped)"
                } else {
                    out += "<td>\(escape(text))"
                }
            }
            out += "\n"
        }
        out += "</tbody></table></div>\n"
        if viewers.count > pageSize {
            // Shown by the script, which pages the rows; without it every row shows.
            out += "<div id=\"pager\" hidden><button type=\"button\" data-go=\"first\">« first</button><button type=\"button\" data-go=\"previous\">‹ previous</button>"
            out += "<span class=\"range\"></span><button type=\"button\" data-go=\"next\">next ›</button><button type=\"button\" data-go=\"last\">last »</button>"
            out += "<button type=\"button\" data-go=\"all\">show all \(viewers.count)</button></div>\n"
        }
        return out
    }

    /// The SLO verdicts: objective, measured, bound, held ✓ or breached ✗ (a breached row red).
    static func verdictTable(_ verdicts: [SLOVerdict]) -> String {
        guard !verdicts.isEmpty else { return "<p class=\"empty\">No service-level objectives were given (<code>--slo</code>).</p>\n" }
        var out = "<table id=\"slo\"><thead><tr><th scope=\"col\">objective</th><th scope=\"col\" class=\"num\">measured</th><th scope=\"col\" class=\"num\">bound</th><th scope=\"col\">verdict</th></tr></thead>\n<tbody>\n"
        for verdict in verdicts {
            let unit = objectiveMeasure(verdict.objective).unit
            let scale = Scale.of(unit, largest: Swift.max(Swift.abs(verdict.bound), Swift.abs(verdict.measured ?? 0)))
            let measured = verdict.measured.map(scale.text) ?? "— (no viewer had a value)"
            out += "<tr class=\"\(verdict.held ? "held" : "breached")\"><td><code>\(escape(verdict.objective))</code></td>"
            out += "<td class=\"num\">\(escape(measured))</td><td class=\"num\">\(escape(scale.text(verdict.bound)))</td>"
            out += verdict.held ? "<td class=\"ok\">✓ held</td></tr>\n" : "<td class=\"bad\">✗ breached</td></tr>\n"
        }
        out += "</tbody></table>\n"
        return out
    }

    /// The final aggregate (the last sample): one row per measure, its spread across viewers.
    static func finalTable(_ sample: SwarmSample?) -> String {
        guard let sample, !sample.measures.isEmpty else { return "<p class=\"empty\">No aggregate was recorded.</p>\n" }
        var out = "<table id=\"final\"><thead><tr><th scope=\"col\">measure</th><th scope=\"col\" class=\"num\">viewers</th>"
        for statistic in ["min", "p50", "p95", "p99", "max"] { out += "<th scope=\"col\" class=\"num\">\(statistic)</th>" }
        out += "</tr></thead>\n<tbody>\n"
        for (name, spread) in sample.measures {
            let info = measure(name)
            let scale = Scale.of(info.unit, largest: Swift.max(Swift.abs(spread.max), Swift.abs(spread.min)))
            out += "<tr><td title=\"\(escape(name))\">\(escape(scale.label(truncated(info.title, to: 60))))</td><td class=\"num\">\(spread.count)</td>"
            for value in [spread.min, spread.p50, spread.p95, spread.p99, spread.max] {
                out += "<td class=\"num\">\(escape(scale.number(value)))</td>"
            }
            out += "</tr>\n"
        }
        out += "</tbody></table>\n"
        return out
    }
}
