import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A small tmpfs mounted in a temporary directory: a real disk that fills up (tests of sinks
/// whose writes fail part-way). Needs root with mount rights; ``canMount`` says whether this
/// process has them.
public struct SmallDisk: Sendable {
    /// Where it is mounted.
    public let path: String

    /// Whether this process may mount one (root with CAP_SYS_ADMIN).
    public static let canMount: Bool = {
        guard geteuid() == 0, let disk = try? SmallDisk() else { return false }
        disk.remove()
        return true
    }()

    /// Mounts a tmpfs of `kibibytes` in a new temporary directory.
    ///
    /// - Throws: `CocoaError(.fileWriteNoPermission)` when it cannot be mounted.
    public init(kibibytes: Int = 512) throws {
        let directory = FFmpeg.temporaryFile("disk")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        guard Self.runs("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=\(kibibytes)k", "tmpfs", directory.path]) else {
            try? FileManager.default.removeItem(at: directory)
            throw CocoaError(.fileWriteNoPermission)
        }
        path = directory.path
    }

    /// Unmounts it and removes its directory.
    public func remove() {
        _ = Self.runs("/usr/bin/umount", [path])
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Whether `executable` with `arguments` ran and exited 0 (its stderr discarded).
    public static func runs(_ executable: String, _ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}
