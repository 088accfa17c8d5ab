// The subscriber's whole receive path per packet, as it runs: TrackPipeline.receive (RTCP-mux
// check, SRTP unprotect, RTP parse, one copy into a pooled buffer, jitter-buffer insert) for each
// datagram at its arrival, and TrackPipeline.poll (jitter-buffer release, H.264 depacketize,
// timeline, playout scheduler) whenever the instant the last poll asked for has come — as the
// subscriber's playout thread sleeps until then (about once a frame) — with every rendered frame
// recycled; and, as the most a pipeline is asked, with a poll after every datagram. Against
// Intake's path (unprotect + parse + depacketize, no jitter buffer, no scheduler) and libsrtp2's
// bare srtp_unprotect, measured in the same run on the same kind of stream: 720p30 H.264,
// ≈ 4 Mbit/s in 1,200-byte payloads, AES_CM_128_HMAC_SHA1_80, 230 ms playout delay.
//
// Budget: 0 allocations per packet added to SRTP's own, and at most 1.15× Intake's time. The
// interleaved benchmark's ratio is the one to read on a busy machine; `ReceiveOnce` under
// callgrind counts instructions and cache misses (see Sources/ReceiveOnce).
//
// The WHEP-shaped variant (BundlePaths.swift): the same video plus 20 ms Opus audio on one socket,
// BUNDLE-routed by sdes:mid with abs-capture-time on every packet and DTLS-exported keys, against
// the same media over plain SRTP (a socket and an SDES key per m-line). Budget: ≤ 1.05× per
// packet, 0 allocations per packet added.
//
// Each iteration handles the next 1,000 packets of a stream that goes on (scalingFactor .kilo:
// scaled results are per packet); each receiver persists across iterations, so the numbers are
// steady state. The batch is generated (packetized and protected) before the measurement starts.
import Benchmark
import CIntakeReference
import Foundation
@_spi(Pipeline) import Playout
import PlayoutCore
import PlayoutRTP
@_spi(Pipeline) import ReceivePaths
import StreamFixtures

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .instructions, .mallocCountTotal],
        scalingFactor: .kilo,
        maxDuration: .seconds(3),
        maxIterations: 1_000
    )
    let suite = SRTPCryptoSuite.aesCM128HMACSHA1_80
    let packets = 1_000
    // Warm-up: a few seconds of stream, so pools, rings and queues have reached their size.
    let warmUpBatches = 12

    let reference = Run(stream: ContinuousProtectedStream(suite: suite, batchSize: packets), receiver: UnsafeMutableRawPointer?.none)
    Benchmark("receive, AES_CM_128_HMAC_SHA1_80: libsrtp2 srtp_unprotect (C reference)") { benchmark in
        if reference.receiver == nil {
            reference.receiver = reference.stream.keys.concatenated.withUnsafeBufferPointer { reference_srtp_create(0, $0.baseAddress) }
            precondition(reference.receiver != nil, "libsrtp2 refused the reference session")
        }
        reference.stream.next()
        let stream = reference.stream
        var scratch = [UInt8](repeating: 0, count: StreamShape.stride)
        benchmark.startMeasurement()
        let authenticated = stream.bytes.withUnsafeBufferPointer { bytes in
            stream.lengths.withUnsafeBufferPointer { lengths in
                reference_srtp_unprotect_all(reference.receiver, bytes.baseAddress, StreamShape.stride, lengths.baseAddress, Int32(stream.lengths.count), &scratch)
            }
        }
        benchmark.stopMeasurement()
        precondition(authenticated == stream.lengths.count, "the reference failed to authenticate the stream")
    }

    let intake = Run<IntakePath>(batchSize: packets)
    for _ in 0..<warmUpBatches {
        intake.stream.next()
        intake.feed()
    }
    Benchmark("receive, AES_CM_128_HMAC_SHA1_80: Intake's path (unprotect + parse + depacketize)") { benchmark in
        intake.stream.next()
        benchmark.startMeasurement()
        intake.feed()
        benchmark.stopMeasurement()
        precondition(intake.receiver.depacketizer.statistics.framesDiscarded == 0)
    }

    for pollEveryPacket in [false, true] {
        let label = pollEveryPacket ? "poll after every packet" : "poll when due"
        let pipeline = Run<TrackPipeline>(batchSize: packets)
        for _ in 0..<warmUpBatches {
            pipeline.stream.next()
            pipeline.feed(pollEveryPacket: pollEveryPacket)
        }
        Benchmark("receive, AES_CM_128_HMAC_SHA1_80: TrackPipeline (receive + \(label) + recycle)") { benchmark in
            pipeline.stream.next()
            let before = pipeline.receiver.packetPoolStatistics
            benchmark.startMeasurement()
            pipeline.feed(pollEveryPacket: pollEveryPacket)
            benchmark.stopMeasurement()
            let after = pipeline.receiver.packetPoolStatistics
            precondition(after.buffersCreated == before.buffersCreated, "the packet pool grew in steady state")
            precondition(pipeline.receiver.datagramsIgnored == 0 && pipeline.receiver.depacketizerStatistics.framesDiscarded == 0)
            precondition(pipeline.receiver.statistics.network.packetsLost == 0)
        }
    }

    // Feedback on: every packet also counts for the receiver's reports and NACK decisions, and
    // the feedback is polled every 10 ms of stream time (as the feedback thread does). Budget:
    // still 0 allocations per packet (a report every few seconds allocates its few packets).
    let feedback = Run<TrackPipeline>(batchSize: packets, feedback: true)
    for _ in 0..<warmUpBatches {
        feedback.stream.next()
        feedback.feed(feedbackEvery: .milliseconds(10))
    }
    Benchmark("receive, AES_CM_128_HMAC_SHA1_80: TrackPipeline with feedback (receive + poll when due + feedback every 10 ms + recycle)") { benchmark in
        feedback.stream.next()
        benchmark.startMeasurement()
        feedback.feed(feedbackEvery: .milliseconds(10))
        benchmark.stopMeasurement()
        precondition(feedback.receiver.statistics.network.packetsLost == 0 && feedback.feedbackBytes > 0)
        precondition(feedback.receiver.feedbackStatistics?.nackCount == 0)
    }

    // Both paths on their own streams in each iteration, in alternating order, each timed by this
    // thread's CPU time: the ratio holds when the machine's speed drifts between the benchmarks.
    let pairedIntake = Run<IntakePath>(batchSize: packets)
    let pairedPipeline = Run<TrackPipeline>(batchSize: packets)
    for _ in 0..<warmUpBatches {
        pairedIntake.stream.next()
        pairedIntake.feed()
        pairedPipeline.stream.next()
        pairedPipeline.feed()
    }
    Benchmark(
        "receive, AES_CM_128_HMAC_SHA1_80: TrackPipeline (poll when due) vs Intake's path, interleaved",
        configuration: .init(
            metrics: PairMetric.all, units: Dictionary(uniqueKeysWithValues: PairMetric.all.map { ($0, .count) }),
            scalingFactor: .one, maxDuration: .seconds(6), maxIterations: 300
        )
    ) { benchmark in
        var iteration = 0
        for _ in benchmark.scaledIterations {
            pairedIntake.stream.next()
            pairedPipeline.stream.next()
            var pipelineCost: Int64 = 0
            var intakeCost: Int64 = 0
            for turn in 0..<2 {
                let start = threadCPUNanoseconds()
                if (turn + iteration) % 2 == 0 {
                    pairedPipeline.feed()
                    pipelineCost = threadCPUNanoseconds() - start
                } else {
                    pairedIntake.feed()
                    intakeCost = threadCPUNanoseconds() - start
                }
            }
            iteration += 1
            benchmark.measurement(PairMetric.pipeline, Int(pipelineCost) / packets)
            benchmark.measurement(PairMetric.intake, Int(intakeCost) / packets)
            benchmark.measurement(PairMetric.ratio, Int(pipelineCost * 1_000 / max(1, intakeCost)))
        }
    }

    // WHEP-shaped: the same media as plain SRTP — 720p30 H.264 and 20 ms Opus — on one socket,
    // every packet with `sdes:mid` and `abs-capture-time`, under keys DTLS exported, received as
    // WebRTCConnection.take receives a datagram (RFC 7983 demultiplexer → BundleRouter → the
    // m-line's TrackPipeline, keyed by setKeys); against plain SRTP, the same two m-lines each on
    // its own socket with its a=crypto key and no extensions. Budget: ≤ 1.05× plain SRTP per
    // packet, and 0 allocations per packet added (SRTP's own aside).
    for suite in [SRTPCryptoSuite.aesCM128HMACSHA1_80, .aeadAES128GCM] where suite.isSupported {
        for shape in [BundleShape.plain, .bundle] {
            let run = BundleRun(shape: shape, suite: suite, batchSize: packets)
            for _ in 0..<warmUpBatches {
                run.stream.next()
                run.feed()
            }
            let path = shape == .bundle
                ? "WHEP-shaped (BUNDLE, sdes:mid + abs-capture-time, DTLS keys): demultiplex + BundleRouter + TrackPipeline"
                : "plain SRTP, the same video + audio (a socket and an a=crypto key each): TrackPipeline"
            Benchmark("receive, \(suite): \(path) (poll when due + recycle)") { benchmark in
                run.stream.next()
                let before = run.buffersCreated
                benchmark.startMeasurement()
                run.feed()
                benchmark.stopMeasurement()
                precondition(run.buffersCreated == before, "the packet pools grew in steady state")
                precondition(run.isClean, "a datagram was dropped, ignored or lost")
            }
        }

        // Both on their own streams in each iteration, in alternating order, each timed by this
        // thread's CPU time: the ratio to read on a machine whose speed drifts.
        let plain = BundleRun(shape: .plain, suite: suite, batchSize: packets)
        let bundle = BundleRun(shape: .bundle, suite: suite, batchSize: packets)
        for _ in 0..<warmUpBatches {
            plain.stream.next()
            plain.feed()
            bundle.stream.next()
            bundle.feed()
        }
        Benchmark(
            "receive, \(suite): WHEP-shaped vs plain SRTP, interleaved",
            configuration: .init(
                metrics: BundlePairMetric.all, units: Dictionary(uniqueKeysWithValues: BundlePairMetric.all.map { ($0, .count) }),
                scalingFactor: .one, maxDuration: .seconds(6), maxIterations: 300
            )
        ) { benchmark in
            var iteration = 0
            for _ in benchmark.scaledIterations {
                plain.stream.next()
                bundle.stream.next()
                var plainCost: Int64 = 0
                var bundleCost: Int64 = 0
                for turn in 0..<2 {
                    let start = threadCPUNanoseconds()
                    if (turn + iteration) % 2 == 0 {
                        bundle.feed()
                        bundleCost = threadCPUNanoseconds() - start
                    } else {
                        plain.feed()
                        plainCost = threadCPUNanoseconds() - start
                    }
                }
                iteration += 1
                precondition(plain.isClean && bundle.isClean, "a datagram was dropped, ignored or lost")
                benchmark.measurement(BundlePairMetric.bundle, Int(bundleCost) / packets)
                benchmark.measurement(BundlePairMetric.plain, Int(plainCost) / packets)
                benchmark.measurement(BundlePairMetric.ratio, Int(bundleCost * 1_000 / max(1, plainCost)))
            }
        }
    }
}

enum BundlePairMetric {
    static let bundle = BenchmarkMetric.custom("WHEP-shaped CPU (ns/packet)", useScalingFactor: false)
    static let plain = BenchmarkMetric.custom("plain SRTP CPU (ns/packet)", useScalingFactor: false)
    static let ratio = BenchmarkMetric.custom("WHEP-shaped / plain SRTP CPU (‰)", useScalingFactor: false)
    static let all = [bundle, plain, ratio]
}

enum PairMetric {
    static let pipeline = BenchmarkMetric.custom("TrackPipeline CPU (ns/packet)", useScalingFactor: false)
    static let intake = BenchmarkMetric.custom("Intake's path CPU (ns/packet)", useScalingFactor: false)
    static let ratio = BenchmarkMetric.custom("TrackPipeline / Intake's path CPU (‰)", useScalingFactor: false)
    static let all = [pipeline, intake, ratio]
}

/// This thread's CPU time (user + system), in nanoseconds.
func threadCPUNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}
