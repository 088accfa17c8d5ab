@testable import Playout
import Testing

@Suite("QoS JSON text")
struct QoSJSONTests {
    @Test("strings escape quotes, backslashes and control characters; other characters pass", arguments: [
        ("plain", "\"plain\""),
        ("say \"hi\"", #""say \"hi\"""#),
        (#"C:\path"#, #""C:\\path""#),
        ("line\nbreak\ttab\r", #""line\nbreak\ttab\r""#),
        ("bell\u{07}", #""bell\u0007""#),
        ("ünïcode ✓", "\"ünïcode ✓\""),
    ])
    func strings(value: String, expected: String) {
        #expect(QoSJSONWriter.string(value) == expected)
    }

    @Test("numbers: integers bare, fractions to 6 decimals, huge and non-finite values never trap", arguments: [
        (0.0, "0"), (42.0, "42"), (-3.0, "-3"), (0.5, "0.5"), (0.000_001, "0.000001"), (-0.25, "-0.25"),
        (1.234_567_89, "1.234568"), (12_345_678_901_234.5, "12345678901235"), (Double.nan, "null"),
        (Double.infinity, "null"), (1e300, "1e+300"),
    ])
    func numbers(value: Double, expected: String) {
        #expect(QoSJSONWriter.number(value) == expected)
    }
}
