@testable import Playout
import PlayoutTelemetry
import Foundation
import Testing

/// Issue 28: the subscriber's telemetry schema covers every field a heartbeat carries.
@Suite("QoS telemetry schema")
struct QoSSchemaTests {
    @Test("every written QoS field has a type, unit and meaning; every exported name is snake_case and unique")
    func everyField() {
        let written = TrackQoS.fields.filter { $0.written(in: QoSFieldsTests.fullSample().tracks[.video]!) != nil }.map(\.name)
        #expect(!written.isEmpty)
        for name in written { #expect(TelemetrySchema.subscriber.trackField(name) != nil, "\(name) is not in the schema") }
        #expect(Set(QoSFieldMeaning.table.keys).isSubset(of: Set(TrackQoS.fields.map(\.name))))
        let exported = TelemetrySchema.subscriber.trackFields.values.map(\.exportedName) + TelemetrySchema.subscriber.sessionFields.values.map(\.exportedName)
        #expect(Set(exported).count == exported.count)
        for name in exported { #expect(name.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "_" }, "\(name)") }
        #expect(TelemetrySchema.subscriber.trackField("totalDecodeTime")?.exportedName == "decode_time_seconds")
        #expect(TelemetrySchema.subscriber.trackField("bytesReceived")?.exportedName == "bytes_received")
        #expect(TelemetrySchema.subscriber.trackField("jitter")?.exportedName == "jitter_seconds")
    }

    @Test("a heartbeat's every field is described: track fields with their kind, the session's own, totals and the video's copies marked derived")
    func heartbeat() {
        let fields = SubscriberTelemetryTranslator.heartbeatFields(QoSFieldsTests.fullSample())
        let schema = TelemetrySchema.subscriber
        for field in fields where !["state", "playoutDelaySource"].contains(field.name) {
            let description = schema.describe(field.name)
            #expect(description.known || description.derived, "\(field.name)")
        }
        #expect(schema.describe("video.framesRendered").kind == "video")
        #expect(schema.describe("framesRendered").derived && schema.describe("framesPerSecond").derived)
        #expect(schema.describe("playoutDelay").field.exportedName == "playout_delay_seconds")
    }

    @Test("snake_case", arguments: [
        ("framesDecoded", "frames_decoded"), ("datagramsNotRTP", "datagrams_not_rtp"), ("nackCount", "nack_count"),
        ("RTTSeconds", "rtt_seconds"), ("a b", "a_b"), ("", "_"), ("ünï", "_n_"),
    ])
    func snakeCase(text: String, expected: String) {
        #expect(TelemetrySchema.snakeCase(text) == expected)
    }

    @Test("Docs/TelemetrySchema.md lists every track field under the schema's key")
    func documented() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("Docs/TelemetrySchema.md"), encoding: .utf8)
        let schema = TelemetrySchema.subscriber
        for field in schema.trackFields.values {
            #expect(text.contains("| `\(field.name)` | `\(field.exportedName)` | \(field.type.rawValue) |"), "\(field.name) → \(field.exportedName)")
        }
        for field in TelemetrySchema.kpiFields where !field.name.hasPrefix("playout_delay_") && !field.name.hasPrefix("end_to_end_latency_") {
            #expect(text.contains("| `\(field.name)` | `\(field.exportedName)` |"), "\(field.name) → \(field.exportedName)")
        }
    }
}
