import Foundation
import PlayoutAnalytics
import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Testing

@Suite("ConformanceLog exports: JUnit XML and JSON, read back")
struct ConformanceExportTests {
    static func finding(_ rule: MuxRule, call: String = "play", detail: String, at milliseconds: Int64 = 0) -> ConformanceFinding<MuxRule> {
        ConformanceFinding(rule: rule, call: call, detail: detail, time: MonotonicInstant(nanoseconds: 1_000_000_000 + milliseconds * 1_000_000))
    }

    /// The JSON export read back with `JSONSerialization`.
    static func json(_ report: ConformanceReport) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any])
    }

    @Test("a clean log: one passing test case per rule the adapter checks, classname the adapter, no failure; JSON says the same")
    func clean() throws {
        let log = ConformanceLog<MuxRule>()
        log.record(RecordedCall(name: "viewinit", time: MonotonicInstant(nanoseconds: 5)))
        let report = log.export()
        #expect(report.passed && report.rules.count == MuxRule.allCases.count)
        let parsed = try JUnitReport(xml: report.junitXML)
        #expect(parsed.suitesAttributes["tests"] == String(MuxRule.allCases.count) && parsed.suitesAttributes["failures"] == "0")
        #expect(parsed.suiteAttributes["name"] == "MuxCore" && parsed.suiteAttributes["tests"] == String(MuxRule.allCases.count) && parsed.suiteAttributes["failures"] == "0")
        #expect(parsed.testCases.map(\.name) == MuxRule.allCases.map(\.rawValue))
        #expect(parsed.testCases.allSatisfy { $0.classname == "MuxCore" && $0.failures.isEmpty })
        #expect(parsed.properties["recordedCalls"] == "1" && parsed.properties["findings"] == "0")
        let json = try Self.json(report)
        #expect(json["type"] as? String == "conformance" && json["adapter"] as? String == "MuxCore")
        #expect(json["tests"] as? Int == MuxRule.allCases.count && json["failures"] as? Int == 0 && json["passed"] as? Bool == true)
        #expect((json["rules"] as? [[String: Any]])?.compactMap { $0["guideSection"] as? String } == MuxRule.allCases.map(\.guideSection))
    }

    @Test("every adapter's rules are its test cases, each naming its guide section", arguments: [
        (MuxRule.allCases.map { ($0.rawValue, $0.guideSection) }, ConformanceLog<MuxRule>().export()),
        (HeartbeatRule.allCases.map { ($0.rawValue, $0.guideSection) }, ConformanceLog<HeartbeatRule>().export()),
        (NielsenRule.allCases.map { ($0.rawValue, $0.guideSection) }, ConformanceLog<NielsenRule>().export()),
        (OpenAVTRule.allCases.map { ($0.rawValue, $0.guideSection) }, ConformanceLog<OpenAVTRule>().export()),
    ])
    func everyAdapter(rules: [(String, String)], report: ConformanceReport) throws {
        #expect(report.rules.map(\.name) == rules.map(\.0) && report.rules.map(\.guideSection) == rules.map(\.1))
        #expect(rules.allSatisfy { !$0.1.isEmpty })
        let parsed = try JUnitReport(xml: report.junitXML)
        #expect(parsed.testCases.map(\.name) == rules.map(\.0) && Set(parsed.testCases.map(\.classname)) == [report.adapter])
    }

    @Test("findings of a real adapter: a <failure> per finding in its rule's test case, naming the rule and the guide's section; failures count failed test cases")
    func adapterFindings() throws {
        let clock = ManualClock()
        let instrument = try TelemetryInstrument(clock: clock, driver: .embedded)
        let mux = MuxCore(instrument: instrument, options: .conformance())
        mux.dispatch(.play, player: "main")  // viewInitFirst
        clock.advance(by: .milliseconds(250))
        mux.dispatch(.pause, player: "main")  // viewInitFirst again
        mux.dispatch(.viewInit, player: "main")
        mux.dispatch(.data(MuxDataEvent(customerPlayerData: MuxCustomerPlayerData(environmentKey: "k"))), player: "main")
        mux.dispatch(.renditionChange, player: "main")  // renditionChangeWithoutData
        instrument.shutdown(timeout: .seconds(1))
        let report = try #require(mux.conformance).export()
        #expect(report.findings.map(\.rule) == ["viewInitFirst", "viewInitFirst", "renditionChangeWithoutData"])
        #expect(mux.conformance?.findingCount == 3)
        #expect(report.findings.map(\.elapsed) == [.zero, .milliseconds(250), .milliseconds(250)])
        let parsed = try JUnitReport(xml: report.junitXML)
        #expect(parsed.suiteAttributes["tests"] == String(MuxRule.allCases.count) && parsed.suiteAttributes["failures"] == "2" && parsed.properties["findings"] == "3")
        let viewInitFirst = try #require(parsed.testCases.first { $0.name == "viewInitFirst" })
        #expect(viewInitFirst.failures.map(\.type) == ["viewInitFirst", "viewInitFirst"])
        #expect(viewInitFirst.failures.map(\.message) == [
            "viewInitFirst broken by play (guide: Sample event sequence)", "viewInitFirst broken by pause (guide: Sample event sequence)",
        ])
        #expect(viewInitFirst.failures[1].text.hasPrefix("rule: viewInitFirst\nguide section: Sample event sequence\ncall: pause\nat: 0.250 s\ndetail: pause with no view open"))
        #expect(parsed.testCases.first { $0.name == "renditionChangeWithoutData" }?.failures.first?.message.hasSuffix("(guide: Playback Events)") == true)
        #expect(parsed.testCases.filter { !$0.failures.isEmpty }.count == 2)
        let json = try Self.json(report)
        #expect(json["failures"] as? Int == 2 && json["passed"] as? Bool == false)
        let findings = try #require(json["findings"] as? [[String: Any]])
        #expect(findings.compactMap { $0["t"] as? Double } == [0, 0.25, 0.25])
        #expect(findings.compactMap { $0["guideSection"] as? String } == ["Sample event sequence", "Sample event sequence", "Playback Events"])
    }

    /// What the XML export shows of `text`: the characters XML 1.0 cannot hold as `\u{XX}`.
    static func shownInXML(_ text: String) -> String {
        var shown = ""
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x9, 0xA, 0xD: shown.unicodeScalars.append(scalar)
            case 0...0x1F, 0xFFFE, 0xFFFF: shown += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: shown.unicodeScalars.append(scalar)
            }
        }
        return shown
    }

    static let hostile: [String] = [
        "<failure>&amp; \"quoted\" 'single' ]]> <!-- --> <![CDATA[x]]>",
        "controls \u{0}\u{1}\u{8}\u{B}\u{C}\u{1B}[31m\u{1F}\u{7F} end",
        "lines\r\nand\rreturns\n\ttabbed",
        "noncharacters \u{FFFE}\u{FFFF} and U+2028\u{2028} U+2029\u{2029}",
        "not UTF-8: " + String(decoding: [0xFF, 0xFE, 0xC3, 0x28, 0xE2, 0x82], as: UTF8.self) + " emoji 🎬 combining e\u{301}",
        String(repeating: "long <&> ", count: 120_000),
    ]

    @Test("hostile findings (markup, entities, quotes, control characters, line breaks, noncharacters, invalid UTF-8, 1 MB of text) give XML that parses back to the same text, and JSON that parses back exactly")
    func hostileText() throws {
        let log = ConformanceLog<MuxRule>()
        for (index, text) in Self.hostile.enumerated() {
            log.report(Self.finding(.invalidMetadata, call: "data " + text.prefix(200), detail: text, at: Int64(index)))
        }
        let report = log.export()
        let parsed = try JUnitReport(xml: report.junitXML)
        let failures = try #require(parsed.testCases.first { $0.name == "invalidMetadata" }).failures
        #expect(failures.count == Self.hostile.count)
        for (failure, text) in zip(failures, Self.hostile) {
            let detail = try #require(failure.text.range(of: "\ndetail: ")).upperBound
            #expect(String(failure.text[detail...]) == Self.shownInXML(text))
            #expect(failure.message.count <= ConformanceReport.maximumMessageLength)
            #expect(failure.message.hasPrefix("invalidMetadata broken by data "))
            #expect(failure.type == "invalidMetadata")
        }
        let json = try Self.json(report)
        let findings = try #require(json["findings"] as? [[String: Any]])
        #expect(findings.compactMap { $0["detail"] as? String } == Self.hostile)
        #expect(findings.compactMap { $0["call"] as? String } == Self.hostile.map { "data " + $0.prefix(200) })
    }

    @Test("the log counts calls beyond its capacity; the export says how many were recorded and dropped")
    func droppedCalls() throws {
        let log = ConformanceLog<NielsenRule>(capacity: 2)
        for index in 0..<5 { log.record(RecordedCall(name: "call\(index)", time: MonotonicInstant(nanoseconds: Int64(index)))) }
        let parsed = try JUnitReport(xml: log.export().junitXML)
        #expect(parsed.properties["recordedCalls"] == "5" && parsed.properties["droppedCalls"] == "3")
        #expect(log.origin == MonotonicInstant(nanoseconds: 0))
    }
}
