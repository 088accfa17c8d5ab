import ArgumentParser
import Playout
import PlayoutBench
@testable import PlayoutCLI
import PlayoutSender
import Testing

/// `playout bench playout-delay`'s command line, by parsing: the scenario it hands the library,
/// and one clear message for every hostile value.
@Suite("playout bench playout-delay: command line")
struct BenchCommandParsingTests {
    static func message(_ arguments: [String]) -> String? {
        TypedOptionTests.message(arguments)
    }

    @Test("the options become the library's scenario, the transition on every scheduled change")
    func scenario() throws {
        let command = try PlayoutDelayBenchCommand.parse([
            "--schedule", "2s@5s/5s,500ms@12s", "--playout-delay", "300ms", "--duration", "30s", "--repeat", "3",
            "--transition", "gradual:10%", "--csv", "out/frames.csv", "--plot", "out/bench.SVG", "--json", "--size", "320x240", "--fps", "25",
            "--loss", "1%", "--seed", "7",
        ])
        let scenario = command.scenario
        #expect(scenario.source == nil)
        #expect(scenario.playoutDelay == .milliseconds(300))
        #expect(scenario.schedule == [
            ScheduledOverride(delay: .seconds(2), at: .seconds(5), hold: .seconds(5), transition: .gradual(rate: 0.1)),
            ScheduledOverride(delay: .milliseconds(500), at: .seconds(12), transition: .gradual(rate: 0.1)),
        ])
        #expect(scenario.duration == .seconds(30) && scenario.runs == 3 && scenario.variesSeed)
        #expect(scenario.video.width == 320 && scenario.video.height == 240 && scenario.video.frameRate == 25)
        #expect(scenario.impairment.loss == 0.01 && scenario.impairment.seed == 7)
        #expect(command.csv?.path == "out/frames.csv" && command.plot?.path == "out/bench.SVG" && command.json)
        #expect(scenario.subscriberOptions.frameLogCapacity >= 30 * 400)
    }

    @Test("defaults: the built-in publisher, 230 ms, immediate, one run of 20 s, no schedule")
    func defaults() throws {
        let scenario = try PlayoutDelayBenchCommand.parse([]).scenario
        #expect(scenario.source == nil && scenario.playoutDelay == .milliseconds(230) && scenario.schedule.isEmpty)
        #expect(scenario.duration == .seconds(20) && scenario.runs == 1)
        let external = try PlayoutDelayBenchCommand.parse(["stream.sdp", "--same-seed", "--schedule", "1s@2s"]).scenario
        #expect(external.source == "stream.sdp" && !external.variesSeed)
        #expect(external.schedule == [ScheduledOverride(delay: .seconds(1), at: .seconds(2))])
        #expect(try PlayoutCommand.parseAsRoot(["bench", "playout-delay"]) is PlayoutDelayBenchCommand)
    }

    @Test("hostile values: one line naming the option, the value and what to type", arguments: [
        (["bench", "playout-delay", "--schedule", ""], "--schedule '': the schedule is empty; write DELAY@AT[/FOR] entries separated by commas"),
        (["bench", "playout-delay", "--schedule", "2s@5s,"], "--schedule 2s@5s,: entry 2 is empty"),
        (["bench", "playout-delay", "--schedule", ",2s@5s"], "--schedule ,2s@5s: entry 1 is empty"),
        (["bench", "playout-delay", "--schedule", "2s@5s,soon"], "--schedule 2s@5s,soon: entry 2 'soon': 'soon' is not an override"),
        (["bench", "playout-delay", "--schedule", "2s@5s/-1s"], "--schedule 2s@5s/-1s: entry 1 '2s@5s/-1s'"),
        (["bench", "playout-delay", "--schedule", "nan@1s"], "--schedule nan@1s: entry 1 'nan@1s'"),
        (["bench", "playout-delay", "--schedule", "1e400s@1s"], "--schedule 1e400s@1s: entry 1"),
        (["bench", "playout-delay", "--transition", "slow"], "--transition slow: write immediate or gradual:RATE, e.g. gradual:10%"),
        (["bench", "playout-delay", "--transition", "gradual:0%"], "--transition gradual:0%: a gradual transition's rate must be more than 0 %"),
        (["bench", "playout-delay", "--transition", "gradual:100%"], "--transition gradual:100%: a gradual transition's rate must be more than 0 % and at most 90 %"),
        (["bench", "playout-delay", "--transition", "gradual:nan"], "--transition gradual:nan:"),
        (["bench", "playout-delay", "--transition", ""], "--transition '': write immediate or gradual:RATE"),
        (["bench", "playout-delay", "--plot", "bench.png"], "--plot bench.png: the picture is an SVG file: name it PATH.svg, e.g. bench.svg"),
        (["bench", "playout-delay", "--plot", ".svg"], "--plot .svg: the picture is an SVG file"),
        (["bench", "playout-delay", "--plot", "out/"], "--plot out/: 'out/' names a directory; name a file in it, e.g. out/bench.svg"),
        (["bench", "playout-delay", "--plot", ""], "--plot '': the path is empty; name a file, e.g. bench.svg"),
        // Issue 26, item 8: `--x=` (an empty value after '=') is the parser's "Missing value"; it
        // gets the same message as `--x ''`.
        (["bench", "playout-delay", "--csv="], "--csv '': the path is empty; name a file, e.g. bench.csv"),
        (["bench", "playout-delay", "--csv", ""], "--csv '': the path is empty; name a file, e.g. bench.csv"),
        (["bench", "playout-delay", "--plot="], "--plot '': the path is empty; name a file, e.g. bench.svg"),
        (["bench", "playout-delay", "--schedule="], "--schedule '': the schedule is empty"),
        (["subscribe", "x.sdp", "--sink="], "--sink '': "),
        (["subscribe", "x.sdp", "--telemetry="], "--telemetry '': "),
        (["subscribe", "x.sdp", "--telemetry", "jsonl:a", "--tag="], "--tag '': a tag is KEY=VALUE"),
        (["subscribe", "x.sdp", "--duration="], "--duration '': "),
        (["publish", "testsrc", "--to", "127.0.0.1:5004", "--sdp="], "--sdp '': the path is empty; name a file, e.g. stream.sdp"),
        (["publish", "testsrc", "--to", "127.0.0.1:5004", "--sdp", ""], "--sdp '': the path is empty; name a file, e.g. stream.sdp"),
        (["publish", "testsrc", "--to", "127.0.0.1:5004", "--sdp", "/tmp/"], "--sdp /tmp/: '/tmp/' names a directory"),
        (["demo", "--port="], "--port= gives an empty value: write --port <port>"),
        (["bench", "playout-delay", "--csv", "a\u{0}b.csv"], "--csv a\u{0}b.csv: the path contains a control character"),
        (["bench", "playout-delay", "--csv", "a\nb.csv"], "--csv a\nb.csv: the path contains a control character"),
        (["bench", "playout-delay", "--csv", ".."], "--csv ..: '..' names a directory"),
        (["bench", "playout-delay", "--csv", "/tmp/"], "--csv /tmp/: '/tmp/' names a directory; name a file in it, e.g. /tmp/bench.csv"),
        (["bench", "playout-delay", "--playout-delay", "forever"], "--playout-delay forever: duration 'forever' is not a number with a unit"),
        (["bench", "playout-delay", "--duration", "-1s"], "--duration -1s: duration '-1s' is negative"),
    ])
    func unparsable(arguments: [String], expected: String) {
        let message = Self.message(arguments) ?? "(parsed)"
        #expect(message.hasPrefix(expected), "\(message)")
    }

    @Test("values out of range: validate() says what to type", arguments: [
        (["bench", "playout-delay", "--repeat", "0"], "--repeat 0: write a number of runs from 1 to 100, e.g. 3"),
        (["bench", "playout-delay", "--repeat", "101"], "--repeat 101: write a number of runs from 1 to 100"),
        (["bench", "playout-delay", "--repeat", "-3"], "--repeat -3: write a number of runs"),
        (["bench", "playout-delay", "--duration", "0s"], "--duration 0s: must be more than 0s and at most 1h"),
        (["bench", "playout-delay", "--duration", "2h"], "--duration 2h: must be more than 0s and at most 1h"),
        (["bench", "playout-delay", "--playout-delay", "31s"], "--playout-delay 31s: a delay must be at most 30s"),
        (["bench", "playout-delay", "--schedule", "45s@1s"], "--schedule 45s@1s: a delay must be at most 30s"),
        (["bench", "playout-delay", "--schedule", "1s@25s", "--duration", "20s"], "--schedule 1s@25s: it starts at or after the end of the run (--duration 20s)"),
        (["bench", "playout-delay", "--size", "100x100"], "--size 100x100: write WIDTHxHEIGHT with even numbers, at least 256x32"),
    ])
    func outOfRange(arguments: [String], expected: String) {
        let message = Self.message(arguments) ?? "(parsed)"
        #expect(message.hasPrefix(expected), "\(message)")
    }

    @Test("the edges are accepted", arguments: [
        ["bench", "playout-delay", "--repeat", "1"], ["bench", "playout-delay", "--repeat", "100"], ["bench", "playout-delay", "--duration", "1h"],
        ["bench", "playout-delay", "--transition", "gradual:90%"], ["bench", "playout-delay", "--transition", "gradual:0.5"],
        ["bench", "playout-delay", "--schedule", "0s@0s/0s,30s@19s"], ["bench", "playout-delay", "--plot", "a.svg", "--csv", "a"],
    ])
    func edges(arguments: [String]) {
        #expect(Self.message(arguments) == nil)
    }

    @Test("help shows defaults as typed and names every option", arguments: [
        ("--playout-delay <duration>", "(default: 230ms)"), ("--schedule <delay@at[/for],…>", "(default: none)"),
        ("--transition <immediate|gradual:rate>", "(default: immediate)"), ("--duration <duration>", "(default: 20s)"),
        ("--repeat <repeat>", "(default: 1)"), ("--csv <path>", "CSV"), ("--plot <path.svg>", "SVG"), ("--size <size>", "(default: 1280x720)"),
        ("--seed <seed>", "(default: 1)"), ("--same-seed", "same --seed"), ("--json", "JSON Lines"),
    ])
    func help(option: String, expected: String) {
        let line = HelpTextTests.line(option, in: HelpTextTests.help(PlayoutDelayBenchCommand.self))
        #expect(line.contains(expected), "\(line)")
    }
}
