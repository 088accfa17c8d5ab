import Foundation
import PlayoutTelemetry
import PlayoutTelemetryBackends
#if canImport(Glibc)
import Glibc
#endif

/// The known records every server test writes and reads back: two batches of events, a
/// heartbeat and a metric, with hostile tag and field strings, stamped with the wall time now
/// (VictoriaMetrics drops points older than its retention).
struct TelemetryFixtures {
    /// A run id unique to this test, so queries see only its points.
    let run = "run-\(UInt32.random(in: 0...UInt32.max))"
    /// A tag value with every character line protocol escapes, and a quote and a backslash
    /// (followed by an ordinary character, which every InfluxDB version reads back as written).
    static let hostileViewer = #"a b,c=d"e\f"#
    /// A string field with commas, spaces, an equals sign, quotes and a backslash.
    static let hostileReason = #"comma, space=eq "quote" back\slash"#
    let session = "session 1"
    let wall: [Int64]

    init() {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let base = (Int64(now.tv_sec) - 60) * 1_000_000_000 + 123_456_789
        wall = (0..<5).map { base + Int64($0) * 1_000_001_000 }
    }

    var tags: [TelemetryField] {
        [TelemetryField("run", .string(run)), TelemetryField("viewer", .string(Self.hostileViewer))]
    }

    /// Batch 1: play, playing. Batch 2: heartbeat, play, metric.
    var batches: [[TelemetryRecord]] {
        [
            [
                TelemetryRecord(sessionId: session, seq: 0, monotonic: .seconds(0), wallTimeNanoseconds: wall[0], kind: .event, name: "play",
                                fields: [TelemetryField("reason", .string(Self.hostileReason)), TelemetryField("bitrate", .int(2_500_000)),
                                         TelemetryField("ratio", .double(0.5)), TelemetryField("live", .bool(true))], tags: tags),
                TelemetryRecord(sessionId: session, seq: 1, monotonic: .seconds(1), wallTimeNanoseconds: wall[1], kind: .event, name: "playing",
                                fields: [TelemetryField("timeSincePlay", .double(1.25))], tags: tags),
            ],
            [
                TelemetryRecord(sessionId: session, seq: 2, monotonic: .seconds(2), wallTimeNanoseconds: wall[2], kind: .heartbeat, name: "heartbeat",
                                fields: [TelemetryField("framesDecoded", .int(300)), TelemetryField("bitrate", .double(2.5e6)),
                                         TelemetryField("paused", .bool(false))], tags: tags),
                TelemetryRecord(sessionId: session, seq: 3, monotonic: .seconds(3), wallTimeNanoseconds: wall[3], kind: .event, name: "play",
                                fields: [TelemetryField("bitrate", .int(-7))], tags: tags),
                TelemetryRecord(sessionId: session, seq: 4, monotonic: .seconds(4), wallTimeNanoseconds: wall[4], kind: .metric, name: "cpu",
                                fields: [TelemetryField("value", .double(0.25))], tags: tags),
            ],
        ]
    }

    /// Milliseconds of record `index`'s wall time (what VictoriaMetrics and Prometheus keep).
    func milliseconds(_ index: Int) -> Int64 { wall[index] / 1_000_000 }
    /// Whole seconds of record `index`'s wall time (what Graphite keeps).
    func seconds(_ index: Int) -> Int64 { wall[index] / 1_000_000_000 }
}
