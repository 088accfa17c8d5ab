@testable import Playout
import PlayoutCore
import PlayoutTesting
import Testing

/// Issue 30: an event loop's worker with other subscriptions' turns due after a turn has it
/// present what is due and read ahead (release and decode the next frame) in a turn of its own,
/// after the others' frames are shown. On a manual clock, through whole subscriptions.
@Suite("Read ahead: a turn with others due presents, and leaves the next frame to a turn after them")
struct ReadAheadTests {
    static let key = SubscriptionTests.key

    @Test("the turn that presents a frame leaves the next one unreleased and asks for a read-ahead turn at once; that turn asks for the next render time")
    func presentsThenReadsAhead() throws {
        let simulation = try SimulatedSubscription(session: SimulatedSubscription.session(key: Self.key), options: .init(duration: .seconds(3), frameLogCapacity: 200))
        let driver = simulation.driver
        driver.othersDue = true
        let start = simulation.clock.now
        let datagrams = try SimulatedSender(key: Self.key).datagrams(video: Duration.zero..<Duration.seconds(2), origin: start)
        for datagram in datagrams.sorted(by: { $0.arrival < $1.arrival }) where datagram.arrival < start.advanced(by: .seconds(1)) {
            driver.advance(to: datagram.arrival)
            driver.receive(datagram.bytes, track: datagram.track)
        }
        #expect(!driver.readsAheadOnly)
        // One turn at a time from here, until a turn presents a frame.
        let log = try #require(simulation.subscription.frameLog)
        let shownBefore = log.snapshot().frames.count
        var turns = 0
        while log.snapshot().frames.count == shownBefore, turns < 100 {
            let wake = try #require(driver.nextWake)
            simulation.clock.advance(to: max(wake, simulation.clock.now))
            driver.turn()
            turns += 1
        }
        let now = simulation.clock.now
        let shown = try #require(log.snapshot().frames.last)
        #expect(shown.shown == now && shown.due == now && !shown.skipped)
        // Presented, nothing read ahead: the next turn is due at once and only reads ahead.
        #expect(driver.readsAheadOnly)
        #expect(driver.nextWake == now)
        driver.turn()
        // It released the next frame, which waits for its render time: a frame interval later.
        #expect(!driver.readsAheadOnly)
        let next = try #require(driver.nextWake)
        #expect(next > now && next <= now.advanced(by: .milliseconds(34)), "\(now.duration(to: next))")
        #expect(log.snapshot().frames.count == shownBefore + 1, "nothing more shown by reading ahead")
    }

    @Test("with an override's pause and skip, decoding real H.264: the same frames shown at the same instants, the same QoS, as when each turn reads ahead itself")
    func sameRun() throws {
        func run(othersDue: Bool) throws -> (FrameLog.Snapshot, SubscriberQoS) {
            let simulation = try SimulatedSubscription(
                session: SimulatedSubscription.session(key: Self.key),
                options: .init(duration: .seconds(7), overrides: [ScheduledOverride(delay: .seconds(1), at: .seconds(2), hold: .seconds(2))], frameLogCapacity: 1_000)
            )
            simulation.driver.othersDue = othersDue
            let final = simulation.run(try SimulatedSender(key: Self.key).datagrams(video: Duration.zero..<Duration.seconds(6), origin: simulation.clock.now))
            return (try #require(simulation.subscription.frameLog).snapshot(), final)
        }
        let (alone, aloneQoS) = try run(othersDue: false)
        let (shared, sharedQoS) = try run(othersDue: true)
        let video = try #require(sharedQoS.video)
        #expect(video.framesRendered > 150 && video.framesSkipped > 0 && video.framesRenderedLate == 0)
        #expect(shared.frames == alone.frames)
        #expect(shared.changes == alone.changes)
        #expect(sharedQoS.video?.framesRendered == aloneQoS.video?.framesRendered)
        #expect(sharedQoS.video?.framesSkipped == aloneQoS.video?.framesSkipped)
        #expect(sharedQoS.video?.framesDecoded == aloneQoS.video?.framesDecoded)
    }
}
