// Many viewers in one process: 20 subscribers, each to its own built-in publisher on loopback, all
// on one SubscriptionEventLoop — a fixed set of threads (workers, and one for the observers; no
// decode threads, as no viewer here decodes) however many subscribers it drives. Without decoding, every timing statistic stays
// exact and a viewer costs a fraction of a percent of a core — public API only.
import Playout
import PlayoutSender

LoggingSetup.bootstrap()  // console at PLAYOUT_LOG_LEVEL (default warning), once per process

let loop = try SubscriptionEventLoop(workers: 2, decodeThreads: 0)
var publishers: [Publisher] = []
var viewers: [Subscriber] = []
for _ in 0..<20 {
    let publisher = try Publisher(options: .init(
        destination: try Publisher.freeLoopbackDestination(),
        video: .init(codec: .h264, width: 320, height: 240, frameRate: 30, bitrate: 300_000, keyframeInterval: 30, threadCount: 1),
        sendsAudio: false, duration: .seconds(4)
    ))
    var options = Subscriber.Options()  // plays until stopped, once its publisher ended (below)
    options.decoding = false  // frames render at their render time as if decoded; decode statistics unknown
    let viewer = try Subscriber(sessionDescription: publisher.sessionDescription, options: options)
    try loop.start(viewer)    // binds its ports, plays on the loop's threads
    publishers.append(publisher)
    viewers.append(viewer)
}
for publisher in publishers { try publisher.start() }
let sent = try publishers.map { try $0.waitUntilEnded().tracks[.video]?.framesSent ?? 0 }
// The last frame renders a playout delay (230 ms) after it arrived: stop half a second later. (A
// duration would count from each viewer's start, and 20 encoders take a while to open.)
try await Task.sleep(for: .milliseconds(500))
for viewer in viewers { viewer.stop() }
let finals = viewers.map { $0.waitUntilEnded() }
loop.shutdown()

let rendered = finals.map { $0.video?.framesRendered ?? 0 }
print("viewers: \(viewers.count) on \(loop.threadCount) threads")
print("every viewer ended: \(finals.allSatisfy { $0.state == .ended })")
// Every frame a publisher sent either rendered, or reached its viewer after its render time and was
// counted late: on an idle 2-core machine that is none; while other work keeps the 20 encoders
// in this process from a CPU, their frames leave late and arrive late (the tester's limit).
let late = finals.map { $0.video?.framesLate ?? 0 }
print("every frame sent is accounted for, rendered or counted late: \(zip(zip(rendered, late), sent).allSatisfy { $0.0 + $0.1 == $1 })")
print("decode statistics known: \(finals.contains { $0.video?.decoded == true })")
