import Foundation
import Glibc
import PlayoutCore
import PlayoutRTP
import PlayoutTesting
import Testing

/// What the RTP tests need of ffmpeg beyond PlayoutTesting's runner: capture its RTP output on a
/// loopback port and depacketize it.
extension FFmpeg {
    /// The RTP packets (RTCP dropped) that `ffmpeg <inputOptions> -i file -c copy -f rtp` sends
    /// to a fresh loopback port, sorted by sequence number. `urlQuery` is appended to the RTP URL
    /// (e.g. `?pkt_size=200` for smaller packets).
    static func captureRTP(
        sending file: URL, inputOptions: [String] = [], outputOptions: [String] = [], urlQuery: String = ""
    ) throws -> [[UInt8]] {
        let socket = try LoopbackReceiver()
        defer { socket.close() }
        let arguments = inputOptions + ["-i", file.path, "-map", "0:0", "-c", "copy"] + outputOptions
            + ["-f", "rtp", "rtp://127.0.0.1:\(socket.port)\(urlQuery)"]
        let process = try start(arguments, captureOutput: false)
        let deadline = ContinuousClock.now + .seconds(60)
        var datagrams: [[UInt8]] = []
        var drained = false
        while !drained, ContinuousClock.now < deadline {
            if let datagram = socket.receive() {
                datagrams.append(datagram)
            } else if !process.isRunning {
                drained = true  // one receive timeout after ffmpeg exited: nothing more in flight
            }
        }
        try finish(process, arguments: arguments, deadline: deadline)
        var unwrapper = SequenceNumberUnwrapper()
        let packets = datagrams.filter { $0.count >= 12 && !(72...76).contains($0[1] & 0x7F) }
        return packets
            .map { (unwrapper.unwrap(SequenceNumber(rawValue: UInt16($0[2]) << 8 | UInt16($0[3]))), $0) }
            .sorted { $0.0 < $1.0 }
            .map(\.1)
    }

    /// Parses `datagrams` and pushes them through `depacketizer`, returning every frame.
    static func depacketize<D: Depacketizer>(_ datagrams: [[UInt8]], with depacketizer: inout D) throws -> [EncodedFrame] {
        var frames: [EncodedFrame] = []
        for (index, datagram) in datagrams.enumerated() {
            try datagram.withUnsafeBytes { buffer in
                let packet = try RTPPacket(parsing: buffer)
                depacketizer.push(packet, arrival: MonotonicInstant(nanoseconds: Int64(index))) { frames.append($0) }
            }
        }
        depacketizer.flush { frames.append($0) }
        return frames
    }

}

/// A UDP socket bound to 127.0.0.1 on an ephemeral port, with a 4 MiB receive buffer and a
/// 200 ms receive timeout so a test can never hang on it.
struct LoopbackReceiver {
    let descriptor: Int32
    let port: UInt16

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { throw FFmpeg.Failure(description: "socket() failed: errno \(errno)") }
        var bufferSize: Int32 = 4 << 20
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &bufferSize, socklen_t(MemoryLayout<Int32>.size))
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVBUFFORCE, &bufferSize, socklen_t(MemoryLayout<Int32>.size))
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(descriptor, socketAddress, length) == 0 && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(descriptor)
            throw FFmpeg.Failure(description: "binding a loopback UDP socket failed: errno \(errno)")
        }
        self.descriptor = descriptor
        port = UInt16(bigEndian: address.sin_port)
    }

    /// The next datagram, or nil after the receive timeout.
    func receive() -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        guard count >= 0 else { return nil }
        return Array(buffer[0..<count])
    }

    func close() {
        Glibc.close(descriptor)
    }
}

extension EncodedFrame {
    /// The frame's size and Adler-32, to compare with ``FFmpeg/packetChecksums(of:inputOptions:)``.
    var checksum: FFmpeg.PacketChecksum {
        FFmpeg.PacketChecksum(size: bytes.count, adler32: adler32(bytes))
    }
}

/// The NAL units of an Annex B byte stream, without start codes or trailing zero bytes: two
/// streams that differ only in start-code lengths (3 or 4 bytes) give the same units.
func nalUnits(_ stream: [UInt8]) -> [[UInt8]] {
    var units: [[UInt8]] = []
    var start: Int?
    var index = 0
    func close(at end: Int) {
        guard let first = start else { return }
        var last = end
        while last > first, stream[last - 1] == 0 { last -= 1 }
        if last > first { units.append(Array(stream[first..<last])) }
    }
    while index + 2 < stream.count {
        if stream[index] == 0, stream[index + 1] == 0, stream[index + 2] == 1 {
            close(at: index)
            index += 3
            start = index
        } else {
            index += 1
        }
    }
    close(at: stream.count)
    return units
}
