import PlayoutCore

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
    /// Reads at most 64 KiB and 16 levels of nesting.
    public static func problem(_ body: [UInt8]) -> (title: String?, detail: String?)? {
        guard body.count <= 64 * 1024, case .object(let members)? = try? JSONParser.parse(Substring(decoding: body, as: UTF8.self)) else { return nil }
        func text(_ name: String) -> String? {
            guard case .string(let value)? = members.first(where: { $0.0 == name })?.1 else { return nil }
            return value
        }
        return (text("title"), text("detail"))
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
