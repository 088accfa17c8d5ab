public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs the real `ffmpeg` CLI as a test peer: encodes test media to files, reads a file's packets
/// back as checksums (`-f framecrc`) or bytes, and starts it as a sender or receiver. Tests use it
/// with `.enabled(if: FFmpeg.isAvailable, …)`.
public enum FFmpeg {
    /// Why a run of ffmpeg failed.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public init(description: String) { self.description = description }
    }

    /// The `ffmpeg` executable on PATH, or nil.
    public static let executable: URL? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent("ffmpeg")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }()

    public static var isAvailable: Bool { executable != nil }

    /// Whether this ffmpeg has the encoder `name` (e.g. `libx265`).
    public static func hasEncoder(_ name: String) -> Bool {
        guard isAvailable, let output = try? run(["-hide_banner", "-encoders"]) else { return false }
        return String(decoding: output, as: UTF8.self).split(separator: "\n").contains { line in
            line.split(separator: " ").dropFirst().first == Substring(name)
        }
    }

    /// Runs ffmpeg with `arguments` (after `-hide_banner -loglevel error -nostdin`) to completion
    /// and returns its standard output; throws when it fails or runs over `timeout`.
    @discardableResult
    public static func run(_ arguments: [String], timeout: Duration = .seconds(60)) throws -> Data {
        let process = try start(arguments, captureOutput: true)
        let output = process.standardOutputFile
        var data = Data()
        let deadline = ContinuousClock.now + timeout
        while true {
            let chunk = output.availableData
            if chunk.isEmpty { break }
            data.append(chunk)
            if ContinuousClock.now > deadline { break }
        }
        try finish(process, arguments: arguments, deadline: deadline)
        return data
    }

    /// Runs `ffprobe` (next to `ffmpeg`) with `arguments` and returns its standard output, trimmed;
    /// throws when it fails.
    public static func probe(_ arguments: [String]) throws -> String {
        guard let executable else { throw Failure(description: "ffmpeg is not on PATH") }
        let process = Process()
        process.executableURL = executable.deletingLastPathComponent().appendingPathComponent("ffprobe")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "ffprobe \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)")
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// What ffmpeg complains about while decoding all of `file` (`-v error`, to null): empty when
    /// the file decodes cleanly.
    public static func decodingErrors(of file: URL) throws -> String {
        guard let executable else { throw Failure(description: "ffmpeg is not on PATH") }
        let process = Process()
        process.executableURL = executable
        process.arguments = ["-hide_banner", "-v", "error", "-nostdin", "-i", file.path, "-f", "null", "-"]
        let errors = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        let data = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        return process.terminationStatus == 0 ? text : text + "(exit \(process.terminationStatus))"
    }

    /// A temporary file path ending in `name`, removed by the caller.
    public static func temporaryFile(_ name: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("playout-\(UUID().uuidString)-\(name)")
    }

    /// One packet of a file as `-f framecrc` reports it.
    public struct PacketChecksum: Equatable, CustomStringConvertible {
        public var size: Int
        public var adler32: UInt32

        public init(size: Int, adler32: UInt32) {
            self.size = size
            self.adler32 = adler32
        }

        public var description: String { "\(size) bytes, adler32 \(String(adler32, radix: 16))" }
    }

    /// The size and Adler-32 of every packet of stream 0 of `file`, in file order.
    public static func packetChecksums(of file: URL, inputOptions: [String] = []) throws -> [PacketChecksum] {
        let output = try run(inputOptions + ["-i", file.path, "-map", "0:0", "-c", "copy", "-f", "framecrc", "-"])
        return String(decoding: output, as: UTF8.self).split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("#") else { return nil }
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard fields.count >= 6, let size = Int(fields[4]), fields[5].hasPrefix("0x"),
                  let checksum = UInt32(fields[5].dropFirst(2), radix: 16) else { return nil }
            return PacketChecksum(size: size, adler32: checksum)
        }
    }

    /// The bytes of every packet of stream 0 of `file`: the file remuxed with `-c copy` into the
    /// raw `format` (e.g. `hevc`), which writes packets as they are, cut at the sizes
    /// `-f framecrc` reports.
    public static func packets(of file: URL, rawFormat format: String) throws -> [[UInt8]] {
        let stream = [UInt8](try run(["-i", file.path, "-map", "0:0", "-c", "copy", "-f", format, "-"]))
        var packets: [[UInt8]] = []
        var offset = 0
        for checksum in try packetChecksums(of: file) {
            guard offset + checksum.size <= stream.count else { throw Failure(description: "the raw stream is shorter than its packets") }
            packets.append(Array(stream[offset..<offset + checksum.size]))
            offset += checksum.size
        }
        guard offset == stream.count else { throw Failure(description: "the raw stream is longer than its packets") }
        return packets
    }

    public static func start(_ arguments: [String], captureOutput: Bool) throws -> Process {
        guard let executable else { throw Failure(description: "ffmpeg is not on PATH") }
        let process = Process()
        process.executableURL = executable
        process.arguments = ["-hide_banner", "-loglevel", "error", "-nostdin"] + arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = captureOutput ? Pipe() : FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Waits for `process` until `deadline`; throws if it is still running then (after ending it) or
    /// exited with a non-zero status.
    public static func finish(_ process: Process, arguments: [String], deadline: ContinuousClock.Instant) throws {
        while process.isRunning, ContinuousClock.now < deadline {
            usleep(10_000)
        }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
            throw Failure(description: "ffmpeg \(arguments.joined(separator: " ")) timed out")
        }
        guard process.terminationStatus == 0 else {
            throw Failure(description: "ffmpeg \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)")
        }
    }
}

extension Process {
    fileprivate var standardOutputFile: FileHandle {
        (standardOutput as? Pipe)?.fileHandleForReading ?? FileHandle.nullDevice
    }
}

/// Adler-32 (RFC 1950 §8.2) as `ffmpeg -f framecrc` prints it per packet: started from 0
/// (`av_adler32_update(0, …)`), not from RFC 1950's 1.
public func adler32(_ bytes: some Sequence<UInt8>) -> UInt32 {
    var a: UInt32 = 0
    var b: UInt32 = 0
    for byte in bytes {
        a = (a + UInt32(byte)) % 65_521
        b = (b + a) % 65_521
    }
    return b << 16 | a
}

