public import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A WHEP server from Tests/WebRTCPeers run with Debian's Python: its JSON lines collected.
public final class WHEPPeerProcess: Sendable {
    /// Tests/WebRTCPeers, where the scripts are.
    public static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tests/WebRTCPeers")
    /// The peer's process.
    public let process: Process
    private let output = Output()

    /// What the peer printed: whole lines, and the start of the next.
    private final class Output: Sendable {
        let lines = Mutex<[String]>([])
        let pending = Mutex<[UInt8]>([])
    }

    /// Starts `script` (in ``directory``) with `arguments`.
    public init(script: String, arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [Self.directory.appendingPathComponent(script).path] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        self.process = process
        try process.run()
        // A thread of its own reads the peer's lines until it exits (end of file).
        let reader = Thread { [collected = output, handle = pipe.fileHandleForReading] in
            while true {
                let data = handle.availableData
                if data.isEmpty { return }
                let complete: [String] = collected.pending.withLock { buffer in
                    buffer.append(contentsOf: data)
                    var found: [String] = []
                    while let end = buffer.firstIndex(of: 0x0A) {
                        found.append(String(decoding: buffer[..<end], as: UTF8.self))
                        buffer.removeSubrange(...end)
                    }
                    return found
                }
                if !complete.isEmpty { collected.lines.withLock { $0 += complete } }
            }
        }
        reader.start()
    }

    /// The first JSON line whose `event` is `name` (and which `matches`), waiting up to `timeout`.
    public func event(_ name: String, timeout: Duration = .seconds(20), matching matches: ([String: Any]) -> Bool = { _ in true }) -> [String: Any]? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            for line in output.lines.withLock({ $0 }) {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { continue }
                if object["event"] as? String == name, matches(object) { return object }
            }
            guard process.isRunning else { return nil }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return nil
    }

    /// Ends the peer with SIGKILL: a child of the test process inherits its blocked SIGTERM.
    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
