/// The one error type that reaches a user: a code a program can act on and a message that says
/// what happened and what to do ("UDP 127.0.0.1:5004 is already in use: choose another port …").
///
/// Codes are extensible: each module adds its own as static members of ``Code``
/// (`.addressInUse` in PlayoutRTP, `.decoderNotFound` in PlayoutCodec, …). Parsers keep their own
/// precise typed errors (`RTPParseError`, `SDPParseError`, …); this is for what a person reads.
///
/// ```swift
/// do { _ = try UDPReceiver(bindingTo: address) }
/// catch let error as PlayoutError where error.code == .addressInUse { … }
/// ```
public struct PlayoutError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, for programs to act on.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String

        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        public init(_ rawValue: String) {
            self.rawValue = rawValue
        }

        public var description: String {
            rawValue
        }
    }

    public var code: Code
    /// What happened and what to do, in one line.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String {
        message
    }
}
