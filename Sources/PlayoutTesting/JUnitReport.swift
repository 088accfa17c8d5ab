import Foundation
import FoundationXML

/// A JUnit XML document read back as a CI reads it — with Foundation's `XMLParser` (libxml2), so
/// a document that is not well-formed XML is an error, not a partial result. For tests and
/// samples that check a conformance report (`ConformanceReport.junitXML`, `playout …
/// --analytics-report`).
///
/// ```swift
/// let report = try JUnitReport(xml: String(decoding: data, as: UTF8.self))
/// #expect(report.failures == 0 && report.testCases.count == report.tests)
/// ```
public struct JUnitReport: Sendable {
    /// One `<failure>`.
    public struct Failure: Sendable, Hashable {
        /// Its `type` attribute.
        public var type: String
        /// Its `message` attribute.
        public var message: String
        /// Its text.
        public var text: String
    }

    /// One `<testcase>`.
    public struct TestCase: Sendable, Hashable {
        /// Its `classname`.
        public var classname: String
        /// Its `name`.
        public var name: String
        /// Its failures, in order.
        public var failures: [Failure]
    }

    /// The `<testsuites>` element's attributes.
    public var suitesAttributes: [String: String] = [:]
    /// The (last) `<testsuite>` element's attributes.
    public var suiteAttributes: [String: String] = [:]
    /// The `<property>` elements, by name.
    public var properties: [String: String] = [:]
    /// Every `<testcase>`, in order.
    public var testCases: [TestCase] = []

    /// The `<testsuite>`'s `tests` count (-1 when missing or not a number).
    public var tests: Int { Int(suiteAttributes["tests"] ?? "") ?? -1 }
    /// The `<testsuite>`'s `failures` count (-1 when missing or not a number).
    public var failures: Int { Int(suiteAttributes["failures"] ?? "") ?? -1 }

    /// Reads `xml`.
    ///
    /// - Throws: ``ParseError`` with libxml2's reason and position when it is not well-formed.
    public init(xml: String) throws(ParseError) {
        let collector = Collector()
        let parser = XMLParser(data: Data(xml.utf8))
        parser.delegate = collector
        guard parser.parse() else {
            throw ParseError(description: "not well-formed XML (\(parser.parserError.map { "\($0)" } ?? "?")) at line \(parser.lineNumber), column \(parser.columnNumber)")
        }
        self = collector.report
    }

    private init() {}

    /// Why a document could not be read.
    public struct ParseError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    private final class Collector: NSObject, XMLParserDelegate {
        var report = JUnitReport()
        private var text: String?

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            switch name {
            case "testsuites": report.suitesAttributes = attributes
            case "testsuite": report.suiteAttributes = attributes
            case "property": report.properties[attributes["name"] ?? ""] = attributes["value"] ?? ""
            case "testcase": report.testCases.append(TestCase(classname: attributes["classname"] ?? "", name: attributes["name"] ?? "", failures: []))
            case "failure" where !report.testCases.isEmpty:
                report.testCases[report.testCases.count - 1].failures.append(Failure(type: attributes["type"] ?? "", message: attributes["message"] ?? "", text: ""))
                text = ""
            default: break
            }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            text? += string
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            guard name == "failure", let text, let last = report.testCases.indices.last, !report.testCases[last].failures.isEmpty else { return }
            report.testCases[last].failures[report.testCases[last].failures.count - 1].text = text
            self.text = nil
        }
    }
}
