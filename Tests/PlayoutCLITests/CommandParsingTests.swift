import ArgumentParser
import Playout
@testable import PlayoutCLI
import PlayoutSender
import Testing

@Suite("playout command line")
struct CommandParsingTests {
    @Test("`playout version` parses to the version command")
    func versionCommand() throws {
        let command = try PlayoutCommand.parseAsRoot(["version"])
        #expect(command is VersionCommand)
    }

    @Test("an unknown subcommand is an error that names it")
    func unknownSubcommand() {
        #expect(throws: (any Error).self) { try PlayoutCommand.parseAsRoot(["frobnicate"]) }
        let message = PlayoutCommand.message(for: CleanExit.helpRequest())
        #expect(message.isEmpty || message.contains("playout"))
    }

    @Test("help lists the subcommands and the log-level variable")
    func help() {
        let help = PlayoutCommand.helpMessage()
        #expect(help.contains("version"))
        #expect(help.contains("PLAYOUT_LOG_LEVEL"))
    }

    @Test("fixed-point text as printf's %.Nf writes it", arguments: [
        (2.345, 1, "2.3"), (2.35, 0, "2"), (0.04, 1, "0.0"), (-0.04, 1, "0.0"), (-1.5, 2, "-1.50"),
        (1_234.5678, 2, "1234.57"), (0.001, 3, "0.001"), (Double.nan, 1, "nan"), (-Double.infinity, 1, "-inf"), (2.5, -1, "3"),
        (1e300, 2, "1e+300"),
    ])
    func fixedPoint(value: Double, digits: Int, expected: String) {
        #expect(fixed(value, digits) == expected)
    }
}

@Suite("--help shows defaults as a user types them")
struct HelpTextTests {
    /// The help of `command`, one option a line.
    static func help(_ command: any ParsableCommand.Type) -> String {
        PlayoutCommand.helpMessage(for: command, columns: 10_000)
    }

    /// The help of `option`: its line, and the next when the label fills the first.
    static func line(_ option: String, in help: String) -> String {
        let lines = help.split(separator: "\n").map { String($0.trimmingPrefix(while: \.isWhitespace)) }
        guard let index = lines.firstIndex(where: { $0 == option || $0.hasPrefix(option + " ") }) else { return "" }
        return lines[index] == option && index + 1 < lines.count ? option + " " + lines[index + 1] : lines[index]
    }

    @Test("subscribe", arguments: [
        ("--playout-delay <duration>", "(default: 230ms)"), ("--sink <sink>", "(default: null)"),
        ("--duration <duration>", "(default: until Ctrl-C)"), ("--qos-interval <duration>", "(default: 1s)"),
        ("--override <delay@at[/for]>", "DELAY@AT[/FOR]"), ("--srtp-key <base64>", "base64"), ("--json", "JSON Lines"),
        ("--no-feedback", "Stay silent"), ("--limit-bandwidth <rate@at[/for]>", "RATE@AT[/FOR]"), ("--no-decode", "as if it had decoded"),
    ])
    func subscribe(option: String, expected: String) {
        let line = Self.line(option, in: Self.help(SubscribeCommand.self))
        #expect(line.contains(expected), "\(line)")
    }

    @Test("demo", arguments: [
        ("--playout-delay <duration>", "(default: 230ms)"), ("--sink <sink>", "(default: null)"), ("--duration <duration>", "(default: 20s)"),
        ("--qos-interval <duration>", "(default: 1s)"), ("--port <port>", "(default: 47000)"), ("--codec <codec>", "default: h264"),
        ("--codec <codec>", "values: h264, vp8"), ("--size <size>", "(default: 1280x720)"), ("--fps <fps>", "(default: 30)"),
        ("--bitrate <bits/s>", "(default: 2.5M)"), ("--loss <percent>", "(default: 0%)"), ("--jitter <duration>", "(default: 0s)"),
        ("--reorder <percent>", "(default: 0%)"), ("--duplicate <percent>", "(default: 0%)"), ("--seed <seed>", "(default: 1)"),
        ("--no-rtx", "Answer NACKs with nothing"),
    ])
    func demo(option: String, expected: String) {
        let line = Self.line(option, in: Self.help(DemoCommand.self))
        #expect(line.contains(expected), "\(line)")
    }

    @Test("publish", arguments: [
        ("--to <host:port>", "HOST:PORT"), ("--duration <duration>", "(default: until Ctrl-C)"), ("--size <size>", "(default: 1280x720)"),
        ("--no-feedback", "no a=rtcp-fb, no RTX"), ("--no-rtx", "Answer NACKs with nothing"),
    ])
    func publish(option: String, expected: String) {
        let line = Self.line(option, in: Self.help(PublishCommand.self))
        #expect(line.contains(expected), "\(line)")
    }

    @Test("no help shows a Swift value instead of what to type", arguments: [
        SubscribeCommand.self as any ParsableCommand.Type, DemoCommand.self, PublishCommand.self, VersionCommand.self,
    ])
    func noSwiftValues(command: any ParsableCommand.Type) {
        let help = Self.help(command)
        for leak in ["Argument(", "Duration(", "seconds)", "SinkSpec", "Optional(", "SRTPKeyingMaterial", "RunLength", "limited("] {
            #expect(!help.contains(leak), "\(leak) in \(help)")
        }
    }

    @Test("every default a help shows parses back to itself")
    func defaultsRoundTrip() throws {
        #expect(try DurationArgument(parsing: DurationArgument(.milliseconds(230)).defaultValueDescription) == DurationArgument(.milliseconds(230)))
        #expect(try RunLength(parsing: RunLength.limited(.seconds(20)).defaultValueDescription) == .limited(.seconds(20)))
        for bits in [1, 999, 1_000, 2_500_000, 800_000, 1_234_567, 1_500_000_000, 1_000_000_000_000] {
            let text = BitRateArgument(bitsPerSecond: bits).defaultValueDescription
            #expect(try BitRateArgument(parsing: text).bitsPerSecond == bits, "\(bits) → \(text)")
        }
        #expect(BitRateArgument(bitsPerSecond: 2_500_000).defaultValueDescription == "2.5M")
        #expect(BitRateArgument(bitsPerSecond: 800_000).defaultValueDescription == "800k")
        for fraction in [0, 0.02, 0.015, 1] {
            let text = PercentageArgument(fraction: fraction).defaultValueDescription
            #expect(abs(try PercentageArgument(parsing: text).fraction - fraction) < 1e-12, "\(fraction) → \(text)")
        }
        #expect(try PictureSizeArgument(parsing: PictureSizeArgument(width: 1280, height: 720).defaultValueDescription) == .init(width: 1280, height: 720))
        #expect(try SinkArgument(parsing: SinkArgument(.y4m(path: "out.y4m")).defaultValueDescription) == SinkArgument(.y4m(path: "out.y4m")))
        #expect(try BurstLossArgument(parsing: "10%/8").defaultValueDescription == "10%/8")
        #expect(Duration.seconds(3_600).typedDescription == "1h" && Duration.seconds(120).typedDescription == "2m" && Duration.milliseconds(1_500).typedDescription == "1.5s")
    }
}

@Suite("typed options")
struct TypedOptionTests {
    @Test("subscribe parses into the library's types and passes them straight on")
    func subscribe() throws {
        let key = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
        let command = try SubscribeCommand.parse([
            "stream.sdp", "--playout-delay", "1.5s", "--override", "2s@5s/10s", "--override", "500ms@12s", "--sink", "file:out.y4m",
            "--duration", "30s", "--qos-interval", "500ms", "--json", "--srtp-key", key.base64,
        ])
        let options = command.subscription.subscriberOptions(srtpKey: command.srtpKey?.keyingMaterial)
        #expect(options.playoutDelay.delay == .milliseconds(1_500))
        #expect(options.overrides == [.init(delay: .seconds(2), at: .seconds(5), hold: .seconds(10)), .init(delay: .milliseconds(500), at: .seconds(12))])
        #expect(options.duration == .seconds(30))
        #expect(options.qosInterval == .milliseconds(500))
        #expect(options.srtpKey == key)
        #expect(command.subscription.sink.spec == .y4m(path: "out.y4m"))
        #expect(command.subscription.json)
    }

    @Test("subscribe's defaults are the library's")
    func subscribeDefaults() throws {
        let command = try SubscribeCommand.parse(["stream.sdp"])
        let options = command.subscription.subscriberOptions()
        let library = Subscriber.Options()
        #expect(options.playoutDelay == library.playoutDelay)
        #expect(options.duration == nil)
        #expect(options.qosInterval == library.qosInterval)
        #expect(options.srtpKey == nil && options.overrides.isEmpty)
        #expect(command.subscription.sink.spec == .null)
    }

    @Test("demo shares the subscription options, with 20 s by default")
    func demo() throws {
        let command = try DemoCommand.parse(["--override", "2s@5s/5s", "--loss", "2%", "--bitrate", "800k", "--codec", "VP8", "--size", "640x360"])
        #expect(command.subscription.subscriberOptions().duration == .seconds(20))
        #expect(command.subscription.overrides.map(\.override) == [.init(delay: .seconds(2), at: .seconds(5), hold: .seconds(5))])
        #expect(command.network.configuration().loss == 0.02)
        let video = command.video.settings()
        #expect(video.codec == .vp8 && video.width == 640 && video.height == 360 && video.bitrate == 800_000)
        #expect(try DemoCommand.parse(["--duration", "3s"]).subscription.subscriberOptions().duration == .seconds(3))
    }

    @Test("decoding is on by default; --no-decode turns it off, on subscribe and demo")
    func decoding() throws {
        #expect(try SubscribeCommand.parse(["stream.sdp"]).subscription.subscriberOptions().decoding)
        #expect(try !SubscribeCommand.parse(["stream.sdp", "--no-decode"]).subscription.subscriberOptions().decoding)
        #expect(try !DemoCommand.parse(["--no-decode"]).subscription.subscriberOptions().decoding)
    }

    @Test("feedback is on by default; --no-feedback silences it; --limit-bandwidth takes the --override timetable, on subscribe and demo")
    func feedback() throws {
        #expect(try SubscribeCommand.parse(["stream.sdp"]).subscription.subscriberOptions().feedback)
        #expect(try SubscribeCommand.parse(["stream.sdp"]).subscription.subscriberOptions().bandwidthLimits.isEmpty)
        #expect(try !SubscribeCommand.parse(["stream.sdp", "--no-feedback"]).subscription.subscriberOptions().feedback)
        let subscribe = try SubscribeCommand.parse(["stream.sdp", "--limit-bandwidth", "1M@5s/10s", "--limit-bandwidth", "800k@2s"])
        #expect(subscribe.subscription.subscriberOptions().bandwidthLimits == [
            .init(bitsPerSecond: 1_000_000, at: .seconds(5), hold: .seconds(10)), .init(bitsPerSecond: 800_000, at: .seconds(2)),
        ])
        let demo = try DemoCommand.parse(["--limit-bandwidth", "2.5M@1s"])
        #expect(demo.subscription.subscriberOptions().bandwidthLimits == [.init(bitsPerSecond: 2_500_000, at: .seconds(1))])
        #expect(demo.subscription.limitBandwidth.first?.defaultValueDescription == "2.5M@1s")
    }

    @Test("publish parses its destination, key and network")
    func publish() throws {
        let key = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
        let command = try PublishCommand.parse(["testsrc", "--to", "[::1]:5004", "--srtp-key", "inline:" + key.base64, "--burst-loss", "10%/8", "--bandwidth", "2M", "--jitter", "20ms"])
        let options = command.options()
        #expect(options.destination == (try SocketAddress(host: "::1", port: 5_004)))
        #expect(options.keyingMaterial == key)
        #expect(options.impairment.burstLoss == .init(rate: 0.1, meanBurstLength: 8))
        #expect(options.impairment.bandwidth == 2_000_000)
        #expect(options.impairment.jitter == .milliseconds(20))
        #expect(options.duration == nil)
        #expect(try PublishCommand.parse(["testsrc", "--to", "127.0.0.1:5004", "--srtp"]).options().keyingMaterial?.suite == .aesCM128HMACSHA1_80)
        #expect(try PublishCommand.parse(["testsrc", "--to", "127.0.0.1:5004"]).options().keyingMaterial == nil)
    }

    /// The one-line message a user would see for `arguments` (parsed as `main` parses them).
    static func message(_ arguments: [String]) -> String? {
        do {
            _ = try PlayoutCommand.parse(arguments)
            return nil
        } catch {
            return PlayoutCommand.userMessage(for: error, arguments: arguments)
        }
    }

    @Test("a value that does not parse: the option, the value, and what to type", arguments: [
        (["subscribe", "x.sdp", "--playout-delay", "forever"], "--playout-delay forever: duration 'forever' is not a number with a unit, e.g. 230ms or 1.5s"),
        (["subscribe", "x.sdp", "--duration", "30"], "--duration 30: duration '30' has no unit: write 30ms or 30s"),
        (["subscribe", "x.sdp", "--override", "soon"], "--override soon: 'soon' is not an override: write DELAY@AT[/FOR]"),
        (["subscribe", "x.sdp", "--limit-bandwidth", "fast@1s"], "--limit-bandwidth fast@1s: 'fast@1s' is not a bandwidth limit: RATE 'fast' is not 1 to 1T bits per second; write RATE@AT[/FOR], e.g. 1M@5s/10s"),
        (["demo", "--limit-bandwidth", "1M"], "--limit-bandwidth 1M: '1M' is not a bandwidth limit: write RATE@AT[/FOR]"),
        (["demo", "--limit-bandwidth", "1M@soon"], "--limit-bandwidth 1M@soon: '1M@soon' is not a bandwidth limit: AT 'soon' is not a duration ≥ 0"),
        (["demo", "--limit-bandwidth", "1M@1s", "--no-feedback"], "--limit-bandwidth 1M@1s is told to the sender as feedback: drop --no-feedback or the limit"),
        (["subscribe", "x.sdp", "--sink", "ftp:out"], "--sink ftp:out: unknown sink 'ftp:out': use null or file:PATH, e.g. file:out.y4m"),
        (["subscribe", "x.sdp", "--sink", "file:"], "--sink file:: sink 'file:' needs a path after file:, e.g. file:out.y4m"),
        (["demo", "--loss", "150%"], "--loss 150%: '150%' is not between 0% and 100%"),
        (["demo", "--burst-loss", "10%"], "--burst-loss 10%: write RATE/MEAN-BURST-LENGTH, e.g. 10%/8"),
        (["demo", "--bandwidth", "fast"], "--bandwidth fast: write bits per second from 1 to 1T"),
        (["demo", "--codec", "mpeg2"], "--codec mpeg2: the test pattern is encoded as h264 or vp8"),
        (["demo", "--size", "big"], "--size big: write WIDTHxHEIGHT, e.g. 1280x720"),
        (["publish", "testsrc", "--to", "nowhere"], "--to nowhere: 'nowhere' is not HOST:PORT, e.g. 127.0.0.1:5004"),
        // Issue 14, items 6 and 9: durations the clock cannot hold, and a negative one.
        (["subscribe", "x.sdp", "--duration=9223370362s"], "--duration 9223370362s: duration '9223370362s' is too large: at most 3155760000s (100 years)"),
        (["subscribe", "x.sdp", "--qos-interval=9223372000s"], "--qos-interval 9223372000s: duration '9223372000s' is too large: at most 3155760000s"),
        (["subscribe", "x.sdp", "--duration", "-1s"], "--duration -1s: duration '-1s' is negative"),
        (["subscribe", "x.sdp", "--playout-delay", "-5ms"], "--playout-delay -5ms: duration '-5ms' is negative"),
    ])
    func unparsable(arguments: [String], expected: String) {
        let message = Self.message(arguments) ?? "(parsed)"
        #expect(message.hasPrefix(expected), "\(message)")
    }

    @Test("a value out of range: validate() names the option and what to type", arguments: [
        (["subscribe", "x.sdp", "--qos-interval", "0s"], "--qos-interval 0s: must be more than 0s, e.g. 1s"),
        (["subscribe", "x.sdp", "--duration", "0ms"], "--duration 0ms: must be more than 0s, e.g. 30s"),
        (["subscribe", "x.sdp", "--playout-delay", "1m"], "--playout-delay 1m: a delay must be at most 30s"),
        (["subscribe", "x.sdp", "--override", "45s@1s"], "--override 45s@1s: a delay must be at most 30s"),
        (["demo", "--port", "0"], "--port 0: video goes to PORT, audio to PORT+2, and RTCP to PORT+1 and PORT+3, so PORT must be from 1 to 65532, e.g. 47000"),
        (["demo", "--port", "65533"], "--port 65533: video goes to PORT"),
        (["publish", "testsrc", "--to", "127.0.0.1:0"], "--to 127.0.0.1:0: video goes to PORT, audio to PORT+2, and RTCP to PORT+1 and PORT+3, so PORT must be from 1 to 65532, e.g. 127.0.0.1:5004"),
        (["publish", "testsrc", "--to", "127.0.0.1:5004", "--duration", "0s"], "--duration 0s: must be more than 0s"),
        (["demo", "--jitter", "2h"], "--jitter 2h: must be at most 1h, e.g. 30ms"),
        (["demo", "--burst-loss", "80%/2"], "--burst-loss 80%/2: a loss rate of 80% needs bursts of at least 4 packets on average"),
        (["demo", "--size", "1281x720"], "--size 1281x720: write WIDTHxHEIGHT with even numbers, at least 256x32"),
        (["demo", "--fps", "0"], "--fps 0: write a frame rate from 1 to 120"),
        (["demo", "--bitrate", "2"], "--bitrate 2: write 10k or more"),
    ])
    func outOfRange(arguments: [String], expected: String) {
        let message = Self.message(arguments) ?? "(parsed)"
        #expect(message.hasPrefix(expected), "\(message)")
        #expect(!message.contains("NetworkImpairment") && !message.contains("Publisher.Options"), "the command line speaks of its options: \(message)")
    }

    @Test("the edges of every range are accepted", arguments: [
        ["demo", "--port", "1"], ["demo", "--port", "65532"], ["demo", "--loss", "100%", "--reorder", "0.5", "--duplicate", "1"],
        ["demo", "--burst-loss", "80%/4"], ["demo", "--jitter", "1h"], ["demo", "--size", "256x32", "--fps", "120", "--bitrate", "10k"],
        ["subscribe", "x", "--playout-delay", "30s", "--override", "0s@0s/0s", "--qos-interval", "1ns"],
    ])
    func edges(arguments: [String]) {
        #expect(Self.message(arguments) == nil)
    }
}

@Suite("hostile option values: a clear error, never a trap")
struct HostileOptionTests {
    static let everywhere = ["", " ", "\u{0}", "ñ", "🙂", "-1", "nan", "inf", "1e400", "99999999999999999999", String(repeating: "9", count: 10_000), "'", "<x>"]

    @Test("durations", arguments: everywhere + ["-1s", "1e400s", "99999999999999999999s", "1.2.3s", "s", "1 parsec"])
    func durations(text: String) {
        #expect(DurationArgument(argument: text) == nil)
        #expect(RunLength(argument: text) == nil)
    }

    @Test("percentages", arguments: everywhere + ["150%", "-1%", "%", "2", "1e400%", "nan%"])
    func percentages(text: String) {
        #expect(PercentageArgument(argument: text) == nil)
    }

    @Test("bit rates", arguments: everywhere + ["0", "-5M", "M", "nanM", "99999999999999999999G", "1e3", "2MM", "0.1"])
    func bitRates(text: String) {
        #expect(BitRateArgument(argument: text) == nil)
    }

    @Test("burst loss", arguments: everywhere + ["10%", "10%/", "10%/nan", "10%/1e400", "10%/0", "10%/-3", "/8", "10%/8/2", "100%/8", "10%/inf"])
    func burstLoss(text: String) {
        #expect(BurstLossArgument(argument: text) == nil)
    }

    @Test("picture sizes", arguments: everywhere + ["1280", "x", "99999999999999999999x720", "0x0", "-2x4", "1e3x5", "1280x720x3", "1280X720", " 1280x720"])
    func sizes(text: String) {
        #expect(PictureSizeArgument(argument: text) == nil)
    }

    @Test("codecs, sinks, overrides and destinations", arguments: everywhere + ["mpeg2", "file", "file:", "file:out.txt", "@", "2s@", "[::1", "1.2.3.4:99999", "localhost:5004"])
    func others(text: String) {
        #expect(VideoCodecArgument(argument: text) == nil)
        #expect(SinkArgument(argument: text) == nil)
        #expect(OverrideArgument(argument: text) == nil)
        #expect(DestinationArgument(argument: text) == nil)
    }

    @Test("SRTP keys: the character named as typed, the key never repeated", arguments: [
        ("abñc", "'ñ' (character 3) is not base64"), ("n\u{303}AAA", "'ñ' (character 1) is not base64"),
        ("AAAA🙂", "'🙂' (character 5)"), ("AB\tCD", "U+0009 (character 3)"), ("AB CD", "U+0020 (character 3)"),
        ("AB\u{0}CD", "U+0000 (character 3)"), ("inline:AB!D", "'!' (character 10)"), ("AB=CD", "padding '=' at offset 2"),
        ("", "must be 30 bytes (16 key + 14 salt), got 0"), ("QUJD", "got 3"), ("inline:", "got 0"),
        ("inline:QUJD|2^20|1:4", "MKI"), (String(repeating: "A", count: 10_000), "got 7500"), ("A", "1 characters cannot encode whole bytes"),
    ])
    func srtpKeys(text: String, expected: String) {
        #expect(SRTPKeyArgument(argument: text) == nil)
        let reason = SRTPKeyArgument.reason(rejecting: text) ?? "(parsed)"
        #expect(reason.contains(expected), "\(reason)")
        #expect(reason.contains("head -c 30 /dev/urandom | base64") || reason.contains("MKI"), "\(reason)")
        #expect(!reason.contains("Ã"), "no mojibake: \(reason)")
        let message = TypedOptionTests.message(["subscribe", "x.sdp", "--srtp-key", text]) ?? ""
        #expect(message.hasPrefix("--srtp-key: "), "\(message)")
        if text.count > 4 { #expect(!message.contains(text), "the key is not repeated: \(message)") }
    }

    @Test("swift-argument-parser's message is read back exactly, also with quotes in the value")
    func readsParserMessage() {
        let parsed = PlayoutCommand.invalidValue(in: "The value 'it's' is invalid for '--sink <sink>'")
        #expect(parsed?.option == "--sink" && parsed?.valueName == "sink" && parsed?.value == "it's")
        #expect(PlayoutCommand.invalidValue(in: "The value 'h' is invalid for '--codec <codec>'. Please provide one of 'h264' and 'vp8'.")?.valueName == "codec")
        #expect(PlayoutCommand.invalidValue(in: "Missing expected argument '<source>'") == nil)
        #expect(PlayoutCommand.invalidValue(in: "The value 'x' is invalid for '<source>'") == nil)
    }

    @Test("value names are unique, except types that parse alike")
    func valueNames() {
        var seen: [String: String] = [:]
        for type in PlayoutCommand.argumentValueTypes {
            let name = "\(type)"
            if let other = seen[type.valueName] {
                #expect(Set([other, name]) == ["DurationArgument", "RunLength"], "\(other) and \(name) share \(type.valueName)")
            }
            seen[type.valueName] = name
        }
    }
}

/// Issue 26, item 8: negative values, the T unit, repeated options, and what publish shows.
@Suite("issue 26: option values and repetitions")
struct Issue26OptionTests {
    @Test("a negative value reaches its option's parser and gets its reason (not 'Missing value')", arguments: [
        (["publish", "testsrc", "--to", "127.0.0.1:5004", "--bitrate", "-1M"], "--bitrate -1M: a bit rate cannot be negative"),
        (["demo", "--bandwidth", "-5k"], "--bandwidth -5k: a bit rate cannot be negative"),
        (["subscribe", "x.sdp", "--override", "-1s@1s"], "--override -1s@1s: '-1s@1s' is not an override: DELAY '-1s' is not a duration ≥ 0"),
        (["subscribe", "x.sdp", "--limit-bandwidth", "-1M@1s"], "--limit-bandwidth -1M@1s: '-1M@1s' is not a bandwidth limit"),
        (["demo", "--loss", "-2%"], "--loss -2%:"),
        (["demo", "--jitter", "-20ms"], "--jitter -20ms: duration '-20ms' is negative"),
    ])
    func negative(arguments: [String], expected: String) {
        let message = TypedOptionTests.message(arguments) ?? "(parsed)"
        #expect(message.hasPrefix(expected), "\(message)")
        #expect(!message.contains("Missing value"))
    }

    @Test("1T, the largest rate the messages name, is accepted")
    func terabit() throws {
        let demo = try DemoCommand.parse(["--bandwidth", "1T"])
        #expect(demo.network.configuration().bandwidth == 1_000_000_000_000)
        #expect(TypedOptionTests.message(["demo", "--bandwidth", "2T"])?.contains("from 1 to 1T") == true)
    }

    @Test("an option that is not repeatable, given more than 256 times, is refused before parsing (swift-argument-parser is quadratic in repetitions)")
    func repetitions() throws {
        let many = (0..<300).flatMap { _ in ["--duration", "1s"] }
        do {
            _ = try PlayoutCommand.parse(["subscribe", "x.sdp"] + many)
            Issue.record("parsed")
        } catch {
            #expect("\(error)".contains("--duration is given 300 times: at most 256"))
        }
        try PlayoutCommand.checkRepetitions(["subscribe", "x.sdp"] + (0..<256).flatMap { ["--duration=\($0)s"] })
        // After `--`, arguments are not options.
        try PlayoutCommand.checkRepetitions(["--"] + many)
    }
}
