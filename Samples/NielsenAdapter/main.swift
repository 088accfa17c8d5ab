// The Nielsen DCR app SDK shape fed by a real subscription: the built-in publisher sends through
// 1 % loss and a 2 s outage, the subscriber holds one playout-delay override, and a bridge makes
// the calls a player integrating the SDK makes (play, loadMetadata, a playhead every second,
// stop on the interruption, end). It prints the calls and the telemetry events they produced,
// and what the conformance mode found. Public API only.
import Playout
import PlayoutAnalytics
import PlayoutSender

LoggingSetup.bootstrap()

let memory = InMemoryTelemetryBackend()
let instrument = try TelemetryInstrument(backends: [memory], configuration: .init(hub: .init(heartbeatInterval: .seconds(1))))

// One SDK instance per player, in conformance mode; one ticker thread reports the playheads.
let conformance = ConformanceLog<NielsenRule>()
let nielsen = NielsenAppSDK(appInfo: ["appid": "PE4D5C2A1-0B1C-4D2E-8F3A-5B6C7D8E9F00"], instrument: instrument, options: .init(conformance: conformance))
let ticker = try NielsenPlayheadTicker()
let content: [String: NielsenValue] = [
    "type": "content", "assetid": "EP-001", "program": "Playout News", "title": "Playout News S1E1", "length": "0",
    "airdate": "2026-01-01T12:00:00Z", "isfullepisode": "y", "adloadtype": "2",
]

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

// A network loss is an interruption: stop at once, then loadMetadata and playheads on resuming.
let bridge = NielsenSubscriberBridge(
    subscriber: subscriber, sdk: nielsen, ticker: ticker,
    options: .init(channelInfo: ["channelName": "playout-news"], metadata: content, stopAfterBuffering: .zero))
try subscriber.start()
try publisher.start()
_ = try publisher.waitUntilEnded()
let final = subscriber.waitUntilEnded()  // the bridge has finished by itself: end, the last QoS
ticker.shutdown()
instrument.shutdown(timeout: .seconds(5))

/// The names, each run of a repeated one collapsed to `name…` (its count depends on timing).
func collapsed(_ names: [String]) -> String {
    var shown: [String] = []
    for name in names where shown.last != name + "…" {
        shown.append(name == "playheadPosition" ? name + "…" : name)
    }
    return shown.joined(separator: ", ")
}

print("Nielsen calls: \(collapsed(conformance.calls.map(\.name)))")
print("telemetry events: \(memory.eventNames().joined(separator: ", "))")
print("findings: \(conformance.findings.isEmpty ? "none" : conformance.findings.map(\.description).joined(separator: "; "))")
let lastHeartbeat = memory.records.last { $0.kind == .heartbeat }
let qos = SubscriberTelemetryTranslator.heartbeatFields(final)
print("last heartbeat carries the subscriber's final QoS: \(lastHeartbeat.map { record in qos.allSatisfy(record.fields.contains) } ?? false)")
