import PlayoutCore
import PlayoutTelemetry

/// What one adapter's conformance log says, for a CI to read: every rule the adapter checks (its
/// ``ConformanceRule`` cases, with the guide's section stating each) and every finding, in the
/// order found. Exports itself as JUnit XML (``junitXML``) and JSON (``json``).
///
/// ```swift
/// let report = mux.conformance!.export()
/// try report.junitXML.write(…)       // one <testcase> per rule, a <failure> per finding
/// if !report.passed { exit(3) }
/// ```
public struct ConformanceReport: Sendable, Hashable {
    /// One rule checked.
    public struct Rule: Sendable, Hashable {
        /// The rule's name (its enum case: `missingEnvironmentKey`).
        public var name: String
        /// The guide's section that states it.
        public var guideSection: String
        /// How many findings broke it.
        public var findings: Int

        /// A rule checked.
        public init(name: String, guideSection: String, findings: Int) {
            self.name = name
            self.guideSection = guideSection
            self.findings = findings
        }
    }

    /// One broken rule.
    public struct Finding: Sendable, Hashable {
        /// The rule's name.
        public var rule: String
        /// The guide's section that states the rule.
        public var guideSection: String
        /// The adapter call that broke it.
        public var call: String
        /// What was wrong.
        public var detail: String
        /// When, since the log's first entry (``ConformanceLog/origin``).
        public var elapsed: Duration

        /// A finding.
        public init(rule: String, guideSection: String, call: String, detail: String, elapsed: Duration) {
            self.rule = rule
            self.guideSection = guideSection
            self.call = call
            self.detail = detail
            self.elapsed = elapsed
        }
    }

    /// The adapter (``ConformanceRule/adapter``): the JUnit `classname`.
    public var adapter: String
    /// The guide the rules come from.
    public var guide: String
    /// Every rule the adapter checks, in its enum's order.
    public var rules: [Rule]
    /// Every finding, in the order found.
    public var findings: [Finding]
    /// Calls the log recorded (kept or dropped).
    public var recordedCalls: Int
    /// Calls the log dropped (beyond its capacity; findings are never dropped).
    public var droppedCalls: Int

    /// A report with the given contents.
    public init(adapter: String, guide: String, rules: [Rule], findings: [Finding], recordedCalls: Int = 0, droppedCalls: Int = 0) {
        self.adapter = adapter
        self.guide = guide
        self.rules = rules
        self.findings = findings
        self.recordedCalls = recordedCalls
        self.droppedCalls = droppedCalls
    }

    /// Rules broken at least once (the JUnit `failures`: failed test cases).
    public var failedRules: Int { rules.count { $0.findings > 0 } }

    /// True when no rule was broken.
    public var passed: Bool { findings.isEmpty }

    /// The longest `message` attribute of a `<failure>`, in characters: 512 (the element's text
    /// holds the whole detail).
    public static let maximumMessageLength = 512

    /// The report as JUnit XML, in the shape Jenkins, GitLab, GitHub Actions' test reporters and
    /// `junit2html` read:
    ///
    /// ```xml
    /// <?xml version="1.0" encoding="UTF-8"?>
    /// <testsuites name="playout analytics conformance" tests="7" failures="1" errors="0">
    ///   <testsuite name="MuxCore" tests="7" failures="1" errors="0" skipped="0" time="0">
    ///     <properties>
    ///       <property name="guide" value="Mux Data: custom Objective-C integration (core SDK v5)"/>
    ///       <property name="findings" value="1"/> <property name="recordedCalls" value="42"/> <property name="droppedCalls" value="0"/>
    ///     </properties>
    ///     <testcase classname="MuxCore" name="missingEnvironmentKey" time="0">
    ///       <failure type="missingEnvironmentKey" message="missingEnvironmentKey broken by play (guide: Sample event sequence)">
    ///     rule: missingEnvironmentKey … guide section: … call: … at: 0.120 s … detail: …</failure>
    ///     </testcase>
    ///     <testcase classname="MuxCore" name="viewInitFirst" time="0"/>
    ///     …
    /// ```
    ///
    /// One `<testcase>` per rule checked; one `<failure>` per finding inside its rule's test case
    /// (a rule broken twice has two; `failures` counts failed test cases, the `findings` property
    /// every finding). Text is escaped for XML 1.0: `< > & " '` as entities, line breaks and tabs
    /// in attributes as character references, and the characters XML 1.0 cannot hold at all (C0
    /// controls other than tab and line breaks, U+FFFE, U+FFFF) written as `\u{XX}`.
    public var junitXML: String {
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        let counts = "tests=\"\(rules.count)\" failures=\"\(failedRules)\" errors=\"0\""
        xml += "<testsuites name=\"playout analytics conformance\" \(counts)>\n"
        xml += "  <testsuite name=\(Self.attribute(adapter)) \(counts) skipped=\"0\" time=\"0\">\n"
        xml += "    <properties>\n"
        for (name, value) in [("guide", guide), ("findings", String(findings.count)), ("recordedCalls", String(recordedCalls)), ("droppedCalls", String(droppedCalls))] {
            xml += "      <property name=\"\(name)\" value=\(Self.attribute(value))/>\n"
        }
        xml += "    </properties>\n"
        var byRule: [String: [Finding]] = [:]
        for finding in findings { byRule[finding.rule, default: []].append(finding) }
        for rule in rules {
            let opening = "    <testcase classname=\(Self.attribute(adapter)) name=\(Self.attribute(rule.name)) time=\"0\""
            guard let broken = byRule[rule.name], !broken.isEmpty else {
                xml += opening + "/>\n"
                continue
            }
            xml += opening + ">\n"
            for finding in broken {
                let message = "\(finding.rule) broken by \(finding.call) (guide: \(finding.guideSection))"
                let clipped = message.count > Self.maximumMessageLength ? String(message.prefix(Self.maximumMessageLength - 1)) + "…" : message
                let text = "rule: \(finding.rule)\nguide section: \(finding.guideSection)\ncall: \(finding.call)\nat: \(Self.seconds(finding.elapsed)) s\ndetail: \(finding.detail)"
                xml += "      <failure type=\(Self.attribute(finding.rule)) message=\(Self.attribute(clipped))>\(Self.text(text))</failure>\n"
            }
            xml += "    </testcase>\n"
        }
        xml += "  </testsuite>\n</testsuites>\n"
        return xml
    }

    /// The report as one JSON object (and a newline):
    ///
    /// ```json
    /// {"type":"conformance","adapter":"MuxCore","guide":"Mux Data: …","tests":7,"failures":1,"passed":false,
    ///  "rules":[{"rule":"missingEnvironmentKey","guideSection":"Sample event sequence","findings":1}, …],
    ///  "findings":[{"rule":"missingEnvironmentKey","guideSection":"Sample event sequence","call":"play","detail":"…","t":0.12}],
    ///  "recordedCalls":42,"droppedCalls":0}
    /// ```
    ///
    /// `tests` and `failures` as in the JUnit export; `t` in seconds since the log's first entry.
    /// Strings are escaped as every JSON Playout writes (quotes, backslashes, control
    /// characters, U+2028 and U+2029).
    public var json: String {
        var json = "{\"type\":\"conformance\",\"adapter\":\(Self.string(adapter)),\"guide\":\(Self.string(guide))"
        json += ",\"tests\":\(rules.count),\"failures\":\(failedRules),\"passed\":\(passed),\"rules\":["
        json += rules.map { "{\"rule\":\(Self.string($0.name)),\"guideSection\":\(Self.string($0.guideSection)),\"findings\":\($0.findings)}" }
            .joined(separator: ",")
        json += "],\"findings\":["
        json += findings.map { finding in
            "{\"rule\":\(Self.string(finding.rule)),\"guideSection\":\(Self.string(finding.guideSection)),\"call\":\(Self.string(finding.call))"
                + ",\"detail\":\(Self.string(finding.detail)),\"t\":\(Self.seconds(finding.elapsed))}"
        }.joined(separator: ",")
        json += "],\"recordedCalls\":\(recordedCalls),\"droppedCalls\":\(droppedCalls)}\n"
        return json
    }

    // MARK: - Escaping

    /// `value` as a quoted XML attribute value.
    static func attribute(_ value: String) -> String { "\"" + escaped(value, inAttribute: true) + "\"" }

    /// `value` as XML character data.
    static func text(_ value: String) -> String { escaped(value, inAttribute: false) }

    private static func escaped(_ value: String, inAttribute: Bool) -> String {
        var result = ""
        result.reserveCapacity(value.utf8.count)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&apos;"
            case "\r": result += "&#13;"  // a literal one would be normalized away
            case "\n" where inAttribute: result += "&#10;"
            case "\t" where inAttribute: result += "&#9;"
            case "\n", "\t": result.unicodeScalars.append(scalar)
            case "\u{0}"..."\u{1F}", "\u{FFFE}", "\u{FFFF}":
                // Not a character XML 1.0 can hold, not even as a reference: shown, not kept.
                result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func string(_ value: String) -> String {
        var escaped = ""
        TelemetryJSONLines.appendString(value, to: &escaped)
        return escaped
    }

    /// Seconds with millisecond precision: `0.120`.
    private static func seconds(_ duration: Duration) -> String {
        let milliseconds = duration.nanoseconds / 1_000_000
        let sign = milliseconds < 0 ? "-" : ""
        let magnitude = milliseconds.magnitude
        let fraction = String(magnitude % 1_000)
        return "\(sign)\(magnitude / 1_000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }
}

extension ConformanceLog where Rule: ConformanceRule {
    /// Every rule of `Rule` the adapter checks, in its enum's order.
    public var rulesChecked: [Rule] { Array(Rule.allCases) }

    /// The log as a report: every rule checked and every finding so far.
    public func export() -> ConformanceReport {
        let findings = self.findings
        let origin = self.origin ?? findings.first?.time ?? .zero
        var counts: [Rule: Int] = [:]
        for finding in findings { counts[finding.rule, default: 0] += 1 }
        return ConformanceReport(
            adapter: Rule.adapter, guide: Rule.guide,
            rules: rulesChecked.map { ConformanceReport.Rule(name: $0.rawValue, guideSection: $0.guideSection, findings: counts[$0] ?? 0) },
            findings: findings.map {
                ConformanceReport.Finding(rule: $0.rule.rawValue, guideSection: $0.rule.guideSection, call: $0.call, detail: $0.detail, elapsed: origin.duration(to: $0.time))
            },
            recordedCalls: recordedCalls, droppedCalls: droppedCalls)
    }
}
