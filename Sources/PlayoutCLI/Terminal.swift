import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// `text` padded with spaces to `width` characters (never cut).
func padded(_ text: String, _ width: Int) -> String {
    text + String(repeating: " ", count: max(0, width - text.count))
}

/// Writes `text` to stdout unbuffered (JSON Lines readers see each line as it is written).
func writeOut(_ text: String) {
    write(STDOUT_FILENO, text)
}

/// Writes `text` to stderr.
func writeError(_ text: String) {
    write(STDERR_FILENO, text)
}

/// Writes all of `text`; false when the descriptor refuses (errno says why).
@discardableResult
private func write(_ descriptor: Int32, _ text: String) -> Bool {
    var text = text
    return text.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }
}

/// Writes `text` to the file at `path` (created or replaced); false with `errno` set when it
/// cannot.
func writeFile(_ path: String, _ text: String) -> Bool {
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard descriptor >= 0 else { return false }
    let written = write(descriptor, text)
    return close(descriptor) == 0 && written
}

/// Whether stdout is a terminal (the live view) rather than a pipe or file (JSON Lines).
var standardOutputIsTerminal: Bool { isatty(STDOUT_FILENO) != 0 }

/// Calls `handler` on Ctrl-C (SIGINT) instead of ending the process, until the returned source
/// is cancelled.
func onInterrupt(_ handler: @escaping @Sendable () -> Void) -> any DispatchSourceSignal {
    signal(SIGINT, SIG_IGN)
    let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
    interrupt.setEventHandler(handler: handler)
    interrupt.resume()
    return interrupt
}
