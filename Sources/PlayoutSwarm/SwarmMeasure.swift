/// A measure the swarm aggregates across viewers, by its name in the `"swarm"` and `"summary"`
/// lines and in the store: what a reader calls it, and its unit. The one list every view of a run
/// reads — the live view and the summary table, `swarm report`'s table, the HTML report's charts.
///
/// ```swift
/// let measure = SwarmMeasure.named("startupTime")   // "Start-up time to the first frame", seconds
/// ```
public struct SwarmMeasure: Equatable, Sendable {
    /// What a measure's numbers are. Values stay in these units everywhere (JSON, the store);
    /// only a view scales them (seconds as ms, ratios as %, bits/s as kbit/s).
    public enum Unit: Equatable, Sendable {
        /// Seconds.
        case seconds
        /// A ratio from 0 to 1.
        case ratio
        /// A count (frames, packets, freezes, NACKs).
        case count
        /// Frames per second.
        case framesPerSecond
        /// Bits per second.
        case bitsPerSecond
    }

    /// The name as the run writes it.
    public let name: String
    /// What a reader calls it.
    public let title: String
    /// What a chart's y axis says before the unit (short: the axis is 200 px tall).
    public let axis: String
    public let unit: Unit

    /// The measures a swarm reports, in the order views show them.
    public static let known: [SwarmMeasure] = [
        .init("startupTime", "Start-up time to the first frame", "start-up time", .seconds),
        .init("renderedRatio", "Frames rendered on time", "rendered on time", .ratio),
        .init("framesRendered", "Frames rendered", "frames rendered", .count),
        .init("freezeRatio", "Time frozen", "time frozen", .ratio),
        .init("freezeCount", "Freezes", "freezes", .count),
        .init("rebufferRatio", "Rebuffering", "rebuffering", .ratio),
        .init("endToEndLatency", "End-to-end latency", "end-to-end latency", .seconds),
        .init("jitterBufferDelay", "Jitter-buffer delay per frame", "jitter-buffer delay", .seconds),
        .init("framesPerSecond", "Frame rate rendered", "frame rate", .framesPerSecond),
        .init("bitrate", "Bitrate received", "bitrate", .bitsPerSecond),
        .init("packetsLost", "Packets lost", "packets lost", .count),
        .init("nackCount", "NACKs sent", "NACKs sent", .count),
        .init("framesDecoded", "Frames decoded", "frames decoded", .count),
    ]

    init(_ name: String, _ title: String, _ axis: String, _ unit: Unit) {
        self.name = name
        self.title = title
        self.axis = axis
        self.unit = unit
    }

    /// The measure called `name`: a known one, any other (a WHEP start-up step such as
    /// `startup.ice_connected`, a store's extra field) by the words in its name — `…Ratio` or
    /// `…Percentage`: a ratio; `startup…`, `…Time`, `…Delay`, `…Latency`, `…Duration`, `jitter`:
    /// seconds; `bitrate` or `…Bps`: bits/s; `…PerSecond` or `fps`: frames/s; else a count.
    public static func named(_ name: String) -> SwarmMeasure {
        if let known = known.first(where: { $0.name == name }) { return known }
        let lower = name.lowercased()
        let unit: Unit
        if lower.contains("ratio") || lower.contains("percentage") || lower.hasSuffix("percent") {
            unit = .ratio
        } else if lower.contains("bitrate") || lower.hasSuffix("bps") {
            unit = .bitsPerSecond
        } else if lower.contains("persecond") || lower == "fps" {
            unit = .framesPerSecond
        } else if lower.hasPrefix("startup") || ["time", "delay", "latency", "duration", "jitter"].contains(where: lower.contains) {
            unit = .seconds
        } else {
            unit = .count
        }
        return SwarmMeasure(name, name, name, unit)
    }
}
