import PlayoutCore
import PlayoutTelemetry
import Testing

/// The histogram behind render error, latency and transit: exact below 2 ms, within 0.1 % above,
/// whatever order and chunks the values came in.
@Suite("DurationHistogram: percentiles exact below 2 ms and within 0.1 % above, in chunks allocated as values arrive")
struct DurationHistogramTests {
    @Test("below 2 ms every microsecond is its own bucket: percentiles are the values recorded")
    func exactBelowTwoMilliseconds() throws {
        var histogram = DurationHistogram()
        for microseconds in 1...2_000 { histogram.record(.microseconds(microseconds)) }
        #expect(histogram.percentile(0.5) == .microseconds(1_000))
        #expect(histogram.percentile(0.99) == .microseconds(1_980))
        #expect(histogram.percentile(1) == .microseconds(2_000))
        #expect(histogram.count == 2_000 && histogram.maximum == .microseconds(2_000))
    }

    @Test("above 2 ms, in every octave up to an hour, a percentile is within 0.1 % of the value and never above the maximum")
    func withinATenthOfAPercent() {
        for microseconds: Int64 in [2_049, 3_000, 50_000, 240_123, 1_000_000, 9_999_999, 3_600_000_000] {
            var histogram = DurationHistogram()
            histogram.record(.microseconds(microseconds))
            histogram.record(.microseconds(microseconds + 1))
            let median = histogram.percentile(0.5)!.nanoseconds / 1_000
            #expect(median >= microseconds && Double(median - microseconds) <= Double(microseconds) * 0.001, "\(microseconds) µs → \(median) µs")
            #expect(histogram.percentile(1) == .microseconds(microseconds + 1))
        }
    }

    @Test("negative values count as zero; an empty histogram has no percentile")
    func negativeAndEmpty() {
        var histogram = DurationHistogram()
        #expect(histogram.percentile(0.5) == nil && histogram.summary == nil)
        histogram.record(.milliseconds(-5))
        #expect(histogram.percentile(0.5) == .zero && histogram.count == 1)
    }

    @Test("the same values in any order, recorded or merged, make equal histograms")
    func orderAndMergeDoNotMatter() {
        let values: [Duration] = (0..<500).map { .microseconds(($0 * 7_919) % 400_000) } + [.seconds(30), .milliseconds(1)]
        var forward = DurationHistogram()
        for value in values { forward.record(value) }
        var backward = DurationHistogram()
        for value in values.reversed() { backward.record(value) }
        var halves = DurationHistogram()
        var second = DurationHistogram()
        for value in values.prefix(250) { halves.record(value) }
        for value in values.dropFirst(250) { second.record(value) }
        halves.merge(second)
        #expect(forward == backward && forward == halves)
        #expect(forward.summary == halves.summary)
        var other = forward
        other.record(.microseconds(1))
        #expect(other != forward)
    }

    @Test("a snapshot keeps its values while the original records on, and equals a plain copy")
    func snapshotIsIndependent() {
        var live = DurationHistogram()
        for milliseconds in 200..<260 { live.record(.milliseconds(milliseconds)) }
        let snapshot = live.snapshot()
        let copy = live
        #expect(snapshot == copy)
        for milliseconds in 260..<400 { live.record(.milliseconds(milliseconds)) }
        #expect(snapshot == copy && snapshot != live)
        #expect(snapshot.count == 60 && snapshot.maximum == .milliseconds(259) && live.count == 200)
    }

    /// Hundreds of viewers reach a new octave at the same frame: each of them lists the value
    /// there instead of taking 8 kB of fresh memory in the turn that presents the frame.
    @Test("a chunk lists its first 32 buckets and holds all of them from the 33rd on; percentiles, merges and equality are the same either way")
    func listedThenWhole() {
        var few = DurationHistogram()
        for index in 0..<32 { few.record(.microseconds(40_000 + Int64(index) * 100)) }  // one octave (32.8–65.5 ms)
        #expect(few.wholeChunkCount == 0)
        #expect(few.percentile(0.5)!.nanoseconds / 1_000 >= 41_500 && few.percentile(1) == .microseconds(43_100))
        var many = few
        many.record(.microseconds(50_000))
        #expect(many.wholeChunkCount == 1 && few.wholeChunkCount == 0)
        // The same values recorded into one histogram that holds the chunk whole and merged from
        // two that list theirs.
        var listedHalves = DurationHistogram()
        var second = DurationHistogram()
        for index in 0..<16 { listedHalves.record(.microseconds(40_000 + Int64(index) * 100)) }
        for index in 16..<32 { second.record(.microseconds(40_000 + Int64(index) * 100)) }
        second.record(.microseconds(50_000))
        #expect(listedHalves.wholeChunkCount == 0 && second.wholeChunkCount == 0)
        listedHalves.merge(second)
        #expect(listedHalves == many && listedHalves.wholeChunkCount == 1)
        for fraction in [0.01, 0.5, 0.9, 0.99, 1] { #expect(many.percentile(fraction) == listedHalves.percentile(fraction)) }
        // A few late frames among thousands below 2 ms: the octaves they reached stay listed.
        var renderErrors = DurationHistogram()
        for index in 0..<5_000 { renderErrors.record(.microseconds(Int64(index % 1_900))) }
        for late in [22_000, 35_000, 36_000, 80_000] as [Int64] { renderErrors.record(.microseconds(late)) }
        #expect(renderErrors.wholeChunkCount == 2, "the exact first 2 ms only (two chunks)")
        #expect(renderErrors.percentile(1) == .microseconds(80_000) && renderErrors.summary!.p99 < .milliseconds(2))
        let snapshot = renderErrors.snapshot()
        renderErrors.record(.microseconds(35_000))
        #expect(snapshot != renderErrors && snapshot.count == 5_004)
    }
}
