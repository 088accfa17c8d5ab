public import PlayoutTelemetry

extension TelemetrySchema {
    /// The schema of a ``Subscriber``'s heartbeats: every field of the QoS field list (each
    /// track's, under `video.`/`audio.`) with its type, unit and meaning, the session's own
    /// fields, and the top-level totals and video copies that a kind label makes redundant.
    /// Docs/TelemetrySchema.md is this table in words.
    ///
    /// ```swift
    /// let metrics = PrometheusTelemetryBackend(registry: endpoint.registry, schema: .subscriber)
    /// ```
    public static let subscriber = TelemetrySchema(
        trackFields: TrackQoS.fields.compactMap { field in QoSFieldMeaning.table[field.name].map { $0.field(field.name) } },
        sessionFields: [
            Field("elapsed", .gauge, .seconds, help: "Seconds since the subscription started."),
            Field("playoutDelay", .gauge, .seconds, help: "The playout delay in effect (configured or override)."),
            Field("endToEndLatency", .gauge, .seconds, help: "End-to-end latency over the last window, median across the tracks."),
        ],
        derivedFields: Set(TrackQoS.totalFields.map(\.name) + TrackQoS.headlineFields.map(\.name))
    )
}

/// What one field of ``TrackQoS/fields`` means for the series backends: type, unit, exported
/// name where it differs from the snake_case of its own, and a sentence.
struct QoSFieldMeaning {
    let type: TelemetrySchema.MetricType
    let unit: TelemetrySchema.Unit
    let exported: String?
    let help: String

    init(_ type: TelemetrySchema.MetricType, _ unit: TelemetrySchema.Unit = .none, _ exported: String? = nil, _ help: String) {
        self.type = type
        self.unit = unit
        self.exported = exported
        self.help = help
    }

    func field(_ name: String) -> TelemetrySchema.Field {
        TelemetrySchema.Field(name, type, unit, exported: exported, help: help)
    }

    /// Every written field of ``TrackQoS/fields`` (a test checks none is missing).
    static let table: [String: QoSFieldMeaning] = [
        "packetsReceived": .init(.counter, "RTP packets received from the played source."),
        "packetsLost": .init(.counter, "RTP packets lost (RFC 3550)."),
        "packetsDiscarded": .init(.counter, "RTP packets that came too late to be played."),
        "packetsDuplicated": .init(.counter, "RTP packets received more than once."),
        "bytesReceived": .init(.counter, .bytes, "Payload bytes received from the played source."),
        "jitter": .init(.gauge, .seconds, "Interarrival jitter (RFC 3550 A.8)."),
        "framesReceived": .init(.counter, "Frames complete in the jitter buffer."),
        "framesDecoded": .init(.counter, "Frames decoded."),
        "keyFramesDecoded": .init(.counter, "Key frames decoded."),
        "framesRendered": .init(.counter, "Frames rendered."),
        "framesRenderedLate": .init(.counter, "Frames rendered more than 20 ms after their time (decoding could not keep up)."),
        "framesDropped": .init(.counter, "Frames dropped: late, undecodable, incomplete or skipped (each also counted on its own)."),
        "framesSkipped": .init(.counter, "Frames skipped on purpose on a playout-delay decrease."),
        "framesIncomplete": .init(.counter, "Frames dropped because packets were missing."),
        "decodeErrors": .init(.counter, "Frames the decoder refused."),
        "totalSkippedDuration": .init(.counter, .seconds, "skipped_duration", "Media time skipped on playout-delay decreases."),
        "framesPerSecond": .init(.gauge, "Frames rendered per second over the last window."),
        "totalDecodeTime": .init(.counter, .seconds, "decode_time", "Time spent decoding."),
        "totalInterFrameDelay": .init(.counter, .seconds, "inter_frame_delay", "Sum of the gaps between rendered frames."),
        "totalSquaredInterFrameDelay": .init(.counter, .none, "inter_frame_delay_squared_seconds", "Sum of the squared gaps between rendered frames (s²)."),
        "freezeCount": .init(.counter, .none, "freezes", "Freezes (W3C: a render gap ≥ max(3 × mean gap, mean + 150 ms))."),
        "totalFreezesDuration": .init(.counter, .seconds, "freezes_duration", "Total time frozen."),
        "pauseCount": .init(.counter, .none, "pauses", "Pauses (a render gap over 5 s the viewer did not ask for)."),
        "totalPausesDuration": .init(.counter, .seconds, "pauses_duration", "Total time paused."),
        "delayPauseCount": .init(.counter, .none, "delay_pauses", "Pauses from playout-delay increases (asked for)."),
        "totalDelayPausesDuration": .init(.counter, .seconds, "delay_pauses_duration", "Total time paused by playout-delay increases."),
        "jitterBufferDelay": .init(.counter, .seconds, "jitter_buffer_delay", "Sum of the time each emitted frame spent in the jitter buffer (W3C)."),
        "jitterBufferTargetDelay": .init(.counter, .seconds, "jitter_buffer_target_delay", "Sum of the target delay at each emitted frame (W3C)."),
        "jitterBufferMinimumDelay": .init(.counter, .seconds, "jitter_buffer_minimum_delay", "Sum of the minimum delay at each emitted frame (W3C)."),
        "jitterBufferEmittedCount": .init(.counter, .none, "jitter_buffer_emitted_frames", "Frames emitted by the jitter buffer."),
        "bufferedDuration": .init(.gauge, .seconds, "Media time held in the buffer now."),
        "bufferedFrames": .init(.gauge, "Frames held in the buffer now (in the final sample, with those released ahead of a time after the end)."),
        "bufferedBytes": .init(.gauge, .bytes, "Bytes held in the buffer now."),
        "bitrate": .init(.gauge, .bitsPerSecond, "Received media rate over the last window (Prometheus: in bytes per second)."),
        "frameWidth": .init(.gauge, .none, "frame_width_pixels", "Width of the last rendered picture."),
        "frameHeight": .init(.gauge, .none, "frame_height_pixels", "Height of the last rendered picture."),
        "authFailures": .init(.counter, .none, "srtp_auth_failures", "SRTP packets that failed authentication."),
        "replayDrops": .init(.counter, .none, "srtp_replay_drops", "SRTP packets dropped as replays."),
        "packetsFromOtherSources": .init(.counter, "Packets from sources other than the played one."),
        "packetsFromUnvalidatedSources": .init(.counter, "Packets from sources still in RFC 3550 probation."),
        "packetsFromSourcesNotPlayed": .init(.counter, "Packets from valid sources that are not played."),
        "packetsOutOfSequence": .init(.counter, "Packets out of sequence."),
        "packetsImplausibleTimestamp": .init(.counter, "Packets whose timestamp is implausible."),
        "packetsWrongPayloadType": .init(.counter, "Packets of a payload type the track does not play."),
        "datagramsUndecodable": .init(.counter, "Datagrams that are not RTP the track can use."),
        "datagramsNotRTP": .init(.counter, "Datagrams that are not RTP."),
        "datagramsBadVersion": .init(.counter, "Datagrams with an RTP version other than 2."),
        "datagramsTruncated": .init(.counter, "Datagrams shorter than their headers say."),
        "datagramsBadExtension": .init(.counter, "Datagrams with a malformed header extension."),
        "datagramsBadPadding": .init(.counter, "Datagrams with malformed padding."),
        "rtcpFromOtherSources": .init(.counter, "RTCP packets from sources that are not played."),
        "rtcpUndecodable": .init(.counter, "RTCP packets that could not be decoded."),
        "sourceSwitches": .init(.counter, "Moves to another source (BYE or silence)."),
        "sourceResyncs": .init(.counter, "Resynchronisations on the played source."),
        "framesLate": .init(.counter, "Frames that arrived after their render time."),
        "nackCount": .init(.counter, .none, "nacks_sent", "Generic NACKs sent."),
        "pliCount": .init(.counter, .none, "plis_sent", "Picture loss indications sent."),
        "firCount": .init(.counter, .none, "firs_sent", "Full intra requests sent."),
        "rtcpPacketsSent": .init(.counter, "RTCP packets sent."),
        "rtcpPacketsUnsent": .init(.counter, "RTCP packets that could not be sent."),
        "retransmittedPacketsReceived": .init(.counter, "Retransmitted (RTX) packets received."),
        "retransmittedBytesReceived": .init(.counter, .bytes, "Retransmitted (RTX) bytes received."),
        "retransmittedPacketsLate": .init(.counter, "Retransmitted packets that came too late."),
        "retransmittedPacketsDuplicated": .init(.counter, "Retransmitted packets already received."),
        "retransmittedPacketsDropped": .init(.counter, "Retransmitted packets dropped."),
        "roundTripTime": .init(.gauge, .seconds, "Round-trip time to the sender (RTCP)."),
        "ssrc": .init(.identity, "The SSRC of the played source."),
    ]
}

extension QoSFieldMeaning {
    init(_ type: TelemetrySchema.MetricType, _ help: String) {
        self.init(type, .none, nil, help)
    }

    init(_ type: TelemetrySchema.MetricType, _ unit: TelemetrySchema.Unit, _ help: String) {
        self.init(type, unit, nil, help)
    }
}
