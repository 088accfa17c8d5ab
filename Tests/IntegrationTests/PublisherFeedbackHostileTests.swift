import Foundation
import Playout
import PlayoutRTP
import PlayoutSender
import PlayoutTesting
import RealTimeTesting
import Testing

/// The publisher's RTCP port gets what anyone sends: garbage, truncated and oversized
/// datagrams, and well-formed feedback about streams it does not send, from a port that is not
/// where the stream goes. Each is refused unread and counted; the stream and a real receiver's
/// feedback go on.
@Suite("Publisher: hostile RTCP counted and dropped", .realTime, .serialized)
struct PublisherFeedbackHostileTests {
    @Test("garbage, truncated, oversized and foreign feedback on the publisher's RTCP port: counted, ignored, and the loop still answers its receiver")
    func hostile() throws {
        let publisher = try Publisher(options: .init(
            destination: try Publisher.freeLoopbackDestination(),
            video: .init(codec: .h264, width: 320, height: 240, frameRate: 30, bitrate: 400_000, keyframeInterval: 60),
            sendsAudio: false, impairment: .init(loss: 0.02, seed: 3), duration: .seconds(4)))
        let subscriber = try Subscriber(sessionDescription: publisher.sessionDescription, options: .init(duration: .seconds(5)))
        let port = try #require(publisher.controlPorts[.video])
        let stranger = try UDPSender(to: try SocketAddress(host: "127.0.0.1", port: port))
        try subscriber.start()
        try publisher.start()
        var generator = SeededRandomNumberGenerator(seed: 18)
        let foreignNACK = RTCPPacket.serializeCompound([
            .receiverReport(RTCPReceiverReport(ssrc: 99)),
            .feedback(RTCPFeedback(senderSSRC: 99, mediaSSRC: 0xDEAD, message: .nack(Array(0..<200)))),
            .feedback(RTCPFeedback(senderSSRC: 99, mediaSSRC: 0xDEAD, message: .pictureLoss)),
            .feedback(RTCPFeedback(senderSSRC: 99, mediaSSRC: 0, message: .receiverEstimatedMaximumBitrate(bitrate: 1_000, ssrcs: [0xDEAD]))),
        ])
        var garbage = 0
        for round in 0..<40 {
            let random = (0..<Int.random(in: 1...300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            try stranger.send(random)
            try stranger.send(Array(foreignNACK.prefix(Int.random(in: 1..<foreignNACK.count, using: &generator))))  // truncated
            try stranger.send([UInt8](repeating: 0x80, count: 9_000))  // oversized, not RTCP
            try stranger.send(foreignNACK)
            garbage += 3
            if round % 10 == 0 { Thread.sleep(forTimeInterval: 0.05) }
        }
        let sent = try publisher.waitUntilEnded()
        let final = subscriber.waitUntilEnded()
        let video = try #require(sent.tracks[.video])
        // Issue 26: a port that is not where the stream goes is refused before anything is
        // parsed (its garbage is not even decoded), and counted.
        #expect(sent.rtcpRefused > garbage / 2 && sent.rtcpRefused <= garbage + 40, "\(sent.rtcpRefused) refused of \(garbage + 40) from the stranger")
        #expect(sent.rtcpUndecodable == 0 && video.feedback.packetsIgnored == 0, "nothing of the stranger's is read")
        #expect(sent.rtcpAccepted > 0, "the receiver's RTCP is taken")
        #expect(video.feedback.bitrateLimit == nil && video.targetBitrate == 400_000, "a stranger's REMB about another stream limits nothing")
        #expect(video.keyFramesForced <= video.feedback.pliReceived, "only its receiver's PLIs count")
        #expect(video.feedback.nacksReceived > 0 && video.retransmittedPacketsSent > 0, "its receiver's NACKs are still answered")
        #expect((final.video?.framesRendered ?? 0) >= video.framesSent * 97 / 100)
    }
}
