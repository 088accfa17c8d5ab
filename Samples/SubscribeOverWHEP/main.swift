// Subscribing over WebRTC (WHEP) on the public API: the built-in publisher serves its stream as an
// ICE-lite WHEP endpoint on loopback; a Subscriber posts its offer there, connects ICE and
// DTLS-SRTP, plays the BUNDLE'd video and audio through its jitter buffer, and reports its
// start-up step by step. Prints only what does not vary from run to run.
import Playout
import PlayoutSender

LoggingSetup.bootstrap()

let publisher = try Publisher(options: .init(
    destination: try Publisher.freeLoopbackDestination(),    // unused over WHEP
    video: .init(codec: .h264, width: 320, height: 240, frameRate: 30, bitrate: 400_000, keyframeInterval: 30),
    duration: .seconds(6), whep: .init(listen: try SocketAddress(host: "127.0.0.1", port: 0))))
try publisher.start()
let endpoint = publisher.whepEndpoint!.url                   // http://127.0.0.1:PORT/whep

let subscriber = try Subscriber(source: endpoint, options: .init(duration: .seconds(5)))
let steps = subscriber.startup.subscribe { timeline in       // on the observer thread, as each step comes
    if let last = timeline?.reached.last, last.milestone == .firstFrame { print("first frame presented") }
}
try subscriber.start()
let summary = subscriber.waitUntilEnded()
steps.dispose()
publisher.stop()
let sent = try publisher.waitUntilEnded()

let timeline = subscriber.startup.value!
print("start-up steps: \(timeline.reached.map(\.milestone.rawValue).joined(separator: " → "))")
print("in order: \(zip(timeline.reached, timeline.reached.dropFirst()).allSatisfy { $0.elapsed <= $1.elapsed })")
print("state: \(summary.state), video \(summary.video!.frameWidth)x\(summary.video!.frameHeight), at least 60 frames rendered: \(summary.video!.framesRendered >= 60)")
print("audio rendered: \(summary.audio!.framesRendered > 0)")
print("the publisher served one session, ended by the DELETE: \(sent.whep!.sessionsOpened == 1 && sent.whep!.sessions.first?.end != nil)")
