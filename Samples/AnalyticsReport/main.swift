// The CI gate of the analytics adapters: run `playout demo --analytics mux --analytics-report
// report.xml` as a CI job would, then read the JUnit XML back as the CI's test reporter would —
// one test case per rule of the Mux guide, a failure per finding — and gate on the exit status.
import Foundation
import Playout
import PlayoutSender
import PlayoutTesting

// The `playout` binary built beside this sample (.build/debug/playout).
let playout = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("playout")
let report = FileManager.default.temporaryDirectory.appendingPathComponent("playout-analytics-report-\(getpid()).xml")
defer { try? FileManager.default.removeItem(at: report) }

// 3 s of the demo at 320×180 on free loopback ports; JSON Lines on stdout (the summary's
// "analytics" object is read below), the report written at the end.
let port = try Publisher.freeLoopbackDestination().port
let process = Process()
process.executableURL = playout
process.arguments = [
    "demo", "--duration", "3s", "--size", "320x180", "--bitrate", "300k", "--port", "\(port)", "--json",
    "--analytics", "mux", "--analytics-report", report.path,
]
let output = Pipe()
process.standardOutput = output
try process.run()
let stdout = output.fileHandleForReading.readDataToEndOfFile()
process.waitUntilExit()
print("playout demo --analytics mux --analytics-report report.xml: exit status \(process.terminationStatus)")

// The report, read back as JUnit.
let junit = try JUnitReport(xml: String(contentsOf: report, encoding: .utf8))
print("testsuite \(junit.suiteAttributes["name"] ?? "?"): \(junit.tests) tests, \(junit.failures) failures")
print("guide: \(junit.properties["guide"] ?? "?")")
for testCase in junit.testCases {
    print("  \(testCase.failures.isEmpty ? "passed" : "FAILED") \(testCase.classname).\(testCase.name)")
}

// The JSON Lines' summary says the same.
let summary = String(decoding: stdout, as: UTF8.self).split(separator: "\n").last.flatMap {
    try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
}
let analytics = summary?["analytics"] as? [String: Any]
print("summary: analytics passed \(analytics?["passed"] as? Bool ?? false), \(analytics?["findings"] as? Int ?? -1) findings")
print("gate: \(process.terminationStatus == 0 && junit.failures == 0 ? "pass" : "fail")")
if process.terminationStatus != 0 || junit.failures != 0 { exit(1) }
