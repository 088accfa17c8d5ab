extension SwarmHTMLReport {
    /// What a measure's numbers are (``SwarmMeasure/Unit``).
    typealias Unit = SwarmMeasure.Unit

    /// A measure's title, axis name and unit, for a name in `SwarmSample.measures` or an SLO's
    /// objective (``SwarmMeasure/named(_:)``).
    static func measure(_ name: String) -> SwarmMeasure {
        SwarmMeasure.named(name)
    }

    /// The measure an SLO objective is about: `startupTime.p95<2s` is about `startupTime`.
    static func objectiveMeasure(_ objective: String) -> SwarmMeasure {
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
        let known = SwarmMeasure.known.map(\.name).filter(seen.contains)
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
