import PlayoutCore

/// Computes one session's ``TelemetryKPIs`` from its records, in `seq` order.
///
/// It reads records only — never the engine's internal events — so KPIs recomputed from a replayed
/// JSON Lines file are identical to those computed live. Times are the records' monotonic times.
///
/// ```swift
/// var calculator = TelemetryMetricCalculator()
/// for record in records where record.sessionId == id { calculator.consume(record) }
/// let kpis = calculator.kpis()            // open intervals closed at the last record
/// print(kpis.videoStartupTime, kpis.rebufferPercentage)
/// ```
struct TelemetryMetricCalculator: Sendable {
    private enum Phase: Equatable { case idle, startup, playing, rebuffering, excluded, paused, stopped }

    private var viewInitAt: Duration?
    private var playerReadyAt: Duration?
    private var firstPlayAt: Duration?
    private var firstPlayingAt: Duration?
    private var lastTime: Duration?
    private var closed = false
    private var fatal = false
    private var fatalBeforeStart = false

    private var phase = Phase.idle
    private var phaseStart: Duration = .zero
    private var playing: Duration = .zero
    private var rebuffering: Duration = .zero
    private var rebufferCount = 0

    private var freezeStart: Duration?
    private var freezes: Duration = .zero
    private var bitrate: Double?
    private var bitrateSum: Double = 0
    private var bitrateTime: Duration = .zero
    /// Measured rendition bitrates (heartbeats with `renditionBitrate`), each weighted by the
    /// playing time of its window: since the previous one, `measuredMark` on ``playing``.
    private var measuredBitrateSum: Double = 0
    private var measuredBitrateTime: Duration = .zero
    private var measuredMark: Duration = .zero
    private var delay: Duration?
    private var delayWeights: [Int64: Int64] = [:]  // delay (ns) → playing time (ns), but for…
    private var delayPlayed: Int64 = 0  // …the playing time under `delay` since it took effect (no hashing per record)
    private var framesDropped: Double?
    private var framesRendered: Double?
    private var latency = DurationHistogram()

    /// An empty calculator.
    init() {}

    /// Takes the session's next record into account.
    mutating func consume(_ record: TelemetryRecord) {
        consume(reading: record)
    }

    /// ``consume(_:)`` of the engine's column view (no record built).
    mutating func consume(_ record: TelemetryColumnView) {
        consume(reading: record)
    }

    private mutating func consume(reading record: some TelemetryRecordReading) {
        let now = record.monotonic
        lastTime = now
        switch record.kind {
        case .metric: return
        case .heartbeat:
            if let dropped = record[kpi: .framesDropped]?.number, let rendered = record[kpi: .framesRendered]?.number {
                framesDropped = dropped
                framesRendered = rendered
            }
            if let seconds = record[kpi: .endToEndLatency]?.number, let value = Duration(exactlySeconds: seconds) {
                latency.record(value)
            }
            if let measured = record[kpi: .renditionBitrate]?.number, measured.isFinite, measured >= 0 {
                // The bitrate measured over the window this heartbeat closes: weighted by the
                // time played in that window.
                advance(to: now)
                let window = playing - measuredMark
                measuredMark = playing
                measuredBitrateSum += measured * window.seconds
                measuredBitrateTime += window
            }
            return
        case .event: break
        }
        switch record.vocabulary {
        case .viewinit: viewInitAt = viewInitAt ?? now
        case .playerready: playerReadyAt = playerReadyAt ?? now
        case .play:
            if firstPlayAt == nil { firstPlayAt = now }
            enter(firstPlayingAt == nil ? .startup : .paused, at: now)
        case .playing, .rebufferend:
            if firstPlayingAt == nil { firstPlayingAt = now }
            enter(.playing, at: now)
        case .pause: enter(.paused, at: now)
        case .rebufferstart:
            let cause = record[kpi: .cause]?.description ?? TelemetryRebufferCause.network.rawValue
            if cause == TelemetryRebufferCause.network.rawValue, firstPlayingAt != nil {
                rebufferCount += 1
                enter(.rebuffering, at: now)
            } else {
                enter(.excluded, at: now)
            }
        case .freezestart: freezeStart = now
        case .freezeend:
            if let seconds = record[kpi: .duration]?.number, let measured = Duration(exactlySeconds: seconds) {
                freezes += measured
            } else if let start = freezeStart {
                freezes += now - start
            }
            freezeStart = nil
        case .renditionchange:
            advance(to: now)
            if let value = record[kpi: .bitrate]?.number, value > 0 { bitrate = value }
        case .playoutdelaychange:
            advance(to: now)
            if let seconds = record[kpi: .delay]?.number {
                let next = Duration(exactlySeconds: seconds)
                if next != delay { commitDelayWeight() }
                delay = next
            }
        case .error:
            if record[kpi: .severity]?.description == TelemetryError.Severity.fatal.rawValue {
                fatal = true
                if firstPlayingAt == nil { fatalBeforeStart = true }
                enter(.stopped, at: now)
            }
        case .ended: enter(.stopped, at: now)
        case .videochange: enter(.idle, at: now)
        case .viewend:
            enter(.stopped, at: now)
            closeFreeze(at: now)
            closed = true
        case .other, .seeking, .seeked, .heartbeat, .attribute: break
        }
    }

    /// The KPIs, with open intervals (playing, rebuffering, a freeze) closed at `now` (default:
    /// the last record's time).
    func kpis(at now: Duration? = nil) -> TelemetryKPIs {
        var copy = self
        if let end = now ?? lastTime {
            copy.advance(to: end)
            copy.closeFreeze(at: end)
        }
        copy.commitDelayWeight()
        return copy.result()
    }

    private func result() -> TelemetryKPIs {
        var kpis = TelemetryKPIs(playbackFailure: fatal)
        if let viewInitAt, let playerReadyAt { kpis.playerStartupTime = playerReadyAt - viewInitAt }
        let started = firstPlayingAt != nil
        if let firstPlayAt, let firstPlayingAt, firstPlayingAt >= firstPlayAt { kpis.videoStartupTime = firstPlayingAt - firstPlayAt }
        if firstPlayAt != nil {
            kpis.exitsBeforeVideoStart = started || fatal ? false : (closed ? true : nil)
        }
        if fatalBeforeStart { kpis.videoStartupFailure = true } else if started || closed { kpis.videoStartupFailure = false }
        guard started else { return kpis }
        kpis.playingTime = playing
        kpis.rebufferCount = rebufferCount
        kpis.rebufferDuration = rebuffering
        let watch = (kpis.videoStartupTime ?? .zero) + playing + rebuffering
        if watch > .zero {
            kpis.rebufferPercentage = rebuffering.seconds / watch.seconds * 100
            kpis.rebufferFrequency = Double(rebufferCount) / (watch.seconds / 60)
        }
        if measuredBitrateTime > .zero {
            kpis.weightedAverageBitrate = measuredBitrateSum / measuredBitrateTime.seconds
        } else if bitrateTime > .zero {
            kpis.weightedAverageBitrate = bitrateSum / bitrateTime.seconds
        }
        if let framesDropped, let framesRendered, framesDropped + framesRendered > 0 {
            kpis.droppedFramePercentage = framesDropped / (framesDropped + framesRendered) * 100
        }
        if playing > .zero { kpis.freezePercentage = freezes.seconds / playing.seconds * 100 }
        kpis.playoutDelay = Self.weightedPercentiles(delayWeights)
        if let summary = latency.summary {
            kpis.endToEndLatency = .init(p50: summary.p50, p95: summary.p95, p99: summary.p99, max: summary.max)
        }
        return kpis
    }

    private mutating func enter(_ next: Phase, at now: Duration) {
        advance(to: now)
        if next != .playing { closeFreeze(at: now) }
        phase = next
    }

    /// Adds the time since the phase (or the last change of bitrate or delay) began.
    private mutating func advance(to now: Duration) {
        let elapsed = now - phaseStart
        phaseStart = now
        guard elapsed > .zero else { return }
        switch phase {
        case .playing:
            playing += elapsed
            if let bitrate {
                bitrateSum += bitrate * elapsed.seconds
                bitrateTime += elapsed
            }
            if delay != nil { delayPlayed += elapsed.nanoseconds }
        case .rebuffering: rebuffering += elapsed
        case .idle, .startup, .excluded, .paused, .stopped: break
        }
    }

    /// Adds the playing time under the current delay to its weight.
    private mutating func commitDelayWeight() {
        guard let delay, delayPlayed > 0 else { return }
        delayWeights[delay.nanoseconds, default: 0] += delayPlayed
        delayPlayed = 0
    }

    private mutating func closeFreeze(at now: Duration) {
        guard let start = freezeStart else { return }
        freezes += now - start
        freezeStart = nil
    }

    /// Exact percentiles of values weighted by time.
    static func weightedPercentiles(_ weights: [Int64: Int64]) -> TelemetryKPIs.Percentiles? {
        let sorted = weights.filter { $0.value > 0 }.sorted { $0.key < $1.key }
        let total = sorted.reduce(0) { $0 + $1.value }
        guard total > 0, let largest = sorted.last?.key else { return nil }
        func percentile(_ fraction: Double) -> Duration {
            let rank = Int64((fraction * Double(total)).rounded(.up))
            var seen: Int64 = 0
            for (value, weight) in sorted {
                seen += weight
                if seen >= rank { return .nanoseconds(value) }
            }
            return .nanoseconds(largest)
        }
        return .init(p50: percentile(0.5), p95: percentile(0.95), p99: percentile(0.99), max: .nanoseconds(largest))
    }
}

extension TelemetryKPIs {
    /// Every session's KPIs computed from `records` (any order of sessions; each session's records
    /// in `seq` order), by session id.
    static func compute(from records: some Sequence<TelemetryRecord>) -> [String: TelemetryKPIs] {
        var calculators: [String: TelemetryMetricCalculator] = [:]
        for record in records { calculators[record.sessionId, default: .init()].consume(record) }
        return calculators.mapValues { $0.kpis() }
    }
}
