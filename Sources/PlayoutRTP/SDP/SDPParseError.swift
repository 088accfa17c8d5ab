/// Why a text could not be parsed as an SDP session description. Line numbers are 1-based and
/// count every line, blank ones included, so they match what an editor shows.
public enum SDPParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The text is empty or only blank lines.
    case empty
    /// The text is larger than ``SessionDescription/maximumSize`` bytes.
    case tooLarge(bytes: Int, limit: Int)
    /// A line is longer than ``SessionDescription/maximumLineLength`` bytes.
    case lineTooLong(line: Int, length: Int, limit: Int)
    /// More than ``SessionDescription/maximumMediaCount`` media sections; `line` is the first
    /// `m=` line over the limit.
    case tooManyMediaSections(line: Int, limit: Int)
    /// A line does not have the form it must have, or holds a value that cannot be used.
    case invalidLine(line: Int, expected: String, found: String)
    /// A line every SDP must have is missing.
    case missingLine(expected: String)

    public var description: String {
        switch self {
        case .empty:
            return "SDP is empty: expected a session description starting with v=0"
        case .tooLarge(let bytes, let limit):
            return "SDP is \(bytes) bytes: at most \(limit) bytes are accepted"
        case .lineTooLong(let line, let length, let limit):
            return "SDP line \(line) is \(length) bytes long: at most \(limit) bytes are accepted"
        case .tooManyMediaSections(let line, let limit):
            return "SDP line \(line): more than \(limit) media sections (m= lines) are not accepted"
        case .invalidLine(let line, let expected, let found):
            return "SDP line \(line): expected \(expected), found '\(Self.abbreviated(found))'"
        case .missingLine(let expected):
            return "SDP has no \(expected) line"
        }
    }

    /// At most 100 characters of `text`, with control characters shown as `?`.
    private static func abbreviated(_ text: String) -> String {
        let visible = String(String.UnicodeScalarView(text.unicodeScalars.prefix(100).map {
            $0.value < 0x20 || $0.value == 0x7F ? "?" : $0
        }))
        return text.unicodeScalars.count > 100 ? visible + "…" : visible
    }
}

/// What a value inside a line should have looked like; the parser adds the line number.
struct SDPValueError: Error {
    var expected: String

    init(_ expected: String) { self.expected = expected }
}
