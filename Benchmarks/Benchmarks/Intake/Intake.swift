// The receive path per packet: SRTP unprotect + RTP parse + H.264 depacketize for a 720p stream of
// 1,200-byte payloads, against the bare libsrtp2 srtp_unprotect on the same packets (plain C, same
// run); and batched UDP receive against a plain C recvmmsg loop on loopback.
// Each benchmark handles 1,000 packets per iteration (scalingFactor .kilo): scaled results are
// per packet.
import Benchmark
import CIntakeReference
import Foundation
import PlayoutCore
import PlayoutRTP
import StreamFixtures

func intakeBenchmarks(suite: SRTPCryptoSuite, label: String) {
    let stream = ProtectedStream(suite: suite, packets: 1_000)
    Benchmark("unprotect, \(label): libsrtp2 srtp_unprotect (C reference)") { benchmark in
        let session = stream.keys.concatenated.withUnsafeBufferPointer { reference_srtp_create(suite == .aesCM128HMACSHA1_80 ? 0 : 1, $0.baseAddress) }
        precondition(session != nil, "libsrtp2 refused the reference session")
        defer { reference_srtp_free(session) }
        var scratch = [UInt8](repeating: 0, count: ProtectedStream.stride)
        benchmark.startMeasurement()
        let authenticated = stream.bytes.withUnsafeBufferPointer { packets in
            stream.lengths.withUnsafeBufferPointer { lengths in
                reference_srtp_unprotect_all(session, packets.baseAddress, ProtectedStream.stride, lengths.baseAddress, Int32(stream.count), &scratch)
            }
        }
        benchmark.stopMeasurement()
        precondition(authenticated == stream.count, "the reference failed to authenticate the stream")
    }
    Benchmark("unprotect + parse + depacketize, \(label): Playout") { benchmark in
        let session = try SRTPSession(keyingMaterial: stream.keys, direction: .inbound)
        var depacketizer = H264Depacketizer(track: 1)
        var scratch = [UInt8](repeating: 0, count: ProtectedStream.stride)
        var frames = 0
        var finished: [UInt8]?
        benchmark.startMeasurement()
        try stream.bytes.withUnsafeBytes { packets in
            try scratch.withUnsafeMutableBytes { buffer in
                for index in 0..<stream.count {
                    let length = Int(stream.lengths[index])
                    buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: packets[index * ProtectedStream.stride..<index * ProtectedStream.stride + length]))
                    let plain = try session.unprotectRTP(buffer, length: length)
                    let packet = try RTPPacket(parsing: UnsafeRawBufferPointer(rebasing: buffer[0..<plain]))
                    depacketizer.push(packet, arrival: .zero) { frame in
                        frames += 1
                        finished = frame.bytes
                    }
                    if let bytes = finished.take() { depacketizer.recycle(bytes) }
                }
            }
        }
        benchmark.stopMeasurement()
        precondition(frames > 0 && depacketizer.statistics.framesDiscarded == 0)
    }
}

/// Queues `count` 1,200-byte datagrams for `port` on loopback (the receive buffer holds them all),
/// so the measured part is the receiver draining its socket.
func fill(port: UInt16, count: Int) {
    let sender = try! UDPSender(to: SocketAddress(host: "127.0.0.1", port: port))
    let slot = 1_200
    let batch = [UInt8](repeating: 0x80, count: slot * 64)
    var sent = 0
    batch.withUnsafeBytes { buffer in
        while sent < count {
            sent += (try? sender.send(batch: buffer, slotSize: slot, lengths: Array(repeating: slot, count: min(64, count - sent)))) ?? 0
        }
    }
}

/// A loopback socket for the C reference loop: 8 MiB receive buffer, 1 s receive timeout.
func referenceSocket(timestamps: Bool) -> (descriptor: Int32, port: UInt16) {
    let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var size: Int32 = 8 << 20
    setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, 4)
    var timeout = timeval(tv_sec: 1, tv_usec: 0)
    setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    var bound = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) } }
    var on: Int32 = 1  // before the datagrams arrive, as UDPReceiver does
    if timestamps { setsockopt(descriptor, SOL_SOCKET, SO_TIMESTAMPNS, &on, 4) }
    return (descriptor, UInt16(bigEndian: bound.sin_port))
}

/// Drains `count` queued datagrams from `receiver`; returns how many it got.
func drain(_ receiver: UDPReceiver, count: Int) throws -> Int {
    var received = 0
    while received < count {
        let got = try receiver.receive(timeout: .seconds(1)) { blackHole($0.bytes.count) }
        if got == 0 { break }
        received += got
    }
    return received
}

/// This thread's CPU time (user + system), in nanoseconds: what draining a socket costs, whatever
/// else the machine runs meanwhile.
func threadCPUNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}

enum UDPMetric {
    static let receiverCPU = BenchmarkMetric.custom("UDPReceiver CPU (ns/datagram)", useScalingFactor: false)
    static let referenceCPU = BenchmarkMetric.custom("C loop CPU (ns/datagram)", useScalingFactor: false)
    static let throughput = BenchmarkMetric.custom("UDPReceiver / C loop datagrams per CPU second (‰)", useScalingFactor: false)
    static let all = [receiverCPU, referenceCPU, throughput]
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .instructions, .mallocCountTotal],
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 2_000
    )
    intakeBenchmarks(suite: .aesCM128HMACSHA1_80, label: "AES_CM_128_HMAC_SHA1_80")
    intakeBenchmarks(suite: .aeadAES128GCM, label: "AEAD_AES_128_GCM")

    // Batched UDP receive on loopback: 1,000 queued datagrams drained per iteration. Sockets and
    // receivers persist across iterations, as in a subscriber (the C loop's buffers are static).
    for timestamps in [false, true] {
        let label = timestamps ? "with kernel timestamps" : "without timestamps"
        let reference = referenceSocket(timestamps: timestamps)
        Benchmark("UDP receive, \(label): C recvmmsg loop (reference)") { benchmark in
            fill(port: reference.port, count: 1_000)
            benchmark.startMeasurement()
            let received = reference_recvmmsg_loop(reference.descriptor, 1_000, timestamps ? 1 : 0)
            benchmark.stopMeasurement()
            precondition(received == 1_000, "the reference lost datagrams")
        }
        let receiver = try! UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: 0), configuration: .init(kernelTimestamps: timestamps))
        Benchmark("UDP receive, \(label): UDPReceiver") { benchmark in
            fill(port: receiver.localAddress.port, count: 1_000)
            benchmark.startMeasurement()
            let received = try drain(receiver, count: 1_000)
            benchmark.stopMeasurement()
            precondition(received == 1_000, "UDPReceiver lost datagrams")
        }
        // Both drained in each iteration, in alternating order, each timed by this thread's CPU
        // time: the ratio holds when the machine's speed drifts between the two benchmarks above.
        Benchmark(
            "UDP receive, \(label): UDPReceiver vs C loop, interleaved",
            configuration: .init(
                metrics: UDPMetric.all, units: Dictionary(uniqueKeysWithValues: UDPMetric.all.map { ($0, .count) }),
                scalingFactor: .one, maxDuration: .seconds(4), maxIterations: 400
            )
        ) { benchmark in
            var iteration = 0
            for _ in benchmark.scaledIterations {
                fill(port: reference.port, count: 1_000)
                fill(port: receiver.localAddress.port, count: 1_000)
                var ours: Int64 = 0
                var theirs: Int64 = 0
                for turn in 0..<2 {
                    let start = threadCPUNanoseconds()
                    if (turn + iteration) % 2 == 0 {
                        let received = try drain(receiver, count: 1_000)
                        ours = threadCPUNanoseconds() - start
                        precondition(received == 1_000, "UDPReceiver lost datagrams")
                    } else {
                        let received = reference_recvmmsg_loop(reference.descriptor, 1_000, timestamps ? 1 : 0)
                        theirs = threadCPUNanoseconds() - start
                        precondition(received == 1_000, "the reference lost datagrams")
                    }
                }
                iteration += 1
                benchmark.measurement(UDPMetric.receiverCPU, Int(ours / 1_000))
                benchmark.measurement(UDPMetric.referenceCPU, Int(theirs / 1_000))
                benchmark.measurement(UDPMetric.throughput, Int(theirs * 1_000 / max(1, ours)))
            }
        }
    }
}
