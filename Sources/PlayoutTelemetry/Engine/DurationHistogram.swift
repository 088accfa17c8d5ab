import PlayoutCore

/// Percentiles of a duration measured many times (render error, end-to-end latency), in bounded
/// memory: microsecond buckets, exact below 2 ms and within 0.1 % above (log-linear, like
/// HdrHistogram with three significant digits).
public struct DurationHistogram: Equatable, Sendable {
    private static let subBuckets: Int64 = 1_024
    private var counts: [Int] = []
    /// How many values were recorded.
    public private(set) var count = 0
    /// The largest value recorded.
    public private(set) var maximum: Duration = .zero

    public init() {}

    /// Records `value` (negative values count as zero).
    public mutating func record(_ value: Duration) {
        let microseconds = max(0, value.nanoseconds / 1_000)
        let index = Self.index(of: microseconds)
        if index >= counts.count { grow(to: index + 1) }
        counts[index] += 1
        count += 1
        maximum = max(maximum, .nanoseconds(microseconds * 1_000))
    }

    /// Makes room for `size` buckets: one allocation, the new buckets zeroed with plain stores (a
    /// latency's first value opens ≈ 9,000 buckets, and a generic append of that many zeros costs
    /// milliseconds in a debug build — per viewer, at the first frame of a run of hundreds).
    private mutating func grow(to size: Int) {
        let old = counts
        counts = [Int](unsafeUninitializedCapacity: size) { buffer, initialized in
            guard let base = buffer.baseAddress else { return }
            old.withUnsafeBufferPointer { old in
                if let source = old.baseAddress { base.initialize(from: source, count: old.count) }
            }
            (base + old.count).initialize(repeating: 0, count: size - old.count)
            initialized = size
        }
    }

    /// Adds `other`'s values.
    public mutating func merge(_ other: DurationHistogram) {
        if other.counts.count > counts.count { grow(to: other.counts.count) }
        for (index, value) in other.counts.enumerated() { counts[index] += value }
        count += other.count
        maximum = max(maximum, other.maximum)
    }

    /// The value at or below which `fraction` (0…1) of the recorded values lie; nil when empty.
    public func percentile(_ fraction: Double) -> Duration? {
        guard count > 0 else { return nil }
        let rank = max(1, Int((fraction * Double(count)).rounded(.up)))
        var seen = 0
        for (index, bucketCount) in counts.enumerated() where bucketCount > 0 {
            seen += bucketCount
            if seen >= rank { return min(.microseconds(Self.upperValue(of: index)), maximum) }
        }
        return maximum
    }

    /// p50, p95, p99 and max, when anything was recorded.
    public var summary: Summary? {
        guard let p50 = percentile(0.5), let p95 = percentile(0.95), let p99 = percentile(0.99) else { return nil }
        return Summary(p50: p50, p95: p95, p99: p99, max: maximum, count: count)
    }

    /// The percentiles a report shows.
    public struct Summary: Equatable, Sendable {
        /// The median.
        public var p50: Duration
        /// The 95th percentile.
        public var p95: Duration
        /// The 99th percentile.
        public var p99: Duration
        /// The largest value.
        public var max: Duration
        /// How many values.
        public var count: Int
    }

    private static func index(of value: Int64) -> Int {
        if value < 2 * subBuckets { return Int(value) }
        let shift = Int64(64 - value.leadingZeroBitCount) - 11  // value >> shift is in 1024..<2048
        return Int(2 * subBuckets + (shift - 1) * subBuckets + ((value >> shift) - subBuckets))
    }

    private static func upperValue(of index: Int) -> Int64 {
        let index = Int64(index)
        if index < 2 * subBuckets { return index }
        let shift = (index - 2 * subBuckets) / subBuckets + 1
        let mantissa = (index - 2 * subBuckets) % subBuckets + subBuckets
        return ((mantissa + 1) << shift) - 1
    }
}
