#if canImport(Glibc)
import Glibc
#endif

extension TelemetryField {
    /// The `host` tag: this machine's name (`gethostname`), nil when the system does not tell
    /// it. The InfluxDB and Prometheus backends add it to every point that has no `host`
    /// tag of its own (their `defaultTags`), so a dashboard can group by machine without the caller naming it.
    public static let host: TelemetryField? = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return nil }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? nil : TelemetryField("host", .string(name))
    }()

    /// `tags`, then each of `defaults` whose name neither `tags` nor `others` has.
    public static func merging(_ tags: [TelemetryField], defaults: [TelemetryField], unlessIn others: [TelemetryField]) -> [TelemetryField] {
        guard !defaults.isEmpty else { return tags }
        return tags + defaults.filter { tag in !tags.contains { $0.name == tag.name } && !others.contains { $0.name == tag.name } }
    }

    /// ``host`` as a list of default tags (empty when unknown).
    public static var hostDefaults: [TelemetryField] { host.map { [$0] } ?? [] }
}
