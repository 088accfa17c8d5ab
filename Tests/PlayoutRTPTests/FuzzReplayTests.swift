import Foundation
import FuzzRTP
import Testing

/// Replays every seed and every crasher a fuzzing run ever found through the fuzz harnesses, so
/// a fixed crash stays fixed (Tests/Fuzz/README.md).
@Suite("Fuzz corpus replay")
struct FuzzReplayTests {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzz")

    static func inputs(of target: String) -> [URL] {
        ["Seeds", "Crashers"].flatMap { folder -> [URL] in
            let directory = fuzzDirectory.appendingPathComponent(target).appendingPathComponent(folder)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            return names.filter { !$0.hasPrefix(".") }.sorted().map { directory.appendingPathComponent($0) }
        }
    }

    @Test("FuzzRTP: seeds and crashers run clean")
    func rtp() throws {
        let inputs = Self.inputs(of: "FuzzRTP")
        #expect(!inputs.isEmpty, "the seed corpus is missing")
        for input in inputs {
            let data = [UInt8](try Data(contentsOf: input))
            let result = data.withUnsafeBufferPointer { buffer in
                fuzzRTP(buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!, buffer.count)
            }
            #expect(result == 0, "\(input.lastPathComponent)")
        }
    }
}
