import PlayoutCore

/// Percentiles of a duration measured many times (render error, end-to-end latency), in bounded
/// memory: microsecond buckets, exact below 2 ms and within 0.1 % above (log-linear, like
/// HdrHistogram with three significant digits).
public struct DurationHistogram: Equatable, Sendable {
    private static let subBuckets: Int64 = 1_024
    /// How many distinct buckets a chunk lists before it holds all of its buckets.
    static let listedBucketLimit = 32

    /// The buckets in chunks of ``subBuckets`` (two for the exact first 2 ms, then one per
    /// octave). A chunk starts as a short list of the buckets its values fell in (``listed``) and
    /// holds all of its buckets (8 kB) only from its 33rd distinct bucket on: a latency of 240 ms
    /// holds one such chunk, not the 70 kB of every bucket below it, a value in a new octave adds
    /// nothing to the other chunks, and the few late frames of a run stay in lists of a few
    /// entries. Hundreds of viewers of one stream reach each new octave at the same frame; an
    /// 8 kB chunk for each of them there meant fresh pages from the kernel, zeroed, for every
    /// viewer at once, in the turn that presents the frame — tens of milliseconds on a worker of
    /// 250 viewers, and the last of them presented late.
    private var chunks: [[Int]] = []
    /// The chunks that do not hold all of their buckets yet: per chunk, the buckets with values,
    /// in order (empty for a chunk in ``chunks``). As many as ``chunks``.
    private var listed: [[ListedBucket]] = []
    /// How many values were recorded.
    public private(set) var count = 0
    /// How many chunks hold all of their buckets (8 kB each); the others list theirs.
    package var wholeChunkCount: Int { chunks.count { !$0.isEmpty } }
    /// The largest value recorded.
    public private(set) var maximum: Duration = .zero

    /// One bucket of a listed chunk.
    private struct ListedBucket: Equatable, Sendable {
        var offset: Int
        var count: Int
    }

    public init() {}

    /// Records `value` (negative values count as zero).
    public mutating func record(_ value: Duration) {
        let microseconds = max(0, value.nanoseconds / 1_000)
        let (chunk, offset) = Self.index(of: microseconds).quotientAndRemainder(dividingBy: Int(Self.subBuckets))
        add(1, chunk: chunk, offset: offset)
        count += 1
        maximum = max(maximum, .nanoseconds(microseconds * 1_000))
    }

    /// Adds `amount` to the bucket at `offset` of chunk `chunk`.
    private mutating func add(_ amount: Int, chunk: Int, offset: Int) {
        if chunk < chunks.count, !chunks[chunk].isEmpty {
            chunks[chunk][offset] += amount
            return
        }
        if chunk >= chunks.count {
            chunks.append(contentsOf: repeatElement([], count: chunk + 1 - chunks.count))
            listed.append(contentsOf: repeatElement([], count: chunk + 1 - listed.count))
        }
        let position = listed[chunk].firstIndex { $0.offset >= offset } ?? listed[chunk].endIndex
        if position < listed[chunk].endIndex, listed[chunk][position].offset == offset {
            listed[chunk][position].count += amount
        } else if listed[chunk].count < Self.listedBucketLimit {
            listed[chunk].insert(ListedBucket(offset: offset, count: amount), at: position)
        } else {
            var buckets = [Int](repeating: 0, count: Int(Self.subBuckets))
            for bucket in listed[chunk] { buckets[bucket.offset] = bucket.count }
            buckets[offset] += amount
            chunks[chunk] = buckets
            listed[chunk] = []
        }
    }

    /// Calls `body` with each bucket that holds values, in order: its index and its count; stops
    /// when `body` returns false.
    private func forEachBucket(_ body: (_ index: Int, _ count: Int) -> Bool) {
        for chunk in chunks.indices {
            let base = chunk * Int(Self.subBuckets)
            if chunks[chunk].isEmpty {
                for bucket in listed[chunk] {
                    guard body(base + bucket.offset, bucket.count) else { return }
                }
            } else {
                for (offset, count) in chunks[chunk].enumerated() where count > 0 {
                    guard body(base + offset, count) else { return }
                }
            }
        }
    }

    /// Every bucket that holds values, in order: its index, then its count.
    private var buckets: [Int] {
        var buckets: [Int] = []
        forEachBucket { index, count in
            buckets.append(index)
            buckets.append(count)
            return true
        }
        return buckets
    }

    /// Equal when they hold the same values, whichever of them a chunk lists or holds whole.
    public static func == (lhs: DurationHistogram, rhs: DurationHistogram) -> Bool {
        guard lhs.count == rhs.count, lhs.maximum == rhs.maximum else { return false }
        return lhs.buckets == rhs.buckets
    }

    /// A copy in storage of its own. A plain copy shares the buckets until either side records
    /// again, and the next value recorded then copies them on the recording thread: a snapshot
    /// taken while the original records (a QoS sample, on the observer thread) pays for its
    /// copy itself, and the media thread records in place.
    public func snapshot() -> DurationHistogram {
        var copy = self
        copy.chunks = chunks.map { chunk in chunk.withUnsafeBufferPointer { Array($0) } }
        copy.listed = listed.map { chunk in chunk.withUnsafeBufferPointer { Array($0) } }
        return copy
    }

    /// Adds `other`'s values.
    public mutating func merge(_ other: DurationHistogram) {
        other.forEachBucket { index, count in
            let (chunk, offset) = index.quotientAndRemainder(dividingBy: Int(Self.subBuckets))
            add(count, chunk: chunk, offset: offset)
            return true
        }
        count += other.count
        maximum = max(maximum, other.maximum)
    }

    /// The value at or below which `fraction` (0…1) of the recorded values lie; nil when empty.
    public func percentile(_ fraction: Double) -> Duration? {
        guard count > 0 else { return nil }
        let rank = max(1, Int((fraction * Double(count)).rounded(.up)))
        var seen = 0
        var found: Int?
        forEachBucket { index, bucketCount in
            seen += bucketCount
            if seen >= rank { found = index }
            return found == nil
        }
        return found.map { min(.microseconds(Self.upperValue(of: $0)), maximum) } ?? maximum
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
