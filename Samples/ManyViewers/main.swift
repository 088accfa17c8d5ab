// Many viewers in one process: 20 subscribers, each to its own built-in publisher on loopback, all
// on one SubscriptionEventLoop — a fixed set of threads (one worker per core and one for the
// observers) however many subscribers it drives. Without decoding, every timing statistic stays
// exact and a viewer costs a fraction of a percent of a core — public API only.
import Playout
import PlayoutSender

LoggingSetup.bootstrap()  // console at PLAYOUT_LOG_LEVEL (default warning), once per process

let loop = try SubscriptionEventLoop(workers: 2)
var publishers: [Publisher] = []
var viewers: [Subscriber] = []
for _ in 0..<20 {
    let publisher = try Publisher(options: .init(
        destination: try Publisher.freeLoopbackDestination(),
        video: .init(codec: .h264, width: 320, height: 240, frameRate: 30, bitrate: 300_000, keyframeInterval: 30, threadCount: 1),
        sendsAudio: false, duration: .seconds(4)
    ))
    var options = Subscriber.Options(duration: .seconds(5))
    options.decoding = false  // frames render at their render time as if decoded; decode statistics stay 0
    let viewer = try Subscriber(sessionDescription: publisher.sessionDescription, options: options)
    try loop.start(viewer)    // binds its ports, plays on the loop's threads
    publishers.append(publisher)
    viewers.append(viewer)
}
for publisher in publishers { try publisher.start() }
let sent = try publishers.map { try $0.waitUntilEnded().tracks[.video]?.framesSent ?? 0 }
let finals = viewers.map { $0.waitUntilEnded() }
loop.shutdown()

let rendered = finals.map { $0.video?.framesRendered ?? 0 }
print("viewers: \(viewers.count) on \(loop.threadCount) threads")
print("every viewer ended: \(finals.allSatisfy { $0.state == .ended })")
print("every viewer rendered at least 95 % of the frames sent to it: \(zip(rendered, sent).allSatisfy { Double($0) >= 0.95 * Double($1) })")
print("frames decoded: \(finals.map { $0.video?.framesDecoded ?? 0 }.reduce(0, +))")
