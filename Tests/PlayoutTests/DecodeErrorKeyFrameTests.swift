@testable import Playout
import PlayoutCore
import PlayoutTelemetry
import PlayoutTesting
import Testing

/// Issue 25 item 9: a key frame that arrives without its parameter sets (SPS and PPS lost, or cut
/// off by source validation) decodes to "non-existing PPS 0 referenced", and so does every frame
/// after it until the next key frame: a whole GOP lost although no packet was. A decode error
/// must make video wait for a key frame and ask the sender for one.
@Suite("A video frame that does not decode makes the track wait for a key frame and ask for one")
struct DecodeErrorKeyFrameTests {
    /// The test pattern with the first key frame's SPS and PPS (NAL unit types 7 and 8) removed.
    static let videoWithoutFirstParameterSets: [EncodedFrame] = {
        var frames = SimulatedMedia.video
        let units = AnnexB.nalUnits(of: frames[0].bytes).filter { unit in
            guard let header = unit.first else { return false }
            return ![7, 8].contains(header & 0x1F)
        }
        frames[0].bytes = units.flatMap { [0, 0, 0, 1] + $0 }
        return frames
    }()

    @Test("the first GOP without parameter sets: one decode error, the rest of the GOP dropped waiting for a key frame, a PLI decided")
    func missingParameterSets() throws {
        #expect(Self.videoWithoutFirstParameterSets[0].isKeyframe)
        let simulation = try SimulatedSubscription(
            session: SimulatedSubscription.session(key: nil, feedback: ["nack", "nack pli"]), options: .init(duration: .seconds(3))
        )
        var sender = SimulatedSender(key: nil)
        sender.video = Self.videoWithoutFirstParameterSets
        let datagrams = try sender.datagrams(video: .zero..<Duration.seconds(3), origin: simulation.clock.now)
        let final = simulation.run(datagrams)
        let video = try #require(final.video)
        // The first frame fails; the track then waits for a key frame instead of feeding the
        // decoder 29 more frames it cannot decode, and asks for one at once.
        #expect(video.decodeErrors == 1)
        #expect(video.framesDroppedWaitingForKeyframe >= SimulatedMedia.frameRate - 2)
        #expect(video.pliCount >= 1)
        // The simulated sender does not answer PLI: the next key frame (1 s) restores the picture,
        // and every frame from there renders, as in the same run with the parameter sets intact.
        #expect(video.framesRendered == (try Self.renderedWithParameterSets(feedback: ["nack", "nack pli"])) - SimulatedMedia.frameRate)
        #expect(video.keyFramesDecoded >= 1)
    }

    @Test("without announced key-frame requests the track still waits for a key frame rather than decoding garbage")
    func silentSender() throws {
        let simulation = try SimulatedSubscription(session: SimulatedSubscription.session(key: nil), options: .init(duration: .seconds(3)))
        var sender = SimulatedSender(key: nil)
        sender.video = Self.videoWithoutFirstParameterSets
        let final = simulation.run(try sender.datagrams(video: .zero..<Duration.seconds(3), origin: simulation.clock.now))
        let video = try #require(final.video)
        #expect(video.decodeErrors == 1)
        #expect(video.pliCount == 0)
        #expect(video.framesRendered == (try Self.renderedWithParameterSets(feedback: [])) - SimulatedMedia.frameRate)
    }

    /// Frames rendered by the same 3 s run of the unaltered test pattern.
    static func renderedWithParameterSets(feedback: [String]) throws -> Int {
        let simulation = try SimulatedSubscription(
            session: SimulatedSubscription.session(key: nil, feedback: feedback), options: .init(duration: .seconds(3))
        )
        let final = simulation.run(try SimulatedSender(key: nil).datagrams(video: .zero..<Duration.seconds(3), origin: simulation.clock.now))
        return final.video?.framesRendered ?? 0
    }
}
