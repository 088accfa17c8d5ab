// OpenAVT's instrument as its guide sets it up, fed by a real subscription: a backend (New Relic's
// shape, recorded in memory — there is no New Relic agent on Linux), the core hub and metric
// calculator, a tracker, ready(). The built-in publisher sends through 1 % loss and a 2 s outage,
// the subscriber holds one playout-delay override, and a bridge emits the actions a player's
// OpenAVT tracker emits (MediaRequest, StreamLoad, Start, QualityChange…, BufferBegin/BufferFinish,
// End). It prints the actions, what the New Relic backend recorded (OpenAVT's names and units:
// timeSince<Action> in integer ms), the engine's records of the same story, and what the
// conformance mode found. Public API only.
import Playout
import PlayoutAnalytics
import PlayoutSender

LoggingSetup.bootstrap()

// OpenAVT's chain: a backend, the core hub and metric calculator (its defects fixed), one tracker.
// The engine underneath keeps its own records (in memory here); its heartbeats are OpenAVT's pings,
// every second here instead of 30 s.
let memory = InMemoryTelemetryBackend()
let backend = OpenAVTNewRelicBackend()
let conformance = ConformanceLog<OpenAVTRule>()
let engine = try TelemetryInstrument(backends: [memory], configuration: OpenAVTInstrument.engineConfiguration(pingInterval: .seconds(1)))
let instrument = OpenAVTInstrument(
    engine: engine, hub: OpenAVTHubCore(), metricalc: OpenAVTMetricalcCore(), backend: backend, options: .init(conformance: conformance))
let tracker = instrument.addTracker(name: "subscriber")
instrument.ready()

// 7 s of 320×180 H.264 through 1 % loss and an outage from 3 s to 5 s (the subscriber stalls).
var impairment = NetworkImpairment.Configuration(loss: 0.01, jitter: .milliseconds(5), seed: 7)
impairment.outages = [Duration.seconds(3)..<Duration.seconds(5)]
let publisher = try Publisher(options: .init(
    destination: try Publisher.freeLoopbackDestination(),
    video: .init(codec: .h264, width: 320, height: 180, frameRate: 30, bitrate: 300_000, keyframeInterval: 30),
    sendsAudio: false, impairment: impairment, duration: .seconds(7)))
let subscriber = try Subscriber(
    sessionDescription: publisher.sessionDescription,
    options: .init(duration: .milliseconds(7_600), overrides: [ScheduledOverride(delay: .seconds(1), at: .milliseconds(1_500), hold: .seconds(1))]))

let bridge = OpenAVTSubscriberBridge(subscriber: subscriber, instrument: instrument, trackerId: tracker)
try subscriber.start()
try publisher.start()
_ = try publisher.waitUntilEnded()
let final = subscriber.waitUntilEnded()  // the bridge has finished by itself: End, the last Ping
instrument.shutdown(timeout: .seconds(5))

let records = memory.records
print("OpenAVT actions: \(conformance.calls.map { $0.arguments[0] }.joined(separator: ", "))")
let events = backend.collector.events
let actionNames = events.compactMap { event -> String? in
    guard case .string(let name)? = event.attributes["actionName"] else { return nil }
    return name
}
print("New Relic OAVT events, pings aside: \(actionNames.filter { $0 != "Ping" }.joined(separator: ", "))")
print("New Relic OAVT pings: periodic ones and the last: \(actionNames.filter { $0 == "Ping" }.count >= 2)")
print("New Relic metrics: \(Set(backend.collector.metrics.map(\.name)).sorted().joined(separator: ", "))")
let end = events.last { $0.attributes["actionName"] == .string("End") }
let sinceStart = end?.attributes["timeSinceStart"]
print("End's timeSinceStart is integer milliseconds: \(sinceStart.map { if case .int(let ms) = $0 { ms > 5_000 } else { false } } ?? false)")
let delays = events.filter { $0.attributes["actionName"] == .string("PlayoutDelayChange") }.map { $0.attributes["playoutDelay"].map(\.description) ?? "-" }
print("playout delays (ms): \(delays.joined(separator: ", "))")
print("telemetry events: \(memory.eventNames().joined(separator: ", "))")
print("rebuffers: \(records.filter { $0.kind == .metric && $0.name == "NumRebuffers" }.count)")
print("findings: \(conformance.findings.isEmpty ? "none" : conformance.findings.map(\.description).joined(separator: "; ")), rejected actions: \(instrument.rejectedActions)")
let lastPing = records.last { $0.kind == .heartbeat }
let qos = SubscriberTelemetryTranslator.heartbeatFields(final)
print("last ping carries the subscriber's final QoS: \(lastPing.map { record in qos.allSatisfy(record.fields.contains) } ?? false)")
