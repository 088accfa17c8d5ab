import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Telemetry JSON Lines: the file backend, replay with identical KPIs, hostile input")
struct TelemetryJSONLinesTests {
    static func temporaryPath() -> String {
        "/tmp/playout-telemetry-\(getpid())-\(UInt64.random(in: 0 ... .max)).jsonl"
    }

    static let hostileStrings = ["plain", "quote \" backslash \\ slash /", "line\nbreak\r\ttab", "nul \u{0} bell \u{7} del \u{7F}",
                                 "emoji 🎬 ñ 中", "separators \u{2028}\u{2029}", "", "{\"json\":1}"]

    @Test("a record written and read back is equal: hostile strings, integers at the limits, reals exact")
    func roundTrip() throws {
        var fields: [TelemetryField] = [
            TelemetryField("min", .int(.min)), TelemetryField("max", .int(.max)), TelemetryField("zero", .int(0)),
            TelemetryField("tenth", .double(0.1)), TelemetryField("tiny", .double(1e-5)), TelemetryField("whole", .double(5)),
            TelemetryField("huge", .double(1e300)), TelemetryField("negative", .double(-2.5)), TelemetryField("yes", .bool(true)),
            TelemetryField("no", .bool(false)),
        ]
        for (index, text) in Self.hostileStrings.enumerated() { fields.append(TelemetryField("s\(index) \(text)", .string(text))) }
        let record = TelemetryRecord(
            sessionId: "id \"quoted\"\n", seq: 42, monotonic: .nanoseconds(123_456_789_012), wallTimeNanoseconds: -5,
            kind: .heartbeat, name: "heart\\beat", fields: fields, tags: [TelemetryField("run", .string("r\"1"))])
        let line = TelemetryJSONLines.line(for: record)
        #expect(!line.contains("\n"))
        #expect(try TelemetryJSONLines.record(from: line[...]) == record)
        #expect(line.contains("\"whole\":5.0"))
        #expect(line.contains("\"zero\":0,"))
    }

    @Test("a non-finite real is written as null and read back as a missing field")
    func nonFinite() throws {
        let record = TelemetryRecord(sessionId: "s", seq: 0, monotonic: .zero, wallTimeNanoseconds: 0, kind: .metric, name: "m",
                                     fields: [TelemetryField("value", .double(.nan)), TelemetryField("inf", .double(.infinity))])
        let line = TelemetryJSONLines.line(for: record)
        #expect(line.contains("\"value\":null,\"inf\":null"))
        #expect(try TelemetryJSONLines.record(from: line[...]).fields.isEmpty)
    }

    @Test("replaying a JSON Lines file recomputes exactly the KPIs computed live")
    func replayIdentical() throws {
        let path = Self.temporaryPath()
        defer { unlink(path) }
        let clock = ManualClock()
        let memory = InMemoryTelemetryBackend()
        let file = try JSONLinesTelemetryBackend(path: path)
        let instrument = try TelemetryInstrument(
            backends: [memory, file],
            configuration: .init(hub: .init(heartbeatInterval: .seconds(10)), delivery: .init(linger: .zero),
                                 tags: [TelemetryField("run", .string("replay"))], engineId: "e"),
            clock: clock, wallClockNanoseconds: 1_000, driver: .embedded)
        let tracker = instrument.makeTracker(name: "player")
        tracker.setHeartbeatProvider { [TelemetryField("framesRendered", .int(300)), TelemetryField("framesDropped", .int(7)),
                                        TelemetryField("endToEndLatency", .double(0.2613))] }
        tracker.ready()
        clock.advance(by: .milliseconds(120))
        tracker.emit(.playerReady)
        tracker.emit(.play)
        tracker.emit(.renditionChange(bitrate: 2_500_000, width: 1280, height: 720))
        tracker.emit(.playoutDelayChange(delay: .milliseconds(230), requested: false))
        clock.advance(by: .milliseconds(733))
        tracker.emit(.playing)
        #expect(instrument.flush())
        clock.advance(by: .seconds(10))
        #expect(instrument.flush())
        tracker.emit(.rebufferStart(.network))
        clock.advance(by: .milliseconds(1_337))
        tracker.emit(.rebufferEnd)
        tracker.emit(.playoutDelayChange(delay: .seconds(2), requested: true))
        tracker.emit(.rebufferStart(.playoutDelayIncrease))
        clock.advance(by: .milliseconds(1_770))
        tracker.emit(.rebufferEnd)
        clock.advance(by: .seconds(3))
        tracker.emit(.freezeEnd(duration: .milliseconds(433)))
        tracker.emit(.action("adclick", [TelemetryField("ad", .string("a \"1\""))]))
        tracker.emit(.metric("buffer", .double(1.25)))
        clock.advance(by: .seconds(7))
        let report = instrument.shutdown(timeout: .seconds(2))
        #expect(report.isComplete)

        let replay = try TelemetryReplay(contentsOfFile: path)
        #expect(replay.skippedCount == 0)
        #expect(replay.records == memory.records)
        #expect(replay.records.count > 12)
        #expect(replay.kpis == memory.kpis())
        #expect(replay.kpis == report.kpis)
        let kpis = try #require(replay.kpis["e-0-1"])
        #expect(kpis.rebufferCount == 1)
        #expect(kpis.videoStartupTime == .milliseconds(733))
        #expect(kpis.endToEndLatency?.p50 == .microseconds(261_300))
    }

    @Test("hostile lines are counted and skipped with their line number and reason, never a crash", arguments: [
        ("{\"type\":\"telemetry\",\"schema\":1,\"session\":\"s\",\"seq\":0,\"monotonicNs\":0,\"wall", "the line ends inside a string"),
        ("garbage", "not JSON: unexpected 'g'"),
        ("[1,2,3]", "not a JSON object"),
        ("{\"type\":\"qos\",\"t\":1.0}", "not a telemetry record (type \"qos\")"),
        ("{\"type\":\"telemetry\",\"schema\":99}", "schema 99 is not one this version reads"),
        ("{\"type\":\"telemetry\",\"schema\":1,\"session\":\"s\",\"seq\":-1}", "\"seq\" is not a non-negative integer"),
        ("{\"type\":\"telemetry\",\"schema\":1,\"session\":\"s\",\"seq\":0,\"monotonicNs\":1.5}", "\"monotonicNs\" is not an integer"),
        (String(repeating: "[", count: 100_000), "nested deeper than 16 levels"),
        ("{\"a\":\"\\ud800\"}", "lone UTF-16 surrogate"),
        ("{\"a\":1e999}", "is not a number"),
        ("{\"a\":\"tab\there\"}", "control character"),
        ("{\"a\":1}}", "unexpected '}' after the value"),
        ("{\"a\" 1}", "expected ':' after key"),
        ("{\"type\":\"telemetry\",\"schema\":1,\"session\":\"s\",\"seq\":0,\"monotonicNs\":0,\"wallTimeNs\":0,\"kind\":\"bogus\",\"name\":\"x\"}", "\"kind\" \"bogus\""),
        ("{\"type\":\"telemetry\",\"schema\":1,\"session\":\"s\",\"seq\":0,\"monotonicNs\":0,\"wallTimeNs\":0,\"kind\":\"event\",\"name\":\"x\",\"fields\":{\"a\":[1]}}", "\"fields\".\"a\" is not a number"),
        ("{\"seq\":99999999999999999999999}", "no \"type\""),
    ])
    func hostileLine(line: String, reason: String) {
        let good = TelemetryJSONLines.line(for: TelemetryRecord(sessionId: "s", seq: 0, monotonic: .zero, wallTimeNanoseconds: 0, kind: .event, name: "play"))
        let replay = TelemetryReplay(jsonLines: good + "\n\n" + line + "\n" + good)
        #expect(replay.records.count == 2)
        #expect(replay.skippedCount == 1)
        #expect(replay.skipped.first?.line == 3)
        #expect(replay.skipped.first?.reason.contains(reason) == true, "\(replay.skipped.first?.reason ?? "nothing")")
        #expect(throws: TelemetryReplayError.self) { try replay.requireClean() }
    }

    @Test("random bytes never crash a replay")
    func randomBytes() {
        var generator = SeededRandomNumberGenerator(seed: 15)
        for _ in 0..<300 {
            let bytes = (0..<Int.random(in: 0..<200, using: &generator)).map { _ in
                UInt8.random(in: 0...255, using: &generator) | (Bool.random(using: &generator) ? 0 : 0x20)
            }
            let replay = TelemetryReplay(jsonLines: String(decoding: bytes, as: UTF8.self))
            #expect(replay.records.count + replay.skippedCount <= bytes.count + 1)
        }
    }

    @Test("a file cut in the middle of its last line replays every whole line and counts the cut one")
    func truncatedFile() throws {
        let path = Self.temporaryPath()
        defer { unlink(path) }
        let records = (0..<5).map { TelemetryRecord(sessionId: "s", seq: UInt64($0), monotonic: .seconds($0), wallTimeNanoseconds: 0, kind: .event, name: "play") }
        let text = records.map(TelemetryJSONLines.line(for:)).joined(separator: "\n")
        let backend = try JSONLinesTelemetryBackend(path: path)
        try backend.deliver([])
        let descriptor = open(path, O_WRONLY | O_TRUNC)
        let cut = Array(text.utf8.dropLast(9))
        #expect(cut.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) } == cut.count)
        close(descriptor)
        backend.close()
        let replay = try TelemetryReplay(contentsOfFile: path)
        #expect(replay.records == Array(records.prefix(4)))
        #expect(replay.skippedCount == 1)
        #expect(replay.skipped.first?.line == 5)
    }

    @Test("a file that cannot be read or written is a clear error")
    func unreadable() {
        #expect(throws: TelemetryReplayError(line: 0, reason: "cannot open /nonexistent/x.jsonl: No such file or directory")) {
            try TelemetryReplay(contentsOfFile: "/nonexistent/x.jsonl")
        }
        #expect(throws: TelemetryEngineError("cannot write /nonexistent/x.jsonl: No such file or directory")) {
            try JSONLinesTelemetryBackend(path: "/nonexistent/x.jsonl")
        }
    }

    @Test("the backend writes to a file descriptor (a pipe here, stdout in the CLI); a closed one fails for good")
    func fileDescriptor() throws {
        var pipeEnds: [Int32] = [0, 0]
        #expect(pipe(&pipeEnds) == 0)
        let backend = JSONLinesTelemetryBackend(fileDescriptor: pipeEnds[1], name: "jsonl pipe")
        let record = TelemetryRecord(sessionId: "s", seq: 0, monotonic: .zero, wallTimeNanoseconds: 0, kind: .event, name: "play")
        try backend.deliver([record, record])
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { read(pipeEnds[0], $0.baseAddress, $0.count) }
        let text = String(decoding: buffer.prefix(max(0, count)), as: UTF8.self)
        #expect(TelemetryReplay(jsonLines: text).records == [record, record])
        close(pipeEnds[0])
        close(pipeEnds[1])
        #expect(throws: TelemetryDeliveryError("jsonl pipe: Bad file descriptor", retryable: false)) { try backend.deliver([record]) }
    }
}
