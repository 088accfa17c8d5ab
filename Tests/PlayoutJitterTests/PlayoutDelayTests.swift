import PlayoutJitter
import Testing

@Suite("Playout delay limits")
struct PlayoutDelayTests {
    @Test("the default delay is 230 ms with a 30 s cap")
    func defaults() {
        let configuration = PlayoutDelay.Configuration()
        #expect(configuration.delay == .milliseconds(230))
        #expect(configuration.maximum == .seconds(30))
    }

    @Test("valid delays are accepted; above 10 s with a warning", arguments: [
        (Duration.zero, false), (.milliseconds(230), false), (.seconds(10), false), (.milliseconds(10_001), true), (.seconds(30), true),
    ])
    func accepts(delay: Duration, warn: Bool) throws {
        let result = try PlayoutDelay.Configuration().validate(delay)
        #expect(result.delay == delay)
        #expect(result.warn == warn)
    }

    @Test("negative, non-finite and too-large delays are clear errors")
    func rejects() throws {
        let configuration = PlayoutDelay.Configuration()
        #expect(throws: PlayoutDelayError.negative(.milliseconds(-1))) { try configuration.validate(.milliseconds(-1)) }
        #expect(throws: PlayoutDelayError.aboveMaximum(.seconds(31), maximum: .seconds(30))) { try configuration.validate(.seconds(31)) }
        #expect(throws: PlayoutDelayError.self) { try configuration.validate(seconds: .nan) }
        #expect(throws: PlayoutDelayError.self) { try configuration.validate(seconds: .infinity) }
        #expect(throws: PlayoutDelayError.self) { try configuration.validate(seconds: -.infinity) }
        #expect(PlayoutDelayError.aboveMaximum(.seconds(31), maximum: .seconds(30)).description.contains("cap of 30s"))
        #expect(try configuration.validate(seconds: 1.5).delay == .milliseconds(1_500))
    }
}
