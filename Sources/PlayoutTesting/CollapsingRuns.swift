/// Call lists as analytics tests read them.
extension Array where Element == String {
    /// The names with each run of a repeated name collapsed to `name…` (playheads, pings).
    public func collapsingRuns(of repeated: Set<String>) -> [String] {
        var result: [String] = []
        for name in self {
            let shown = repeated.contains(name) ? name + "…" : name
            if result.last != shown || !repeated.contains(name) { result.append(shown) }
        }
        return result
    }
}
