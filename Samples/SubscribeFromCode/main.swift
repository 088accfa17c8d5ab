// Subscribe from code: the built-in publisher on loopback, a subscriber with one playout-delay
// override, the delay changes as they happen, and what is deterministic about the result —
// public API only.
import Playout
import PlayoutSender

// Logging once per process: the console at PLAYOUT_LOG_LEVEL (warning by default), FFmpeg's own
// lines included.
LoggingSetup.bootstrap()

// The publisher sends a 320×240 test pattern and a tone over SRTP for 6 s to four free loopback
// ports (video, its RTCP, audio, its RTCP); its SDP says where.
let publisher = try Publisher(options: .init(
    destination: try Publisher.freeLoopbackDestination(),
    video: .init(codec: .h264, width: 320, height: 240, frameRate: 30, bitrate: 300_000, keyframeInterval: 30),
    keyingMaterial: .random(for: .aesCM128HMACSHA1_80), duration: .seconds(6)
))

// The subscriber holds 230 ms (the default); 1 s from 2 s to 4 s after the start.
let subscriber = try Subscriber(
    sessionDescription: publisher.sessionDescription,
    options: .init(duration: .seconds(7), overrides: [ScheduledOverride(delay: .seconds(1), at: .seconds(2), hold: .seconds(2))])
)

// Observers run on the subscriber's observer thread, never on a media thread.
let delays = subscriber.playoutDelay.subscribe { delay in
    print("playout delay: \(delay.delay.compactDescription) (\(delay.source.rawValue))")
}
let states = LockedValue<[String]>([])
let stateWatch = subscriber.state.subscribe { state in states.withLock { $0.append(state.name) } }

try subscriber.start()
try publisher.start()
_ = try publisher.waitUntilEnded()
let summary = subscriber.waitUntilEnded()
delays.dispose()
stateWatch.dispose()

// What the rule says, whatever the machine's speed: the increase paused rendering by the
// difference (770 ms), the release skipped as much, and nothing was lost on loopback. (Freezes
// are not among them: on a machine busy with something else, a frame may come late.)
let video = summary.video!
let frame = Duration.seconds(1) / 30
print("states: \(states.withLock { $0 }.joined(separator: " → "))")
print("delay pauses: \(video.delayPauseCount), within a frame of 770 ms: \(abs((video.totalDelayPausesDuration - .milliseconds(770)).seconds) <= frame.seconds)")
print("skipped within a frame of 770 ms: \(abs((video.totalSkippedDuration - .milliseconds(770)).seconds) <= frame.seconds)")
print("packets lost: \(summary.total.packetsLost)")
