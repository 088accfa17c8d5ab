/// Readers for the parts of a WHEP server's answer that are not SDP: an RFC 9457 problem body
/// (`application/problem+json`) and `Retry-After` (RFC 9110 §10.2.3).
public enum WHEPResponseFields {
    /// The `title` and `detail` members of an RFC 9457 problem body, when the body is a JSON
    /// object; nil for anything else (the caller then shows the body as text).
    ///
    /// ```swift
    /// WHEPResponseFields.problem(Array(#"{"type":"about:blank","title":"Stream not found","detail":"no stream 'x'"}"#.utf8))
    /// // (title: "Stream not found", detail: "no stream 'x'")
    /// ```
    ///
    /// Reads at most 64 KiB and 32 levels of nesting.
    public static func problem(_ body: [UInt8]) -> (title: String?, detail: String?)? {
        guard body.count <= 64 * 1024 else { return nil }
        var scanner = JSONScanner(bytes: body)
        return scanner.topLevelStrings(["title", "detail"]).map { ($0["title"], $0["detail"]) }
    }

    /// How long a `Retry-After` value asks to wait: delay-seconds, or an IMF-fixdate
    /// (`Sun, 06 Nov 1994 08:49:37 GMT`) measured from the response's `Date` when it has one
    /// (the server's clock), else from `wallClockNow` (nanoseconds since 1970). A date in the past
    /// is zero; nil when the value is neither form, or a date with nothing to measure it from.
    ///
    /// ```swift
    /// WHEPResponseFields.retryAfter("2", date: nil, wallClockNow: 0)   // .seconds(2)
    /// ```
    public static func retryAfter(_ value: String, date: String?, wallClockNow: Int64?) -> Duration? {
        let trimmed = Substring(value).trimmingSpaces
        if !trimmed.isEmpty, trimmed.count <= 10, trimmed.allSatisfy(\.isASCIIDigit), let seconds = Int64(trimmed) {
            return .seconds(seconds)
        }
        guard let target = httpDate(trimmed) else { return nil }
        guard let base = date.flatMap({ httpDate(Substring($0).trimmingSpaces) }) ?? wallClockNow.map({ $0 / 1_000_000_000 }) else { return nil }
        return .seconds(max(0, target - base))
    }

    /// Seconds since 1970 of an IMF-fixdate (RFC 9110 §5.6.7), nil for anything else.
    static func httpDate(_ text: String) -> Int64? {
        // "Sun, 06 Nov 1994 08:49:37 GMT"
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[0].count == 4, parts[0].hasSuffix(","), parts[5] == "GMT",
              parts[1].count == 2, let day = Int(parts[1]), (1...31).contains(day),
              let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"].firstIndex(of: String(parts[2])),
              parts[3].count == 4, let year = Int(parts[3]), year >= 1970
        else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3, clock.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isASCIIDigit) }),
              let hour = Int(clock[0]), let minute = Int(clock[1]), let second = Int(clock[2]),
              hour < 24, minute < 60, second <= 60
        else { return nil }
        // Days from civil (Howard Hinnant's algorithm).
        let m = month + 1
        let y = m <= 2 ? year - 1 : year
        let era = y / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }
}

/// A bounded reader of the top level of one JSON object (RFC 8259): the string members asked
/// for; everything else is skipped. Malformed JSON gives nil.
struct JSONScanner {
    let bytes: [UInt8]
    var position = 0
    static let maximumDepth = 32

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func topLevelStrings(_ names: Set<String>) -> [String: String]? {
        skipSpace()
        guard take(UInt8(ascii: "{")) else { return nil }
        var found: [String: String] = [:]
        skipSpace()
        if take(UInt8(ascii: "}")) { return found }
        while true {
            skipSpace()
            guard let key = string() else { return nil }
            skipSpace()
            guard take(UInt8(ascii: ":")) else { return nil }
            skipSpace()
            if names.contains(key), peek == UInt8(ascii: "\"") {
                guard let value = string() else { return nil }
                if found[key] == nil { found[key] = value }
            } else {
                guard skipValue(depth: 1) else { return nil }
            }
            skipSpace()
            if take(UInt8(ascii: ",")) { continue }
            guard take(UInt8(ascii: "}")) else { return nil }
            return found
        }
    }

    private var peek: UInt8? { position < bytes.count ? bytes[position] : nil }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard peek == byte else { return false }
        position += 1
        return true
    }

    private mutating func skipSpace() {
        while let byte = peek, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { position += 1 }
    }

    /// A string at `position`, with its escapes decoded (`\uXXXX` outside the BMP through
    /// surrogate pairs; a lone surrogate becomes U+FFFD).
    private mutating func string() -> String? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        var scalars = String.UnicodeScalarView()
        var run: [UInt8] = []
        func flush() {
            scalars.append(contentsOf: String(decoding: run, as: UTF8.self).unicodeScalars)
            run.removeAll()
        }
        while let byte = peek {
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                flush()
                return String(scalars)
            case UInt8(ascii: "\\"):
                guard let escape = peek else { return nil }
                position += 1
                flush()
                switch escape {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    guard let unit = hex4() else { return nil }
                    if (0xD800...0xDBFF).contains(unit), peek == UInt8(ascii: "\\"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "u") {
                        position += 2
                        guard let low = hex4() else { return nil }
                        if (0xDC00...0xDFFF).contains(low), let scalar = Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)) {
                            scalars.append(scalar)
                        } else {
                            scalars.append("\u{FFFD}")
                            scalars.append(Unicode.Scalar(low) ?? "\u{FFFD}")
                        }
                    } else {
                        scalars.append(Unicode.Scalar(unit) ?? "\u{FFFD}")
                    }
                default: return nil
                }
            case 0..<0x20:
                return nil
            default:
                run.append(byte)
            }
        }
        return nil
    }

    private mutating func hex4() -> UInt32? {
        guard position + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for byte in bytes[position..<position + 4] {
            guard let digit = Character(Unicode.Scalar(byte)).hexDigitValue else { return nil }
            value = value * 16 + UInt32(digit)
        }
        position += 4
        return value
    }

    private mutating func skipValue(depth: Int) -> Bool {
        guard depth <= Self.maximumDepth, let byte = peek else { return false }
        switch byte {
        case UInt8(ascii: "\""):
            return string() != nil
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let close = byte == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
            position += 1
            skipSpace()
            if take(close) { return true }
            while true {
                skipSpace()
                if byte == UInt8(ascii: "{") {
                    guard string() != nil else { return false }
                    skipSpace()
                    guard take(UInt8(ascii: ":")) else { return false }
                    skipSpace()
                }
                guard skipValue(depth: depth + 1) else { return false }
                skipSpace()
                if take(UInt8(ascii: ",")) { continue }
                return take(close)
            }
        default:
            let start = position
            while let next = peek, !(next == UInt8(ascii: ",") || next == UInt8(ascii: "}") || next == UInt8(ascii: "]") || next == 0x20 || next == 0x0A || next == 0x0D || next == 0x09) {
                position += 1
            }
            let token = bytes[start..<position]
            if token.elementsEqual("true".utf8) || token.elementsEqual("false".utf8) || token.elementsEqual("null".utf8) { return true }
            return !token.isEmpty && token.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || "+-.eE".utf8.contains($0) }
        }
    }
}
