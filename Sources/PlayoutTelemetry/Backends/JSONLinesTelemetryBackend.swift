#if canImport(Glibc)
import Glibc
#endif
import PlayoutCore

/// A backend that writes each record as one line of JSON (``TelemetryJSONLines``) to a file or
/// a file descriptor such as standard output. Replaying the file (``TelemetryReplay``) gives the
/// same records, so the same KPIs.
///
/// ```swift
/// let file = try JSONLinesTelemetryBackend(path: "run.jsonl")
/// let instrument = try TelemetryInstrument(backends: [file])
/// ```
///
/// With ``Format/lines(_:)`` it writes each record as the caller's function renders it — the
/// `Playout` module's `.commandLine` format is the command line's `--json` stream (`"qos"` and
/// `"event"` lines): that stream is this backend on standard output, with its own bounded queue,
/// so a reader that does not keep up costs only the queue.
///
/// A batch is written with as few `write` calls as the system allows. A failure before anything
/// was written is retryable (the engine retries with backoff); one after part of a batch was
/// written is not (retrying would duplicate lines); a replay skips the partial line.
public final class JSONLinesTelemetryBackend: TelemetryBackend {
    /// What each line holds.
    public enum Format: Sendable {
        /// Every record, whole (``TelemetryJSONLines``): replayable.
        case records
        /// Each record as `line` writes it (one line, no newline); records it returns nil for
        /// are left out. `Playout` defines `.commandLine`, the command line's `--json` stream.
        case lines(@Sendable (TelemetryRecord) -> String?)
    }

    public let name: String
    /// What each line holds.
    public let format: Format
    private let descriptor: Int32
    private let ownsDescriptor: Bool
    private let closed = LockedFlag()

    /// Creates (or truncates) the file at `path`.
    ///
    /// - Throws: ``TelemetryEngineError`` saying why the file cannot be opened.
    public init(path: String, append: Bool = false, format: Format = .records) throws(TelemetryEngineError) {
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC)
        let descriptor = open(path, flags, 0o644)
        guard descriptor >= 0 else {
            throw TelemetryEngineError("cannot write \(path): \(String(cString: strerror(errno)))")
        }
        self.descriptor = descriptor
        ownsDescriptor = true
        name = "jsonl \(path)"
        self.format = format
    }

    /// Writes to `fileDescriptor` (e.g. 1 for standard output), which the caller keeps open.
    public init(fileDescriptor: Int32, name: String = "jsonl stdout", format: Format = .records) {
        descriptor = fileDescriptor
        ownsDescriptor = false
        self.name = name
        self.format = format
    }

    public func deliver(_ batch: [TelemetryRecord]) throws(TelemetryDeliveryError) {
        var text = ""
        for record in batch {
            switch format {
            case .records: text += TelemetryJSONLines.line(for: record)
            case .lines(let line):
                guard let line = line(record) else { continue }
                text += line
            }
            text += "\n"
        }
        guard !text.isEmpty else { return }
        let utf8 = Array(text.utf8)
        var written = 0
        while written < utf8.count {
            let count = utf8.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                let reason = "\(name): \(String(cString: strerror(code)))"
                if written > 0 { throw TelemetryDeliveryError(reason + " after \(written) of \(utf8.count) bytes", retryable: false) }
                throw TelemetryDeliveryError(reason, retryable: ![EBADF, EINVAL, EPIPE, EFBIG].contains(code))
            }
            written += count
        }
    }

    public func close() {
        guard ownsDescriptor, closed.set() else { return }
        fsync(descriptor)
        Glibc.close(descriptor)
    }
}

/// A flag set once, thread safe.
final class LockedFlag: Sendable {
    private let value = LockedValue(false)
    /// Sets the flag; true the first time.
    func set() -> Bool {
        value.withLock { flag in
            defer { flag = true }
            return !flag
        }
    }
}
