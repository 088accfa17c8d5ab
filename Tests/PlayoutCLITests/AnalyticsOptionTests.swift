import ArgumentParser
import Foundation
import Playout
import PlayoutAnalytics
@testable import PlayoutCLI
import Testing

@Suite("--analytics and --analytics-report on subscribe and demo")
struct AnalyticsOptionTests {
    static func message(_ arguments: [String]) -> String? {
        do {
            _ = try PlayoutCommand.parseAsRoot(arguments)
            return nil
        } catch {
            return PlayoutCommand.userMessage(for: error)
        }
    }

    static let directory: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("playout-analytics-options-\(getpid())").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    @Test("every adapter parses, on subscribe and demo, with or without a report (XML, or JSON by its extension)", arguments: SubscriberAnalytics.Adapter.allCases)
    func adapters(adapter: SubscriberAnalytics.Adapter) throws {
        let subscribe = try SubscribeCommand.parse(["x.sdp", "--analytics", adapter.rawValue])
        #expect(subscribe.subscription.analytics.adapter?.adapter == adapter && subscribe.subscription.analytics.report == nil)
        let report = Self.directory + "/report.xml"
        let demo = try DemoCommand.parse(["--analytics", adapter.rawValue.uppercased(), "--analytics-report", report])
        #expect(demo.subscription.analytics.adapter?.adapter == adapter)
        #expect(demo.subscription.analytics.report?.path == report && demo.subscription.analytics.report?.isJSON == false)
        let json = try DemoCommand.parse(["--analytics", adapter.rawValue, "--analytics-report", Self.directory + "/report.JSON"])
        #expect(json.subscription.analytics.report?.isJSON == true)
    }

    @Test("without --analytics there is no adapter")
    func none() throws {
        #expect(try SubscribeCommand.parse(["x.sdp"]).subscription.analytics.adapter == nil)
        #expect(try DemoCommand.parse([]).subscription.analytics.adapter == nil)
    }

    @Test("hostile values: one line naming the option, the value and what to type — before anything runs", arguments: [
        (["--analytics", "comscore"], ["--analytics comscore", "mux, adobe, nielsen, openavt", "--analytics mux"]),
        (["--analytics", ""], ["--analytics", "mux, adobe, nielsen, openavt"]),
        (["--analytics", "mux\u{1B}[31m"], ["--analytics", "mux, adobe, nielsen, openavt"]),
        (["--analytics-report", "r.xml"], ["--analytics-report needs --analytics", "--analytics mux --analytics-report report.xml"]),
        (["--analytics", "mux", "--analytics-report", ""], ["--analytics-report", "the path is empty", "report.xml"]),
        (["--analytics", "mux", "--analytics-report", "out/"], ["names a directory", "out/report.xml"]),
        (["--analytics", "mux", "--analytics-report", "a\u{7}b.xml"], ["control character"]),
        (["--analytics", "mux", "--analytics-report", "/nonexistent-playout-dir/report.xml"], ["--analytics-report /nonexistent-playout-dir/report.xml", "the directory /nonexistent-playout-dir does not exist"]),
        (["--analytics", "mux", "--analytics-report", "/etc/hostname/report.xml"], ["/etc/hostname is not a directory"]),
        (["--analytics", "mux", "--analytics-report", "/tmp"], ["--analytics-report /tmp: is a directory", "/tmp/report.xml"]),
    ])
    func hostile(arguments: [String], words: [String]) throws {
        for command in [["subscribe", "x.sdp"], ["demo"]] {
            let message = try #require(Self.message(command + arguments), "\(command + arguments) parsed")
            #expect(!message.contains("\n"))
            for word in words { #expect(message.contains(word), "\(message)") }
        }
    }

    @Test("a report path is checked without creating anything: an existing file is fine, a missing one is not created by parsing")
    func noSideEffects() throws {
        let path = Self.directory + "/untouched-\(UUID().uuidString).xml"
        _ = try DemoCommand.parse(["--analytics", "mux", "--analytics-report", path])
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(AnalyticsOptions.unwritable(path) == nil)
        #expect(FileManager.default.createFile(atPath: path, contents: Data("old".utf8)))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(AnalyticsOptions.unwritable(path) == nil)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "old")
    }

    @Test("the findings' exit status is 3: neither success, a failure (1), a bad option (64) nor a signal's")
    func exitCode() {
        #expect(AnalyticsOptions.findingsExitCode == 3)
        #expect(![ExitCode.success.rawValue, ExitCode.failure.rawValue, ExitCode.validationFailure.rawValue].contains(AnalyticsOptions.findingsExitCode))
    }
}

@Suite("the adapter's lines in the live view and the summary table")
struct AnalyticsViewTests {
    static let counts: SubscriberAnalytics.Tally.Counts = {
        var counts = SubscriberAnalytics.Tally.Counts()
        counts.records = 5
        counts.events = [("viewinit", 1), ("play", 1), ("playing", 1)]
        counts.heartbeats = 2
        return counts
    }()

    @Test("live: the records by name, the KPIs (– where undefined), the findings so far")
    func live() {
        var kpis = TelemetryKPIs()
        kpis.videoStartupTime = .milliseconds(412)
        let lines = AnalyticsView(SubscriberAnalytics.Snapshot(adapter: .mux, counts: Self.counts, kpis: kpis, findings: 2)).lines
        #expect(lines == [
            "analytics       mux: 5 records (viewinit 1, play 1, playing 1; heartbeats 2)",
            "view KPIs       startup 0.41 s, playing –, rebuffers – (–), dropped frames –, failure no",
            "findings        2",
        ])
    }

    @Test("summary: the verdict, the first findings with rule, section, call and detail, and how many more")
    func summary() {
        let findings = (0..<12).map { index in
            ConformanceReport.Finding(rule: "viewInitFirst", guideSection: "Sample event sequence", call: "play", detail: "play \(index) with no view open", elapsed: .zero)
        }
        let report = ConformanceReport(
            adapter: "MuxCore", guide: "Mux", rules: [.init(name: "viewInitFirst", guideSection: "Sample event sequence", findings: 12)], findings: findings)
        let summary = SubscriberAnalytics.Summary(
            snapshot: .init(adapter: .mux, counts: Self.counts, kpis: nil, findings: 12), conformance: report, undelivered: 3)
        let lines = AnalyticsView(summary).lines
        #expect(lines[1] == "view KPIs       –")
        #expect(lines[2] == "conformance     MuxCore: 1 rule checked, 12 findings")
        #expect(lines[3] == "  viewInitFirst (guide: Sample event sequence): play — play 0 with no view open")
        #expect(lines.count == 3 + AnalyticsView.findingsShown + 2)
        #expect(lines.suffix(2) == ["  … and 2 more", "  3 analytics records not written (the output did not keep up)"])
    }
}
