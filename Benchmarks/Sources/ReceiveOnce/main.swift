// Runs one receive path over a stream, for callgrind (instructions do not drift with the machine's
// load), or under `perf stat`: `ReceiveOnce pipeline|intake|generate BATCHES [DELAY_MS [every-packet]]`. Warms up for 12 batches of 1,000 packets, then
// feeds BATCHES more; compare the inclusive cost of the two `feed()` functions, e.g.
//   valgrind --tool=callgrind --callgrind-out-file=pipeline.out .build/release/ReceiveOnce pipeline 5
//   callgrind_annotate --inclusive=yes pipeline.out | grep feed
// `ReceiveOnce bundle|bundle-plain BATCHES [gcm]` runs the WHEP-shaped path (demultiplex, BUNDLE
// router, two pipelines) or plain SRTP on the same video + audio (BundlePaths.swift), with
// AES_CM_128_HMAC_SHA1_80 or, with `gcm`, AEAD_AES_128_GCM.
@_spi(Pipeline) import Playout
import PlayoutRTP
@_spi(Pipeline) import ReceivePaths
import StreamFixtures

let arguments = CommandLine.arguments
let path = arguments.count > 1 ? arguments[1] : "pipeline"
let batches = arguments.count > 2 ? Int(arguments[2]) ?? 5 : 5
/// The pipeline's playout delay in milliseconds (default 230): with 0, frames render as they complete.
let delay = Duration.milliseconds(arguments.count > 3 ? Int64(arguments[3]) ?? 230 : 230)
/// `every-packet`: a poll after every datagram instead of when the pipeline asked.
let pollEveryPacket = arguments.count > 4 && arguments[4] == "every-packet"
let warmUp = 12

switch path {
case "generate":  // the stream alone: what the other two spend besides receiving
    var stream = ContinuousProtectedStream(suite: .aesCM128HMACSHA1_80, batchSize: 1_000)
    for _ in 0..<warmUp + batches { stream.next() }
    print("generate: \(stream.frames) frames")
case "bundle", "bundle-plain":
    let suite: SRTPCryptoSuite = arguments.count > 3 && arguments[3] == "gcm" ? .aeadAES128GCM : .aesCM128HMACSHA1_80
    let run = BundleRun(shape: path == "bundle" ? .bundle : .plain, suite: suite, batchSize: 1_000)
    for _ in 0..<warmUp {
        run.stream.next()
        run.feed()
    }
    for _ in 0..<batches {
        run.stream.next()
        measuredFeed(run)
    }
    precondition(run.isClean, "a datagram was dropped, ignored or lost")
    print("\(path) (\(suite)): \(run.frames[0]) video and \(run.frames[1]) audio frames, \(run.buffersCreated) packet buffers")
case "intake":
    let run = Run<IntakePath>(batchSize: 1_000)
    for _ in 0..<warmUp {
        run.stream.next()
        run.feed()
    }
    for _ in 0..<batches {
        run.stream.next()
        measuredFeed(run)
    }
    print("intake: \(run.frames) frames")
default:
    let run = Run<TrackPipeline>(batchSize: 1_000, delay: delay)
    for _ in 0..<warmUp {
        run.stream.next()
        run.feed(pollEveryPacket: pollEveryPacket)
    }
    for _ in 0..<batches {
        run.stream.next()
        measuredFeed(run)
    }
    print("pipeline: \(run.frames) frames, pool \(run.receiver.packetPoolStatistics)")
}

/// The measured batches, in functions of their own so callgrind separates them from the warm-up.
@inline(never) func measuredFeed(_ run: Run<IntakePath>) { run.feed() }
@inline(never) func measuredFeed(_ run: Run<TrackPipeline>) { run.feed(pollEveryPacket: pollEveryPacket) }
@inline(never) func measuredFeed(_ run: BundleRun) { run.feed() }
