#if canImport(Glibc)
import Glibc
#endif

/// Telemetry records read back from JSON Lines (a ``JSONLinesTelemetryBackend`` file), with what
/// could not be read counted and skipped: a truncated last line, garbage, lines of another shape
/// (the CLI's `"qos"` lines) never stop a replay and never crash it.
///
/// ```swift
/// let replay = try TelemetryReplay(contentsOfFile: "run.jsonl")
/// print(replay.kpis["9f…-0-1"]?.rebufferPercentage, replay.skippedCount)
/// ```
public struct TelemetryReplay: Sendable {
    /// The largest file read: 1 GiB.
    public static let maximumFileSize = 1 << 30
    /// How many skipped lines keep their reason (all are counted).
    public static let keptErrors = 100

    /// The records read, in file order.
    public var records: [TelemetryRecord] = []
    /// Lines that were not records (non-blank), counted.
    public var skippedCount = 0
    /// The first ``keptErrors`` of them, with their line number and reason.
    public var skipped: [TelemetryReplayError] = []

    /// Every session's KPIs recomputed from the records (identical to the live ones).
    public var kpis: [String: TelemetryKPIs] { TelemetryKPIs.compute(from: records) }

    /// Reads `text`, one record per line; blank lines are ignored, other bad lines skipped and
    /// counted.
    public init(jsonLines text: String) {
        var number = 0
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            number += 1
            let trimmed = line.hasSuffix("\r") ? line.dropLast() : line
            guard trimmed.contains(where: { $0 != " " && $0 != "\t" }) else { continue }
            do throws(TelemetryReplayError) {
                records.append(try TelemetryJSONLines.record(from: trimmed))
            } catch {
                skippedCount += 1
                if skipped.count < Self.keptErrors { skipped.append(TelemetryReplayError(line: number, reason: error.reason)) }
            }
        }
    }

    /// Reads the file at `path` (see ``init(jsonLines:)``).
    ///
    /// - Throws: ``TelemetryReplayError`` when the file cannot be read or is larger than
    ///   ``maximumFileSize``.
    public init(contentsOfFile path: String) throws(TelemetryReplayError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw TelemetryReplayError(line: 0, reason: "cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw TelemetryReplayError(line: 0, reason: "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            guard bytes.count + count <= Self.maximumFileSize else {
                throw TelemetryReplayError(line: 0, reason: "\(path) is larger than \(Self.maximumFileSize >> 20) MiB: split it")
            }
            bytes += chunk[..<count]
        }
        self.init(jsonLines: String(decoding: bytes, as: UTF8.self))
    }

    /// Throws the first skipped line's error, if any line was skipped (for callers that want a
    /// clean file).
    public func requireClean() throws(TelemetryReplayError) {
        if let first = skipped.first {
            throw TelemetryReplayError(line: first.line, reason: first.reason + (skippedCount > 1 ? " (and \(skippedCount - 1) more bad lines)" : ""))
        }
    }
}
