import Foundation
import PlayoutFuzz
import Testing

/// Replays every seed and every crasher a fuzzing run ever found through its harness, so a fixed
/// crash stays fixed (Tests/Fuzz/README.md).
@Suite("Fuzz corpus replay")
struct FuzzReplayTests {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzz/PlayoutFuzz")

    static func inputs(of harness: String) -> [URL] {
        ["Seeds", "Crashers"].flatMap { folder -> [URL] in
            let directory = fuzzDirectory.appendingPathComponent(folder).appendingPathComponent(harness)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            return names.filter { !$0.hasPrefix(".") }.sorted().map { directory.appendingPathComponent($0) }
        }
    }

    @Test("every harness has seeds, and its seeds and crashers run clean", arguments: fuzzHarnesses.keys.sorted())
    func replay(harness name: String) throws {
        let harness = try #require(fuzzHarnesses[name])
        let inputs = Self.inputs(of: name)
        #expect(!inputs.isEmpty, "Tests/Fuzz/PlayoutFuzz/Seeds/\(name) is empty")
        for input in inputs {
            let data = [UInt8](try Data(contentsOf: input))
            data.withUnsafeBytes { harness($0) }
        }
    }
}
