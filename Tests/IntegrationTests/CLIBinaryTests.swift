import Foundation
import Testing

/// Runs the built `playout` binary, as a user would.
func runPlayout(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, stdout: String, stderr: String) {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let binary = root.appendingPathComponent(".build/debug/playout")
    guard FileManager.default.isExecutableFile(atPath: binary.path) else {
        throw CLIError("no binary at \(binary.path): run `swift build` (make test does) first")
    }
    let process = Process()
    process.executableURL = binary
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    let stderr = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
}

struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

@Suite("playout binary")
struct CLIBinaryTests {
    @Test("`playout version` prints the linked FFmpeg and libsrtp2 versions and exits 0")
    func version() throws {
        let result = try runPlayout(["version"])
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.first?.hasPrefix("playout ") == true)
        #expect(lines.contains { $0.hasPrefix("libavcodec 59.") || $0.hasPrefix("libavcodec 6") })
        #expect(lines.contains { $0.hasPrefix("libsrtp2 2.") })
    }

    @Test("an invalid PLAYOUT_LOG_LEVEL is reported once on stderr and ignored")
    func invalidLogLevel() throws {
        let result = try runPlayout(["version"], environment: ["PLAYOUT_LOG_LEVEL": "loud"])
        #expect(result.status == 0)
        #expect(result.stderr.components(separatedBy: "ignoring PLAYOUT_LOG_LEVEL=loud").count == 2)
        #expect(!result.stdout.contains("PLAYOUT_LOG_LEVEL"), "diagnostics never go to stdout")
    }

    @Test("an unknown subcommand exits non-zero with a reason on stderr")
    func unknownSubcommand() throws {
        let result = try runPlayout(["frobnicate"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("frobnicate"))
    }
}
