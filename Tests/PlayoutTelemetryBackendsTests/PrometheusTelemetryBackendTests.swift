import PlayoutCore
import PlayoutTelemetry
@testable import PlayoutTelemetryBackends
import Prometheus
import Testing

/// Issue 28, item 2: Prometheus exposition by Prometheus' conventions.
@Suite("PrometheusTelemetryBackend")
struct PrometheusTelemetryBackendTests {
    static let schema = TelemetrySchema(
        trackFields: [
            .init("framesRendered", .counter, help: "Frames rendered."),
            .init("bitrate", .gauge, .bitsPerSecond, help: "Received media rate."),
            .init("totalDecodeTime", .counter, .seconds, exported: "decode_time", help: "Time spent decoding."),
            .init("ssrc", .identity, help: "The played source."),
        ],
        sessionFields: [.init("playoutDelay", .gauge, .seconds, help: "The playout delay in effect.")],
        derivedFields: ["framesRendered", "bitrate"])

    static func record(_ kind: TelemetryRecord.Kind, _ name: String, _ fields: [TelemetryField], session: String = "s1") -> TelemetryRecord {
        TelemetryRecord(sessionId: session, seq: 0, monotonic: .zero, wallTimeNanoseconds: 0, kind: kind, name: name, fields: fields,
                        tags: [TelemetryField("run", .string("r42"))])
    }

    static func heartbeat(rendered: Int64, ssrc: Int64 = 7) -> TelemetryRecord {
        record(.heartbeat, "heartbeat", [
            TelemetryField("playoutDelay", .double(0.23)), TelemetryField("state", .string("playing")),
            TelemetryField("framesRendered", .int(rendered + 50)), TelemetryField("bitrate", .double(8e6)),  // totals: left out
            TelemetryField("video.framesRendered", .int(rendered)), TelemetryField("video.bitrate", .double(8e6)),
            TelemetryField("video.totalDecodeTime", .double(1.5)), TelemetryField("video.ssrc", .int(ssrc)),
            TelemetryField("audio.framesRendered", .int(50)), TelemetryField("timeSincePlay", .double(3)),
            TelemetryField("myQueueDepth", .int(4)),
        ])
    }

    static func exposition(_ registry: PrometheusCollectorRegistry) -> String {
        String(decoding: registry.emitToBuffer(), as: UTF8.self)
    }

    @Test("HELP and TYPE on every metric; track fields under one name with a kind label; counters _total; units in names; totals and text left out")
    func conventions() throws {
        let registry = PrometheusCollectorRegistry()
        let backend = PrometheusTelemetryBackend(registry: registry, schema: Self.schema, defaultTags: [])
        try backend.deliver([Self.record(.event, "play", []), Self.heartbeat(rendered: 300)])
        let text = Self.exposition(registry)
        let lines = text.split(separator: "\n")
        let names = Set(lines.filter { !$0.hasPrefix("#") }.map { $0.prefix { $0 != "{" && $0 != " " } })
        for name in names {
            #expect(lines.contains { $0.hasPrefix("# HELP \(name) ") }, "\(name) has no HELP")
            #expect(lines.contains { $0.hasPrefix("# TYPE \(name) ") }, "\(name) has no TYPE")
        }
        #expect(names == [
            "playout_events_total", "playout_playout_delay_seconds", "playout_frames_rendered_total", "playout_bitrate_bytes_per_second",
            "playout_decode_time_seconds_total", "playout_ssrc_info", "playout_heartbeat_my_queue_depth",
        ])
        #expect(text.contains("# TYPE playout_frames_rendered_total counter"))
        #expect(text.contains(#"playout_frames_rendered_total{kind="video",session="s1",run="r42"} 300"#))
        #expect(text.contains(#"playout_frames_rendered_total{kind="audio",session="s1",run="r42"} 50"#))
        #expect(text.contains(#"playout_bitrate_bytes_per_second{kind="video",session="s1",run="r42"} 1000000"#))
        #expect(text.contains(#"playout_ssrc_info{kind="video",ssrc="7",session="s1",run="r42"} 1"#))
        #expect(text.contains(#"playout_events_total{event="play",run="r42"} 1"#))
    }

    @Test("a counter follows the cumulative value; a new SSRC sets the old info series to 0; viewend's KPIs become view gauges")
    func overTime() throws {
        let registry = PrometheusCollectorRegistry()
        let backend = PrometheusTelemetryBackend(registry: registry, schema: Self.schema, defaultTags: [])
        try backend.deliver([Self.heartbeat(rendered: 300), Self.heartbeat(rendered: 330, ssrc: 9)])
        try backend.deliver([Self.record(.event, "viewend", [TelemetryField("playing_time", .double(9.5)), TelemetryField("playback_failure", .bool(false)),
                                                             TelemetryField("rebuffer_count", .int(0)), TelemetryField("weighted_average_bitrate", .double(8e5))])])
        let text = Self.exposition(registry)
        #expect(text.contains(#"playout_frames_rendered_total{kind="video",session="s1",run="r42"} 330"#))
        #expect(text.contains(#"playout_ssrc_info{kind="video",ssrc="7",session="s1",run="r42"} 0"#))
        #expect(text.contains(#"playout_ssrc_info{kind="video",ssrc="9",session="s1",run="r42"} 1"#))
        #expect(text.contains(#"playout_view_playing_time_seconds{session="s1",run="r42"} 9.5"#))
        #expect(text.contains(#"playout_view_playback_failure{session="s1",run="r42"} 0"#))
        #expect(text.contains(#"playout_view_rebuffers{session="s1",run="r42"} 0"#))
        #expect(text.contains(#"playout_view_weighted_average_bitrate_bytes_per_second{session="s1",run="r42"} 100000"#))
        // A counter that went down (a restarted source) restarts from the new value.
        try backend.deliver([Self.heartbeat(rendered: 10)])
        #expect(Self.exposition(registry).contains(#"playout_frames_rendered_total{kind="video",session="s1",run="r42"} 10"#))
    }

    @Test("the machine's host labels every series by default; a record's own host wins")
    func hostByDefault() throws {
        let host = try #require(TelemetryField.host)
        let registry = PrometheusCollectorRegistry()
        let backend = PrometheusTelemetryBackend(registry: registry, schema: Self.schema)
        try backend.deliver([Self.record(.event, "play", [])])
        #expect(Self.exposition(registry).contains("host=\"\(host.value)\""))
        let other = PrometheusCollectorRegistry()
        let tagged = PrometheusTelemetryBackend(registry: other, schema: Self.schema, tags: [TelemetryField("host", .string("lab-7"))])
        try tagged.deliver([Self.record(.event, "play", [])])
        let text = Self.exposition(other)
        #expect(text.contains("host=\"lab-7\"") && !text.contains("host=\"\(host.value)\""))
    }

    @Test("hostile fields never trap the registry: a name taken by another type, odd characters, NaN and negative counters are dropped or sanitized")
    func hostile() throws {
        let registry = PrometheusCollectorRegistry()
        let backend = PrometheusTelemetryBackend(registry: registry, schema: Self.schema, defaultTags: [], maximumSeries: 50)
        try backend.deliver([
            Self.record(.heartbeat, "heartbeat", [TelemetryField("video.framesRendered", .double(.nan)), TelemetryField("audio.framesRendered", .int(-3))]),
            Self.record(.metric, "events total", [TelemetryField("value", .double(1))]),
            Self.record(.heartbeat, "heartbeat", [TelemetryField("a b{c}\"", .int(1)), TelemetryField("", .int(2)), TelemetryField("video.", .int(3))]),
        ])
        // A user's field spelled like a schema counter's exported name is a gauge under another name.
        try backend.deliver([Self.record(.heartbeat, "heartbeat", [TelemetryField("frames_rendered_total", .int(1))])])
        for session in 0..<100 { try backend.deliver([Self.heartbeat(rendered: 1).withSession("s\(session)")]) }
        #expect(backend.droppedSeriesCount > 0)
        let text = Self.exposition(registry)
        #expect(!text.contains("NaN"))
        #expect(text.contains("playout_heartbeat_frames_rendered_total"))
    }
}

extension TelemetryRecord {
    func withSession(_ session: String) -> TelemetryRecord {
        TelemetryRecord(sessionId: session, seq: seq, monotonic: monotonic, wallTimeNanoseconds: wallTimeNanoseconds, kind: kind, name: name, fields: fields, tags: tags)
    }
}
