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

    /// A sample with every kind of field: fractions, optional counters, a picture size, an SSRC.
    static func sample(state: SubscriberState = .playing, elapsed: Duration = .milliseconds(2_350)) -> SubscriberQoS {
        var video = TrackQoS(kind: .video, codec: .h264)
        video.packetsReceived = 1_234
        video.packetsLost = 3
        video.bytesReceived = 987_654
        video.jitter = .microseconds(1_250)
        video.framesReceived = 70
        video.framesRendered = 66
        video.framesDropped = 2
        video.frameWidth = 320
        video.frameHeight = 180
        video.totalFreezesDuration = .milliseconds(233)
        video.authFailures = 1
        video.playedSSRC = 0xDEAD_BEEF
        video.bitrate = 301_234.567_891
        var audio = TrackQoS(kind: .audio, codec: .opus)
        audio.packetsReceived = 117
        audio.bufferedDuration = .milliseconds(230)
        audio.framesPerSecond = 49.999_999_4
        return SubscriberQoS(
            elapsed: elapsed, state: state, playoutDelay: EffectivePlayoutDelay(delay: .milliseconds(500), source: .override),
            tracks: [.video: video, .audio: audio])
    }

    static func heartbeat(_ sample: SubscriberQoS, extra: [TelemetryField] = []) -> TelemetryRecord {
        TelemetryRecord(
            sessionId: "s-1", seq: 9, monotonic: .seconds(3), wallTimeNanoseconds: 0, kind: .heartbeat, name: "heartbeat",
            fields: SubscriberTelemetryTranslator.heartbeatFields(sample) + extra)
    }

    @Test("a heartbeat record renders as exactly the qos line of its sample, whatever the engine added to it")
    func heartbeatLine() {
        let sample = Self.sample()
        let record = Self.heartbeat(sample, extra: [TelemetryField("timeSincePlay", .double(1.5)), TelemetryField("viewer", .string("v"))])
        #expect(QoSJSONWriter().line(for: record) == QoSJSONWriter().line(for: sample))
    }

    @Test("the first sample (t = 0) and the ended one are not qos lines; neither are player events and metrics")
    func notLines() {
        let writer = QoSJSONWriter()
        #expect(writer.line(for: Self.heartbeat(Self.sample(elapsed: .zero))) == nil)
        #expect(writer.line(for: Self.heartbeat(Self.sample(state: .ended))) == nil)
        #expect(writer.line(for: TelemetryRecord(sessionId: "s", seq: 0, monotonic: .zero, wallTimeNanoseconds: 0, kind: .event, name: "playing")) == nil)
        #expect(writer.line(for: TelemetryRecord(sessionId: "s", seq: 0, monotonic: .zero, wallTimeNanoseconds: 0, kind: .metric, name: "stateChanged")) == nil)
    }

    @Test("contract actions render as the event lines the command line always wrote")
    func eventLines() throws {
        var contract = SubscriberContractEvents()
        let writer = QoSJSONWriter()
        func line(_ event: TelemetryEvent?) throws -> String? {
            guard case .action(let name, let fields)? = event else { return nil }
            let record = TelemetryRecord(
                sessionId: "s", seq: 1, monotonic: .zero, wallTimeNanoseconds: 0, kind: .event, name: name,
                fields: fields + [TelemetryField("timeSinceStateChanged", .double(0.25))])
            return writer.line(for: record)
        }
        #expect(contract.state(.idle, elapsed: .zero) == nil)
        #expect(try line(contract.state(.playing, elapsed: .milliseconds(1_500)))
            == writer.event("stateChanged", at: .milliseconds(1_500), [("state", "playing")]))
        #expect(try line(contract.state(.failed(reason: "no \"SDP\""), elapsed: .seconds(2)))
            == writer.event("stateChanged", at: .seconds(2), [("state", "failed"), ("reason", "no \"SDP\"")]))
        let configured = EffectivePlayoutDelay(delay: .milliseconds(230), source: .configured)
        #expect(contract.playoutDelay(configured, elapsed: .zero) == nil)  // the first value
        #expect(try line(contract.playoutDelay(EffectivePlayoutDelay(delay: .seconds(1), source: .override), elapsed: .seconds(3)))
            == writer.event("overrideApplied", at: .seconds(3), numbers: [("playoutDelay", 1)]))
        #expect(try line(contract.playoutDelay(configured, elapsed: .seconds(4)))
            == writer.event("overrideReleased", at: .seconds(4), numbers: [("playoutDelay", 0.23)]))
        var sample = Self.sample()
        #expect(contract.qos(sample).isEmpty)  // the first source seen
        sample.tracks[.video]?.playedSSRC = 7
        sample.tracks[.video]?.sourceSwitches = 1
        let switches = contract.qos(sample)
        #expect(switches.count == 1)
        #expect(try line(switches.first) == writer.event(
            "sourceSwitch", at: sample.elapsed, [("track", "video")], numbers: [("fromSSRC", 3_735_928_559), ("toSSRC", 7), ("sourceSwitches", 1)]))
    }
}
