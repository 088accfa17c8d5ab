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

/// The signals that end a run cleanly: Ctrl-C (SIGINT), SIGTERM (`timeout`, container runtimes,
/// service managers) and SIGHUP (the terminal went away).
let stopSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP]

/// Calls `handler` on the first of SIGINT, SIGTERM or SIGHUP instead of ending the process, so the
/// run ends as at its end (summary, `ended`/`viewend`, telemetry drained within its deadline,
/// sinks finalized); a second one ends the process at once (status 128 + the signal), also while
/// telemetry is still draining. Until ``Interruption/cancel()`` restores the default actions.
func onInterrupt(_ handler: @escaping @Sendable () -> Void) -> Interruption {
    Interruption(handler)
}

/// The stop signals' handling while a run is under way (see ``onInterrupt(_:)``).
final class Interruption: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]
    private let received = LockedCounter()

    init(_ handler: @escaping @Sendable () -> Void) {
        var sources: [any DispatchSourceSignal] = []
        let received = self.received
        for number in stopSignals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if received.increment() == 1 {
                    handler()
                } else {
                    writeError("playout: second signal, ending now\n")
                    _exit(128 + number)
                }
            }
            source.resume()
            sources.append(source)
        }
        self.sources = sources
    }

    /// Stops handling the signals: they end the process again.
    func cancel() {
        for source in sources { source.cancel() }
        for number in stopSignals { signal(number, SIG_DFL) }
    }
}

/// A counter shared with signal handlers' queue.
private final class LockedCounter: @unchecked Sendable {
    private var value = 0
    private var lock = pthread_mutex_t()
    init() { pthread_mutex_init(&lock, nil) }
    deinit { pthread_mutex_destroy(&lock) }
    /// Adds one; returns the new count.
    func increment() -> Int {
        pthread_mutex_lock(&lock)
        defer { pthread_mutex_unlock(&lock) }
        value += 1
        return value
    }
}
