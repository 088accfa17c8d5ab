// The Adobe video heartbeat adapter fed by a real subscription: the built-in publisher sends
// through 1 % loss and a 1.5 s outage (a stall), the subscriber holds one playout-delay override,
// and its story becomes heartbeat tracking calls whose events reach an in-memory backend.
import Dispatch
import Playout
import PlayoutAnalytics
import PlayoutSender

LoggingSetup.bootstrap()

let memory = InMemoryTelemetryBackend()
let instrument = try TelemetryInstrument(backends: [memory])

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

// The subscriber is the heartbeat's player delegate; the bridge makes the tracking calls.
let unloaded = DispatchSemaphore(value: 0)
let bridge = HeartbeatSubscriberBridge(
    subscriber: subscriber, instrument: instrument, configuration: .init(publisher: "sample-org"), options: .conformance(),
    onVideoUnloaded: { unloaded.signal() })
try subscriber.start()
try publisher.start()
_ = try publisher.waitUntilEnded()
let final = subscriber.waitUntilEnded()
let handedOff = unloaded.wait(timeout: .now() + 10) == .success

let conformance = bridge.heartbeat.conformance!
print("calls: \(conformance.calls.map(\.name).joined(separator: ", "))")
print("events: \(memory.eventNames().filter { $0 != "heartbeat" }.joined(separator: ", "))")
print("rules broken: \(conformance.findings.count)")
print("onVideoUnloaded after the unload reached the backend: \(handedOff && memory.eventNames().last == "viewend")")
let ended = memory.records.first { $0.name == "ended" }
let sameQoS = ended?[field: "bitrate"] == .double(final.renditionBitrate)
    && ended?[field: "fps"] == .double((final.video?.framesPerSecond ?? 0).rounded(.towardZero))  // the guide truncates fps
    && ended?[field: "droppedFrames"] == .int(Int64(final.videoFramesLost))
print("QoS at the end (bitrate, fps, dropped frames) is the subscriber's: \(sameQoS)")
print("undelivered: \(instrument.shutdown(timeout: .seconds(2)).statistics.undelivered)")
