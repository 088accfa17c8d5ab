#if canImport(Glibc)
import Glibc
#endif
import PlayoutCore
import PlayoutJitter

/// Writes QoS samples as the JSON Lines of DESIGN.md's command-line contract: one object per line
/// with a `"type"` (`"qos"`, `"summary"`), `"t"`, `"state"`, `"playoutDelay"`,
/// `"playoutDelaySource"`, and `"video"`, `"audio"` and `"total"` objects holding the QoS fields by
/// their names (cumulative counters, durations in seconds, `bitrate` in bits/s and
/// `framesPerSecond` over the last window).
public struct QoSJSONWriter: Sendable {
    private var previous: SubscriberQoS?

    public init() {}

    /// The line for `sample` (`type` is `"qos"` or `"summary"`); rates are measured against the
    /// previous sample written.
    public mutating func line(for sample: SubscriberQoS, type: String = "qos") -> String {
        // A summary's rates cover the whole run; a sample's the time since the previous one.
        let previous = type == "summary" ? nil : self.previous
        defer { self.previous = sample }
        let window = previous.map { sample.elapsed.seconds - $0.elapsed.seconds } ?? sample.elapsed.seconds
        var fields: [(String, String)] = [
            ("type", Self.string(type)),
            ("t", Self.number(sample.elapsed.seconds)),
            ("state", Self.string(sample.state.name)),
            ("playoutDelay", Self.number(sample.playoutDelay.delay.seconds)),
            ("playoutDelaySource", Self.string(sample.playoutDelay.source.rawValue)),
        ]
        var total: [String: Double] = [:]
        for kind in [MediaKind.video, .audio] {
            guard let track = sample.tracks[kind] else { continue }
            let values = Self.values(of: track, previous: previous?.tracks[kind], window: window)
            for (name, value) in values where Self.summed.contains(name) { total[name, default: 0] += value }
            fields.append((kind.rawValue, Self.object(values)))
        }
        fields.append(("total", Self.object(Self.summedOrder.compactMap { name in total[name].map { (name, $0) } })))
        if type == "summary" {
            for (name, histogram) in [("endToEndLatency", \TrackQoS.endToEndLatency), ("renderError", \TrackQoS.renderError)] {
                let merged = sample.tracks.values.reduce(into: DurationHistogram()) { $0.merge($1[keyPath: histogram]) }
                guard let summary = merged.summary else { continue }
                fields.append((name, Self.object([
                    ("p50", summary.p50.seconds), ("p95", summary.p95.seconds), ("p99", summary.p99.seconds), ("max", summary.max.seconds),
                ])))
            }
        }
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// The fields that add up across tracks, in output order.
    static let summedOrder = [
        "packetsReceived", "packetsLost", "packetsDiscarded", "packetsDuplicated", "bytesReceived", "framesReceived", "framesDecoded",
        "framesRendered", "framesDropped", "framesSkipped", "freezeCount", "pauseCount", "delayPauseCount", "bitrate",
    ]
    static let summed = Set(summedOrder)

    /// An `"event"` line: `name` at `elapsed`, with string `fields`.
    public func event(_ name: String, at elapsed: Duration, _ fields: [(String, String)] = []) -> String {
        let all = [("type", Self.string("event")), ("t", Self.number(elapsed.seconds)), ("name", Self.string(name))]
            + fields.map { ($0.0, Self.string($0.1)) }
        return "{" + all.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    static func values(of track: TrackQoS, previous: TrackQoS?, window: Double) -> [(String, Double)] {
        let network = track.statistics.network
        let frames = track.statistics.frames
        let rendered = Double(frames.framesRendered - (previous?.statistics.frames.framesRendered ?? 0))
        let bytes = Double(network.bytesReceived - (previous?.statistics.network.bytesReceived ?? 0))
        var values: [(String, Double)] = [
            ("packetsReceived", Double(network.packetsReceived)),
            ("packetsLost", Double(network.packetsLost)),
            ("packetsDiscarded", Double(network.packetsDiscarded)),
            ("packetsDuplicated", Double(track.packetsDuplicated)),
            ("bytesReceived", Double(network.bytesReceived)),
            ("jitter", network.jitter),
            ("framesReceived", Double(track.framesReceived)),
            ("framesDecoded", Double(track.framesDecoded)),
            ("keyFramesDecoded", Double(track.keyFramesDecoded)),
            ("framesRendered", Double(frames.framesRendered)),
            ("framesDropped", Double(track.framesDropped)),
            ("framesSkipped", Double(frames.framesSkipped)),
            ("framesIncomplete", Double(track.framesIncomplete)),
            ("decodeErrors", Double(track.decodeErrors)),
            ("totalSkippedDuration", frames.totalSkippedDuration.seconds),
            ("framesPerSecond", window > 0 ? rendered / window : 0),
            ("totalDecodeTime", track.totalDecodeTime.seconds),
            ("totalInterFrameDelay", frames.totalInterFrameDelay),
            ("totalSquaredInterFrameDelay", frames.totalSquaredInterFrameDelay),
            ("freezeCount", Double(frames.freezeCount)),
            ("totalFreezesDuration", frames.totalFreezesDuration.seconds),
            ("pauseCount", Double(frames.pauseCount)),
            ("totalPausesDuration", frames.totalPausesDuration.seconds),
            ("delayPauseCount", Double(frames.delayPauseCount)),
            ("totalDelayPausesDuration", frames.totalDelayPausesDuration.seconds),
            ("jitterBufferDelay", frames.jitterBufferDelay.seconds),
            ("jitterBufferTargetDelay", frames.jitterBufferTargetDelay.seconds),
            ("jitterBufferMinimumDelay", frames.jitterBufferMinimumDelay.seconds),
            ("jitterBufferEmittedCount", Double(frames.jitterBufferEmittedCount)),
            ("bufferedDuration", frames.bufferedDuration.seconds),
            ("bufferedBytes", Double(frames.bufferedBytes)),
            ("bitrate", window > 0 ? bytes * 8 / window : 0),
        ]
        if track.frameWidth > 0 {
            values += [("frameWidth", Double(track.frameWidth)), ("frameHeight", Double(track.frameHeight))]
        }
        if let failures = track.authFailures { values.append(("authFailures", Double(failures))) }
        if let drops = track.replayDrops { values.append(("replayDrops", Double(drops))) }
        return values
    }

    static func object(_ values: [(String, Double)]) -> String {
        "{" + values.map { "\"\($0.0)\":\(number($0.1))" }.joined(separator: ",") + "}"
    }

    /// A JSON number: integers without a fraction, others with up to 6 decimals.
    static func number(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == value.rounded() || abs(value) >= 1e12 {
            // Beyond 10^12 the microseconds would not fit an Int64; whole units are exact enough.
            return abs(value) < 9e18 ? String(Int64(value.rounded())) : "\(value)"
        }
        var result = fixed(value, 6)
        while result.hasSuffix("0") { result.removeLast() }
        if result.hasSuffix(".") { result.removeLast() }
        return result
    }

    /// `value` as a JSON string: quotes, backslashes and control characters escaped.
    static func string(_ value: String) -> String {
        var escaped = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                escaped += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped + "\""
    }
}

/// `value` with `digits` decimals (`fixed(2.345, 1)` is `"2.3"`), like `printf("%.*f")` except
/// that halves round away from zero and there is no negative zero. For JSON numbers here and
/// the command line's tables.
package func fixed(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return value.isNaN ? "nan" : value < 0 ? "-inf" : "inf" }
    let digits = min(max(0, digits), 18)
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    guard scaled < 9e18 else { return "\(value)" }
    let text = String(Int64(scaled))
    let sign = value < 0 && scaled > 0 ? "-" : ""
    guard digits > 0 else { return sign + text }
    let padded = String(repeating: "0", count: max(0, digits + 1 - text.count)) + text
    return sign + padded.dropLast(digits) + "." + padded.suffix(digits)
}
