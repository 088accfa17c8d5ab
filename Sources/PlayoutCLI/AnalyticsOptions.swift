import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import Playout
import PlayoutAnalytics

/// `--analytics mux|adobe|nielsen|openavt`: which SDK adapter runs over the subscription.
enum AnalyticsAdapterArgument: String, ArgumentValue, CaseIterable {
    static let valueName = "sdk"
    case mux
    case adobe
    case nielsen
    case openavt

    init(parsing text: String) throws(ValidationError) {
        guard let adapter = Self(rawValue: text.lowercased()) else {
            throw ValidationError("the adapters are \(Self.allCases.map(\.rawValue).joined(separator: ", ")), e.g. --analytics mux")
        }
        self = adapter
    }

    // Both ArgumentValue and RawRepresentable offer one; this type parses as ArgumentValue does.
    init?(argument: String) {
        guard let adapter = try? Self(parsing: argument) else { return nil }
        self = adapter
    }

    var adapter: SubscriberAnalytics.Adapter {
        switch self {
        case .mux: .mux
        case .adobe: .adobe
        case .nielsen: .nielsen
        case .openavt: .openavt
        }
    }
}

/// `--analytics-report PATH`: where the conformance report goes — JUnit XML, or JSON for a path
/// ending in `.json`.
struct AnalyticsReportArgument: ArgumentValue, Equatable {
    static let valueName = "report.xml"
    var path: String

    init(parsing text: String) throws(ValidationError) {
        path = try OutputPathArgument.check(text, example: "report.xml")
    }

    /// Whether the report is JSON (the path ends in `.json`) rather than JUnit XML.
    var isJSON: Bool { path.lowercased().hasSuffix(".json") }

    var defaultValueDescription: String { path }
}

/// The analytics options of `subscribe` and `demo`: run one SDK's adapter over the subscription
/// (``SubscriberAnalytics``) and write its conformance report; a run that broke a rule of the
/// SDK's guide exits ``findingsExitCode``, so a CI job can gate on it.
struct AnalyticsOptions: ParsableArguments {
    /// The exit status of a run whose adapter raised a finding (and that otherwise ended
    /// cleanly): 3.
    static let findingsExitCode: Int32 = 3

    @Option(name: .customLong("analytics"), help: AnalyticsAdapterArgument.help(
        "Run an analytics SDK's adapter over the subscription in conformance mode: mux, adobe, nielsen or openavt. Its records and view KPIs join the live view, the JSON Lines (\"analytics\" lines and the summary's \"analytics\") and the summary table; the run exits 3 when a rule of the SDK's guide was broken."
    ))
    var adapter: AnalyticsAdapterArgument?

    @Option(
        name: .customLong("analytics-report"),
        help: AnalyticsReportArgument.help("With --analytics: write the conformance report at the end, JUnit XML (one test case per rule checked, a failure per finding), or JSON for a path ending in .json.")
    )
    var report: AnalyticsReportArgument?

    func validate() throws {
        guard let report else { return }
        guard adapter != nil else {
            throw ValidationError("--analytics-report needs --analytics: the report is an adapter's, e.g. --analytics mux --analytics-report report.xml")
        }
        if let reason = Self.unwritable(report.path) {
            throw ValidationError("--analytics-report \(report.path): \(reason)")
        }
    }

    /// Why `path` cannot be written (checked before the run, nothing created), or nil.
    static func unwritable(_ path: String) -> String? {
        var status = stat()
        if stat(path, &status) == 0 {
            if status.st_mode & S_IFMT == S_IFDIR { return "is a directory; name a file in it, e.g. \(path)/report.xml" }
            return access(path, W_OK) == 0 ? nil : "cannot be written (\(String(cString: strerror(errno))))"
        }
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        guard stat(directory, &status) == 0 else {
            return "the directory \(directory) does not exist; create it first or name a file in an existing one"
        }
        guard status.st_mode & S_IFMT == S_IFDIR else { return "\(directory) is not a directory; name a file in an existing one" }
        return access(directory, W_OK) == 0 ? nil : "the directory \(directory) cannot be written (\(String(cString: strerror(errno))))"
    }

    /// The adapter over `subscriber` (before it starts), its records also written as
    /// `"analytics"` JSON Lines on stdout when the run writes JSON (behind the engine's bounded
    /// queue, written as soon as built); nil without `--analytics`. The report file is created
    /// first, holding only the start of a report (`<?xml …?>` or nothing a JSON reader accepts):
    /// a path that cannot be written — a full disk, `/dev/full` — fails now, and a run that dies
    /// leaves a report no CI reads as passing.
    func make(subscriber: Subscriber, writesJSON: Bool) throws -> SubscriberAnalytics? {
        guard let adapter else { return nil }
        if let report {
            try write(report, report.isJSON ? "\n" : "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
        }
        let backends: [(backend: any TelemetryBackend, delivery: TelemetryDeliveryConfiguration?)] = writesJSON ? [(
            JSONLinesTelemetryBackend(
                fileDescriptor: STDOUT_FILENO, name: "analytics json stdout",
                format: SubscriberAnalytics.jsonFormat(adapter: adapter.adapter)),
            TelemetryDeliveryConfiguration(linger: .zero)
        )] : []
        do {
            return try SubscriberAnalytics(adapter.adapter, subscriber: subscriber, backends: backends)
        } catch {
            throw PlayoutError(.invalidState, "--analytics \(adapter.rawValue): \(error)")
        }
    }

    /// The end of a run with the adapter's `summary`: writes the report, then — for a run that
    /// otherwise ended cleanly (`failed` false) with a finding — says so in one line on stderr
    /// and exits ``findingsExitCode``.
    func conclude(_ summary: SubscriberAnalytics.Summary?, failed: Bool) throws {
        guard let summary else { return }
        if let report {
            try write(report, report.isJSON ? summary.conformance.json : summary.conformance.junitXML)
        }
        let findings = summary.conformance.findings
        guard !findings.isEmpty, !failed else { return }
        let rules = summary.conformance.rules.filter { $0.findings > 0 }.map(\.name).joined(separator: ", ")
        let shown = report.map { ": see \($0.path)" } ?? ""
        writeError("playout: the \(summary.snapshot.adapter.rawValue) adapter raised \(AnalyticsView.counted(findings.count, "finding")) (\(rules))\(shown)\n")
        throw ExitCode(Self.findingsExitCode)
    }

    private func write(_ report: AnalyticsReportArgument, _ text: String) throws {
        guard writeFile(report.path, text) else {
            throw PlayoutError(.invalidOption, "--analytics-report \(report.path): cannot be written (\(String(cString: strerror(errno))))")
        }
    }
}

/// The adapter's lines in the live view and the summary table.
struct AnalyticsView {
    var lines: [String]

    /// The live view's lines: the records so far and the view's KPIs.
    init(_ snapshot: SubscriberAnalytics.Snapshot) {
        let counts = snapshot.counts
        let events = counts.events.map { "\($0.name) \($0.count)" }.joined(separator: ", ")
        lines = [
            padded("analytics", 16) + "\(snapshot.adapter.rawValue): \(counts.records) records (\(events.isEmpty ? "none yet" : events); heartbeats \(counts.heartbeats))",
            padded("view KPIs", 16) + Self.kpis(snapshot.kpis),
            padded("findings", 16) + String(snapshot.findings),
        ]
    }

    /// The summary table's lines: the final records and KPIs, and the conformance verdict with
    /// the first findings.
    init(_ summary: SubscriberAnalytics.Summary) {
        self.init(summary.snapshot)
        let report = summary.conformance
        lines[2] = padded("conformance", 16)
            + "\(report.adapter): \(Self.counted(report.rules.count, "rule")) checked, \(Self.counted(report.findings.count, "finding"))"
        for finding in report.findings.prefix(Self.findingsShown) {
            lines.append("  \(finding.rule) (guide: \(finding.guideSection)): \(finding.call) — \(String(finding.detail.prefix(200)))")
        }
        if report.findings.count > Self.findingsShown { lines.append("  … and \(report.findings.count - Self.findingsShown) more") }
        if summary.undelivered > 0 { lines.append("  \(summary.undelivered) analytics records not written (the output did not keep up)") }
    }

    /// `1 rule`, `2 rules`.
    static func counted(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }

    /// Findings listed in the summary table (all are in the report): 10.
    static let findingsShown = 10

    static func kpis(_ kpis: TelemetryKPIs?) -> String {
        guard let kpis else { return "–" }
        func seconds(_ value: Duration?) -> String { value.map { fixed($0.seconds, 2) + " s" } ?? "–" }
        func percent(_ value: Double?) -> String { value.map { fixed($0, 1) + " %" } ?? "–" }
        return "startup \(seconds(kpis.videoStartupTime)), playing \(seconds(kpis.playingTime)), rebuffers \(kpis.rebufferCount.map(String.init) ?? "–")"
            + " (\(percent(kpis.rebufferPercentage))), dropped frames \(percent(kpis.droppedFramePercentage)), failure \(kpis.playbackFailure ? "yes" : "no")"
    }
}

extension SubscriberState {
    /// Whether the subscription failed.
    var isFailed: Bool {
        if case .failed = self { return true }
        return false
    }
}
