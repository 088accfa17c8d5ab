public import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A test peer that prints one JSON object per line — a WHEP server or client from
/// Tests/WebRTCPeers run with Debian's Python, or the `playout` binary — its lines collected as
/// they come.
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

    /// Starts `script` (in ``directory``) with `arguments`, with Debian's Python.
    public convenience init(script: String, arguments: [String]) throws {
        try self.init(executable: "/usr/bin/python3", arguments: [Self.directory.appendingPathComponent(script).path] + arguments)
    }

    /// Starts `executable` with `arguments`.
    public init(executable: String, arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
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
        object(timeout: timeout) { $0["event"] as? String == name && matches($0) }
    }

    /// The first JSON line for which `matches` holds, waiting up to `timeout` (nil: none came
    /// before it, or before the process ended and its last lines were read).
    public func object(timeout: Duration = .seconds(20), where matches: ([String: Any]) -> Bool) -> [String: Any]? {
        let deadline = ContinuousClock.now + timeout
        var ended = false
        while ContinuousClock.now < deadline {
            for line in output.lines.withLock({ $0 }) {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { continue }
                if matches(object) { return object }
            }
            if ended { return nil }
            // One more look once it ended: its reader may still be handing over the last lines.
            ended = !process.isRunning
            Thread.sleep(forTimeInterval: ended ? 0.1 : 0.02)
        }
        return nil
    }

    /// Every JSON line so far for which `matches` holds, in order (no waiting).
    public func objects(where matches: ([String: Any]) -> Bool) -> [[String: Any]] {
        output.lines.withLock { $0 }.compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], matches(object) else { return nil }
            return object
        }
    }

    /// Waits until the process ended by itself, at most `timeout`; whether it did.
    public func waitUntilEnded(timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.05) }
        return !process.isRunning
    }

    /// Ends the peer with SIGKILL: a child of the test process inherits its blocked SIGTERM.
    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
