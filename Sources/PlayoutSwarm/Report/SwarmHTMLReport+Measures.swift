extension SwarmHTMLReport {
    /// What a measure's numbers are, which decides how they read: seconds stay seconds, ratios read
    /// as percent, bits/s as kbit/s or Mbit/s.
    enum Unit: Equatable, Sendable {
        case seconds
        case ratio
        case bitsPerSecond
        case framesPerSecond
        case count
    }

    /// A measure's title, axis name and unit, for a name in `SwarmSample.measures` or an SLO's
    /// objective.
    struct MeasureInfo: Equatable, Sendable {
        /// The name as the run wrote it.
        var name: String
        /// What a reader calls it.
        var title: String
        /// What its y axis says before the unit (short: the axis is 200 px tall).
        var axis: String
        var unit: Unit
    }

    /// The measures the report knows by name, in the order their charts come.
    static let knownMeasures: [(name: String, title: String, axis: String, unit: Unit)] = [
        ("startupTime", "Start-up time to the first frame", "start-up time", .seconds),
        ("renderedRatio", "Frames rendered on time", "rendered on time", .ratio),
        ("freezeRatio", "Time frozen", "time frozen", .ratio),
        ("freezeCount", "Freezes", "freezes", .count),
        ("rebufferRatio", "Rebuffering", "rebuffering", .ratio),
        ("endToEndLatency", "End-to-end latency", "end-to-end latency", .seconds),
        ("jitterBufferDelay", "Jitter-buffer delay per frame", "jitter-buffer delay", .seconds),
        ("framesPerSecond", "Frame rate rendered", "frame rate", .framesPerSecond),
        ("bitrate", "Bitrate received", "bitrate", .bitsPerSecond),
        ("packetsLost", "Packets lost", "packets lost", .count),
        ("nackCount", "NACKs sent", "NACKs sent", .count),
        ("framesDecoded", "Frames decoded", "frames decoded", .count),
    ]

    /// The title and unit of the measure `name`: a known one by its name, any other by the words in
    /// its name (`…Ratio`/`…Percentage`: a ratio; `…Time`, `…Delay`, `…Latency`, `…Duration`,
    /// `jitter`: seconds; `bitrate`/`…Bps`: bits/s; `…PerSecond`/`fps`: frames/s; else a count).
    static func measure(_ name: String) -> MeasureInfo {
        if let known = knownMeasures.first(where: { $0.name == name }) {
            return MeasureInfo(name: name, title: known.title, axis: known.axis, unit: known.unit)
        }
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
        return MeasureInfo(name: name, title: name, axis: name, unit: unit)
    }

    /// The measure an SLO objective is about: `startupTime.p95<2s` is about `startupTime`.
    static func objectiveMeasure(_ objective: String) -> MeasureInfo {
        let name = objective.prefix { $0 != "." && $0 != "<" && $0 != ">" && $0 != "=" && $0 != " " }
        return measure(String(name))
    }

    /// The measures to chart, known ones first in their order, then the others as they first
    /// appear in the samples; each once.
    static func chartedMeasures(_ samples: [SwarmSample]) -> [String] {
        var seen: Set<String> = []
        var appearing: [String] = []
        for sample in samples {
            for measure in sample.measures where seen.insert(measure.name).inserted {
                appearing.append(measure.name)
            }
        }
        let known = knownMeasures.map(\.name).filter(seen.contains)
        return known + appearing.filter { name in !known.contains(name) }
    }

    /// How a unit's values are scaled for display and what the axis calls them; for bits/s, kbit/s
    /// below 2 Mbit/s and Mbit/s from there (decided by the largest value shown).
    struct Scale: Equatable, Sendable {
        var factor: Double
        var suffix: String
        /// Decimals for one value in a table.
        var places: Int

        static func of(_ unit: Unit, largest: Double) -> Scale {
            switch unit {
            case .seconds: Scale(factor: 1, suffix: "s", places: 3)
            case .ratio: Scale(factor: 100, suffix: "%", places: 2)
            case .bitsPerSecond: largest >= 2_000_000 ? Scale(factor: 1e-6, suffix: "Mbit/s", places: 2) : Scale(factor: 1e-3, suffix: "kbit/s", places: 1)
            case .framesPerSecond: Scale(factor: 1, suffix: "frames/s", places: 1)
            case .count: Scale(factor: 1, suffix: "", places: 0)
            }
        }

        /// `value` in this scale with its unit: `0.412 s`, `99.5 %`, `2.51 Mbit/s`, `12`.
        func text(_ value: Double) -> String {
            let number = number(value)
            return suffix.isEmpty || number == "—" ? number : "\(number) \(suffix)"
        }

        /// `value` in this scale without its unit: `0.412`, `99.5`, `2.51`, `12`.
        func number(_ value: Double) -> String {
            SwarmHTMLReport.trimmed(value * factor, places: places == 0 ? 2 : places)
        }

        /// A name with this scale's unit in brackets: `start-up time (s)`, `freezes`.
        func label(_ name: String) -> String {
            suffix.isEmpty ? name : "\(name) (\(suffix))"
        }
    }
}
