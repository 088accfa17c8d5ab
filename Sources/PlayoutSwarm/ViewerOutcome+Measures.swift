/// The final aggregate across a run's viewers: the swarm's closing summary and `swarm report`
/// both read it.
extension ViewerOutcome {
    /// What a measure counts, for printing it (seconds as ms, ratios as %, bits/s as kbit/s).
    public enum MeasureUnit: Equatable, Sendable {
        /// Seconds.
        case seconds
        /// A ratio from 0 to 1.
        case ratio
        /// A count (frames, packets, freezes, NACKs).
        case count
        /// Bits per second.
        case bitsPerSecond
    }

    /// The measures in the order they are reported, each with its unit and how to read it from
    /// one viewer (nil: the viewer has no value, which is not 0).
    public static let measureDefinitions: [(name: String, unit: MeasureUnit, value: @Sendable (ViewerOutcome) -> Double?)] = [
        ("startupTime", .seconds, { $0.startupTime }),
        ("renderedRatio", .ratio, { $0.renderedRatio }),
        ("framesRendered", .count, { Double($0.framesRendered) }),
        ("freezeCount", .count, { Double($0.freezeCount) }),
        ("freezeRatio", .ratio, { $0.freezeRatio }),
        ("endToEndLatency", .seconds, { $0.endToEndLatency }),
        ("jitterBufferDelay", .seconds, { $0.jitterBufferDelay }),
        ("bitrate", .bitsPerSecond, { $0.bitrate }),
        ("packetsLost", .count, { Double($0.packetsLost) }),
        ("nackCount", .count, { Double($0.nackCount) }),
        ("framesDecoded", .count, { $0.framesDecoded.map(Double.init) }),
    ]

    /// The unit of the measure called `name`, nil for a name that is not one.
    public static func unit(ofMeasure name: String) -> MeasureUnit? {
        measureDefinitions.first { $0.name == name }?.unit
    }

    /// The spread across `outcomes` of each measure, in this order: `startupTime`,
    /// `renderedRatio`, `framesRendered`, `freezeCount`, `freezeRatio`, `endToEndLatency`,
    /// `jitterBufferDelay`, `bitrate`, `packetsLost`, `nackCount`, `framesDecoded`.
    ///
    /// Each spread is over the viewers that have a value: a nil value (the `framesDecoded` of a
    /// viewer that did not decode, the start-up time of one that rendered nothing) is left out,
    /// never counted as 0, and a measure no viewer has a value for is left out of the list.
    /// Non-finite values are left out too.
    ///
    /// ```swift
    /// for (name, spread) in ViewerOutcome.measures(outcomes) { print(name, spread.p95) }
    /// ```
    ///
    /// - Complexity: O(n log n) in the number of outcomes.
    public static func measures(_ outcomes: [ViewerOutcome]) -> [(name: String, spread: Spread)] {
        measureDefinitions.compactMap { definition in
            Spread(outcomes.compactMap(definition.value)).map { (definition.name, $0) }
        }
    }
}
