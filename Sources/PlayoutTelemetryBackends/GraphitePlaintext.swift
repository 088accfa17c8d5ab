public import PlayoutTelemetry
/// Turns telemetry records into Graphite plaintext lines (`path value timestamp\n`), counting
/// events: a sans-IO encoder that keeps the running event counts, which its owner commits only
/// once a batch has been sent.
///
/// Paths (every component sanitized: anything but `A-Z a-z 0-9 _ -` becomes `_`, an empty one is
/// `_`):
///
/// | record | path | value | timestamp |
/// |---|---|---|---|
/// | event | `PREFIX.TAGS.events.NAME` | events called NAME since the backend started (a counter: graph it with `nonNegativeDerivative` or `perSecond`) | the last such event of the batch |
/// | heartbeat | `PREFIX.TAGS.heartbeat.FIELD` | each numeric field of the session (booleans 1/0) | the heartbeat's |
/// | heartbeat, each track | `PREFIX.TAGS.track.KIND.FIELD` (`playout.r42.track.video.frames_rendered`) | each numeric field of the track | the heartbeat's |
/// | metric | `PREFIX.TAGS.metrics.NAME` | its numeric `value` field | the record's |
///
/// `TAGS` is the values of the record's tags then the backend's, in order, one component each
/// (`--tag run=r42 --tag host=lab1` gives `playout.r42.lab1.events.play`); sessions are not in
/// the path. One line per event name and batch: the count is cumulative, so a batch sent twice
/// (a retry) writes the same points. Timestamps are whole seconds of the wall time; strings and
/// non-finite numbers are not sent. FIELD is the field's name in the telemetry schema
/// (``TelemetrySchema``: snake_case with its unit, `decode_time_seconds`); a heartbeat's top-level
/// totals and copies of the video's are left out (`sumSeries(playout.r42.track.*.frames_rendered)`
/// gives them), and so are identities (an SSRC).
///
/// ```swift
/// var encoder = GraphitePlaintext(prefix: "playout", tags: [])
/// let (lines, counts) = encoder.encode(records)   // "playout.r42.events.play 3 1700000000\n…"
/// // after the lines were sent:
/// encoder.commit(counts)
/// ```
public struct GraphitePlaintext: Sendable {
    /// The default first path component: `playout`.
    public static let defaultPrefix = "playout"

    /// The first path component(s), sanitized per dot-separated component.
    public let prefix: String
    /// Tags whose values follow the record's tags in every path.
    public let tags: [TelemetryField]
    /// Events counted so far per path, as committed.
    public private(set) var eventCounts: [String: Int64] = [:]

    /// What the heartbeat fields mean.
    public let schema: TelemetrySchema

    /// An encoder writing under `prefix`, adding `tags` to every path, naming fields by `schema`.
    public init(prefix: String = GraphitePlaintext.defaultPrefix, tags: [TelemetryField] = [], schema: TelemetrySchema = TelemetrySchema()) {
        let components = prefix.split(separator: ".", omittingEmptySubsequences: false).map { Self.sanitize(String($0)) }
        self.prefix = components.isEmpty ? Self.defaultPrefix : components.joined(separator: ".")
        self.tags = tags
        self.schema = schema
    }

    /// The lines of `batch`, and the event counts to ``commit(_:)`` once they are sent.
    public func encode(_ batch: [TelemetryRecord]) -> (lines: [UInt8], counts: [String: Int64]) {
        var output = ""
        var counts = eventCounts
        var lastEvent: [String: (count: Int64, seconds: Int64, order: Int)] = [:]
        for record in batch {
            let base = path(for: record)
            let seconds = record.wallTimeNanoseconds / 1_000_000_000
            switch record.kind {
            case .event:
                let path = base + ".events." + Self.sanitize(record.name)
                let count = counts[path, default: 0] + 1
                counts[path] = count
                lastEvent[path] = (count, seconds, lastEvent[path]?.order ?? lastEvent.count)
            case .heartbeat:
                for field in record.fields {
                    let (description, kind, derived, _) = schema.describe(field.name)
                    guard !derived, description.type != .identity, let value = Self.number(field.value) else { continue }
                    let group = kind.map { "track.\(Self.sanitize($0))" } ?? "heartbeat"
                    output += "\(base).\(group).\(Self.sanitize(description.exportedName)) \(value) \(seconds)\n"
                }
            case .metric:
                guard let value = record[field: "value"].flatMap(Self.number) else { continue }
                output += "\(base).metrics.\(Self.sanitize(record.name)) \(value) \(seconds)\n"
            }
        }
        for (path, event) in lastEvent.sorted(by: { $0.value.order < $1.value.order }) {
            output += "\(path) \(event.count) \(event.seconds)\n"
        }
        return (Array(output.utf8), counts)
    }

    /// Records that the lines of a batch whose ``encode(_:)`` returned `counts` were sent.
    public mutating func commit(_ counts: [String: Int64]) {
        eventCounts = counts
    }

    /// `PREFIX.TAG1.TAG2…` for `record`.
    func path(for record: TelemetryRecord) -> String {
        var path = prefix
        for tag in record.tags + tags {
            path += "." + Self.sanitize(tag.value.description)
        }
        return path
    }

    /// `text` as one path component: `A-Z a-z 0-9 _ -` kept, ASCII punctuation, spaces and
    /// controls (dots, separators) `_`, and each non-ASCII character `_u` and its code point in
    /// hex (`東京` → `_u6771_u4eac`), so that values in other scripts stay apart (`run=東京` and
    /// `run=大阪` are two series, not both `_`); empty becomes `_`.
    public static func sanitize(_ text: String) -> String {
        guard !text.isEmpty else { return "_" }
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", "_", "-": result.unicodeScalars.append(scalar)
            case _ where scalar.isASCII: result += "_"
            default: result += "_u" + String(scalar.value, radix: 16)
            }
        }
        return result
    }

    /// A value as Graphite writes it, or nil for text and non-finite numbers.
    static func number(_ value: TelemetryValue) -> String? {
        switch value {
        case .int(let number): String(number)
        case .double(let number): number.isFinite ? String(number) : nil
        case .bool(let flag): flag ? "1" : "0"
        case .string: nil
        }
    }
}
