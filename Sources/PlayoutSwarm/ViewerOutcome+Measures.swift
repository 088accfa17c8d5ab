/// The final aggregate across a run's viewers: the swarm's closing summary and `swarm report`
/// both read it.
extension ViewerOutcome {
    /// The measures in the order they are reported (each a ``SwarmMeasure``, which says its
    /// unit), with how to read each from one viewer (nil: the viewer has no value, which is not 0).
    public static let measureDefinitions: [(name: String, value: @Sendable (ViewerOutcome) -> Double?)] = [
        ("startupTime", { $0.startupTime }),
        ("renderedRatio", { $0.renderedRatio }),
        ("framesRendered", { Double($0.framesRendered) }),
        ("freezeCount", { Double($0.freezeCount) }),
        ("freezeRatio", { $0.freezeRatio }),
        ("endToEndLatency", { $0.endToEndLatency }),
        ("jitterBufferDelay", { $0.jitterBufferDelay }),
        ("bitrate", { $0.bitrate }),
        ("packetsLost", { Double($0.packetsLost) }),
        ("nackCount", { Double($0.nackCount) }),
        ("framesDecoded", { $0.framesDecoded.map(Double.init) }),
    ]

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
