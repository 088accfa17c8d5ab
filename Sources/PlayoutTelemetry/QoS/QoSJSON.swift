#if canImport(Glibc)
import Glibc
#endif
import PlayoutCore

/// Writes QoS samples as the JSON Lines of DESIGN.md's command-line contract: one object per line
/// with a `"type"` (`"qos"`, `"summary"`), `"t"`, `"state"`, `"playoutDelay"`,
/// `"playoutDelaySource"`, and `"video"`, `"audio"` and `"total"` objects holding the QoS fields by
/// their names (cumulative counters, durations in seconds, `bitrate` in bits/s and
/// `framesPerSecond` over the last window).
public struct QoSJSONWriter: Sendable {
    public init() {}

    /// The line for `sample` (`type` is `"qos"` or `"summary"`). Every number comes from the
    /// sample itself (rates included: ``TrackQoS/framesPerSecond`` and ``TrackQoS/bitrate``);
    /// `extra` fields (numbers) are appended, e.g. `"samplesDropped"` in a summary.
    public func line(for sample: SubscriberQoS, type: String = "qos", extra: [(String, Double)] = []) -> String {
        var fields: [(String, String)] = [
            ("type", Self.string(type)),
            ("t", Self.number(sample.elapsed.seconds)),
            ("state", Self.string(sample.state.name)),
            ("playoutDelay", Self.number(sample.playoutDelay.delay.seconds)),
            ("playoutDelaySource", Self.string(sample.playoutDelay.source.rawValue)),
        ]
        for kind in [MediaKind.video, .audio] {
            guard let track = sample.tracks[kind] else { continue }
            fields.append((kind.rawValue, Self.object(Self.values(of: track))))
        }
        fields.append(("total", Self.object(Self.values(of: sample.total))))
        if type == "summary" {
            for (name, histogram) in [("endToEndLatency", \TrackQoS.endToEndLatency), ("renderError", \TrackQoS.renderError)] {
                let merged = sample.tracks.values.reduce(into: DurationHistogram()) { $0.merge($1[keyPath: histogram]) }
                guard let summary = merged.summary else { continue }
                fields.append((name, Self.object([
                    ("p50", summary.p50.seconds), ("p95", summary.p95.seconds), ("p99", summary.p99.seconds), ("max", summary.max.seconds),
                ])))
            }
        }
        fields += extra.map { ($0.0, Self.number($0.1)) }
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// An `"event"` line: `name` at `elapsed`, with string `fields` and number `numbers`.
    public func event(_ name: String, at elapsed: Duration, _ fields: [(String, String)] = [], numbers: [(String, Double)] = []) -> String {
        let all = [("type", Self.string("event")), ("t", Self.number(elapsed.seconds)), ("name", Self.string(name))]
            + fields.map { ($0.0, Self.string($0.1)) } + numbers.map { ($0.0, Self.number($0.1)) }
        return "{" + all.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    static func values(of total: TotalQoS) -> [(String, Double)] {
        [
            ("packetsReceived", Double(total.packetsReceived)), ("packetsLost", Double(total.packetsLost)),
            ("packetsDiscarded", Double(total.packetsDiscarded)), ("packetsDuplicated", Double(total.packetsDuplicated)),
            ("bytesReceived", Double(total.bytesReceived)), ("framesReceived", Double(total.framesReceived)),
            ("framesDecoded", Double(total.framesDecoded)), ("framesRendered", Double(total.framesRendered)),
            ("framesDropped", Double(total.framesDropped)), ("framesSkipped", Double(total.framesSkipped)),
            ("freezeCount", Double(total.freezeCount)), ("pauseCount", Double(total.pauseCount)),
            ("delayPauseCount", Double(total.delayPauseCount)), ("bitrate", total.bitrate),
        ]
    }

    static func values(of track: TrackQoS) -> [(String, Double)] {
        var values: [(String, Double)] = [
            ("packetsReceived", Double(track.packetsReceived)),
            ("packetsLost", Double(track.packetsLost)),
            ("packetsDiscarded", Double(track.packetsDiscarded)),
            ("packetsDuplicated", Double(track.packetsDuplicated)),
            ("bytesReceived", Double(track.bytesReceived)),
            ("jitter", track.jitter.seconds),
            ("framesReceived", Double(track.framesReceived)),
            ("framesDecoded", Double(track.framesDecoded)),
            ("keyFramesDecoded", Double(track.keyFramesDecoded)),
            ("framesRendered", Double(track.framesRendered)),
            ("framesRenderedLate", Double(track.framesRenderedLate)),
            ("framesDropped", Double(track.framesDropped)),
            ("framesSkipped", Double(track.framesSkipped)),
            ("framesIncomplete", Double(track.framesIncomplete)),
            ("decodeErrors", Double(track.decodeErrors)),
            ("totalSkippedDuration", track.totalSkippedDuration.seconds),
            ("framesPerSecond", track.framesPerSecond),
            ("totalDecodeTime", track.totalDecodeTime.seconds),
            ("totalInterFrameDelay", track.totalInterFrameDelay),
            ("totalSquaredInterFrameDelay", track.totalSquaredInterFrameDelay),
            ("freezeCount", Double(track.freezeCount)),
            ("totalFreezesDuration", track.totalFreezesDuration.seconds),
            ("pauseCount", Double(track.pauseCount)),
            ("totalPausesDuration", track.totalPausesDuration.seconds),
            ("delayPauseCount", Double(track.delayPauseCount)),
            ("totalDelayPausesDuration", track.totalDelayPausesDuration.seconds),
            ("jitterBufferDelay", track.jitterBufferDelay.seconds),
            ("jitterBufferTargetDelay", track.jitterBufferTargetDelay.seconds),
            ("jitterBufferMinimumDelay", track.jitterBufferMinimumDelay.seconds),
            ("jitterBufferEmittedCount", Double(track.jitterBufferEmittedCount)),
            ("bufferedDuration", track.bufferedDuration.seconds),
            ("bufferedFrames", Double(track.bufferedFrames)),
            ("bufferedBytes", Double(track.bufferedBytes)),
            ("bitrate", track.bitrate),
        ]
        if track.frameWidth > 0 {
            values += [("frameWidth", Double(track.frameWidth)), ("frameHeight", Double(track.frameHeight))]
        }
        if let failures = track.authFailures { values.append(("authFailures", Double(failures))) }
        if let drops = track.replayDrops { values.append(("replayDrops", Double(drops))) }
        values += [
            ("packetsFromOtherSources", Double(track.packetsFromOtherSources)),
            ("packetsFromUnvalidatedSources", Double(track.packetsFromUnvalidatedSources)),
            ("packetsFromSourcesNotPlayed", Double(track.packetsFromSourcesNotPlayed)),
            ("packetsOutOfSequence", Double(track.packetsOutOfSequence)),
            ("packetsImplausibleTimestamp", Double(track.packetsImplausibleTimestamp)),
            ("packetsWrongPayloadType", Double(track.packetsWrongPayloadType)),
            ("datagramsUndecodable", Double(track.datagramsUndecodable)),
            ("datagramsNotRTP", Double(track.datagramsNotRTP)),
            ("datagramsBadVersion", Double(track.datagramsBadVersion)),
            ("datagramsTruncated", Double(track.datagramsTruncated)),
            ("datagramsBadExtension", Double(track.datagramsBadExtension)),
            ("datagramsBadPadding", Double(track.datagramsBadPadding)),
            ("rtcpFromOtherSources", Double(track.rtcpFromOtherSources)),
            ("rtcpUndecodable", Double(track.rtcpUndecodable)),
            ("sourceSwitches", Double(track.sourceSwitches)),
            ("sourceResyncs", Double(track.sourceResyncs)),
            ("framesLate", Double(track.framesLate)),
            ("nackCount", Double(track.nackCount)),
            ("pliCount", Double(track.pliCount)),
            ("firCount", Double(track.firCount)),
            ("rtcpPacketsSent", Double(track.rtcpPacketsSent)),
            ("rtcpPacketsUnsent", Double(track.rtcpPacketsUnsent)),
            ("retransmittedPacketsReceived", Double(track.retransmittedPacketsReceived)),
            ("retransmittedBytesReceived", Double(track.retransmittedBytesReceived)),
            ("retransmittedPacketsLate", Double(track.retransmittedPacketsLate)),
            ("retransmittedPacketsDuplicated", Double(track.retransmittedPacketsDuplicated)),
            ("retransmittedPacketsDropped", Double(track.retransmittedPacketsDropped)),
        ]
        if let rtt = track.roundTripTime { values.append(("roundTripTime", rtt.seconds)) }
        if let ssrc = track.playedSSRC { values.append(("ssrc", Double(ssrc))) }
        return values
    }

    static func object(_ values: [(String, Double)]) -> String {
        "{" + values.map { "\"\($0.0)\":\(number($0.1))" }.joined(separator: ",") + "}"
    }

    /// A JSON number: integers without a fraction, others with up to 6 decimals.
    package static func number(_ value: Double) -> String {
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

    /// `value` as a JSON string: quotes, backslashes, control characters, U+2028 and U+2029
    /// escaped (one escaper for every JSON Playout writes: ``TelemetryJSONLines``).
    package static func string(_ value: String) -> String {
        var escaped = ""
        TelemetryJSONLines.appendString(value, to: &escaped)
        return escaped
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
