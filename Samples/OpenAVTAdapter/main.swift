// The OpenAVT instrument shape fed by a real subscription: the built-in publisher sends through
// 1 % loss and a 2 s outage, the subscriber holds one playout-delay override, and a bridge emits
// the actions a player's OpenAVT tracker emits (MediaRequest, StreamLoad, Start, QualityChange…,
// BufferBegin/BufferFinish, End). The hub, the metric calculator and the backend are OpenAVT's
// chain over the telemetry engine. It prints the actions, the telemetry events and OpenAVT's
// metrics they produced, and what the conformance mode found. Public API only.
import Playout
import PlayoutAnalytics
import PlayoutSender

LoggingSetup.bootstrap()

// OpenAVT's chain: the core hub and metric calculator (its defects fixed), an in-memory backend;
// pings (the engine's heartbeats) every second here instead of OpenAVT's 30 s.
let memory = InMemoryTelemetryBackend()
let conformance = ConformanceLog<OpenAVTRule>()
let engine = try TelemetryInstrument(configuration: OpenAVTInstrument.engineConfiguration(pingInterval: .seconds(1)))
let instrument = try OpenAVTInstrument(
    engine: engine, hub: OpenAVTHubCore(), metricalc: OpenAVTMetricalcCore(), backend: memory, options: .init(conformance: conformance))
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
print("telemetry events: \(memory.eventNames().joined(separator: ", "))")
var metricNames: [String] = []
for record in records where record.kind == .metric && !metricNames.contains(record.name) { metricNames.append(record.name) }
print("metrics: \(metricNames.sorted().joined(separator: ", "))")
print("rebuffers: \(records.filter { $0.kind == .metric && $0.name == "NumRebuffers" }.count)")
print("findings: \(conformance.findings.isEmpty ? "none" : conformance.findings.map(\.description).joined(separator: "; ")), rejected actions: \(instrument.rejectedActions)")
let lastPing = records.last { $0.kind == .heartbeat }
let qos = SubscriberTelemetryTranslator.heartbeatFields(final)
print("last ping carries the subscriber's final QoS: \(lastPing.map { record in qos.allSatisfy(record.fields.contains) } ?? false)")
