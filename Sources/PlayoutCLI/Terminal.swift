import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// `value` with `digits` decimals (`fixed(2.345, 1)` is `"2.3"`), like `printf("%.*f")` except
/// that halves round away from zero and there is no negative zero.
func fixed(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return value.isNaN ? "nan" : value < 0 ? "-inf" : "inf" }
    let digits = min(max(0, digits), 18)
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    guard scaled < 9e18 else { return "\(value)" }
    let text = String(Int64(scaled))
    let sign = value < 0 && scaled > 0 ? "-" : ""
    guard digits > 0 else { return sign + text }
    let padded = String(repeating: "0", count: max(0, digits + 1 - text.count)) + text
    return sign + padded.dropLast(digits) + "." + padded.suffix(digits)
}

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
