import PlayoutCore

/// Percentiles of a duration measured many times (render error, end-to-end latency), in bounded
/// memory: microsecond buckets, exact below 2 ms and within 0.1 % above (log-linear, like
/// HdrHistogram with three significant digits).
public struct DurationHistogram: Equatable, Sendable {
    private static let subBuckets: Int64 = 1_024
    /// The buckets in chunks of ``subBuckets`` (two for the exact first 2 ms, then one per
    /// octave), each allocated when a value first falls in it (empty until then): a latency of
    /// 240 ms holds one 8 kB chunk, not the 70 kB of every bucket below it, and a value in a new
    /// octave adds a chunk without copying the others — hundreds of viewers of one stream
    /// reach each new maximum at the same frame, and a copy there cost a worker milliseconds.
    private var chunks: [[Int]] = []
    /// How many values were recorded.
    public private(set) var count = 0
    /// The largest value recorded.
    public private(set) var maximum: Duration = .zero

    public init() {}

    /// Records `value` (negative values count as zero).
    public mutating func record(_ value: Duration) {
        let microseconds = max(0, value.nanoseconds / 1_000)
        let (chunk, offset) = Self.index(of: microseconds).quotientAndRemainder(dividingBy: Int(Self.subBuckets))
        allocate(chunk)
        chunks[chunk][offset] += 1
        count += 1
        maximum = max(maximum, .nanoseconds(microseconds * 1_000))
    }

    /// Makes sure chunk `chunk` holds its buckets.
    private mutating func allocate(_ chunk: Int) {
        if chunk >= chunks.count { chunks.append(contentsOf: repeatElement([], count: chunk + 1 - chunks.count)) }
        if chunks[chunk].isEmpty { chunks[chunk] = [Int](repeating: 0, count: Int(Self.subBuckets)) }
    }

    /// A copy in storage of its own. A plain copy shares the buckets until either side records
    /// again, and the next value recorded then copies them on the recording thread: a snapshot
    /// taken while the original records (a QoS sample, on the observer thread) pays for its
    /// copy itself, and the media thread records in place.
    public func snapshot() -> DurationHistogram {
        var copy = self
        copy.chunks = chunks.map { chunk in chunk.withUnsafeBufferPointer { Array($0) } }
        return copy
    }

    /// Adds `other`'s values.
    public mutating func merge(_ other: DurationHistogram) {
        for (chunk, buckets) in other.chunks.enumerated() where !buckets.isEmpty {
            allocate(chunk)
            for (offset, value) in buckets.enumerated() where value > 0 { chunks[chunk][offset] += value }
        }
        count += other.count
        maximum = max(maximum, other.maximum)
    }

    /// The value at or below which `fraction` (0…1) of the recorded values lie; nil when empty.
    public func percentile(_ fraction: Double) -> Duration? {
        guard count > 0 else { return nil }
        let rank = max(1, Int((fraction * Double(count)).rounded(.up)))
        var seen = 0
        for (chunk, buckets) in chunks.enumerated() {
            for (offset, bucketCount) in buckets.enumerated() where bucketCount > 0 {
                seen += bucketCount
                if seen >= rank { return min(.microseconds(Self.upperValue(of: chunk * Int(Self.subBuckets) + offset)), maximum) }
            }
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
