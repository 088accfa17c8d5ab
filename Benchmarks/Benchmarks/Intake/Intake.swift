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

/// A protected 720p30 H.264 stream: `count` SRTP packets laid out at `stride` bytes.
struct ProtectedStream {
    static let stride = 1_500 + SRTPSession.maximumTrailerLength
    var bytes: [UInt8]
    var lengths: [Int32]
    var count: Int { lengths.count }
    let keys: SRTPKeyingMaterial

    /// About 4 Mbit/s: a 90 kB key frame every 60 frames, 14 kB otherwise (≈ 13 packets a frame).
    init(suite: SRTPCryptoSuite, packets: Int) {
        keys = SRTPKeyingMaterial.random(for: suite)
        let outbound = try! SRTPSession(keyingMaterial: keys, direction: .outbound)
        var packetizer = H264Packetizer(maxPayloadSize: 1_200)
        var header = RTPPacketBuilder(payloadType: 96, ssrc: 0x5EED)
        var generator = SystemRandomNumberGenerator()
        bytes = [UInt8](repeating: 0, count: packets * Self.stride)
        lengths = []
        var frameIndex = 0
        while lengths.count < packets {
            let isKey = frameIndex % 60 == 0
            let size = isKey ? 90_000 : 14_000
            let nal: [UInt8] = [0, 0, 0, 1, isKey ? 0x65 : 0x41] + (0..<size).map { _ in UInt8.random(in: 1...255, using: &generator) }
            header.timestamp = RTPTimestamp(rawValue: UInt32(frameIndex * 3_000))
            nal.withUnsafeBytes { frame in
                packetizer.packetize(frame) { payload, isLast in
                    guard lengths.count < packets else { return }
                    header.marker = isLast
                    let index = lengths.count
                    bytes.withUnsafeMutableBytes { all in
                        let slot = UnsafeMutableRawBufferPointer(rebasing: all[index * Self.stride..<(index + 1) * Self.stride])
                        let length = try! header.write(payload: payload, into: slot)
                        let protected = try! outbound.protectRTP(slot, length: length)
                        lengths.append(Int32(protected))
                    }
                    header.sequenceNumber = header.sequenceNumber.advanced(by: 1)
                }
            }
            frameIndex += 1
        }
    }
}

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

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .instructions, .mallocCountTotal],
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 2_000
    )
    intakeBenchmarks(suite: .aesCM128HMACSHA1_80, label: "AES_CM_128_HMAC_SHA1_80")
    intakeBenchmarks(suite: .aeadAES128GCM, label: "AEAD_AES_128_GCM")

    // Batched UDP receive on loopback: 1,000 queued datagrams drained per iteration.
    for timestamps in [false, true] {
        let label = timestamps ? "with kernel timestamps" : "without timestamps"
        Benchmark("UDP receive, \(label): C recvmmsg loop (reference)") { benchmark in
            let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            defer { close(descriptor) }
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
            fill(port: UInt16(bigEndian: bound.sin_port), count: 1_000)
            benchmark.startMeasurement()
            let received = reference_recvmmsg_loop(descriptor, 1_000, timestamps ? 1 : 0)
            benchmark.stopMeasurement()
            precondition(received == 1_000, "the reference lost datagrams")
        }
        Benchmark("UDP receive, \(label): UDPReceiver") { benchmark in
            let receiver = try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: 0), configuration: .init(kernelTimestamps: timestamps))
            var received = 0
            fill(port: receiver.localAddress.port, count: 1_000)
            benchmark.startMeasurement()
            while received < 1_000 {
                let got = try receiver.receive(timeout: .seconds(1)) { blackHole($0.bytes.count) }
                if got == 0 { break }
                received += got
            }
            benchmark.stopMeasurement()
            precondition(received == 1_000, "UDPReceiver lost datagrams")
        }
    }
}
