@testable import Playout
import PlayoutCore
import PlayoutRTP
import PlayoutTesting
import Testing

/// Issue 30: a viewer's feedback is decided when a decision falls due (a report, a NACK's reorder
/// wait or retry, a key-frame request's spacing), and at once when a packet or a frame changes one
/// (a gap, a frame dropped waiting for a key frame), not looked at every 10 ms "in case": with
/// hundreds of viewers in one process those looks were a tenth of its CPU.
@Suite("Feedback turns: when a decision falls due, and at once when a packet or a frame changes one")
struct FeedbackDueTests {
    static let seconds = 3

    /// Drives `datagrams` through a subscription to a sender announcing `feedback`, counting the
    /// turns taken between arrivals (timers: frames due, reports, NACKs, the subscription's own
    /// decisions); `check` runs after each arrival's turn.
    static func run(
        feedback: [String], datagrams: [SimulatedDatagram], check: (SimulatedSubscription, Int) -> Void = { _, _ in }
    ) throws -> (timerTurns: Int, final: SubscriberQoS) {
        let simulation = try SimulatedSubscription(
            session: SimulatedSubscription.session(key: nil, feedback: feedback), options: .init(duration: .seconds(Self.seconds))
        )
        let driver = simulation.driver
        var timerTurns = 0
        for (index, datagram) in datagrams.enumerated() where !driver.isFinished {
            while !driver.isFinished, let wake = driver.nextWake, wake < datagram.arrival {
                driver.advance(to: wake)
                timerTurns += 1
            }
            driver.advance(to: datagram.arrival)
            driver.receive(datagram.bytes, track: datagram.track)
            check(simulation, index)
        }
        return (timerTurns, driver.runUntilEnded())
    }

    static func video(_ simulation: SimulatedSubscription) -> TrackQoS {
        simulation.subscription.tracks[0].qos(playoutDelay: simulation.subscriber.playoutDelay.value)
    }

    static func datagrams(from start: Duration = .zero) throws -> [SimulatedDatagram] {
        // At the simulation's start instant.
        try SimulatedSender(key: nil).datagrams(video: start..<Duration.seconds(Self.seconds), origin: MonotonicInstant(nanoseconds: 10_000_000_000))
    }

    @Test("announcing NACK and PLI costs no turn while nothing is lost: as many timer turns as a sender announcing neither")
    func noLookWithoutCause() throws {
        let datagrams = try Self.datagrams()
        let silent = try Self.run(feedback: [], datagrams: datagrams)
        let repairing = try Self.run(feedback: ["nack", "nack pli"], datagrams: datagrams)
        // Looking every 10 ms would add 100 turns a second.
        #expect(repairing.timerTurns <= silent.timerTurns + 2, "\(repairing.timerTurns) timer turns with NACK and PLI announced, \(silent.timerTurns) without")
        #expect(repairing.final.video?.nackCount == 0 && repairing.final.video?.pliCount == 0)
        #expect(repairing.final.video?.framesRendered == silent.final.video?.framesRendered)
    }

    @Test("a gap is NACKed exactly the reorder wait after the packet that shows it arrived")
    func gapAtReorderWait() throws {
        var datagrams = try Self.datagrams()
        // A video packet a second in, followed by another of the same track.
        let lost = try #require(datagrams.indices.first { index in
            index + 1 < datagrams.count && datagrams[index].arrival.nanoseconds >= datagrams[0].arrival.nanoseconds + 1_000_000_000
                && datagrams[index].track == 0 && datagrams[index + 1].track == 0
        })
        datagrams.remove(at: lost)
        let seen = datagrams[lost].arrival
        let due = seen.advanced(by: NACKTracker.Configuration().reorderWait)
        let lastAtSeen = try #require(datagrams.lastIndex { $0.arrival == seen })
        #expect(datagrams[lastAtSeen + 1].arrival > due, "the next frame arrives after the NACK is due")
        var checked = false
        _ = try Self.run(feedback: ["nack", "nack pli"], datagrams: datagrams) { simulation, index in
            guard index == lastAtSeen else { return }
            checked = true
            #expect(Self.video(simulation).nackCount == 0)
            #expect((simulation.driver.nextWake ?? .init(nanoseconds: .max)) <= due)
            simulation.driver.advance(to: due.advanced(by: .nanoseconds(-1)))
            #expect(Self.video(simulation).nackCount == 0, "asked before the reorder wait")
            simulation.driver.advance(to: due)
            #expect(Self.video(simulation).nackCount == 1, "not asked at the reorder wait")
        }
        #expect(checked)
    }

    @Test("joining between key frames: the key frame is asked for in the turn that drops the first frame, not at a later look")
    func keyFrameAtFirstDrop() throws {
        // From half a second in: the first frames are not key frames (one a second).
        let datagrams = try Self.datagrams(from: .milliseconds(500))
        var asked: (dropped: Int, plis: Int)?
        let (_, final) = try Self.run(feedback: ["nack pli"], datagrams: datagrams) { simulation, _ in
            let video = Self.video(simulation)
            if asked == nil, video.framesDroppedWaitingForKeyframe > 0 { asked = (video.framesDroppedWaitingForKeyframe, video.pliCount) }
        }
        #expect(asked?.dropped == 1 && asked?.plis == 1, "\(String(describing: asked))")
        #expect((final.video?.pliCount ?? 0) >= 1)
    }
}
