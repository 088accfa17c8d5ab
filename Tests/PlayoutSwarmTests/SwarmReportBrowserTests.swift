import Foundation
@testable import PlayoutSwarm
import RealTimeTesting
import Testing

/// The report in a real browser: headless Chromium (Debian's `chromium` + `chromium-driver`, driven
/// by `Tests/Browser/check_report.py` through `python3-selenium`) opens the page from a file and
/// checks that it draws every chart with no console error, fetches nothing, and sorts its table.
/// `make setup` installs the three packages.
///
/// Set `PLAYOUT_REPORT_KEEP=/some/folder` to keep each page checked and its full-page screenshot
/// there (`realistic.html`, `realistic.png`, `hostile.html`, …) to look at.
@Suite("SwarmHTMLReport in headless Chromium", .serialized, .realTime(weight: 2, timeLimit: .seconds(240)))
struct SwarmReportBrowserTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Browser/check_report.py")

    /// What the check script said: its exit status and its JSON object.
    struct Check {
        var status: Int32
        var result: [String: Any]
        var errorOutput: String
        var failures: [String] { result["failures"] as? [String] ?? [] }
    }

    /// A fresh folder for one test's page and picture.
    func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("swarm-report-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Writes `html` into `folder` and runs the check script on it.
    func check(_ html: String, in folder: URL, charts: Int, rows: Int, keepAs name: String? = nil) throws -> Check {
        let page = folder.appendingPathComponent("run.html")
        try html.write(to: page, atomically: true, encoding: .utf8)
        let errors = folder.appendingPathComponent("check.stderr")
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [
            Self.script.path, page.path, "--screenshot", folder.appendingPathComponent("run.png").path, "--charts", "\(charts)", "--rows", "\(rows)",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: errors)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let errorOutput = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        let result = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
        if let name, let keep = ProcessInfo.processInfo.environment["PLAYOUT_REPORT_KEEP"], !keep.isEmpty {
            let into = URL(fileURLWithPath: keep)
            try FileManager.default.createDirectory(at: into, withIntermediateDirectories: true)
            for (file, suffix) in [("run.html", "html"), ("run.png", "png")] {
                let target = into.appendingPathComponent("\(name).\(suffix)")
                try? FileManager.default.removeItem(at: target)
                try? FileManager.default.copyItem(at: folder.appendingPathComponent(file), to: target)
            }
        }
        return Check(status: process.terminationStatus, result: result, errorOutput: errorOutput)
    }

    /// A PNG's width and height from its IHDR chunk (nil when it is not a PNG).
    func pngSize(_ data: Data) -> (width: Int, height: Int)? {
        let bytes = [UInt8](data.prefix(24))
        guard bytes.count == 24, bytes.prefix(8).elementsEqual([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), bytes[12..<16].elementsEqual(Array("IHDR".utf8)) else {
            return nil
        }
        func number(_ at: Int) -> Int { bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        return (number(16), number(20))
    }

    @Test("A 300-viewer, 60-interval run: every chart drawn, no console error, nothing fetched, the table sorts; a full-page PNG")
    func realisticRun() throws {
        let report = SyntheticSwarmRun.report(viewers: 300, samples: 60)
        #expect(report.verdicts.filter(\.held).count == 1, "two SLOs, one held and one breached")
        #expect(report.samples.contains { $0.tester.saturated })
        let folder = try folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let check = try check(SwarmHTMLReport.html(report), in: folder, charts: SyntheticSwarmRun.charts, rows: 300, keepAs: "realistic")
        if check.status == 2 {
            Issue.record("the browser did not start — install chromium, chromium-driver and python3-selenium (make setup): \(check.failures) \(check.errorOutput.suffix(2_000))")
            return
        }
        #expect(check.status == 0, "\(check.failures)\n\(check.errorOutput.suffix(2_000))")
        #expect(check.failures.isEmpty)
        let charts = check.result["charts"] as? [[String: Any]] ?? []
        #expect(charts.count == SyntheticSwarmRun.charts)
        #expect(charts.allSatisfy { ($0["drawn"] as? Int ?? 0) > 0 && ($0["width"] as? Double ?? 0) > 300 })
        #expect(check.result["rows"] as? Int == 300)
        #expect((check.result["requests"] as? [Any])?.isEmpty == true)
        #expect((check.result["resourceEntries"] as? [Any])?.isEmpty == true)
        #expect((check.result["console"] as? [Any])?.isEmpty == true)
        // Sorting by start-up: the fastest first, then the slowest; by viewer descending: the last.
        let sorting = check.result["sorting"] as? [[String: Any]] ?? []
        let startups = report.viewers.compactMap(\.startupTime)
        #expect(sorting.count == 5)
        if sorting.count == 5 {
            #expect(sorting[0]["firstAfter"] as? String == SwarmHTMLReport.decimal(startups.min() ?? 0, places: 3))
            #expect(sorting[1]["firstAfter"] as? String == SwarmHTMLReport.decimal(startups.max() ?? 0, places: 3))
            #expect(sorting[4]["firstAfter"] as? String == "299")
        }

        let picture = folder.appendingPathComponent("run.png")
        let png = try Data(contentsOf: picture)
        let size = try #require(pngSize(png), "run.png is not a PNG")
        #expect(size.width >= 1_000 && size.height >= 3_000, "the full page is \(size.width) × \(size.height)")
        #expect(png.count > 100_000, "a page of charts and a table compresses to more than \(png.count) bytes")
    }

    @Test("5 000 viewers: the page stays usable — it loads, draws and sorts its table in well under a second")
    func thousandsOfViewers() throws {
        let report = SyntheticSwarmRun.report(viewers: 5_000, samples: 30, saturated: 10..<12)
        let html = SwarmHTMLReport.html(report)
        #expect(html.utf8.count < 5_000 * 130 + 200_000, "\(html.utf8.count) bytes")
        let folder = try folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let check = try check(html, in: folder, charts: SyntheticSwarmRun.charts, rows: 5_000, keepAs: "thousands")
        try #require(check.status != 2, "the browser did not start — make setup: \(check.failures)")
        #expect(check.status == 0, "\(check.failures)\n\(check.errorOutput.suffix(2_000))")
        let sort = try #require(check.result["sortMilliseconds"] as? Double)
        #expect(sort < 1_000, "sorting 5 000 rows took \(sort) ms")
    }

    @Test("Hostile run text stays text in the browser: no injected script runs, nothing is fetched, a 10 kB title wraps")
    func hostileRun() throws {
        var report = SyntheticSwarmRun.report(viewers: 30, samples: 10)
        let attack = "</script><script>console.error('escaped script ran')</script><img src=\"http://127.0.0.1:9/x.png\" onerror=\"console.error('handler ran')\">"
        report.title = attack + String(repeating: "a-very-long-title-", count: 560)
        report.run = attack
        report.started = "naïve 日本語 👀 \"quoted\" & 'single' \u{0}"
        report.warnings = [attack, String(repeating: "W", count: 10_000)]
        report.viewers[3].state = "failed: " + attack
        report.verdicts.append(SLOVerdict(objective: attack, measured: 1, bound: 2, held: true))
        for index in report.samples.indices {
            report.samples[index].measures.append((name: attack, spread: Spread(count: 1, min: 1, p50: 1, p95: 2, p99: 3, max: 4)))
        }
        let folder = try folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let check = try check(SwarmHTMLReport.html(report), in: folder, charts: SyntheticSwarmRun.charts + 1, rows: 30, keepAs: "hostile")
        try #require(check.status != 2, "the browser did not start — make setup: \(check.failures)")
        #expect(check.status == 0, "\(check.failures)\n\(check.errorOutput.suffix(2_000))")
        #expect(check.failures.isEmpty)
    }

    @Test("The check can fail: a console error, a fetch past the policy, a chart without data, a table that does not sort")
    func checkCanFail() throws {
        let report = SyntheticSwarmRun.report(viewers: 40, samples: 10)
        let html = SwarmHTMLReport.html(report)
        let folder = try folder()
        defer { try? FileManager.default.removeItem(at: folder) }

        let consoleError = html.replacing("</body>", with: "<script>console.error(\"injected failure\")</script></body>")
        let noisy = try check(consoleError, in: folder, charts: SyntheticSwarmRun.charts, rows: 40)
        try #require(noisy.status != 2, "the browser did not start — make setup: \(noisy.failures)")
        #expect(noisy.status == 1)
        #expect(noisy.failures.contains { $0.contains("console SEVERE") && $0.contains("injected failure") })

        // Without the page's Content-Security-Policy, an image from the network is requested.
        let policy = try #require(html.firstRange(of: "<meta http-equiv=\"Content-Security-Policy\""))
        let policyEnd = try #require(html[policy.upperBound...].firstIndex(of: ">"))
        var fetching = html
        fetching.replaceSubrange(policy.lowerBound...policyEnd, with: "")
        fetching = fetching.replacing("</body>", with: "<img alt=\"\" src=\"http://127.0.0.1:9/pixel.png\"></body>")
        let fetched = try check(fetching, in: folder, charts: SyntheticSwarmRun.charts, rows: 40)
        #expect(fetched.status == 1)
        #expect(fetched.failures.contains { $0.contains("requests other than the file itself") && $0.contains("pixel.png") })

        // A chart with its data removed, and a table whose script is gone.
        let broken = html.replacing("class=\"series\" d=\"", with: "class=\"series\" data-d=\"").replacing("<script>", with: "<script>throw 0;")
        let undrawn = try check(broken, in: folder, charts: SyntheticSwarmRun.charts, rows: 40)
        #expect(undrawn.status == 1)
        #expect(undrawn.failures.contains { $0.contains("draws no data") })
        #expect(undrawn.failures.contains { $0.contains("gave aria-sort None") })
        #expect(undrawn.failures.contains { $0.contains("console SEVERE") })
    }
}
