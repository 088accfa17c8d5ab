public import Playout
public import PlayoutCore

/// What playout-delay changes really did to a subscription, against DESIGN.md's rule: each frame
/// is due at `localTime(mediaTime) + the delay in effect`, so an immediate change of Δ pauses
/// rendering for max(Δ, 0) and skips max(−Δ, 0) of media, and a gradual change at `rate` does
/// neither and settles after |Δ| / rate.
///
/// Sans-IO: ``analyze(_:track:)`` reads one run's ``FrameLog/Snapshot`` and returns a
/// ``Run``; ``summarize(_:)`` folds several runs of the same schedule into medians, minima and
/// maxima per transition. `playout bench playout-delay` prints what they return.
///
/// What is expected, per transition: the rule applied to a continuous stream, so transitions
/// compose as DESIGN.md says — an increase cut short by the next change pauses only until then,
/// and a decrease during a pause skips only what became late (``Expectation/init(before:after:transition:)``
/// is one change on its own).
///
/// What is measured, per transition (every change of the delay asked for after the start):
/// - **pause**: over the render gaps that end between this transition and the next, the sum of
///   what each gap lasted beyond the media it covers, counting only gaps that exceed it by more
///   than half a frame interval (shorter ones are render jitter), plus, during a gradual
///   change, the interval × rate / (1 − rate) it stretches every gap by. Gaps
///   are taken between frames rendered on time (within ``onTimeTolerance`` of their due time),
///   so a frame the machine presented late is not read as a pause followed by a skip. A gap
///   during which a later change arrived after rendering had stopped, and frames were skipped,
///   is split there: its pause belongs to the change that started it, its skip to the later one;
/// - **skip**: the same for gaps shorter than their media (skipped media), and the frames
///   skipped in that window;
/// - **error**: (pause − skip measured) − (pause − skip expected);
/// - **settle time**: from the transition to the first frame rendered on time (within
///   ``onTimeTolerance`` of its due time) under the new delay (within ``delayTolerance``);
/// - **latency** before and after: the median end-to-end latency over the last second before the
///   transition, and the first second after it settled.
///
/// ```swift
/// let run = PlayoutDelayBenchmark.analyze(subscriber.frameLog!.snapshot())
/// for transition in run.transitions { print(transition.expected.pause, transition.pause) }
/// ```
///
/// - Complexity: O(n log n) in the frames recorded.
public enum PlayoutDelayBenchmark {
    /// A frame counts as on time within this of its due time (the renderer's late threshold).
    public static let onTimeTolerance: Duration = .milliseconds(20)
    /// A frame's delay counts as the new one within this of it.
    public static let delayTolerance: Duration = .milliseconds(1)
    /// How far before a transition, and after it settled, latency is measured.
    public static let latencyWindow: Duration = .seconds(1)

    /// What the rule predicts for one transition.
    public struct Expectation: Equatable, Sendable {
        /// How long rendering pauses: max(Δ, 0) immediate, 0 gradual.
        public var pause: Duration
        /// How much media is skipped: max(−Δ, 0) immediate, 0 gradual.
        public var skip: Duration
        /// How long until frames render on time under the new delay: the pause (immediate), or
        /// |Δ| / rate (gradual).
        public var settle: Duration

        /// An expectation with these values.
        public init(pause: Duration, skip: Duration, settle: Duration) {
            self.pause = pause
            self.skip = skip
            self.settle = settle
        }

        /// The rule's prediction for a change from `before` to `after` by `transition`.
        public init(before: Duration, after: Duration, transition: PlayoutDelayTransition) {
            let change = after - before
            switch transition {
            case .immediate:
                self.init(pause: max(change, .zero), skip: max(.zero - change, .zero), settle: max(change, .zero))
            case .gradual(let rate):
                let magnitude = change < .zero ? .zero - change : change
                self.init(pause: .zero, skip: .zero, settle: rate > 0 ? magnitude / min(rate, PlayoutDelayTransition.maximumRate) : .zero)
            }
        }
    }

    /// One transition of one run: the prediction and what happened.
    public struct Transition: Equatable, Sendable {
        /// Its position in the schedule (0: the first change after the start).
        public var index: Int
        /// When it was asked, since the run's start.
        public var at: Duration
        /// The delay in effect just before (where a gradual change under way had got to).
        public var before: Duration
        /// The delay asked for.
        public var after: Duration
        /// Whether the delay asked for is an override or the configured one (a release).
        public var source: PlayoutDelaySource
        /// How rendering moves there.
        public var mode: PlayoutDelayTransition
        /// What the rule predicts.
        public var expected: Expectation
        /// The render pause measured.
        public var pause: Duration
        /// The media skipped, measured on the render gaps.
        public var skippedDuration: Duration
        /// Frames skipped between this transition and the next.
        public var skippedFrames: Int
        /// (pause − skip) measured − (pause − skip) expected.
        public var error: Duration
        /// From the transition to the first frame on time under the new delay (nil: none was).
        public var settle: Duration?
        /// Median end-to-end latency over the second before (nil: unknown).
        public var latencyBefore: Duration?
        /// Median end-to-end latency over the second after it settled (nil: unknown).
        public var latencyAfter: Duration?
    }

    /// A render gap longer or shorter than its media by more than the noise threshold, since the
    /// run's start.
    public struct Gap: Equatable, Sendable {
        /// When the frame before it rendered.
        public var from: Duration
        /// When the frame after it rendered.
        public var to: Duration
        /// The gap less the media it covers: positive a pause, negative a skip.
        public var excess: Duration
    }

    /// One run analysed.
    public struct Run: Equatable, Sendable {
        /// The track analysed (video if there is one) and its kind.
        public var track: Int
        /// Its kind.
        public var kind: MediaKind?
        /// The media interval between consecutive frames (the median).
        public var frameInterval: Duration
        /// Every transition, in order.
        public var transitions: [Transition]
        /// Frames of the track recorded: rendered + skipped.
        public var framesDue: Int
        /// Frames rendered.
        public var framesRendered: Int
        /// Frames skipped.
        public var framesSkipped: Int
        /// Frames the log could not keep (all tracks); the analysis is incomplete when not 0.
        public var framesNotRecorded: Int
        /// Pauses and skips seen on the render gaps (for plots).
        public var gaps: [Gap]
    }

    /// Analyses `log` for `track` (nil: the video track, or the first track recorded).
    ///
    /// `end` is when the run ended, since the log's start (nil: not known). A pause still under
    /// way then is cut by it on both sides: the rule's pause counts only up to the end, and so
    /// does the pause measured (from the last frame rendered to the end, less one frame
    /// interval) — so a 30 s override in a 3 s run is no longer a −29.77 s error.
    public static func analyze(_ log: FrameLog.Snapshot, track: Int? = nil, end: Duration? = nil) -> Run {
        let chosen = track ?? (log.frames.first { $0.kind == .video } ?? log.frames.first)?.track ?? 0
        let frames = log.frames.filter { $0.track == chosen }.sorted { $0.mediaTime < $1.mediaTime }
        let rendered = frames.filter { !$0.skipped }
        let interval = medianGap(rendered.map(\.mediaTime)) ?? .milliseconds(33)
        let start = log.start
        func since(_ instant: MonotonicInstant) -> Duration { start.duration(to: instant) }

        // Transitions: every change after the first (the configured delay at the start), with
        // the delay in effect just before (where a gradual change under way had got to).
        let changes = log.changes
        var skeletons: [(at: Duration, next: Duration, before: Duration, change: DelayChangeRecord, expected: Expectation)] = []
        var inEffect = changes.first?.delay.delay ?? .zero
        var ramp: (from: Duration, to: Duration, at: Duration, rate: Double)?
        // The rule on a continuous stream: the render front F (the local time of the media
        // rendered last) never goes back; at a change to d, media before t − d is late (skipped
        // at once), and rendering waits while F + d is ahead of t (paused). So a change cut
        // short by the next one pauses only until then, and a decrease during a pause skips
        // only what became late (DESIGN.md: transitions compose).
        var front = changes.first.map { since($0.at) - $0.delay.delay } ?? .zero
        for index in changes.indices.dropFirst() {
            let change = changes[index]
            let at = since(change.at)
            if let current = ramp { inEffect = position(of: current, at: at) }
            let before = inEffect
            let after = change.delay.delay
            if case .gradual(let rate) = change.delay.transition { ramp = (before, after, at, rate) } else { ramp = nil }
            inEffect = after
            let next = index + 1 < changes.count ? since(changes[index + 1].at) : (end.map { max($0, at) } ?? Duration.seconds(1 << 40))
            var expected = Expectation(before: before, after: after, transition: change.delay.transition)
            // The front just before: where the previous pause (if any) held it, or t − delay.
            front = max(front, at - before)
            if case .immediate = change.delay.transition {
                let skip = max(.zero, (at - after) - front)
                front = max(front, at - after)
                let pause = min(max(.zero, front + after - at), next - at)
                expected = Expectation(pause: pause, skip: skip, settle: pause)
            }
            skeletons.append((at, next, before, change, expected))
        }

        // Render gaps between frames rendered on time (a frame the machine presented late would
        // otherwise read as a pause followed by a skip of the same length), beyond half a frame
        // interval — and, while a gradual change plays at most `rate` slower or faster, beyond
        // the interval × rate / (1 − rate) each gap may stretch by too.
        let onTime = rendered.filter { abs($0.due.duration(to: $0.shown)) <= onTimeTolerance }
        var gaps: [Gap] = []
        for (a, b) in zip(onTime, onTime.dropFirst()) {
            let excess = a.shown.duration(to: b.shown) - (b.mediaTime - a.mediaTime)
            let to = since(b.shown)
            // A decrease that came while a pause was under way: rendering stopped until that
            // change (the pause, in the window of the change that started it), then the media
            // jumped (the skip, in the decrease's window).
            // (A change that came more than a frame interval after the last render found
            // rendering stopped already.)
            // Likewise a pause that ends only after the next change (500ms@0.3s/0.3s: the pause
            // ends at 0.57 s, and the first frame under 500 ms may be due just after 0.6 s): the
            // part before that change is the earlier change's pause (it was charged to the next
            // one: −270 ms then +277 ms).
            let within = skeletons.filter { $0.at > since(a.shown) + interval && $0.at <= to }
            let skippedInside = frames.contains { $0.skipped && $0.mediaTime > a.mediaTime && $0.mediaTime < b.mediaTime }
            if skippedInside || excess > interval / 2, let last = within.last {
                let paused = skippedInside ? (last.at - since(a.shown)) - interval : min(excess, (last.at - since(a.shown)) - interval)
                if paused > interval / 2 {
                    gaps.append(Gap(from: since(a.shown), to: last.at - .nanoseconds(1), excess: paused))
                    gaps.append(Gap(from: last.at, to: to, excess: excess - paused))
                    continue
                }
            }
            var threshold = interval / 2
            for skeleton in skeletons where to >= skeleton.at && to < min(skeleton.next, skeleton.at + skeleton.expected.settle + interval) {
                if case .gradual(let rate) = skeleton.change.delay.transition, rate < 1 { threshold += interval * (rate / (1 - rate)) }
            }
            if excess > threshold || excess < .zero - threshold { gaps.append(Gap(from: since(a.shown), to: to, excess: excess)) }
        }

        // A pause under way when the run ended: rendering stood still from the last frame on
        // time to the end (less the frame interval that would have passed anyway).
        if let end, let last = onTime.last, let cut = skeletons.last, cut.at <= end, cut.expected.pause > .zero,
           cut.at + cut.expected.pause >= end - interval, since(last.shown) <= end {
            let excess = end - since(last.shown) - interval
            if excess > interval / 2 { gaps.append(Gap(from: since(last.shown), to: end - .nanoseconds(1), excess: excess)) }
        }

        var transitions: [Transition] = []
        for (index, skeleton) in skeletons.enumerated() {
            let (at, next, before, change, expected) = skeleton
            let after = change.delay.delay
            let window = gaps.filter { $0.to >= at && $0.to < next }
            let pause = window.reduce(Duration.zero) { $0 + max($1.excess, .zero) }
            let skip = window.reduce(Duration.zero) { $0 + max(.zero - $1.excess, .zero) }
            let skippedFrames = frames.count(where: { $0.skipped && since($0.shown) >= at && since($0.shown) < next })
            let settled = rendered.first { frame in
                let shown = since(frame.shown)
                return shown >= at && shown < next && abs(frame.delay - after) <= delayTolerance && abs(frame.due.duration(to: frame.shown)) <= onTimeTolerance
            }
            let settle = settled.map { since($0.shown) - at }
            let previousSettled = transitions.last.map { $0.at + ($0.settle ?? .zero) } ?? .zero
            let beforeWindow = rendered.filter { since($0.shown) < at && since($0.shown) >= max(previousSettled, at - latencyWindow) }
            let afterWindow = settle.map { settle in
                rendered.filter { since($0.shown) >= at + settle && since($0.shown) < min(next, at + settle + latencyWindow) }
            } ?? []
            transitions.append(Transition(
                index: index, at: at, before: before, after: after, source: change.delay.source, mode: change.delay.transition,
                expected: expected, pause: pause, skippedDuration: skip, skippedFrames: skippedFrames,
                error: (pause - skip) - (expected.pause - expected.skip), settle: settle,
                latencyBefore: median(beforeWindow.compactMap(\.endToEndLatency)), latencyAfter: median(afterWindow.compactMap(\.endToEndLatency))
            ))
        }
        return Run(
            track: chosen, kind: frames.first?.kind, frameInterval: interval, transitions: transitions, framesDue: frames.count,
            framesRendered: rendered.count, framesSkipped: frames.count - rendered.count, framesNotRecorded: log.framesDropped, gaps: gaps
        )
    }

    /// Where a gradual change has got to `at`.
    private static func position(of ramp: (from: Duration, to: Duration, at: Duration, rate: Double), at: Duration) -> Duration {
        let moved = max(.zero, at - ramp.at) * ramp.rate
        let distance = abs(ramp.to - ramp.from)
        guard moved < distance else { return ramp.to }
        return ramp.to > ramp.from ? ramp.from + moved : ramp.from - moved
    }

    /// The median of the gaps between consecutive values.
    private static func medianGap(_ values: [Duration]) -> Duration? {
        median(zip(values, values.dropFirst()).map { $1 - $0 })
    }

    /// The median (the mean of the two middle values for an even count); nil when empty.
    public static func median(_ values: [Duration]) -> Duration? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    // MARK: Across runs

    /// The median, minimum and maximum of one measure over the runs that have it.
    public struct Spread<Value: Comparable & Sendable>: Equatable, Sendable {
        /// The median.
        public var median: Value
        /// The smallest.
        public var minimum: Value
        /// The largest.
        public var maximum: Value
        /// How many runs had a value.
        public var count: Int

        /// A spread with these values.
        public init(median: Value, minimum: Value, maximum: Value, count: Int) {
            self.median = median
            self.minimum = minimum
            self.maximum = maximum
            self.count = count
        }
    }

    /// One transition over every run.
    public struct TransitionSummary: Equatable, Sendable {
        /// The transition as the first run saw it (index, instant, delays, mode, prediction).
        public var transition: Transition
        /// Measured pause.
        public var pause: Spread<Duration>?
        /// Measured skipped media.
        public var skippedDuration: Spread<Duration>?
        /// Frames skipped.
        public var skippedFrames: Spread<Int>?
        /// Error against the rule.
        public var error: Spread<Duration>?
        /// Settle time.
        public var settle: Spread<Duration>?
        /// Latency before.
        public var latencyBefore: Spread<Duration>?
        /// Latency after.
        public var latencyAfter: Spread<Duration>?
    }

    /// Folds runs of one schedule into one summary per transition (matched by position).
    public static func summarize(_ runs: [Run]) -> [TransitionSummary] {
        guard let first = runs.first else { return [] }
        return first.transitions.indices.map { index in
            let all = runs.compactMap { $0.transitions.indices.contains(index) ? $0.transitions[index] : nil }
            return TransitionSummary(
                transition: first.transitions[index], pause: spread(all.map(\.pause)), skippedDuration: spread(all.map(\.skippedDuration)),
                skippedFrames: spread(all.map(\.skippedFrames)), error: spread(all.map(\.error)), settle: spread(all.compactMap(\.settle)),
                latencyBefore: spread(all.compactMap(\.latencyBefore)), latencyAfter: spread(all.compactMap(\.latencyAfter))
            )
        }
    }

    /// Median (lower middle for an even count of integers; the mean of the middle two for
    /// durations), minimum and maximum; nil when empty.
    static func spread(_ values: [Duration]) -> Spread<Duration>? {
        guard let median = median(values) else { return nil }
        return Spread(median: median, minimum: values.min()!, maximum: values.max()!, count: values.count)
    }

    static func spread(_ values: [Int]) -> Spread<Int>? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        let median = sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        return Spread(median: median, minimum: sorted.first!, maximum: sorted.last!, count: values.count)
    }
}

private func abs(_ duration: Duration) -> Duration {
    duration < .zero ? .zero - duration : duration
}
