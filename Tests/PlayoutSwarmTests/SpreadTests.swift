import PlayoutSwarm
import Testing

@Suite("Spread: nearest-rank percentiles across viewers")
struct SpreadTests {
    @Test("Each percentile is one viewer's value; none without a value, non-finite values left out")
    func nearestRank() throws {
        let spread = try #require(Spread((1...100).map(Double.init).reversed()))
        #expect(spread == Spread(count: 100, min: 1, p50: 50, p95: 95, p99: 99, max: 100))
        #expect(Spread([]) == nil)
        #expect(Spread([.nan, .infinity]) == nil)
        #expect(Spread([3, .nan]) == Spread(count: 1, min: 3, p50: 3, p95: 3, p99: 3, max: 3))
        #expect(spread.value(of: "p95") == 95)
        #expect(spread.value(of: "p42") == nil)
    }
}
