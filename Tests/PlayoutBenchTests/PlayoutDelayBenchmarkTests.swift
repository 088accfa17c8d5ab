import Playout
import PlayoutBench
import PlayoutCore
import Testing

/// The playout-delay benchmark's analysis on synthetic frame logs built from DESIGN.md's rule,
/// with exact expected values.
@Suite("PlayoutDelayBenchmark: transitions measured against the rule")
struct PlayoutDelayBenchmarkTests {
    static let start = MonotonicInstant(nanoseconds: 1_000_000_000)
    static let interval = Duration.milliseconds(40)
    static let transit = Duration.milliseconds(10)

    /// A change of the delay at `at` (since the start).
    struct Change {
        var at: Duration
        var delay: Duration
        var source: PlayoutDelaySource
        var transition: PlayoutDelayTransition = .immediate
    }

    /// A log of `seconds` of 25 fps video played by the rule: frame k has media time k × 40 ms,
    /// arrives 10 ms later (localTime = arrival), and is due at the first instant t with
    /// t ≥ localTime + the delay in effect at t; a frame whose due time passed when the delay
    /// dropped is skipped then. Latency = shown − media (capture = send = media time).
    static func log(_ changes: [Change], seconds: Int = 10) -> FrameLog.Snapshot {
        var frames: [FrameRecord] = []
        func delay(in segment: Int, at t: Duration) -> Duration {
            let change = changes[segment]
            guard case .gradual(let rate) = change.transition, segment > 0 else { return change.delay }
            let from = delay(in: segment - 1, at: change.at)
            let moved = (t - change.at) * rate
            let distance = change.delay > from ? change.delay - from : from - change.delay
            guard moved < distance else { return change.delay }
            return change.delay > from ? from + moved : from - moved
        }
        for k in 0..<(seconds * 25) {
            let media = interval * k
            let local = media + transit
            for segment in changes.indices {
                let begin = changes[segment].at
                let end = segment + 1 < changes.count ? changes[segment + 1].at : .seconds(1 << 40)
                var due: Duration
                if case .gradual(let rate) = changes[segment].transition, segment > 0 {
                    // t = local + d(t) on the ramp: t − at = (local + from − at) / (1 ∓ rate).
                    let from = delay(in: segment - 1, at: begin)
                    let slope = changes[segment].delay > from ? 1 - rate : 1 + rate
                    due = begin + (local + from - begin) / slope
                    if due >= begin + (changes[segment].delay > from ? changes[segment].delay - from : from - changes[segment].delay) / rate {
                        due = local + changes[segment].delay
                    }
                } else {
                    due = local + changes[segment].delay
                }
                if due < begin {
                    // Late when the delay dropped: skipped then.
                    frames.append(record(k, media: media, due: due, shown: begin, skipped: true, delay: changes[segment].delay, source: changes[segment].source))
                    break
                }
                if due < end {
                    frames.append(record(k, media: media, due: due, shown: due, skipped: false, delay: due - local, source: changes[segment].source))
                    break
                }
            }
        }
        let records = changes.map { DelayChangeRecord(at: start.advanced(by: $0.at), delay: EffectivePlayoutDelay(delay: $0.delay, source: $0.source, transition: $0.transition)) }
        return FrameLog.Snapshot(start: start, frames: frames, changes: records)
    }

    static func record(_ k: Int, media: Duration, due: Duration, shown: Duration, skipped: Bool, delay: Duration, source: PlayoutDelaySource) -> FrameRecord {
        FrameRecord(
            track: 0, kind: .video, index: k, mediaTime: media, captureTime: 1_000 + media.nanoseconds, arrival: start.advanced(by: media + transit),
            due: start.advanced(by: due), shown: start.advanced(by: shown), skipped: skipped, delay: delay, source: source,
            endToEndLatency: skipped ? nil : shown - media
        )
    }

    @Test("a pause that a frame decoded ahead ends only after the next change is charged to the change that started it (was: −300 ms, then +300 ms)")
    func pauseEndingAfterTheNextChange() throws {
        // 200 ms → 500 ms at 1 s (pause 300 ms), → 200 ms at 1.32 s (skip 300 ms). The frame of
        // media 0.80 s kept its 500 ms render time and showed at 1.33 s, after the decrease.
        let changes = [
            Change(at: .zero, delay: .milliseconds(200), source: .configured), Change(at: .seconds(1), delay: .milliseconds(500), source: .override),
            Change(at: .milliseconds(1_320), delay: .milliseconds(200), source: .configured),
        ]
        var frames: [FrameRecord] = []
        for k in 0..<60 {
            let media = Self.interval * k
            let local = media + Self.transit
            switch k {
            case ..<20: frames.append(Self.record(k, media: media, due: local + .milliseconds(200), shown: local + .milliseconds(200), skipped: false, delay: .milliseconds(200), source: .configured))
            case 20: frames.append(Self.record(k, media: media, due: .milliseconds(1_330), shown: .milliseconds(1_330), skipped: false, delay: .milliseconds(500), source: .override))
            case 21...27: frames.append(Self.record(k, media: media, due: local + .milliseconds(200), shown: .milliseconds(1_320), skipped: true, delay: .milliseconds(200), source: .configured))
            default: frames.append(Self.record(k, media: media, due: local + .milliseconds(200), shown: local + .milliseconds(200), skipped: false, delay: .milliseconds(200), source: .configured))
            }
        }
        let records = changes.map { DelayChangeRecord(at: Self.start.advanced(by: $0.at), delay: EffectivePlayoutDelay(delay: $0.delay, source: $0.source, transition: $0.transition)) }
        let t = PlayoutDelayBenchmark.analyze(FrameLog.Snapshot(start: Self.start, frames: frames, changes: records)).transitions
        try #require(t.count == 2)
        #expect(t[0].expected.pause == .milliseconds(300) && t[1].expected.skip == .milliseconds(300))
        #expect(t[0].pause == .milliseconds(310), "the pause up to the decrease, less a frame interval")
        #expect(abs(t[0].error.nanoseconds) <= 10_000_000 && abs(t[1].error.nanoseconds) <= 10_000_000, "\(t.map(\.error))")
    }

    @Test("a pause longer than the run (230 ms → 30 s at 1 s, 3 s run) is cut by the end on both sides: expected 2 s, measured 2 s, not an error of −29.77 s")
    func pauseCutByTheEnd() throws {
        let full = Self.log([Change(at: .zero, delay: .milliseconds(230), source: .configured), Change(at: .seconds(1), delay: .seconds(30), source: .override)], seconds: 40)
        let end = Duration.seconds(3)
        let log = FrameLog.Snapshot(start: full.start, frames: full.frames.filter { full.start.duration(to: $0.shown) <= end }, changes: full.changes)
        let cut = try #require(PlayoutDelayBenchmark.analyze(log, end: end).transitions.first)
        #expect(cut.expected.pause == .seconds(2))
        #expect(cut.pause >= .seconds(2) - Self.interval && cut.pause <= .seconds(2), "\(cut.pause)")
        #expect(cut.error <= .zero && cut.error >= .zero - Self.interval, "\(cut.error)")
        // Without the end, the rule's whole pause is expected (and nothing rendered shows it).
        #expect(PlayoutDelayBenchmark.analyze(log).transitions.first?.expected.pause == .milliseconds(29_770))
    }

    @Test("200 ms → 1 s at 2 s, → 100 ms at 5 s, released at 8 s: pauses 800 ms and 100 ms, skips 900 ms (23 frames), no error")
    func immediateSchedule() throws {
        let log = Self.log([
            Change(at: .zero, delay: .milliseconds(200), source: .configured), Change(at: .seconds(2), delay: .seconds(1), source: .override),
            Change(at: .seconds(5), delay: .milliseconds(100), source: .override), Change(at: .seconds(8), delay: .milliseconds(200), source: .configured),
        ])
        let run = PlayoutDelayBenchmark.analyze(log)
        #expect(run.frameInterval == .milliseconds(40))
        #expect(run.framesDue == 250 && run.framesSkipped == 23 && run.framesRendered == 227)
        let t = run.transitions
        try #require(t.count == 3)
        #expect(t.map(\.at) == [.seconds(2), .seconds(5), .seconds(8)])
        #expect(t.map(\.before) == [.milliseconds(200), .seconds(1), .milliseconds(100)])
        #expect(t.map(\.after) == [.seconds(1), .milliseconds(100), .milliseconds(200)])
        #expect(t.map(\.source) == [.override, .override, .configured])
        #expect(t.map(\.expected) == [
            .init(pause: .milliseconds(800), skip: .zero, settle: .milliseconds(800)), .init(pause: .zero, skip: .milliseconds(900), settle: .zero),
            .init(pause: .milliseconds(100), skip: .zero, settle: .milliseconds(100)),
        ])
        #expect(t.map(\.pause) == [.milliseconds(800), .zero, .milliseconds(100)])
        #expect(t.map(\.skippedDuration) == [.zero, .milliseconds(900), .zero])
        #expect(t.map(\.skippedFrames) == [0, 23, 0])
        #expect(t.map(\.error) == [.zero, .zero, .zero])
        // The first frame on time under the new delay: media 1.80 s due 2.81 s; 4.92 s due
        // 5.03 s; 7.92 s due 8.13 s.
        #expect(t.map(\.settle) == [.milliseconds(810), .milliseconds(30), .milliseconds(130)])
        #expect(t.map(\.latencyBefore) == [.milliseconds(210), .milliseconds(1_010), .milliseconds(110)])
        #expect(t.map(\.latencyAfter) == [.milliseconds(1_010), .milliseconds(110), .milliseconds(210)])
        #expect(run.gaps.map(\.excess) == [.milliseconds(800), .milliseconds(-900), .milliseconds(100)])
        #expect(run.gaps.first?.from == .milliseconds(1_970) && run.gaps.first?.to == .milliseconds(2_810))
    }

    @Test("a gradual 200 ms → 1.2 s at 25 %: no pause, no skip, settled after Δ / rate = 4 s (within a frame interval)")
    func gradual() throws {
        let log = Self.log([
            Change(at: .zero, delay: .milliseconds(200), source: .configured),
            Change(at: .seconds(2), delay: .milliseconds(1_200), source: .override, transition: .gradual(rate: 0.25)),
        ])
        let run = PlayoutDelayBenchmark.analyze(log)
        let transition = try #require(run.transitions.first)
        #expect(transition.expected == .init(pause: .zero, skip: .zero, settle: .seconds(4)))
        #expect(transition.pause == .zero && transition.skippedDuration == .zero && transition.skippedFrames == 0 && transition.error == .zero)
        #expect(run.gaps.isEmpty, "a gap stretched by 40 ms × 0.25 / 0.75 is not a pause")
        let settle = try #require(transition.settle)
        #expect(settle >= .seconds(4) && settle <= .seconds(4) + Self.interval, "\(settle)")
        #expect(transition.latencyAfter == .milliseconds(1_210))

        // A frame on the ramp rendered 8 ms late (still on time): its gap stretches by 13.3 +
        // 8 ms, beyond half a frame interval, but not beyond it plus the ramp's own stretch.
        var jittered = log
        let index = try #require(jittered.frames.firstIndex { $0.mediaTime == .seconds(3) })
        jittered.frames[index].shown = jittered.frames[index].shown.advanced(by: .milliseconds(8))
        let again = PlayoutDelayBenchmark.analyze(jittered)
        #expect(again.gaps.isEmpty && again.transitions.first?.pause == .zero, "\(again.gaps)")
    }

    @Test("a change while a gradual one is under way starts from where it got to")
    func chainedGradual() throws {
        let log = Self.log([
            Change(at: .zero, delay: .milliseconds(200), source: .configured),
            Change(at: .seconds(2), delay: .milliseconds(1_200), source: .override, transition: .gradual(rate: 0.1)),
            Change(at: .seconds(4), delay: .milliseconds(200), source: .configured),
        ])
        let run = PlayoutDelayBenchmark.analyze(log)
        try #require(run.transitions.count == 2)
        // 2 s at 10 %: 400 ms in effect; the immediate release then skips 200 ms. The last frame
        // before it rendered at 3.967 s under 396.7 ms (the delay moves 4 ms a frame), so the
        // render gap measures 196.7 ms of skipped media; 3.60 s to 3.76 s are skipped.
        #expect(run.transitions[1].before == .milliseconds(400))
        #expect(run.transitions[1].expected == .init(pause: .zero, skip: .milliseconds(200), settle: .zero))
        let skipped = run.transitions[1].skippedDuration
        #expect(skipped > .milliseconds(196) && skipped < .milliseconds(197), "\(skipped)")
        #expect(run.transitions[1].skippedFrames == 5)
    }

    @Test("a decrease during a pause ends it early and skips what became late: 200 ms → 1 s at 2 s, → 200 ms at 2.5 s")
    func composed() throws {
        let log = Self.log([
            Change(at: .zero, delay: .milliseconds(200), source: .configured), Change(at: .seconds(2), delay: .seconds(1), source: .override),
            Change(at: .milliseconds(2_500), delay: .milliseconds(200), source: .configured),
        ], seconds: 5)
        let run = PlayoutDelayBenchmark.analyze(log)
        try #require(run.transitions.count == 2)
        // The rule: the pause lasts until the decrease (500 ms, not 800), which then skips the
        // media that became late (500 ms); pause − skip = 0 = the net change.
        #expect(run.transitions.map(\.expected) == [.init(pause: .milliseconds(500), skip: .zero, settle: .milliseconds(500)), .init(pause: .zero, skip: .milliseconds(500), settle: .zero)])
        // One render gap, 1.97 s → 2.53 s, over 560 ms of media: rendering stopped after the
        // frame at 1.97 s (one interval later) until 2.5 s — 490 ms — then jumped 490 ms.
        #expect(run.transitions.map(\.pause) == [.milliseconds(490), .zero])
        #expect(run.transitions.map(\.skippedDuration) == [.zero, .milliseconds(490)])
        #expect(run.transitions.map(\.skippedFrames) == [0, 13])
        #expect(run.transitions.map(\.error) == [.milliseconds(-10), .milliseconds(10)])
        #expect(run.gaps.map(\.excess) == [.milliseconds(490), .milliseconds(-490)])
    }

    @Test("the rule's expectations", arguments: [
        (Duration.seconds(1), Duration.seconds(5), PlayoutDelayTransition.immediate, PlayoutDelayBenchmark.Expectation(pause: .seconds(4), skip: .zero, settle: .seconds(4))),
        (.seconds(5), .seconds(1), .immediate, .init(pause: .zero, skip: .seconds(4), settle: .zero)),
        (.seconds(1), .seconds(2), .gradual(rate: 0.1), .init(pause: .zero, skip: .zero, settle: .seconds(10))),
        (.seconds(2), .seconds(1), .gradual(rate: 0.5), .init(pause: .zero, skip: .zero, settle: .seconds(2))),
        (.seconds(1), .seconds(1), .immediate, .init(pause: .zero, skip: .zero, settle: .zero)),
    ])
    func expectations(before: Duration, after: Duration, transition: PlayoutDelayTransition, expected: PlayoutDelayBenchmark.Expectation) {
        #expect(PlayoutDelayBenchmark.Expectation(before: before, after: after, transition: transition) == expected)
    }

    @Test("across runs: median, minimum and maximum of each measure, per transition")
    func summary() throws {
        let changes = [Change(at: .zero, delay: .milliseconds(200), source: .configured), Change(at: .seconds(2), delay: .seconds(1), source: .override)]
        var runs: [PlayoutDelayBenchmark.Run] = []
        for shift in [Duration.zero, .milliseconds(20), .milliseconds(-12)] {
            var log = Self.log(changes, seconds: 4)
            // Every frame after the pause shown `shift` later: the pause measures 800 ms + shift.
            for index in log.frames.indices where log.frames[index].shown >= Self.start.advanced(by: .seconds(2)) {
                log.frames[index].shown = log.frames[index].shown.advanced(by: shift)
            }
            runs.append(PlayoutDelayBenchmark.analyze(log))
        }
        let summary = try #require(PlayoutDelayBenchmark.summarize(runs).first)
        #expect(summary.pause == .init(median: .milliseconds(800), minimum: .milliseconds(788), maximum: .milliseconds(820), count: 3))
        #expect(summary.error == .init(median: .zero, minimum: .milliseconds(-12), maximum: .milliseconds(20), count: 3))
        #expect(summary.skippedFrames == .init(median: 0, minimum: 0, maximum: 0, count: 3))
        #expect(PlayoutDelayBenchmark.median([.seconds(1), .seconds(3)]) == .seconds(2))
        #expect(PlayoutDelayBenchmark.median([]) == nil)
        #expect(PlayoutDelayBenchmark.summarize([]).isEmpty)
    }

    @Test("a frame presented 30 ms late (a busy machine) is neither a pause nor a skip")
    func lateFrame() throws {
        var log = Self.log([Change(at: .zero, delay: .milliseconds(200), source: .configured), Change(at: .seconds(2), delay: .seconds(1), source: .override)], seconds: 4)
        let late = try #require(log.frames.firstIndex { $0.mediaTime == .seconds(3) })
        log.frames[late].shown = log.frames[late].shown.advanced(by: .milliseconds(30))
        let run = PlayoutDelayBenchmark.analyze(log)
        #expect(run.gaps.map(\.excess) == [.milliseconds(800)])
        #expect(run.transitions.first?.pause == .milliseconds(800) && run.transitions.first?.skippedDuration == .zero)
    }

    @Test("an empty log, or one without changes, analyses to nothing rather than crashing")
    func empty() {
        let run = PlayoutDelayBenchmark.analyze(FrameLog.Snapshot(start: Self.start, frames: [], changes: []))
        #expect(run.transitions.isEmpty && run.framesDue == 0 && run.gaps.isEmpty)
    }
}

/// The benchmark's outputs on the synthetic schedule of ``PlayoutDelayBenchmarkTests``, exactly.
@Suite("PlayoutDelayBenchmark: table, JSON Lines, CSV and SVG")
struct PlayoutDelayBenchmarkOutputTests {
    typealias Change = PlayoutDelayBenchmarkTests.Change

    static func results(runs: Int = 1) -> [PlayoutDelayBenchmark.RunResult] {
        let log = PlayoutDelayBenchmarkTests.log([
            Change(at: .zero, delay: .milliseconds(200), source: .configured), Change(at: .seconds(2), delay: .seconds(1), source: .override),
            Change(at: .seconds(5), delay: .milliseconds(100), source: .override),
        ], seconds: 7)
        var qos = TrackQoS(kind: .video, codec: .h264)
        qos.framesRendered = 150
        qos.framesSkipped = 23
        qos.delayPauseCount = 1
        let final = SubscriberQoS(elapsed: .seconds(7), state: .ended, playoutDelay: .init(delay: .milliseconds(100), source: .override), tracks: [.video: qos])
        return (1...runs).map { PlayoutDelayBenchmark.RunResult(run: $0, log: log, qos: final, analysis: PlayoutDelayBenchmark.analyze(log)) }
    }

    @Test("the table: one row per transition, in ms, medians with min–max for several runs")
    func table() {
        let one = PlayoutDelayBenchmark.table(Self.results())
        let lines = one.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines[0] == "#  at s    delay ms  mode       pause exp  pause  skip exp  skip  frames skipped  error  settle exp  settle  latency before  latency after")
        #expect(lines[2] == "1     2  200 → 1000  immediate        800    800         0     0               0      0         800     810             210           1010")
        #expect(lines[3] == "2     5  1000 → 100  immediate          0      0       900   900              23      0           0      30            1010            110")
        #expect(lines[5] == "durations in ms; 1 run; video, frame interval 40 ms; frames: 152 rendered + 23 skipped")
        let three = PlayoutDelayBenchmark.table(Self.results(runs: 3)).split(separator: "\n").map(String.init)
        #expect(three[2] == "1     2  200 → 1000  immediate        800  800 (800–800)         0        0 (0–0)         0 (0–0)  0 (0–0)         800  810 (810–810)     210 (210–210)  1010 (1010–1010)")
        #expect(three.last == "durations in ms; median (min–max) over 3 runs; video, frame interval 40 ms; frames: 152 rendered + 23 skipped; 152 rendered + 23 skipped; 152 rendered + 23 skipped")
        #expect(PlayoutDelayBenchmark.table([]).contains("(no transition: give --schedule)"))
    }

    @Test("JSON Lines: a transition object per transition, then the benchmark object")
    func json() {
        let lines = PlayoutDelayBenchmark.jsonLines(Self.results(runs: 2))
        #expect(lines.count == 3)
        #expect(lines[0] == #"{"type":"transition","index":1,"at":2,"before":0.2,"after":1,"source":"override","transition":"immediate","expected":{"pause":0.8,"skip":0,"settle":0.8},"pause":{"median":0.8,"min":0.8,"max":0.8},"skippedDuration":{"median":0,"min":0,"max":0},"skippedFrames":{"median":0,"min":0,"max":0},"error":{"median":0,"min":0,"max":0},"settle":{"median":0.81,"min":0.81,"max":0.81},"latencyBefore":{"median":0.21,"min":0.21,"max":0.21},"latencyAfter":{"median":1.01,"min":1.01,"max":1.01},"runs":2}"#)
        #expect(lines[2] == #"{"type":"benchmark","runs":2,"track":"video","frameInterval":0.04,"transitions":2,"framesDue":[175,175],"framesRendered":[152,152],"framesSkipped":[23,23],"framesNotRecorded":[0,0],"subscriberFramesRendered":[150,150],"subscriberFramesSkipped":[23,23],"subscriberFramesLate":[0,0],"delayPauseCount":[1,1],"freezeCount":[0,0]}"#)
    }

    @Test("CSV: the header with units, then one row per frame and run")
    func csv() {
        let text = PlayoutDelayBenchmark.csv(Self.results(runs: 2))
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines[0] == PlayoutDelayBenchmark.csvHeader)
        #expect(lines.count == 1 + 2 * 175)
        // Frame 0: media 0, captured at 1 µs after 1970, arrived at 10 ms, due and shown at 210 ms.
        #expect(lines[1] == "1,0,video,0,0,0.000001,0.01,0.21,0.21,0,0.2,configured,0.21")
        #expect(lines[1 + 175 + 100] == "2,0,video,100,4,4.000001,4.01,4.11,5,1,0.1,override,", "a skipped frame: shown when skipped, no latency")
    }

    @Test("the SVG: one self-contained document with axes, legend and every transition labelled", arguments: [1, 3])
    func plot(runs: Int) {
        let svg = PlayoutDelayBenchmark.plot(Self.results(runs: runs))
        #expect(svg.hasPrefix(#"<svg xmlns="http://www.w3.org/2000/svg" width="1200" height="720""#))
        #expect(svg.hasSuffix("</svg>\n"))
        #expect(!svg.contains("href") && !svg.contains("<script") && !svg.contains("<style"), "self-contained")
        for text in ["time since the start of each run (s)", "delay and latency (ms)", "delay in effect", "end-to-end latency", "pause (render gap)",
                     "#1 at 2 s: 200 → 1000 ms", "pause exp 800 / meas 800 ms", "#2 at 5 s: 1000 → 100 ms", "skip exp 900 / meas 900 ms, 23 frames"] {
            #expect(svg.contains(text), "\(text)")
        }
        // Per run: the latency in two pieces (broken at the pause; the skip is no gap in render
        // time), one delay line, one shaded pause, one skip marker.
        #expect(svg.ranges(of: "stroke=\"#e07b00\"").count == 2 * runs + 1)  // + the legend
        #expect(svg.ranges(of: "<polyline").count == 3 * runs)
        #expect(svg.ranges(of: "<path d=").count == runs + 1)
        #expect(svg.ranges(of: "fill=\"#9a9a9a\"").count == runs + 1)
    }
}
