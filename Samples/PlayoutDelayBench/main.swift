// The playout-delay benchmark from code: one scenario played against the built-in publisher on
// loopback, its transitions measured against the rule — public API only. It prints what the rule
// makes deterministic; `PlayoutDelayBenchmark.table(_:)` gives the measured numbers.
import Playout
import PlayoutBench

LoggingSetup.bootstrap()

// 320×240 H.264 + Opus over SRTP for 6 s; 230 ms configured, 1 s from 1.5 s to 4 s.
let scenario = PlayoutDelayBenchmark.Scenario(
    playoutDelay: .milliseconds(230),
    schedule: [ScheduledOverride(delay: .seconds(1), at: .milliseconds(1_500), hold: .milliseconds(2_500))],
    duration: .seconds(6),
    video: .init(codec: .h264, width: 320, height: 240, frameRate: 30, bitrate: 300_000, keyframeInterval: 30)
)
let results = try scenario.run()
let run = results[0].analysis

// Within one frame interval + 10 ms of the rule, whatever the machine's speed.
let tolerance = run.frameInterval + .milliseconds(10)
func close(_ measured: Duration, _ expected: Duration) -> Bool {
    measured - expected <= tolerance && expected - measured <= tolerance
}
for transition in run.transitions {
    let to = "\(transition.before.compactDescription) → \(transition.after.compactDescription)"
    print("#\(transition.index + 1) \(to) (\(transition.source.rawValue), \(PlayoutDelayBenchmark.describe(transition.mode)))")
    print("  expected pause \(transition.expected.pause.compactDescription), skip \(transition.expected.skip.compactDescription)")
    print("  measured pause and skip within a frame + 10 ms: \(close(transition.pause, transition.expected.pause) && close(transition.skippedDuration, transition.expected.skip))")
}
print("frames rendered + skipped = frames due: \(run.framesRendered + run.framesSkipped == run.framesDue)")
print("frame log complete: \(run.framesNotRecorded == 0)")
