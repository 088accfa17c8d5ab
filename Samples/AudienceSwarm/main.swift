// An audience in one process: 24 real viewers — each its own WHEP session, jitter buffer,
// playout clock and QoS — of the built-in publisher on loopback, joining at 16 a second, on one
// fixed pool of threads; every second an aggregate across viewers (percentiles), and SLOs
// checked at the end — public API only.
import Playout
import PlayoutSender
import PlayoutSwarm

LoggingSetup.bootstrap()  // console at PLAYOUT_LOG_LEVEL (default warning), once per process

let publisher = try Publisher(options: .init(
    destination: try Publisher.freeLoopbackDestination(),
    video: .init(codec: .h264, width: 320, height: 240, frameRate: 30, bitrate: 300_000, keyframeInterval: 30, threadCount: 1),
    sendsAudio: false, duration: .seconds(6),
    whep: WHEPEndpoint.Configuration(listen: try SocketAddress(host: "127.0.0.1", port: 0))
))
try publisher.start()

var configuration = Swarm.Configuration(viewers: 24, source: .url(publisher.whepEndpoint!.url))
configuration.ramp = 16                     // viewers joining per second
configuration.decode = .none                // every timing statistic exact, decode statistics unknown
configuration.duration = .seconds(4)
let swarm = try Swarm(configuration: configuration)
var seen = 0
let result = swarm.run { sample in seen = max(seen, sample.connected) }
publisher.stop()

let final = result.final!
let objectives = try SwarmObjective.parseList("startupTime.p95<2s,failed<1")
print("viewers: \(final.viewers), sessions: \(result.outcomes.count), failed: \(final.failed)")
print("all connected at once: \(seen == 24)")
print("threads: a worker per core, one for the observers, \(Swarm.connectThreads) opening viewers — however many viewers: \(swarm.threadCount == SubscriptionEventLoop.defaultWorkerCount + 1 + Swarm.connectThreads)")
print("every viewer rendered a first frame: \(final["startupTime"]?.count == 24)")
print("frames decoded known: \(final["framesDecoded"] != nil)")
print("SLOs held: \(objectives.map { $0.verdict(final).held })")
let served = try publisher.waitUntilEnded().whep
// A session ends by its DELETE, or by DTLS close_notify just before the DELETE arrives.
let endedByViewers: Int = (served?.sessionsEnded[.deleted] ?? 0) + (served?.sessionsEnded[.closed] ?? 0)
print("the publisher served 24 sessions, each ended by its viewer: \(served?.sessionsOpened == 24 && endedByViewers == 24)")
