import PlayoutCore

/// Runs `body` on a new detached thread named `name` (at most 15 bytes show in `top -H`).
func startTelemetryThread(named name: String, _ body: @escaping @Sendable () -> Void) throws(TelemetryEngineError) {
    do {
        try startThread(named: name, body)
    } catch {
        throw TelemetryEngineError("\(error)")
    }
}

/// Why the engine could not do what was asked (start a thread, add a backend after shutdown).
public struct TelemetryEngineError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What happened and what to do.
    public var message: String
    /// An error saying `message`.
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
