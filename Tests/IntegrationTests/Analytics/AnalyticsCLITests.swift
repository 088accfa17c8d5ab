import Foundation
import Playout
import PlayoutAnalytics
import PlayoutRTP
import PlayoutSender
import PlayoutTesting
import Testing

/// `--analytics` and `--analytics-report` through the built binary, as a CI job runs them: real
/// publisher, real subscriber, the report read back as a CI's JUnit reader reads it. One run at a
/// time (each encodes and decodes in real time).
@Suite("playout --analytics binary", .serialized)
struct AnalyticsCLITests {
    static func temporary(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("playout-analytics-\(getpid())-\(name)").path
    }

    /// The `"analytics"` lines and the summary line of a run's JSON Lines.
    static func analyticsLines(_ stdout: String) throws -> (lines: [[String: Any]], summary: [String: Any]) {
        let objects = stdout.split(separator: "\n").map(String.init).compactMap(jsonObject)
        let summary = try #require(objects.last.flatMap { $0["type"] as? String == "summary" ? $0["analytics"] as? [String: Any] : nil }, "\(stdout.suffix(500))")
        return (objects.filter { $0["type"] as? String == "analytics" }, summary)
    }

    @Test("a clean demo with each adapter: exit 0, its records as \"analytics\" lines from viewinit to viewend, the summary's analytics object, and a report with one passing test case per rule", arguments: [
        ("mux", "xml"), ("adobe", "json"), ("nielsen", "xml"), ("openavt", "json"),
    ])
    func cleanDemo(adapter: String, format: String) throws {
        let port = try Publisher.freeLoopbackDestination().port
        let report = Self.temporary("clean.\(format)")
        defer { try? FileManager.default.removeItem(atPath: report) }
        let result = try runPlayout([
            "demo", "--duration", "3s", "--size", "320x180", "--bitrate", "300k", "--port", "\(port)", "--json",
            "--analytics", adapter, "--analytics-report", report,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let (lines, summary) = try Self.analyticsLines(result.stdout)
        #expect(lines.allSatisfy { $0["adapter"] as? String == adapter && $0["t"] is Double && $0["session"] is String })
        let events = lines.filter { $0["kind"] as? String == "event" }.compactMap { $0["name"] as? String }
        #expect(events.first == "viewinit" && events.last == "viewend", "\(events)")
        #expect(summary["adapter"] as? String == adapter && summary["passed"] as? Bool == true && summary["findings"] as? Int == 0)
        #expect(summary["records"] as? Int == lines.count && summary["undelivered"] as? Int == 0)
        let text = try String(contentsOfFile: report, encoding: .utf8)
        if format == "xml" {
            let junit = try JUnitReport(xml: text)
            #expect(junit.failures == 0 && junit.tests == junit.testCases.count && junit.tests == summary["rulesChecked"] as? Int)
            #expect(junit.testCases.allSatisfy { $0.failures.isEmpty } && Set(junit.testCases.map(\.classname)).count == 1)
        } else {
            let json = try #require(jsonObject(text))
            #expect(json["type"] as? String == "conformance" && json["passed"] as? Bool == true && json["failures"] as? Int == 0)
            #expect((json["rules"] as? [Any])?.count == summary["rulesChecked"] as? Int)
        }
    }

    @Test("a stream whose title breaks Mux's metadata bound: exit 3 with one line naming the rules and the report; the report's failures name rule and guide section")
    func provokedFinding() throws {
        let destination = try Publisher.freeLoopbackDestination()
        let publisher = try Publisher(options: .init(
            destination: destination, video: .init(codec: .h264, width: 320, height: 180, frameRate: 30, bitrate: 300_000, keyframeInterval: 30),
            sendsAudio: false, duration: .seconds(4)))
        // The same stream, described with a 2,159-byte session name (s=): Mux takes 1,024 at most.
        var description = publisher.sessionDescription
        description.sessionName = String(repeating: "Hostile <&> title ", count: 120).trimmingCharacters(in: .whitespaces)
        let sdp = Self.temporary("hostile.sdp")
        let report = Self.temporary("hostile.xml")
        defer {
            try? FileManager.default.removeItem(atPath: sdp)
            try? FileManager.default.removeItem(atPath: report)
        }
        try description.serialized().write(toFile: sdp, atomically: true, encoding: .utf8)
        try publisher.start()
        defer { publisher.stop() }
        let result = try runPlayout(["subscribe", sdp, "--duration", "2s", "--json", "--analytics", "mux", "--analytics-report", report])
        #expect(result.status == 3, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("playout: the mux adapter raised "), "\(result.stderr)")
        #expect(lines.first?.contains("invalidMetadata") == true && lines.first?.hasSuffix("see \(report)") == true, "\(result.stderr)")
        let (_, summary) = try Self.analyticsLines(result.stdout)
        #expect(summary["passed"] as? Bool == false)
        let junit = try JUnitReport(xml: String(contentsOfFile: report, encoding: .utf8))
        #expect(junit.tests == MuxRule.allCases.count && junit.failures >= 1)
        #expect(junit.properties["findings"] == String(summary["findings"] as? Int ?? -1))
        let failure = try #require(junit.testCases.first { $0.name == "invalidMetadata" }?.failures.first)
        #expect(failure.type == "invalidMetadata" && failure.message == "invalidMetadata broken by data (guide: Emit events (Data Events))")
        #expect(failure.text.hasSuffix("detail: video_title is 2159 bytes; at most 1024 (guide: Emit events (Data Events))"), "\(failure.text)")
    }

    @Test("a report that cannot be written is told in one line before the run: a missing directory (64), /dev/full (1)", arguments: [
        (["--analytics-report", "/nonexistent-playout-dir/report.xml"], ["--analytics-report /nonexistent-playout-dir/report.xml", "does not exist"]),
        (["--analytics-report", "/dev/full"], ["--analytics-report /dev/full: cannot be written"]),
        (["--analytics-report", "report.xml"], ["--analytics-report needs --analytics"]),
    ])
    func unwritableReport(arguments: [String], words: [String]) throws {
        let analytics = arguments.contains("/dev/full") || arguments.contains { $0.hasPrefix("/nonexistent") } ? ["--analytics", "mux"] : []
        let start = ContinuousClock.now
        try CLIBinaryTests.expectOneLineFailure(["demo", "--duration", "20s"] + analytics + arguments, mentioning: words)
        #expect(ContinuousClock.now - start < .seconds(15), "refused before the 20 s run")
    }
}
