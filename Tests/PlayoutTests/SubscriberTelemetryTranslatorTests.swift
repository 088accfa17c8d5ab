import PlayoutCore
import Playout
import Testing

@Suite("Subscriber telemetry translator: a subscription's updates as player events")
struct SubscriberTelemetryTranslatorTests {
    static func names(_ events: [TelemetryEvent]) -> [String] { events.map(\.name) }

    @Test("a run with a stall: playerready and play on connecting, playing once, a stall is a network rebuffer, ended")
    func states() {
        var translator = SubscriberTelemetryTranslator()
        var names: [String] = []
        for state in [SubscriberState.idle, .connecting, .buffering, .playing, .stalled, .playing, .buffering, .playing, .playing, .ended, .playing] {
            names += Self.names(translator.state(state))
        }
        #expect(names == ["playerready", "play", "playing", "rebufferstart", "rebufferend", "rebufferstart", "rebufferend", "ended"])
    }

    @Test("a failure is a fatal error with its reason")
    func failure() {
        var translator = SubscriberTelemetryTranslator()
        _ = translator.state(.connecting)
        let events = translator.state(.failed(reason: "every packet fails SRTP authentication"))
        guard case .error(let error) = events.first else {
            Issue.record("no error: \(events)")
            return
        }
        #expect(error.severity == .fatal)
        #expect(error.message == "every packet fails SRTP authentication")
    }

    @Test("an override is a requested playoutdelaychange; an equal delay is no event")
    func delay() {
        var translator = SubscriberTelemetryTranslator()
        let configured = EffectivePlayoutDelay(delay: .milliseconds(230), source: .configured)
        let override = EffectivePlayoutDelay(delay: .seconds(2), source: .override)
        guard case .playoutDelayChange(let first, let requested) = translator.playoutDelay(configured).first else {
            Issue.record("no change")
            return
        }
        #expect(first == .milliseconds(230) && !requested)
        #expect(translator.playoutDelay(configured).isEmpty)
        guard case .playoutDelayChange(let second, let requestedAgain) = translator.playoutDelay(override).first else {
            Issue.record("no change")
            return
        }
        #expect(second == .seconds(2) && requestedAgain)
    }

    @Test("new freezes in a sample become freezestart/freezeend with their measured duration; a new size is a renditionchange")
    func samples() {
        var translator = SubscriberTelemetryTranslator()
        _ = translator.state(.connecting)
        _ = translator.state(.playing)
        var video = TrackQoS(kind: .video, codec: .h264)
        video.frameWidth = 640
        video.frameHeight = 360
        video.bytesReceived = 100_000
        video.bitrate = 800_000
        var sample = SubscriberQoS(elapsed: .seconds(1), state: .playing, playoutDelay: .init(delay: .zero, source: .configured), tracks: [.video: video])
        #expect(Self.names(translator.qos(sample)) == ["renditionchange"])
        video.freezeCount = 2
        video.totalFreezesDuration = .milliseconds(600)
        sample.tracks[.video] = video
        let events = translator.qos(sample)
        #expect(Self.names(events) == ["freezestart", "freezeend", "freezestart", "freezeend"])
        if case .freezeEnd(let duration) = events[1] { #expect(duration == .milliseconds(300)) } else { Issue.record("\(events)") }
        #expect(translator.qos(sample).isEmpty)
    }

    @Test("a heartbeat carries the totals by their QoS names, integers as integers")
    func heartbeat() {
        var video = TrackQoS(kind: .video, codec: .h264)
        video.framesRendered = 90
        video.framesDropped = 3
        video.endToEndLatency.record(.milliseconds(250))
        let sample = SubscriberQoS(elapsed: .seconds(3), state: .playing, playoutDelay: .init(delay: .milliseconds(230), source: .configured), tracks: [.video: video])
        let fields = SubscriberTelemetryTranslator.heartbeatFields(sample)
        func value(_ name: String) -> TelemetryValue? { fields.first { $0.name == name }?.value }
        #expect(value("framesRendered") == .int(90))
        #expect(value("framesDropped") == .int(3))
        #expect(value("state") == .string("playing"))
        #expect(value("playoutDelay") == .double(0.23))
        #expect(value("endToEndLatency") == .double(0.25))
    }
}
