// The Mux custom-integration adapter fed by a real subscription: the built-in publisher sends
// through 1 % loss and a 1.5 s outage (a stall), the subscriber holds one playout-delay override,
// and its story becomes Mux events for the player "main", delivered to memory and as beacons.
import Playout
import PlayoutAnalytics
import PlayoutSender

LoggingSetup.bootstrap()

let memory = InMemoryTelemetryBackend()
let beacons = MuxBeaconBackend()  // Mux's beacons: batched every 10 s, closed at viewend
let instrument = try TelemetryInstrument(backends: [memory, beacons], configuration: MuxCore.instrumentConfiguration())
let mux = MuxCore(instrument: instrument, options: .conformance())
mux.dispatchGlobalDataEvent(MuxGlobalData(viewerUserId: "viewer-1", deviceCategory: "desktop"))

// 6.5 s of 320×180 H.264 over SRTP; everything is lost from 3 s to 4.5 s after the first datagram.
var impairment = NetworkImpairment.Configuration(loss: 0.01, seed: 1)
impairment.outages = [Duration.seconds(3)..<Duration.milliseconds(4_500)]
let publisher = try Publisher(options: .init(
    destination: try Publisher.freeLoopbackDestination(),
    video: .init(codec: .h264, width: 320, height: 180, frameRate: 30, bitrate: 300_000, keyframeInterval: 30),
    sendsAudio: false, keyingMaterial: .random(for: .aesCM128HMACSHA1_80), impairment: impairment, duration: .milliseconds(6_500)))
// The subscriber holds 230 ms, and 1 s from 1.5 s to 2.5 s after its start.
let subscriber = try Subscriber(
    sessionDescription: publisher.sessionDescription,
    options: .init(duration: .seconds(7), overrides: [ScheduledOverride(delay: .seconds(1), at: .milliseconds(1_500), hold: .seconds(1))]))

// The environment key goes in the customer player data, after viewinit (the Mux guide's sample sequence).
let bridge = MuxSubscriberBridge(subscriber: subscriber, mux: mux, player: "main", customerPlayerData: MuxCustomerPlayerData(environmentKey: "sample-env"))
try subscriber.start()
try publisher.start()
_ = try publisher.waitUntilEnded()
let final = subscriber.waitUntilEnded()
let report = instrument.shutdown(timeout: .seconds(2))

print("events: \(memory.eventNames().filter { $0 != "heartbeat" }.joined(separator: ", "))")
print("rules broken: \(mux.conformance!.findings.count)")
let rendition = memory.records.first { $0.name == "renditionchange" }
print("rendition: \(rendition?[field: "width"] ?? .int(0))×\(rendition?[field: "height"] ?? .int(0))")
let ended = memory.records.first { $0.name == "ended" }
print("dropped frames at the end are the video frames the subscriber lost: \(ended?[field: "view_dropped_frame_count"] == .int(Int64(final.videoFramesLost)))")
print("stall reported as a warning: \(memory.records.first { $0.name == "error" }?[field: "severity"] == .string("warning"))")
print("beacons: \(beacons.beacons.count), carrying every record: \(beacons.beacons.flatMap(\.events).map(\.name).filter { $0 != "heartbeat" } == memory.eventNames())")
print("undelivered: \(report.statistics.undelivered)")
withExtendedLifetime(bridge) {}
