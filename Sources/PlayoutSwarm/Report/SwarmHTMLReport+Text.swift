extension SwarmHTMLReport {
    /// `text` safe to place in HTML or SVG text and in a double- or single-quoted attribute:
    /// `& < > " '` become character references, and control characters other than tab, line
    /// feed and carriage return (which HTML treats as parse errors) become U+FFFD.
    ///
    /// - Complexity: O(n) in the length of `text`.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            case "\t", "\n", "\r": out.unicodeScalars.append(scalar)
            default:
                if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
                    out += "\u{FFFD}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// `text` cut to `limit` characters with an ellipsis, for places that cannot wrap (SVG text).
    static func truncated(_ text: String, to limit: Int) -> String {
        text.count <= limit ? text : String(text.prefix(Swift.max(1, limit - 1))) + "…"
    }

    /// `value` with exactly `places` decimals (no exponent, no locale): `decimal(0.4125, places: 3)`
    /// is `0.413`. Non-finite values read `—`; magnitudes of 10^15 and more use Swift's own
    /// shortest form (`1e+300`), since they do not fit the fixed form's integer arithmetic.
    static func decimal(_ value: Double, places: Int) -> String {
        guard value.isFinite else { return "—" }
        let places = Swift.max(0, Swift.min(places, 9))
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        guard Swift.abs(value) * scale < 9e15 else { return "\(value)" }
        let scaled = (Swift.abs(value) * scale).rounded()
        let units = Int64(scaled)
        let factor = Int64(scale)
        var text = String(units / factor)
        if places > 0 {
            let fraction = String(units % factor)
            text += "." + String(repeating: "0", count: places - fraction.count) + fraction
        }
        return value < 0 && units != 0 ? "-" + text : text
    }

    /// `value` with at most `places` decimals, trailing zeros dropped: `trimmed(2.50, places: 2)` is
    /// `2.5`, `trimmed(3, places: 2)` is `3`.
    static func trimmed(_ value: Double, places: Int) -> String {
        var text = decimal(value, places: places)
        guard text.contains("."), !text.contains("e") else { return text }
        while text.last == "0" { text.removeLast() }
        if text.last == "." { text.removeLast() }
        return text == "-0" ? "0" : text
    }

    /// The decimals that tell ticks `step` apart: 0 for 1, 2, 5, 10 …; 1 for 0.5; 2 for 0.05.
    static func places(forStep step: Double) -> Int {
        guard step.isFinite, step > 0 else { return 0 }
        var places = 0
        var scaled = step
        while scaled < 0.999_999, places < 9 {
            scaled *= 10
            places += 1
        }
        return places
    }

    /// A coordinate in an SVG: one decimal.
    static func coordinate(_ value: Double) -> String {
        trimmed(value, places: 1)
    }

    /// A duration in seconds.
    static func seconds(_ duration: Duration) -> Double {
        let parts = duration.components
        return Double(parts.seconds) + Double(parts.attoseconds) * 1e-18
    }
}
