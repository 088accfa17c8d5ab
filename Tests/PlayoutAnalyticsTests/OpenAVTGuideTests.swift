import PlayoutAnalytics
import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Testing

// The OpenAVT-iOS guide's own examples (`seeds/001`), in Swift's shape: `OAVT…` is `OpenAVT…`,
// statics and enum cases are lower camel case (`OAVTAction.PauseBegin` is `OpenAVTAction.pauseBegin`,
// `.Gauge` is `.gauge`), `OAVTTrackerProtocol` as a parameter type is `any OpenAVTTracker`, and an
// event is a value (`var event = event` before `setAttribute`). Each plays through the adapter, its
// events and metrics are asserted, and no finding is raised.

/// "Custom Trackers": the simplest tracker, as the guide writes it.
final class DummyTracker: OpenAVTTracker {
    private var state = OpenAVTState()

    func initEvent(event: OpenAVTEvent) -> OpenAVTEvent? {
        // Called when an emit(...) happens. It receives the event and must return an event or nil.
        // If an event is returned, it will be passed to the Hub.
        return event
    }

    func getState() -> OpenAVTState {
        // Return the state object
        return self.state
    }

    // Tracker ID, set by the instrument when the tracker is created.
    var trackerId: Int?

    func instrumentReady(instrument: OpenAVTInstrument) {
        // Called when ready() is called on the instrument.
    }

    func endOfService() {
        // Called when the tracker is removed from the instrument or when shutdown() is called.
    }
}

/// "Custom Trackers", improved as the guide goes on: `TrackerInit` when the instrument is ready,
/// a custom attribute on that event only, and a position getter (on every event, or with the
/// guide's filter on pings only).
final class PositionTracker: OpenAVTTracker {
    private var state = OpenAVTState()
    var trackerId: Int?
    // Note that this must be a weak reference, otherwise we will have a retain cycle, because the instrument owns a reference to the tracker.
    private weak var instrument: OpenAVTInstrument?
    /// The player's position, ms.
    var position: Int? = 12_000
    let pingsOnly: Bool

    init(pingsOnly: Bool) { self.pingsOnly = pingsOnly }

    func getState() -> OpenAVTState { return self.state }

    func initEvent(event: OpenAVTEvent) -> OpenAVTEvent? {
        var event = event
        if event.getAction() == OpenAVTAction.trackerInit {
            event.setAttribute(key: OpenAVTAttribute(name: "myCustomAttr"), value: 1000)
        }
        return event
    }

    func getPosition() -> Int? {
        let p = position  //do whatever with the supported player to get the position.
        return p
    }

    func instrumentReady(instrument: OpenAVTInstrument) {
        if self.instrument == nil {
            self.instrument = instrument
            self.instrument?.emit(action: OpenAVTAction.trackerInit, tracker: self)
            if pingsOnly {
                self.instrument?.registerGetter(attribute: OpenAVTAttribute.position, getter: self.getPosition, tracker: self, filter: { event, _ in
                    return event.getAction() == OpenAVTAction.ping
                })
            } else {
                self.instrument?.registerGetter(attribute: OpenAVTAttribute.position, getter: self.getPosition, tracker: self)
            }
        }
    }

    func endOfService() {}
}

/// "Custom Hubs": the simplest hub.
final class DummyHub: OpenAVTHub {
    func processEvent(event: OpenAVTEvent, tracker: any OpenAVTTracker) -> OpenAVTEvent? {
        // Called with the result of tracker's initEvent. It receives the event and must return an event or nil.
        // If an event is returned, it will be sent to the Metricalc and the Backend.
        return event
    }

    func instrumentReady(instrument: OpenAVTInstrument) {
        // Called when ready() is called on the instrument.
    }

    func endOfService() {
        // Called when the tracker is removed from the instrument or when shutdown() is called.
    }
}

/// "Custom Hubs": the pause logic.
final class PauseHub: OpenAVTHub {
    func processEvent(event: OpenAVTEvent, tracker: any OpenAVTTracker) -> OpenAVTEvent? {
        if event.getAction() == OpenAVTAction.pauseBegin {
            if tracker.getState().isPaused {
                return nil
            }
            tracker.getState().isPaused = true
        } else if event.getAction() == OpenAVTAction.pauseFinish {
            if !tracker.getState().isPaused {
                return nil
            }
            tracker.getState().isPaused = false
        }
        return event
    }
}

/// "Custom Metricalcs": the simplest metric calculator.
final class DummyMetricalc: OpenAVTMetricalc {
    func processMetric(event: OpenAVTEvent, tracker: any OpenAVTTracker) -> [OpenAVTMetric] {
        // Called with the result of hub's processEvent. It receives the event and returns an array of metrics.
        // If any metric is returned, it will be sent to the Backend.
        return []
    }

    func instrumentReady(instrument: OpenAVTInstrument) {}
    func endOfService() {}
}

/// "Custom Metricalcs": the time between quality changes — as written (`verbatim`), and as meant.
/// (Times are the event's monotonic time in seconds where the guide reads `NSDate()`.)
struct QualityChangeMetricalc: OpenAVTMetricalc {
    private var tsOfLastEvent: Double = 0.0
    let verbatim: Bool

    init(verbatim: Bool) { self.verbatim = verbatim }

    mutating func processMetric(event: OpenAVTEvent, tracker: any OpenAVTTracker) -> [OpenAVTMetric] {
        let now = Double(event.time.nanoseconds) / 1e9
        if event.getAction() == OpenAVTAction.qualityChangeUp || event.getAction() == OpenAVTAction.qualityChangeDown {
            if self.tsOfLastEvent > 0.0 {
                let metric = OpenAVTMetric(name: "TimeBetweenQualityChanges", type: .gauge, value: now - self.tsOfLastEvent)
                self.tsOfLastEvent = now
                return [metric]
            }
            if !verbatim { self.tsOfLastEvent = now }  // the guide never sets it before the first metric
        }
        return []
    }
}

/// "Custom Backends": the simplest backend.
final class DummyBackend: OpenAVTBackend {
    func sendEvent(event: OpenAVTEvent) {
        // Called with the result of hub's processEvent.
    }

    func sendMetric(metric: OpenAVTMetric) {
        // Called with the results of metricalc's processMetric.
    }

    func instrumentReady(instrument: OpenAVTInstrument) {
        // Called when ready() is called on the instrument.
    }

    func endOfService() {
        // Called when the tracker is removed from the instrument or when shutdown() is called.
    }
}

/// A backend that writes down what it receives.
final class RecordingBackend: OpenAVTBackend {
    let journal = LockedValue<[String]>([])
    let events = LockedValue<[OpenAVTEvent]>([])

    func sendEvent(event: OpenAVTEvent) {
        journal.withLock { $0.append("event \(event.action)") }
        events.withLock { $0.append(event) }
    }
    func sendMetric(metric: OpenAVTMetric) { journal.withLock { $0.append("metric \(metric.name)") } }
    func instrumentReady(instrument: OpenAVTInstrument) { journal.withLock { $0.append("ready") } }
    func endOfService() { journal.withLock { $0.append("endOfService") } }
}

/// An engine on a manual clock delivering to memory, for the guide's instruments.
final class OpenAVTGuideEngine {
    let clock = ManualClock()
    let memory = InMemoryTelemetryBackend()
    let engine: TelemetryInstrument
    let log = ConformanceLog<OpenAVTRule>()

    init() throws {
        engine = try TelemetryInstrument(
            backends: [memory], configuration: .init(hub: .init(heartbeatInterval: OpenAVTInstrument.defaultPingInterval), delivery: .init(linger: .zero)),
            clock: clock, wallClockNanoseconds: 1_700_000_000_000_000_000, driver: .embedded)
    }

    /// Emits `actions` from `tracker`, `step` apart.
    func emit(_ actions: [OpenAVTAction], _ instrument: OpenAVTInstrument, tracker: any OpenAVTTracker, step: Duration = .seconds(1)) {
        for action in actions {
            instrument.emit(action: action, tracker: tracker)
            clock.advance(by: step)
        }
    }
}

@Suite("OpenAVT adapter: the guide's examples and sequences, verbatim")
struct OpenAVTGuideTests {
    @Test("Usage: backend, hub, metricalc, trackers, then the instrument, addTracker for each, ready() — every component gets instrumentReady")
    func usage() throws {
        let world = try OpenAVTGuideEngine()
        let backend = OpenAVTNewRelicBackend()
        let hub = OpenAVTHubCore()
        let metricalc = OpenAVTMetricalcCore()
        let tracker = PositionTracker(pingsOnly: false)  // OAVTTrackerAVPlayer(player: avplayer): a player's tracker
        let adTracker = DummyTracker()  // OAVTTrackerIMA()
        let instrument = OpenAVTInstrument(engine: world.engine, hub: hub, metricalc: metricalc, backend: backend, options: .init(conformance: world.log))
        let trackerId = instrument.addTracker(tracker)
        let adTrackerId = instrument.addTracker(adTracker)
        instrument.ready()
        #expect((trackerId, adTrackerId) == (0, 1))
        #expect(tracker.trackerId == 0 && adTracker.trackerId == 1)
        world.emit([.mediaRequest, .streamLoad, .start, .end], instrument, tracker: tracker)
        instrument.shutdown(timeout: .seconds(2))
        let names = backend.collector.events.map { $0.attributes["actionName"] }
        #expect(names == ["TrackerInit", "MediaRequest", "StreamLoad", "Start", "End"].map { TelemetryValue.string($0) })
        #expect(backend.collector.metrics.map(\.name) == ["NumRequests", "NumLoads", "StartTime", "NumPlays", "NumEnds", "PlayTime"])
        #expect(backend.collector.metrics.first { $0.name == "StartTime" }?.value == .int(2_000))
        try world.memory.expectEvents(["viewinit", "TrackerInit", "MediaRequest", "play", "playing", "ended", "viewend"], session: world.memory.sessionIds.first)
        #expect(world.log.findings.isEmpty, "\(world.log.findings)")
    }

    @Test("Choosing a Metricalc: optional — without one, events and no metrics")
    func withoutMetricalc() throws {
        let world = try OpenAVTGuideEngine()
        let backend = RecordingBackend()
        let instrument = OpenAVTInstrument(engine: world.engine, hub: OpenAVTHubCore(), metricalc: nil, backend: backend, options: .init(conformance: world.log))
        let tracker = DummyTracker()
        instrument.addTracker(tracker)
        instrument.ready()
        world.emit([.streamLoad, .start, .end], instrument, tracker: tracker)
        instrument.shutdown(timeout: .seconds(2))
        #expect(backend.journal.withLock { $0 } == ["ready", "event StreamLoad", "event Start", "event End", "endOfService"])
        #expect(world.memory.records.allSatisfy { $0.kind != .metric })
        #expect(world.log.findings.isEmpty, "\(world.log.findings)")
    }

    @Test("Custom Actions and Custom Attributes: a custom action, its timeSince (ms) or its own time attribute, a custom attribute set on an event")
    func customModels() throws {
        let world = try OpenAVTGuideEngine()
        let backend = OpenAVTNewRelicBackend()
        let instrument = OpenAVTInstrument(engine: world.engine, hub: OpenAVTHubCore(), metricalc: OpenAVTMetricalcCore(), backend: backend, options: .init(conformance: world.log))
        let trackerId = instrument.addTracker(name: "player")
        instrument.ready()
        let myAction = OpenAVTAction(name: "CustomAction")
        #expect(myAction.timeAttribute == OpenAVTAttribute(name: "timeSinceCustomAction"))
        let renamed = OpenAVTAction(name: "OtherAction", timeAttribute: OpenAVTAttribute(name: "myTimeSince"))
        let myAttr = OpenAVTAttribute(name: "customAttribute")
        var event = OpenAVTEvent(action: myAction, trackerId: trackerId, time: world.clock.now)
        event.setAttribute(key: myAttr, value: "any value")
        #expect(event.getAttribute(key: myAttr) == .string("any value"))
        instrument.emit(action: myAction, trackerId: trackerId)
        world.clock.advance(by: .milliseconds(1_250))
        instrument.emit(action: renamed, trackerId: trackerId)
        world.clock.advance(by: .milliseconds(750))
        instrument.emit(action: myAction, trackerId: trackerId)
        instrument.shutdown(timeout: .seconds(2))
        let events = backend.collector.events
        #expect(events.count == 3)
        #expect(events[0].attributes["timeSinceCustomAction"] == nil)
        #expect(events[1].attributes["timeSinceCustomAction"] == .int(1_250))
        #expect(events[2].attributes["timeSinceCustomAction"] == .int(2_000), "an action's own time since, from its previous event")
        #expect(events[2].attributes["myTimeSince"] == .int(750))
        #expect(events[2].attributes["timeSinceOtherAction"] == nil)
        try world.memory.expectEvents(["viewinit", "CustomAction", "OtherAction", "CustomAction", "viewend"])
        #expect(world.log.findings.isEmpty, "\(world.log.findings)")
    }

    @Test("Custom Metrics: OAVTMetric(name: \"CustomMetric\", type: .Gauge, value: 10.1) reaches the backend and the engine")
    func customMetric() throws {
        struct CustomMetricalc: OpenAVTMetricalc {
            func processMetric(event: OpenAVTEvent, tracker: any OpenAVTTracker) -> [OpenAVTMetric] {
                let myMetric = OpenAVTMetric(name: "CustomMetric", type: .gauge, value: 10.1)
                return event.getAction() == OpenAVTAction.start ? [myMetric] : []
            }
        }
        let world = try OpenAVTGuideEngine()
        let backend = OpenAVTNewRelicBackend()
        let instrument = OpenAVTInstrument(engine: world.engine, hub: OpenAVTHubCore(), metricalc: CustomMetricalc(), backend: backend, options: .init(conformance: world.log))
        let tracker = DummyTracker()
        instrument.addTracker(tracker)
        instrument.ready()
        world.emit([.streamLoad, .start, .end], instrument, tracker: tracker)
        instrument.shutdown(timeout: .seconds(2))
        #expect(backend.collector.metricsJSON() == #"[{"name":"CustomMetric","category":"OAVT","value":10.1}]"#)
        #expect(world.memory.records.filter { $0.kind == .metric }.map { $0[field: "value"] } == [.double(10.1)])
        #expect(world.log.findings.isEmpty, "\(world.log.findings)")
    }

    @Test("Custom Trackers: the DummyTracker; TrackerInit from instrumentReady with myCustomAttr on it only; the position getter on every later event")
    func customTrackers() throws {
        let world = try OpenAVTGuideEngine()
        let backend = RecordingBackend()
        let instrument = OpenAVTInstrument(engine: world.engine, backend: backend, options: .init(conformance: world.log))
        let dummy = DummyTracker()
        let tracker = PositionTracker(pingsOnly: false)
        instrument.addTracker(dummy)
        instrument.addTracker(tracker)
        instrument.ready()
        instrument.ready()  // again: instrumentReady again, TrackerInit only once (the guide's `if self.instrument == nil`)
        world.emit([.streamLoad, .start], instrument, tracker: tracker)
        tracker.position = nil  // a getter returning nil adds nothing
        world.emit([.end], instrument, tracker: tracker)
        world.emit([.streamLoad, .start, .end], instrument, tracker: dummy)
        instrument.shutdown(timeout: .seconds(2))
        let events = backend.events.withLock { $0 }
        let own = events.filter { $0.trackerId == 1 }
        #expect(own.map(\.action) == [.trackerInit, .streamLoad, .start, .end])
        #expect(own[0].getAttribute(key: "myCustomAttr") == .int(1_000))
        #expect(own.dropFirst().allSatisfy { $0.getAttribute(key: "myCustomAttr") == nil })
        #expect(own.map { $0.getAttribute(key: .position) } == [nil, .int(12_000), .int(12_000), nil])
        #expect(instrument.callGetter(attribute: .position, tracker: tracker) == nil)
        #expect(instrument.callGetter(attribute: .position, tracker: dummy) == nil, "no getter: nil")
        #expect(events.filter { $0.trackerId == 0 }.map(\.action) == [.streamLoad, .start, .end])
        #expect(world.log.findings.isEmpty, "\(world.log.findings)")
    }

    @Test("Custom Trackers: with the filter `event.getAction() == OAVTAction.Ping`, only ping events have the position — the periodic ones and a Ping action")
    func pingFilter() throws {
        let world = try OpenAVTGuideEngine()
        let backend = RecordingBackend()
        let instrument = OpenAVTInstrument(engine: world.engine, backend: backend, options: .init(conformance: world.log))
        let tracker = PositionTracker(pingsOnly: true)
        instrument.addTracker(tracker)
        instrument.ready()
        world.emit([.streamLoad, .start], instrument, tracker: tracker)
        world.clock.advance(by: .seconds(30))
        #expect(world.engine.flush())  // the engine's heartbeat: a Ping through the chain
        world.emit([.ping, .end], instrument, tracker: tracker)
        instrument.shutdown(timeout: .seconds(2))
        let events = backend.events.withLock { $0 }
        #expect(events.map(\.action) == [.trackerInit, .streamLoad, .start, .ping, .ping, .end])
        #expect(events.map { $0.getAttribute(key: .position) } == [nil, nil, nil, .int(12_000), .int(12_000), nil])
        #expect(world.memory.records.filter { $0.kind == .heartbeat }.count == 2)
        #expect(world.log.findings.isEmpty, "\(world.log.findings)")
    }

    @Test("Custom Hubs: the DummyHub passes everything on; the pause logic stops a second PauseBegin and a PauseFinish while not paused — counted, not findings")
    func customHubs() throws {
        let world = try OpenAVTGuideEngine()
        let backend = RecordingBackend()
        let instrument = OpenAVTInstrument(engine: world.engine, hub: DummyHub(), metricalc: nil, backend: backend, options: .init(conformance: world.log))
        let tracker = DummyTracker()
        instrument.addTracker(tracker)
        instrument.ready()
        world.emit([.streamLoad, .start, .start], instrument, tracker: tracker)  // the bypass hub lets the second Start through
        instrument.setHub(PauseHub())
        instrument.ready()
        world.emit([.pauseBegin, .pauseBegin, .pauseFinish, .pauseFinish, .end], instrument, tracker: tracker)
        instrument.shutdown(timeout: .seconds(2))
        #expect(backend.events.withLock { $0.map(\.action) } == [.streamLoad, .start, .start, .pauseBegin, .pauseFinish, .end])
        #expect(instrument.rejectedActions == 2)
        #expect(tracker.getState().isPaused == false)
        #expect(world.log.findings.isEmpty, "\(world.log.findings)")
    }

    @Test("Custom Metricalcs: the DummyMetricalc yields nothing; the time between quality changes as written yields nothing, as meant yields the gaps")
    func customMetricalcs() throws {
        func run(_ metricalc: some OpenAVTMetricalc) throws -> [OpenAVTMetric] {
            let world = try OpenAVTGuideEngine()
            let backend = OpenAVTNewRelicBackend()
            let instrument = OpenAVTInstrument(engine: world.engine, metricalc: metricalc, backend: backend, options: .init(conformance: world.log))
            let tracker = DummyTracker()
            instrument.addTracker(tracker)
            instrument.ready()
            world.emit([.streamLoad, .start, .qualityChangeUp], instrument, tracker: tracker, step: .seconds(2))
            world.emit([.qualityChangeDown, .qualityChangeUp, .end], instrument, tracker: tracker, step: .milliseconds(500))
            instrument.shutdown(timeout: .seconds(2))
            #expect(world.log.findings.isEmpty, "\(world.log.findings)")
            return backend.collector.metrics.map { OpenAVTMetric(name: $0.name, type: .gauge, telemetryValue: $0.value) }
        }
        #expect(try run(DummyMetricalc()).isEmpty)
        #expect(try run(QualityChangeMetricalc(verbatim: true)).isEmpty, "the guide's example sets tsOfLastEvent only once it is set")
        let gaps = try run(QualityChangeMetricalc(verbatim: false))
        #expect(gaps.map(\.name) == ["TimeBetweenQualityChanges", "TimeBetweenQualityChanges"])
        #expect(gaps.map(\.value) == [.double(2), .double(0.5)])  // seconds, as the example computes them
    }

    @Test("Custom Backends: sendMetric once per metric, before its event's sendEvent; the DummyBackend takes them all")
    func customBackends() throws {
        let world = try OpenAVTGuideEngine()
        let backend = RecordingBackend()
        let instrument = OpenAVTInstrument(engine: world.engine, backend: DummyBackend(), options: .init(conformance: world.log))
        let tracker = DummyTracker()
        instrument.addTracker(tracker)
        instrument.ready()
        world.emit([.mediaRequest], instrument, tracker: tracker)
        instrument.setBackend(backend)
        instrument.ready()
        world.emit([.streamLoad, .start], instrument, tracker: tracker)
        instrument.shutdown(timeout: .seconds(2))
        #expect(backend.journal.withLock { $0 } == [
            "ready", "metric NumLoads", "event StreamLoad", "metric StartTime", "metric NumPlays", "event Start", "endOfService",
        ])
        #expect(world.log.findings.isEmpty, "\(world.log.findings)")
    }

    @Test("Custom Components: hot-plugging — removeTracker and the replaced hub, metricalc and backend get endOfService; ready() after the change calls instrumentReady on each")
    func hotPlugging() throws {
        final class JournalTracker: OpenAVTTracker {
            let journal: LockedValue<[String]>
            var trackerId: Int?
            private let state = OpenAVTState()
            init(_ journal: LockedValue<[String]>) { self.journal = journal }
            func getState() -> OpenAVTState { state }
            func instrumentReady(instrument: OpenAVTInstrument) { journal.withLock { $0.append("tracker \(trackerId ?? -1) ready") } }
            func endOfService() { journal.withLock { $0.append("tracker \(trackerId ?? -1) endOfService") } }
        }
        let world = try OpenAVTGuideEngine()
        let journal = LockedValue<[String]>([])
        let first = RecordingBackend()
        let instrument = OpenAVTInstrument(engine: world.engine, backend: first, options: .init(conformance: world.log))
        let a = JournalTracker(journal)
        instrument.addTracker(a)
        instrument.ready()
        let b = JournalTracker(journal)
        instrument.addTracker(b)
        instrument.ready()
        #expect(instrument.removeTracker(0))
        let second = RecordingBackend()
        instrument.setBackend(second)
        instrument.setHub(OpenAVTHubCore())
        instrument.setMetricalc(OpenAVTMetricalcCore())
        instrument.ready()
        world.emit([.streamLoad], instrument, tracker: b)
        instrument.shutdown(timeout: .seconds(2))
        #expect(journal.withLock { $0 } == [
            "tracker 0 ready", "tracker 0 ready", "tracker 1 ready", "tracker 0 endOfService", "tracker 1 ready", "tracker 1 endOfService",
        ])
        #expect(first.journal.withLock { $0 } == ["ready", "ready", "endOfService"])
        #expect(second.journal.withLock { $0 } == ["ready", "metric NumLoads", "event StreamLoad", "endOfService"])
        #expect(world.log.findings.isEmpty, "\(world.log.findings)")
    }
}

@Suite("OpenAVT adapter: the New Relic backend's shape")
struct OpenAVTNewRelicTests {
    @Test("a playback as New Relic custom events of type OAVT (actionName and every attribute) and metrics (name, category OAVT, value): golden JSON")
    func golden() throws {
        let world = try OpenAVTGuideEngine()
        let backend = OpenAVTNewRelicBackend()
        let instrument = OpenAVTInstrument(engine: world.engine, backend: backend, instrumentId: "i", options: .init(conformance: world.log))
        let tracker = DummyTracker()
        instrument.addTracker(tracker)
        instrument.ready()
        world.emit([.streamLoad, .start, .end], instrument, tracker: tracker)
        instrument.shutdown(timeout: .seconds(2))
        let common = #""accumBufferTime":0,"accumPauseTime":0,"accumSeekTime":0,"#
        #expect(backend.collector.eventsJSON() == "["
            + #"{"eventType":"OAVT","# + common + #""actionName":"StreamLoad","countErrors":0,"countStarts":0,"inBufferBlock":false,"inPauseBlock":false,"inPlaybackBlock":false,"inSeekBlock":false,"playbackId":"i-0-1","senderId":"i-0","streamId":"i-0-1"},"#
            + #"{"eventType":"OAVT","# + common + #""actionName":"Start","countErrors":0,"countStarts":1,"inBufferBlock":false,"inPauseBlock":false,"inPlaybackBlock":true,"inSeekBlock":false,"playbackId":"i-0-1","senderId":"i-0","streamId":"i-0-1","timeSinceStreamLoad":1000},"#
            + #"{"eventType":"OAVT","# + common + #""actionName":"End","countErrors":0,"countStarts":1,"deltaPlayTime":1000,"inBufferBlock":false,"inPauseBlock":false,"inPlaybackBlock":false,"inSeekBlock":false,"playbackId":"i-0-1","senderId":"i-0","streamId":"i-0-1","timeSinceStart":1000,"timeSinceStreamLoad":2000}"#
            + "]")
        #expect(backend.collector.metricsJSON() == "["
            + #"{"name":"NumLoads","category":"OAVT","value":1},{"name":"StartTime","category":"OAVT","value":1000},{"name":"NumPlays","category":"OAVT","value":1},"#
            + #"{"name":"NumEnds","category":"OAVT","value":1},{"name":"PlayTime","category":"OAVT","value":1000}"#
            + "]")
        #expect(world.log.findings.isEmpty, "\(world.log.findings)")
    }

    @Test("useEvents / useMetrics false: that half is not recorded")
    func halves() throws {
        let events = OpenAVTNewRelicBackend(useMetrics: false)
        let metrics = OpenAVTNewRelicBackend(useEvents: false)
        for backend in [events, metrics] {
            backend.sendEvent(event: OpenAVTEvent(action: .start, trackerId: 0, time: .zero))
            backend.sendMetric(metric: OpenAVTMetric(name: "NumPlays", type: .counter, value: 1))
        }
        #expect((events.collector.events.count, events.collector.metrics.count) == (1, 0))
        #expect((metrics.collector.events.count, metrics.collector.metrics.count) == (0, 1))
    }

    @Test("hostile values: quotes, backslashes, control characters and non-ASCII escaped as JSON; non-finite numbers null")
    func escaping() {
        let collector = OpenAVTNewRelicCollector()
        #expect(collector.recordCustomEvent("OAVT", attributes: [
            "q": .string("say \"hi\"\\"), "c": .string("a\nb\r\t\u{01}\u{1F}"), "u": .string("é🎬"), "n": .double(.nan), "i": .double(-.infinity), "b": .bool(true),
        ]))
        collector.recordMetric(withName: "X\"", category: "OAVT", value: .double(.infinity))
        #expect(collector.eventsJSON() == #"[{"eventType":"OAVT","b":true,"c":"a\nb\r\t\u0001\u001f","i":null,"n":null,"q":"say \"hi\"\\","u":"é🎬"}]"#)
        #expect(collector.metricsJSON() == #"[{"name":"X\"","category":"OAVT","value":null}]"#)
    }

    @Test("what New Relic refuses is refused with a typed reason, never recorded, never a crash", arguments: [
        ("", [:], OpenAVTNewRelicError.invalidEventType("")),
        ("OAVT-1", [:], .invalidEventType("OAVT-1")),
        (String(repeating: "A", count: 256), [:], .invalidEventType(String(repeating: "A", count: 64))),
        ("OAVT", ["": TelemetryValue.int(1)], .invalidAttributeName("")),
        ("OAVT", [String(repeating: "a", count: 256): .int(1)], .invalidAttributeName(String(repeating: "a", count: 64))),
        ("OAVT", ["big": .string(String(repeating: "x", count: 4_097))], .valueTooLong(attribute: "big", bytes: 4_097, maximum: 4_096)),
        ("OAVT", Dictionary(uniqueKeysWithValues: (0..<255).map { ("k\($0)", TelemetryValue.int(0)) }), .tooManyAttributes(count: 255, maximum: 254)),
    ] as [(String, [String: TelemetryValue], OpenAVTNewRelicError)])
    func refusals(_ eventType: String, _ attributes: [String: TelemetryValue], _ error: OpenAVTNewRelicError) {
        let collector = OpenAVTNewRelicCollector(capacity: 2)
        #expect(!collector.recordCustomEvent(eventType, attributes: attributes))
        #expect(collector.events.isEmpty)
        #expect(collector.refusals == [error])
        #expect(throws: error) { try OpenAVTNewRelicCollector.validate(eventType: eventType, attributes: attributes) }
        #expect(collector.recordCustomEvent("Mobile Event:1_x", attributes: ["ok": .int(1)]), "letters, digits, _, : and space are New Relic's")
    }

    @Test("bounded: past its capacity the oldest events and metrics go, counted")
    func bounded() {
        let collector = OpenAVTNewRelicCollector(capacity: 3)
        for index in 0..<5 {
            collector.recordCustomEvent("OAVT", attributes: ["n": .int(Int64(index))])
            collector.recordMetric(withName: "M", category: "OAVT", value: .int(Int64(index)))
        }
        #expect(collector.events.map { $0.attributes["n"] } == [.int(2), .int(3), .int(4)])
        #expect(collector.metrics.map(\.value) == [.int(2), .int(3), .int(4)])
        #expect((collector.droppedEvents, collector.droppedMetrics) == (2, 2))
    }
}
