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
        let receiver = try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
        let arguments = inputOptions + ["-i", file.path, "-map", "0:0", "-c", "copy"] + outputOptions
            + ["-f", "rtp", "rtp://127.0.0.1:\(receiver.localAddress.port)\(urlQuery)"]
        let process = try start(arguments, captureOutput: false)
        let deadline = ContinuousClock.now + .seconds(60)
        let datagrams = try collect(from: [receiver], while: process)[0]
        try finish(process, arguments: arguments, deadline: deadline)
        var unwrapper = SequenceNumberUnwrapper()
        let packets = datagrams.filter { $0.count >= 12 && !(72...76).contains($0[1] & 0x7F) }
        return packets
            .map { (unwrapper.unwrap(SequenceNumber(rawValue: UInt16($0[2]) << 8 | UInt16($0[3]))), $0) }
            .sorted { $0.0 < $1.0 }
            .map(\.1)
    }

    /// Receives with Playout's own UDP receivers until `process` exits and the sockets stay quiet
    /// for two 100 ms timeouts, or `limit` passes; returns each receiver's datagrams in arrival
    /// order.
    static func collect(from receivers: [UDPReceiver], while process: Process, limit: Duration = .seconds(60)) throws -> [[[UInt8]]] {
        var datagrams = Array(repeating: [[UInt8]](), count: receivers.count)
        let deadline = ContinuousClock.now + limit
        var quiet = 0
        while ContinuousClock.now < deadline {
            var got = 0
            for (index, receiver) in receivers.enumerated() {
                got += try receiver.receive(timeout: .milliseconds(100)) { datagrams[index].append(Array($0.bytes)) }
            }
            if got == 0, !process.isRunning {
                quiet += 1
                if quiet >= 2 { break }
            }
        }
        return datagrams
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
