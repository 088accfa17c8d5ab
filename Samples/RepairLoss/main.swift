// Repairing loss inside the playout delay: the built-in publisher sends through 5 % random loss;
// a subscriber that talks back (the default) NACKs what is missing and the publisher resends it
// as RTX, so nearly every frame renders at 230 ms. The same stream with a silent subscriber
// (`feedback: false`) shows what the loss costs without repair. Prints only what does not vary
// from run to run. Public API only.
import Playout
import PlayoutSender

LoggingSetup.bootstrap()

/// 5 s of 320×180 H.264 at 30 fps (a key frame every 60 frames) through 5 % loss (seeded), to a
/// subscriber with feedback on or off; returns the video frames rendered of those sent, and the
/// subscriber's and publisher's counters.
func run(feedback: Bool) throws -> (share: Double, video: TrackQoS, sent: Publisher.Statistics.Track) {
    let publisher = try Publisher(options: .init(
        destination: try Publisher.freeLoopbackDestination(),
        video: .init(codec: .h264, width: 320, height: 180, frameRate: 30, bitrate: 400_000, keyframeInterval: 60),
        sendsAudio: false, impairment: .init(loss: 0.05, seed: 5), duration: .seconds(5)))
    let subscriber = try Subscriber(
        sessionDescription: publisher.sessionDescription, options: .init(duration: .seconds(6), feedback: feedback))
    try subscriber.start()
    try publisher.start()
    let sent = try publisher.waitUntilEnded().tracks[.video]!
    let video = subscriber.waitUntilEnded().video!
    return (Double(video.framesRendered) / Double(sent.framesSent), video, sent)
}

let repaired = try run(feedback: true)
print("with feedback: at least 97 % of video frames rendered: \(repaired.share >= 0.97)")
print("NACKs sent: \(repaired.video.nackCount > 0), retransmissions received: \(repaired.video.retransmittedPacketsReceived > 0)")
print("the publisher heard them: \(repaired.sent.feedback.nacksReceived > 0), and resent: \(repaired.sent.retransmittedPacketsSent > 0)")
print("round-trip time measured on both sides: \(repaired.video.roundTripTime != nil && repaired.sent.feedback.roundTripTime != nil)")

let silent = try run(feedback: false)
print("without feedback: fewer frames rendered: \(silent.share < repaired.share), nothing sent back: \(silent.video.rtcpPacketsSent == 0 && silent.sent.feedback.receiverReportsReceived == 0)")
