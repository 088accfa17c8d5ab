public import PlayoutCore
#if canImport(Glibc)
import Glibc
#endif

extension PlayoutError.Code {
    /// A file sink's file could not be written (disk full, an I/O error, a short write): the sink
    /// stopped, and refuses every later frame with the same error (see `Y4MSink.failure`).
    public static let sinkFailed = Self("sinkFailed")
}

/// The file a ``Y4MSink`` or ``WAVSink`` writes, through its file descriptor (no stdio buffer in
/// between), so that each failure is met by the write that causes it, with the system's reason:
/// a full disk (`ENOSPC`), an I/O error (`EIO`), a short write.
///
/// Every append is all or nothing as far as the file's readers are concerned: when one fails
/// part-way, the file is cut back (best effort) to where it ended before, so it still holds only
/// whole frames that its header describes.
final class SinkFile {
    /// The path, as given.
    let path: String
    /// The bytes appended so far: the file's size, as long as nothing failed.
    private(set) var size = 0
    private var descriptor: Int32

    /// Creates (truncates) `path`.
    ///
    /// - Throws: ``SinkError`` naming the path and the system's reason.
    init(path: String) throws(SinkError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            let reason = Self.reason(errno)
            throw SinkError(.sink, "cannot write \(path): \(reason) (check the directory exists and is writable)")
        }
        self.path = path
        self.descriptor = descriptor
    }

    deinit {
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
    }

    /// Appends `bytes` whole, `what` naming them in an error ("frame 12", "the header").
    ///
    /// - Throws: ``SinkError`` with code ``PlayoutError/Code/sinkFailed`` naming the path, the
    ///   system's reason and, for a short write, how much of `what` went out; the file is then
    ///   cut back to its size before the call.
    func append(_ bytes: UnsafeRawBufferPointer, what: String) throws(SinkError) {
        let before = size
        do {
            try write(bytes, at: nil, what: what)
            size += bytes.count
        } catch {
            if descriptor >= 0 { _ = ftruncate(descriptor, off_t(before)) }  // fails harmlessly on /dev/full, a pipe
            throw error
        }
    }

    /// Appends the bytes of `elements` whole (see ``append(_:what:)``).
    func append<Element>(contentsOf elements: [Element], what: String) throws(SinkError) {
        var result: Result<Void, SinkError> = .success(())
        elements.withUnsafeBytes { bytes in
            do throws(SinkError) { try append(bytes, what: what) } catch { result = .failure(error) }
        }
        try result.get()
    }

    /// Overwrites `bytes` at `offset` (a header's final sizes), without moving the end.
    func overwrite(_ bytes: [UInt8], at offset: Int, what: String) throws(SinkError) {
        var result: Result<Void, SinkError> = .success(())
        bytes.withUnsafeBytes { bytes in
            do throws(SinkError) { try write(bytes, at: offset, what: what) } catch { result = .failure(error) }
        }
        try result.get()
    }

    /// Closes the file; later writes fail.
    ///
    /// - Throws: ``SinkError`` when the system reports a failure at close (e.g. a deferred
    ///   `EIO` or `ENOSPC` from a network file system).
    func close() throws(SinkError) {
        guard descriptor >= 0 else { return }
        let result = Glibc.close(descriptor)
        let code = errno
        descriptor = -1
        if result != 0, code != EINTR {
            throw SinkError(.sinkFailed, "closing \(path) failed: \(Self.reason(code))")
        }
    }

    /// `write`/`pwrite` until every byte is out, retrying after a signal and after a short write.
    private func write(_ bytes: UnsafeRawBufferPointer, at offset: Int?, what: String) throws(SinkError) {
        guard descriptor >= 0 else { throw SinkError(.sinkFailed, "writing \(path) failed: the file is closed") }
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            let count = bytes.count - done
            let written = offset.map { pwrite(descriptor, base + done, count, off_t($0 + done)) } ?? Glibc.write(descriptor, base + done, count)
            if written > 0 {
                done += written
                continue
            }
            let code = written < 0 ? errno : 0
            if written < 0, code == EINTR { continue }
            let reason = written < 0 ? Self.reason(code) : "the system took no more bytes"
            let short = done > 0 ? " (a short write: \(done) of \(bytes.count) bytes of \(what))" : " (writing \(what))"
            throw SinkError(.sinkFailed, "writing \(path) failed: \(reason)\(short)")
        }
    }

    /// The system's text for `code`, e.g. "No space left on device".
    static func reason(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }
}
