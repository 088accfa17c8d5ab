import PlayoutCore
import PlayoutTelemetry

/// One stored property of ``TrackQoS`` as the outputs see it: the name it is written under, how
/// its value is written, and whether it adds up into ``TotalQoS``. ``TrackQoS/fields`` lists them
/// all, in the order of the command line's JSON objects; the JSON lines, a heartbeat's fields
/// (and so every telemetry backend: Prometheus, InfluxDB, Graphite …) and the totals are all made
/// by walking that one list.
struct QoSField: Sendable {
    /// How a field adds up across tracks: into which ``TotalQoS`` property, and how the sum is
    /// written.
    struct Total: Sendable {
        let add: @Sendable (inout TotalQoS, TrackQoS) -> Void
        let value: @Sendable (TotalQoS) -> TelemetryValue
    }

    /// The name outputs use: a JSON object's key, a heartbeat's `video.<name>` (and, for a
    /// total, the `total` object's key and the heartbeat's top-level field).
    let name: String
    /// The ``TrackQoS`` property it reads (``name`` unless written under another name).
    let property: String
    /// Its value in `track` (counters as integers, durations in seconds), nil when the track has
    /// none (not encrypted, no round trip measured) or the field is not written.
    let value: @Sendable (TrackQoS) -> TelemetryValue?
    /// Whether `track`'s object holds the field (the picture size only once there is a picture).
    let isWritten: @Sendable (TrackQoS) -> Bool
    /// How it adds up into the totals (nil: it does not).
    let total: Total?

    private init(
        _ name: String, property: String? = nil, value: @escaping @Sendable (TrackQoS) -> TelemetryValue?,
        isWritten: @escaping @Sendable (TrackQoS) -> Bool = { _ in true }, total: Total? = nil
    ) {
        self.name = name
        self.property = property ?? name
        self.value = value
        self.isWritten = isWritten
        self.total = total
    }

    /// A counter, written as an integer: nil when the track has none, and left out unless
    /// `isWritten`.
    static func count<Count: BinaryInteger & SendableMetatype>(
        _ name: String, _ read: @escaping @Sendable (TrackQoS) -> Count?, property: String? = nil,
        when isWritten: @escaping @Sendable (TrackQoS) -> Bool = { _ in true }
    ) -> Self {
        Self(name, property: property, value: { read($0).map { .int(Int64($0)) } }, isWritten: isWritten)
    }

    /// A counter that adds up across tracks into `total`, written as an integer.
    static func count(_ name: String, _ path: any KeyPath<TrackQoS, Int> & Sendable, total: any WritableKeyPath<TotalQoS, Int> & Sendable) -> Self {
        summed(name, path, into: total) { .int(Int64($0)) }
    }

    /// A number (a rate, a sum of seconds), written as it is.
    static func number(_ name: String, _ read: @escaping @Sendable (TrackQoS) -> Double) -> Self {
        Self(name, value: { .double(read($0)) })
    }

    /// A number that adds up across tracks into `total`, written as it is.
    static func number(_ name: String, _ path: any KeyPath<TrackQoS, Double> & Sendable, total: any WritableKeyPath<TotalQoS, Double> & Sendable) -> Self {
        summed(name, path, into: total) { .double($0) }
    }

    /// A field that adds up across tracks into `total`, each value written by `write`.
    private static func summed<Value: AdditiveArithmetic & SendableMetatype>(
        _ name: String, _ path: any KeyPath<TrackQoS, Value> & Sendable, into total: any WritableKeyPath<TotalQoS, Value> & Sendable,
        _ write: @escaping @Sendable (Value) -> TelemetryValue
    ) -> Self {
        Self(name, value: { write($0[keyPath: path]) }, total: Total(add: { $0[keyPath: total] += $1[keyPath: path] }, value: { write($0[keyPath: total]) }))
    }

    /// A duration (nil when the track has none), written in seconds.
    static func seconds(_ name: String, _ read: @escaping @Sendable (TrackQoS) -> Duration?) -> Self {
        Self(name, value: { read($0).map { .double($0.seconds) } })
    }

    /// A property kept in the sample but in no line or heartbeat (what the track is, the delay
    /// in effect — the sample's own —, the distributions, counters folded into another).
    static func unwritten(_ property: String) -> Self {
        Self(property, value: { _ in nil }, isWritten: { _ in false })
    }

    /// Its value in `track`'s object: ``value``, when the object holds the field and it is known
    /// (a decode statistic is unknown when the track is not decoded).
    func written(in track: TrackQoS) -> TelemetryValue? {
        isWritten(track) && !isUnknown(in: track) ? value(track) : nil
    }

    /// The decode statistics: unknown when the track is not decoded (``TrackQoS/decoded``) —
    /// `null` in a JSON line, left out of a telemetry record —, never 0.
    static let decodeStatistics: Set<String> = ["framesDecoded", "keyFramesDecoded", "decodeErrors", "totalDecodeTime"]

    /// Whether `track`'s value is unknown: a decode statistic of a track not decoded.
    func isUnknown(in track: TrackQoS) -> Bool {
        !track.decoded && Self.decodeStatistics.contains(name)
    }
}

extension TrackQoS {
    /// Every stored property, once: the QoS field list. The written ones in the order of a JSON
    /// line's `video`/`audio` object (and of a heartbeat's `video.`/`audio.` fields); those that
    /// add up, in the order of the `total` object. A new property is added here too (a test
    /// compares this list with the type's properties), and every output follows.
    static let fields: [QoSField] = [
        .count("packetsReceived", \.packetsReceived, total: \.packetsReceived),
        .count("packetsLost", \.packetsLost, total: \.packetsLost),
        .count("packetsDiscarded", \.packetsDiscarded, total: \.packetsDiscarded),
        .count("packetsDuplicated", \.packetsDuplicated, total: \.packetsDuplicated),
        .count("bytesReceived", \.bytesReceived, total: \.bytesReceived),
        .seconds("jitter", \.jitter),
        .count("framesReceived", \.framesReceived, total: \.framesReceived),
        .count("framesDecoded", \.framesDecoded, total: \.framesDecoded),
        .count("keyFramesDecoded", \.keyFramesDecoded),
        .count("framesRendered", \.framesRendered, total: \.framesRendered),
        .count("framesRenderedLate", \.framesRenderedLate),
        .count("framesDropped", \.framesDropped, total: \.framesDropped),
        .count("framesSkipped", \.framesSkipped, total: \.framesSkipped),
        .count("framesIncomplete", \.framesIncomplete),
        .count("decodeErrors", \.decodeErrors),
        .seconds("totalSkippedDuration", \.totalSkippedDuration),
        .number("framesPerSecond", \.framesPerSecond),
        .seconds("totalDecodeTime", \.totalDecodeTime),
        .number("totalInterFrameDelay", \.totalInterFrameDelay),
        .number("totalSquaredInterFrameDelay", \.totalSquaredInterFrameDelay),
        .count("freezeCount", \.freezeCount, total: \.freezeCount),
        .seconds("totalFreezesDuration", \.totalFreezesDuration),
        .count("pauseCount", \.pauseCount, total: \.pauseCount),
        .seconds("totalPausesDuration", \.totalPausesDuration),
        .count("delayPauseCount", \.delayPauseCount, total: \.delayPauseCount),
        .seconds("totalDelayPausesDuration", \.totalDelayPausesDuration),
        .seconds("jitterBufferDelay", \.jitterBufferDelay),
        .seconds("jitterBufferTargetDelay", \.jitterBufferTargetDelay),
        .seconds("jitterBufferMinimumDelay", \.jitterBufferMinimumDelay),
        .count("jitterBufferEmittedCount", \.jitterBufferEmittedCount),
        .seconds("bufferedDuration", \.bufferedDuration),
        .count("bufferedFrames", \.bufferedFrames),
        .count("bufferedBytes", \.bufferedBytes),
        .number("bitrate", \.bitrate, total: \.bitrate),
        .count("frameWidth", \.frameWidth, when: \.hasPicture),
        .count("frameHeight", \.frameHeight, when: \.hasPicture),
        .count("authFailures", \.authFailures),
        .count("replayDrops", \.replayDrops),
        .count("packetsFromOtherSources", \.packetsFromOtherSources),
        .count("packetsFromUnvalidatedSources", \.packetsFromUnvalidatedSources),
        .count("packetsFromSourcesNotPlayed", \.packetsFromSourcesNotPlayed),
        .count("packetsOutOfSequence", \.packetsOutOfSequence),
        .count("packetsImplausibleTimestamp", \.packetsImplausibleTimestamp),
        .count("packetsWrongPayloadType", \.packetsWrongPayloadType),
        .count("datagramsUndecodable", \.datagramsUndecodable),
        .count("datagramsNotRTP", \.datagramsNotRTP),
        .count("datagramsBadVersion", \.datagramsBadVersion),
        .count("datagramsTruncated", \.datagramsTruncated),
        .count("datagramsBadExtension", \.datagramsBadExtension),
        .count("datagramsBadPadding", \.datagramsBadPadding),
        .count("rtcpFromOtherSources", \.rtcpFromOtherSources),
        .count("rtcpUndecodable", \.rtcpUndecodable),
        .count("sourceSwitches", \.sourceSwitches),
        .count("sourceResyncs", \.sourceResyncs),
        .count("framesLate", \.framesLate),
        .count("nackCount", \.nackCount),
        .count("pliCount", \.pliCount),
        .count("firCount", \.firCount),
        .count("rtcpPacketsSent", \.rtcpPacketsSent),
        .count("rtcpPacketsUnsent", \.rtcpPacketsUnsent),
        .count("retransmittedPacketsReceived", \.retransmittedPacketsReceived),
        .count("retransmittedBytesReceived", \.retransmittedBytesReceived),
        .count("retransmittedPacketsLate", \.retransmittedPacketsLate),
        .count("retransmittedPacketsDuplicated", \.retransmittedPacketsDuplicated),
        .count("retransmittedPacketsDropped", \.retransmittedPacketsDropped),
        .seconds("roundTripTime", \.roundTripTime),
        .count("ssrc", \.playedSSRC, property: "playedSSRC"),
        .unwritten("kind"), .unwritten("codec"), .unwritten("decoded"), .unwritten("playoutDelay"), .unwritten("restarts"),
        .unwritten("framesDroppedWaitingForKeyframe"), .unwritten("framesDroppedBeforeFirstKeyframe"), .unwritten("framesDroppedOverflow"), .unwritten("framesDroppedOnRestart"),
        .unwritten("renderError"), .unwritten("endToEndLatency"), .unwritten("transit"),
    ]

    /// The fields that add up across tracks, in the order of the `total` object.
    static let totalFields = fields.filter { $0.total != nil }

    /// The video's fields a heartbeat also carries at its top level, in this order (written
    /// whatever their value: a size of 0 before the first picture).
    static let headlineFields = ["framesPerSecond", "frameWidth", "frameHeight", "totalFreezesDuration"].map { name in
        fields.first { $0.name == name }!
    }

    /// Whether a picture was rendered (the size is written from then on).
    var hasPicture: Bool { frameWidth > 0 }

    /// The fields of this track's object, by name, in order: a JSON line's `video`/`audio`
    /// object, and a heartbeat's `video.`/`audio.` fields.
    var writtenFields: [(name: String, value: TelemetryValue)] {
        Self.fields.compactMap { field in field.written(in: self).map { (field.name, $0) } }
    }

    /// ``writtenFields`` with the unknown ones too, as nil: a JSON line's object, which writes
    /// them `null`.
    var jsonFields: [(name: String, value: TelemetryValue?)] {
        Self.fields.compactMap { field in
            field.isUnknown(in: self) ? (field.name, nil) : field.written(in: self).map { (field.name, $0) }
        }
    }
}

extension TotalQoS {
    /// The totals by name, in order: a JSON line's `total` object, and a heartbeat's top-level
    /// QoS fields.
    var writtenFields: [(name: String, value: TelemetryValue)] {
        jsonFields.compactMap { field in field.value.map { (field.name, $0) } }
    }

    /// ``writtenFields`` with the unknown ones too, as nil (`framesDecoded` when no track decodes).
    var jsonFields: [(name: String, value: TelemetryValue?)] {
        TrackQoS.totalFields.compactMap { field in
            field.total.map { (field.name, !decoded && QoSField.decodeStatistics.contains(field.name) ? nil : $0.value(self)) }
        }
    }
}
