// An analytics test: the built-in publisher through a lossy, jittery network, a subscriber with
// one playout-delay override reporting to the telemetry engine, and assertions on what the
// in-memory backend received — the event sequence and the session's KPIs. Public API only.
import Playout
import PlayoutSender

LoggingSetup.bootstrap()

// Every record goes to memory, tagged with the run; a heartbeat per QoS sample (every second).
let memory = InMemoryTelemetryBackend()
let instrument = try TelemetryInstrument(
    backends: [memory],
    configuration: .init(tags: [TelemetryField("run", .string("analytics-sample"))]))

// 5 s of 320×180 H.264 + Opus over SRTP, through 1 % loss and 10 ms of jitter (seeded).
let publisher = try Publisher(options: .init(
    destination: try Publisher.freeLoopbackDestination(),
    video: .init(codec: .h264, width: 320, height: 180, frameRate: 30, bitrate: 300_000, keyframeInterval: 30),
    keyingMaterial: .random(for: .aesCM128HMACSHA1_80),
    impairment: .init(loss: 0.01, jitter: .milliseconds(10), seed: 7), duration: .seconds(5)))

// The subscriber holds 230 ms, and 1 s from 2 s to 3 s after the start; it is a tracker.
let subscriber = try Subscriber(
    sessionDescription: publisher.sessionDescription,
    options: .init(duration: .seconds(6), overrides: [ScheduledOverride(delay: .seconds(1), at: .seconds(2), hold: .seconds(1))],
                   telemetry: instrument))
try subscriber.start()
try publisher.start()
_ = try publisher.waitUntilEnded()
_ = subscriber.waitUntilEnded()
let report = instrument.shutdown(timeout: .seconds(5))  // viewend, drained

/// Prints `ok` or why the assertion failed (the message says what was expected and what came).
func check(_ what: String, _ assertion: () throws -> Void) {
    do {
        try assertion()
        print("ok: \(what)")
    } catch {
        print("FAILED: \(what): \(error)")
    }
}

check("play, playing, the override applied and released, ended, viewend — in this order") {
    try memory.expectEvents(
        ["viewinit", "playerready", "play", "playing", "playoutdelaychange", "playoutdelaychange", "ended", "viewend"], match: .inOrder)
}
check("no rebuffer: the 1 s pause was asked for") { try memory.expectKPI("rebuffer_count", 0, within: 0) }
check("no playback failure, no exit before the video started") {
    try memory.expectKPI("playback_failure", 0, within: 0)
    try memory.expectKPI("exits_before_video_start", 0, within: 0)
}
check("the video started within 2 s") { try memory.expectKPI("video_startup_time", 1, within: 1) }
check("played for 4 to 6 s") { try memory.expectKPI("playing_time", 5, within: 1) }
check("playout delay: median 230 ms, at most 1 s") {
    try memory.expectKPI("playout_delay_p50", 0.23, within: 0)
    try memory.expectKPI("playout_delay_max", 1, within: 0)
}
// A lost packet costs its frame and, for video, the frames until the next key frame (1 s here).
check("some frames dropped, under half") { try memory.expectKPI("dropped_frame_percentage", 25, within: 25) }
check("an end-to-end latency was measured") { try memory.expectKPI("end_to_end_latency_p50", 1, within: 1) }
print("tagged: \(memory.records.allSatisfy { $0.tags.contains(TelemetryField("run", .string("analytics-sample"))) })")
print("undelivered: \(report.statistics.undelivered), rejected transitions: \(report.statistics.rejectedTransitions)")
