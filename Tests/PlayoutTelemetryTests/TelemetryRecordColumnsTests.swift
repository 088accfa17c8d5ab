import PlayoutCore
import Testing

@testable import PlayoutTelemetry

/// The engine's compact records: what a backend reads back is exactly what was written, whether
/// a record's shape was matched by names, remembered by the hub, or changed afterwards.
@Suite("Record columns: compact records read back exactly")
struct TelemetryRecordColumnsTests {
    /// A reproducible generator (the delivery jitter's SplitMix64).
    typealias Random = SeededRandomNumberGenerator

    static func value(_ random: inout Random) -> TelemetryValue {
        switch Int.random(in: 0..<4, using: &random) {
        case 0: .int(Int64.random(in: -1_000...1_000, using: &random))
        case 1: .double(Double.random(in: -1...1, using: &random))
        case 2: .bool(Bool.random(using: &random))
        default: .string(["", "a", "ñ\u{0}\"", String(repeating: "x", count: 40)].randomElement(using: &random)!)
        }
    }

    static func fields(_ random: inout Random) -> [TelemetryField] {
        (0..<Int.random(in: 0...3, using: &random)).map { _ in
            TelemetryField(["framesRendered", "bitrate", "x", "", "timeSincePlay"].randomElement(using: &random)!, value(&random))
        }
    }

    /// Any event, valid in the current state or not (rejections and ignores included).
    static func event(_ random: inout Random) -> TelemetryEvent {
        switch Int.random(in: 0..<24, using: &random) {
        case 0: .viewInit
        case 1: .playerReady
        case 2, 3: .play
        case 4, 5: .playing
        case 6: .pause
        case 7: .seeking
        case 8: .seeked
        case 9: .rebufferStart([.network, .seek, .playoutDelayIncrease].randomElement(using: &random)!)
        case 10: .rebufferEnd
        case 11: .renditionChange(bitrate: Int64.random(in: 0...9_000_000, using: &random), width: 640, height: 360)
        case 12, 13: .playoutDelayChange(delay: .milliseconds(Int.random(in: 0...2_000, using: &random)), requested: Bool.random(using: &random))
        case 14: .freezeStart
        case 15: .freezeEnd(duration: Bool.random(using: &random) ? nil : .milliseconds(Int.random(in: 1...900, using: &random)))
        case 16: .error(TelemetryError(severity: Bool.random(using: &random) ? .fatal : .warning, code: 7, message: "boom"))
        case 17: .ended
        case 18: .videoChange(videoId: ["v1", "v2"].randomElement(using: &random)!)
        case 19: .viewEnd
        case 20: .heartbeat(fields(&random))
        case 21: .action(["adclick", "chapter", "", "play"].randomElement(using: &random)!, fields(&random))
        case 22: .metric(["cpu", "memory", "pause", "heartbeat", "adclick"].randomElement(using: &random)!, value(&random))
        default: .attribute(["viewer", "cdn", "videoId"].randomElement(using: &random)!, Bool.random(using: &random) ? value(&random) : nil)
        }
    }

    @Test("records written event after event into one builder equal those the hub returns one event at a time", arguments: 0..<40)
    func sameRecordsAsTheHub(seed: UInt64) {
        var random = Random(seed: seed)
        let configuration = TelemetrySessionConfiguration(heartbeatInterval: .seconds(1), inactivityTimeout: .seconds(20))
        var alone = TelemetrySessionHub(sessionIdPrefix: "s", origin: .zero, configuration: configuration)
        var together = alone
        var expected: [TelemetryRecord] = []
        var expectedRejections: [String] = []
        var sink = TelemetrySessionHub.Sink()
        var time = MonotonicInstant.zero
        for _ in 0..<1_000 {
            time = time.advanced(by: .milliseconds(Int.random(in: 0...(Int.random(in: 0..<50, using: &random) == 0 ? 30_000 : 700), using: &random)))
            let event = Self.event(&random)
            for output in alone.handle(event, now: time, wallTime: 1_700_000_000_000_000_000 &+ time.nanoseconds) {
                switch output {
                case .record(let record): expected.append(record)
                case .rejected(let reason): expectedRejections.append(reason)
                case .ignored: break
                }
            }
            together.handle(event, now: time, wallTime: 1_700_000_000_000_000_000 &+ time.nanoseconds, into: &sink)
        }
        let tags = [TelemetryField("run", .string("r1"))]
        let columns = TelemetryRecordColumns(sink.columns, tags: tags)
        let actual = (0..<columns.count).map { columns[$0] }
        #expect(actual.count == expected.count)
        for (index, (got, wanted)) in zip(actual, expected).enumerated() {
            var wanted = wanted
            wanted.tags = tags
            #expect(got == wanted, "record \(index)")
            if got != wanted { break }
        }
        #expect(sink.rejected == expectedRejections)
    }

    @Test("hostile fields — a new name on every record, 10,000 fields, long and empty strings — read back exactly")
    func hostileFields() {
        var random = Random(seed: 99)
        var alone = TelemetrySessionHub(sessionIdPrefix: "s", origin: .zero)
        var together = alone
        var expected: [TelemetryRecord] = []
        var sink = TelemetrySessionHub.Sink()
        var events: [TelemetryEvent] = [.play, .playing]
        for index in 0..<3_000 {
            let context = (0..<Int.random(in: 0...4, using: &random)).map { _ in TelemetryField("k\(UInt32.random(in: 0...UInt32.max, using: &random))", Self.value(&random)) }
            events.append(.action("a\(index % 7)", context))
            events.append(.heartbeat(context))
            if index % 500 == 0 { events.append(.action("big", (0..<10_000).map { TelemetryField("f\($0)", .int(Int64($0))) })) }
            if index % 300 == 0 { events.append(.attribute("viewer", .string(String(repeating: "ü", count: 10_000)))) }
        }
        for (index, event) in events.enumerated() {
            let now = MonotonicInstant.zero.advanced(by: .milliseconds(index))
            for case .record(let record) in alone.handle(event, now: now, wallTime: 0) { expected.append(record) }
            together.handle(event, now: now, wallTime: 0, into: &sink)
        }
        let actual = (0..<sink.columns.count).map { sink.columns.record($0) }
        #expect(actual == expected)
        #expect(sink.columns.values.count == expected.reduce(0) { $0 + $1.fields.count })
    }

    @Test("fields added to a record later (attribute getters, a viewend's KPIs) join its own; the others stay as they were")
    func fieldsAddedLater() {
        var hub = TelemetrySessionHub(sessionIdPrefix: "s", origin: .zero)
        var sink = TelemetrySessionHub.Sink()
        for (second, event) in [(0, TelemetryEvent.play), (1, .playing), (2, .playoutDelayChange(delay: .milliseconds(500), requested: true))] {
            hub.handle(event, now: .zero.advanced(by: .seconds(second)), wallTime: 0, into: &sink)
        }
        let before = (0..<sink.columns.count).map { sink.columns.record($0) }
        let added = [TelemetryField("cdn", .string("edge-1")), TelemetryField("buffer", .double(1.5))]
        sink.columns.append(added, toRecord: 2)
        sink.columns.append([], toRecord: 3)
        hub.handle(.pause, now: .zero.advanced(by: .seconds(3)), wallTime: 0, into: &sink)
        let after = (0..<sink.columns.count).map { sink.columns.record($0) }
        #expect(after.map(\.name) == ["viewinit", "play", "playing", "playoutdelaychange", "pause"])
        #expect(after[0] == before[0] && after[1] == before[1] && after[3] == before[3])
        #expect(after[2].fields == before[2].fields + added)
        #expect(after[2].seq == before[2].seq && after[2].monotonic == before[2].monotonic)
        #expect(after[4][field: "timeSincePlaying"] == .double(2))
        #expect(after[4].fields.count == before[3].fields.count - 1)  // no delay or requested; timeSincePlayoutdelaychange
    }

    @Test("a metric or an action named like another record keeps its own shape; a context or sample with other names or types gets its own")
    func namesShared() {
        var alone = TelemetrySessionHub(sessionIdPrefix: "s", origin: .zero)
        var together = alone
        var sink = TelemetrySessionHub.Sink()
        var expected: [TelemetryRecord] = []
        let events: [TelemetryEvent] = [
            .play, .playing, .pause, .metric("pause", .int(1)), .play, .playing, .pause, .metric("pause", .double(2)),
            .metric("pause", .string("three")), .metric("heartbeat", .bool(true)), .heartbeat([TelemetryField("a", .int(1))]),
            .heartbeat([TelemetryField("a", .double(1))]), .heartbeat([TelemetryField("b", .int(1))]), .heartbeat([]),
            .heartbeat([TelemetryField("a", .int(1)), TelemetryField("b", .int(2))]), .heartbeat([TelemetryField("a", .int(3))]),
            .action("adclick", [TelemetryField("id", .string("x"))]), .metric("adclick", .int(4)),
            .action("adclick", [TelemetryField("id", .int(5))]), .action("adclick", [TelemetryField("id", .string("y"))]),
            .action("adclick", []), .metric("adclick", .int(6)),
        ] + (0..<20).map { TelemetryEvent.metric("m\($0 % 10)", .int(Int64($0))) }  // more names than the hub remembers
        for (index, event) in events.enumerated() {
            let now = MonotonicInstant.zero.advanced(by: .milliseconds(index))
            for case .record(let record) in alone.handle(event, now: now, wallTime: 0) { expected.append(record) }
            together.handle(event, now: now, wallTime: 0, into: &sink)
        }
        let actual = (0..<sink.columns.count).map { sink.columns.record($0) }
        #expect(actual.count == expected.count)
        for (got, wanted) in zip(actual, expected) { #expect(got == wanted) }
        #expect(actual.filter { $0.kind == .metric && $0.name == "pause" }.map { $0[field: "value"] } == [.int(1), .double(2), .string("three")])
        #expect(sink.columns.values.count == expected.reduce(0) { $0 + $1.fields.count })
    }

    @Test("the metric calculator reads the fields of a shape where they are, whatever their position")
    func kpiOffsets() {
        #expect(TelemetryKPIField.allCases.enumerated().allSatisfy { $0.offset == $0.element.rawValue })
        #expect(TelemetryKPIField.allCases.map(\.name) == [
            "framesDropped", "framesRendered", "endToEndLatency", "cause", "duration", "bitrate", "delay", "severity", "renditionBitrate",
        ])
        #expect(TelemetryKPIField.allCases.count == TelemetryShape(kind: .event, name: "x", vocabulary: .other, names: [], types: []).kpiOffsets.count)
        // A heartbeat whose KPI fields come after 40,000 others, and one without them.
        let filler = (0..<40_000).map { TelemetryField("f\($0)", .int(Int64($0))) }
        let late = filler + [TelemetryField("framesDropped", .int(3)), TelemetryField("framesRendered", .int(97)), TelemetryField("endToEndLatency", .double(0.25))]
        var hub = TelemetrySessionHub(sessionIdPrefix: "s", origin: .zero)
        var sink = TelemetrySessionHub.Sink()
        var alone = TelemetryMetricCalculator()
        var viewed = TelemetryMetricCalculator()
        for (second, event) in [(0, TelemetryEvent.play), (1, .playing), (2, .heartbeat(late)), (3, .heartbeat(filler)), (4, .ended)] {
            hub.handle(event, now: .zero.advanced(by: .seconds(second)), wallTime: 0, into: &sink)
        }
        for index in 0..<sink.columns.count { alone.consume(sink.columns.record(index)) }
        sink.columns.withViews { views in for index in 0..<views.entries.count { viewed.consume(views[index]) } }
        #expect(viewed.kpis() == alone.kpis())
        #expect(viewed.kpis().droppedFramePercentage == 3)
        #expect(viewed.kpis().endToEndLatency?.max == .milliseconds(250))
    }

    @Test("a thousand records of one event share one shape and take 40 bytes plus 8 a field")
    func compact() {
        var hub = TelemetrySessionHub(sessionIdPrefix: "s", origin: .zero)
        var sink = TelemetrySessionHub.Sink()
        hub.handle(.play, now: .zero, wallTime: 0, into: &sink)
        hub.handle(.playing, now: .zero, wallTime: 0, into: &sink)
        let first = sink.columns.count
        for index in 0..<1_000 {
            hub.handle(.playoutDelayChange(delay: .milliseconds(230), requested: true), now: .zero.advanced(by: .milliseconds(index)), wallTime: 0, into: &sink)
        }
        let shapes = Set((first..<sink.columns.count).map { sink.columns.entries[$0].shape })
        #expect(shapes.count == 2)  // the first has no timeSincePlayoutdelaychange yet
        #expect(MemoryLayout<TelemetryColumnEntry>.stride == 40)
        #expect(sink.columns.values.count == 1 + 2 + 5 + 999 * 6)  // play, playing, the first delay change, the others
        #expect(sink.columns.strings.isEmpty)
        let last = sink.columns.record(sink.columns.count - 1)
        #expect(last.fields.map(\.name) == ["delay", "requested", "timeSinceViewinit", "timeSincePlay", "timeSincePlaying", "timeSincePlayoutdelaychange"])
        #expect(last[field: "timeSincePlayoutdelaychange"] == .double(0.001))
    }
}
