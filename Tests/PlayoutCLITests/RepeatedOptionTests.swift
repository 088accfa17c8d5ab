import ArgumentParser
import Foundation
import Playout
@testable import PlayoutCLI
import Testing

/// Issue 26, item 8: repeatable options parse in linear time, with no limit on their count, and
/// every message stays the parser's own.
@Suite("repeatable options: collected in one pass before parsing")
struct RepeatedOptionTests {
    /// The one-line message a user would see for `arguments`, through the entry point `main` uses.
    static func message(_ arguments: [String]) -> String? {
        do {
            _ = try PlayoutCommand.parse(arguments)
            return nil
        } catch {
            return PlayoutCommand.userMessage(for: error)
        }
    }

    /// The message swift-argument-parser gives for `arguments` with no scan before it.
    static func parserMessage(_ arguments: [String]) -> String? {
        do {
            _ = try PlayoutCommand.parseAsRoot(arguments)
            return nil
        } catch {
            return PlayoutCommand.userMessage(for: error)
        }
    }

    @Test("20,000 --tags (both spellings) and 2,000 --overrides all arrive, in order, through the command's parse entry")
    func many() throws {
        let tags = (0..<20_000).flatMap { $0.isMultiple(of: 2) ? ["--tag", "k\($0)=v\($0)"] : ["--tag=k\($0)=v\($0)"] }
        let overrides = (0..<2_000).flatMap { ["--override", "\($0 % 5)s@\($0)s"] }
        let parsed = try PlayoutCommand.parse(["subscribe", "x.sdp", "--telemetry", "jsonl:a.jsonl"] + tags + overrides + ["--telemetry=jsonl:b.jsonl"])
        let command = try #require(parsed as? SubscribeCommand)
        #expect(command.subscription.tag.count == 20_000)
        #expect(command.subscription.tag.map(\.key) == (0..<20_000).map { "k\($0)" })
        #expect(command.subscription.tag.last?.value == "v19999")
        #expect(command.subscription.overrides.map(\.override) == (0..<2_000).map { ScheduledOverride(delay: .seconds($0 % 5), at: .seconds($0)) })
        #expect(command.subscription.telemetry.map(\.text) == ["jsonl:a.jsonl", "jsonl:b.jsonl"])
        #expect(command.source == "x.sdp")
    }

    @Test("demo takes them too; a single occurrence is the parser's alone")
    func demo() throws {
        let parsed = try PlayoutCommand.parse(["demo", "--limit-bandwidth", "1M@1s", "--loss", "1%", "--limit-bandwidth=2M@2s", "--tag", "a=1", "--telemetry", "jsonl:x"])
        let demo = try #require(parsed as? DemoCommand)
        #expect(demo.subscription.limitBandwidth.map(\.defaultValueDescription) == ["1M@1s", "2M@2s"])
        #expect(demo.subscription.tag.map(\.key) == ["a"])
    }

    @Test("a later repetition whose value is missing or refused gets the parser's own message, word for word", arguments: [
        ["subscribe", "x.sdp", "--telemetry", "jsonl:x", "--tag", "a=1", "--tag", "b"],
        ["subscribe", "x.sdp", "--telemetry", "jsonl:x", "--tag", "a=1", "--tag"],
        ["subscribe", "x.sdp", "--telemetry", "jsonl:x", "--tag", "a=1", "--tag", "--json"],
        ["subscribe", "x.sdp", "--telemetry", "jsonl:x", "--tag", "a=1", "--tag="],
        ["subscribe", "x.sdp", "--telemetry", "jsonl:x", "--tag", "a=1", "--tag=\u{7}=x"],
        ["subscribe", "x.sdp", "--override", "1s@1s", "--override", "-1s@1s"],
        ["subscribe", "x.sdp", "--override", "1s@1s", "--override"],
        ["subscribe", "x.sdp", "--telemetry", "jsonl:x", "--telemetry", "ftp:x"],
        ["demo", "--limit-bandwidth", "1M@1s", "--limit-bandwidth", "fast@1s"],
        ["subscribe", "x.sdp", "--tag", "a=1", "--tag", "b=2"],  // --tag needs --telemetry
        ["subscribe", "x.sdp", "--telemetry", "jsonl:x", "--tag", "a=1", "--tag", "a=2"],  // a key twice
        ["subscribe", "x.sdp", "--telemetry", "jsonl:x", "--tag", "a=1", "--frobnicate", "--tag", "b=2"],
        ["subscribe", "x.sdp", "--telemetry", "jsonl:x", "--tag", "a=1", "--duration", "--tag", "b=2"],  // --tag is --duration's value
        ["subscribe", "x.sdp", "--override", "1s@1s", "--playout-delay", "--override", "2s@2s"],
        ["demo", "--tag", "a=1", "--telemetry", "jsonl:x", "--loss", "--tag", "b=2"],
        ["subscribe", "--telemetry", "jsonl:x", "--tag", "a=1", "--tag", "b=2"],  // no source
    ])
    func sameMessages(arguments: [String]) {
        let ours = Self.message(arguments)
        #expect(ours != nil, "parsed")
        #expect(ours == Self.parserMessage(arguments))
    }

    @Test("after `--` nothing is an option: `--tag` there is the source, as the parser reads it")
    func terminator() throws {
        let arguments = ["subscribe", "--telemetry", "jsonl:x", "--tag", "a=1", "--tag", "b=2", "--", "--tag"]
        let command = try #require(try PlayoutCommand.parse(arguments) as? SubscribeCommand)
        #expect(command.source == "--tag")
        #expect(command.subscription.tag.map(\.key) == ["a", "b"])
        let scan = RepeatedOptionScan(Array(arguments.dropFirst()), options: SubscribeCommand.repeatedOptions, unconditional: SubscribeCommand.unconditionalOptions)
        #expect(scan.arguments == ["--telemetry", "jsonl:x", "--tag", "a=1", "--", "--tag"])
    }

    @Test("the scan keeps the first occurrence in place and the value of an option that takes anything")
    func scan() {
        let scan = RepeatedOptionScan(
            ["x.sdp", "--duration", "--tag", "--tag", "a=1", "--json", "--tag=b=2", "--tag", "c=3"],
            options: SubscribeCommand.repeatedOptions, unconditional: SubscribeCommand.unconditionalOptions)
        #expect(scan.arguments == ["x.sdp", "--duration", "--tag", "--tag", "a=1", "--json"])
        #expect(scan.values == ["--tag": ["a=1", "b=2", "c=3"]])
        let once = RepeatedOptionScan(["--tag", "a=1", "--override", "1s@1s"], options: SubscribeCommand.repeatedOptions, unconditional: [])
        #expect(once.values.isEmpty && once.arguments == ["--tag", "a=1", "--override", "1s@1s"])
    }

    /// The options of `command` as swift-argument-parser describes them (its help dump).
    static func options(of command: any ParsableCommand.Type) throws -> [(names: [String], repeating: Bool, unconditional: Bool)] {
        let dump = try #require(try JSONSerialization.jsonObject(with: Data(command._dumpHelp().utf8)) as? [String: Any])
        let root = try #require(dump["command"] as? [String: Any])
        let arguments = root["arguments"] as? [[String: Any]] ?? []
        return arguments.filter { $0["kind"] as? String == "option" }.map { argument in
            let names = (argument["names"] as? [[String: Any]] ?? []).compactMap { name -> String? in
                guard name["kind"] as? String == "long", let text = name["name"] as? String else { return nil }
                return "--" + text
            }
            let strategy = argument["parsingStrategy"] as? String ?? ""
            return (names, argument["isRepeating"] as? Bool ?? false, strategy.hasPrefix("unconditional"))
        }
    }

    @Test("the scan's tables are the commands' own: every repeatable option and every option that takes any value", arguments: [
        SubscribeCommand.self as any ReceivesRepeatedOptions.Type, DemoCommand.self,
    ])
    func tables(command: any ReceivesRepeatedOptions.Type) throws {
        let options = try Self.options(of: command)
        #expect(!options.isEmpty)
        let repeating = Set(options.filter(\.repeating).flatMap(\.names))
        #expect(repeating == Set(command.repeatedOptions.map(\.name)))
        let unconditional = Set(options.filter { $0.unconditional && !$0.repeating }.flatMap(\.names))
        #expect(unconditional == command.unconditionalOptions)
        for option in command.repeatedOptions {
            #expect(options.first { $0.names.contains(option.name) }?.unconditional == option.unconditional, "\(option.name)")
        }
    }
}
