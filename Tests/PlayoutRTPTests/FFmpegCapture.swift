import Foundation
import Glibc
import PlayoutCore
import PlayoutRTP
import Testing

/// Runs the real `ffmpeg` as an RTP peer: encodes test media to a file, reads the file's packets
/// back as checksums (`-f framecrc`), and captures what ffmpeg's RTP muxer sends for the same file
/// on a loopback UDP port. Tests use it with `.enabled(if: FFmpeg.isAvailable, …)`.
enum FFmpeg {
    /// Why a run of ffmpeg failed.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The `ffmpeg` executable on PATH, or nil.
    static let executable: URL? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent("ffmpeg")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }()

    static var isAvailable: Bool { executable != nil }

    /// Whether this ffmpeg has the encoder `name` (e.g. `libx265`).
    static func hasEncoder(_ name: String) -> Bool {
        guard isAvailable, let output = try? run(["-hide_banner", "-encoders"]) else { return false }
        return String(decoding: output, as: UTF8.self).split(separator: "\n").contains { line in
            line.split(separator: " ").dropFirst().first == Substring(name)
        }
    }

    /// Runs ffmpeg with `arguments` (after `-hide_banner -loglevel error -nostdin`) to completion
    /// and returns its standard output; throws when it fails or runs over `timeout`.
    @discardableResult
    static func run(_ arguments: [String], timeout: Duration = .seconds(60)) throws -> Data {
        let process = try start(arguments, captureOutput: true)
        let output = process.standardOutputFile
        var data = Data()
        let deadline = ContinuousClock.now + timeout
        while true {
            let chunk = output.availableData
            if chunk.isEmpty { break }
            data.append(chunk)
            if ContinuousClock.now > deadline { break }
        }
        try finish(process, arguments: arguments, deadline: deadline)
        return data
    }

    /// A temporary file path ending in `name`, removed by the caller.
    static func temporaryFile(_ name: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("playout-\(UUID().uuidString)-\(name)")
    }

    /// One packet of a file as `-f framecrc` reports it.
    struct PacketChecksum: Equatable, CustomStringConvertible {
        var size: Int
        var adler32: UInt32

        var description: String { "\(size) bytes, adler32 \(String(adler32, radix: 16))" }
    }

    /// The size and Adler-32 of every packet of stream 0 of `file`, in file order.
    static func packetChecksums(of file: URL, inputOptions: [String] = []) throws -> [PacketChecksum] {
        let output = try run(inputOptions + ["-i", file.path, "-map", "0:0", "-c", "copy", "-f", "framecrc", "-"])
        return String(decoding: output, as: UTF8.self).split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("#") else { return nil }
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard fields.count >= 6, let size = Int(fields[4]), fields[5].hasPrefix("0x"),
                  let checksum = UInt32(fields[5].dropFirst(2), radix: 16) else { return nil }
            return PacketChecksum(size: size, adler32: checksum)
        }
    }

    /// The bytes of every packet of stream 0 of `file`: the file remuxed with `-c copy` into the
    /// raw `format` (e.g. `hevc`), which writes packets as they are, cut at the sizes
    /// `-f framecrc` reports.
    static func packets(of file: URL, rawFormat format: String) throws -> [[UInt8]] {
        let stream = [UInt8](try run(["-i", file.path, "-map", "0:0", "-c", "copy", "-f", format, "-"]))
        var packets: [[UInt8]] = []
        var offset = 0
        for checksum in try packetChecksums(of: file) {
            guard offset + checksum.size <= stream.count else { throw Failure(description: "the raw stream is shorter than its packets") }
            packets.append(Array(stream[offset..<offset + checksum.size]))
            offset += checksum.size
        }
        guard offset == stream.count else { throw Failure(description: "the raw stream is longer than its packets") }
        return packets
    }

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

    static func start(_ arguments: [String], captureOutput: Bool) throws -> Process {
        guard let executable else { throw Failure(description: "ffmpeg is not on PATH") }
        let process = Process()
        process.executableURL = executable
        process.arguments = ["-hide_banner", "-loglevel", "error", "-nostdin"] + arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = captureOutput ? Pipe() : FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    private static func finish(_ process: Process, arguments: [String], deadline: ContinuousClock.Instant) throws {
        while process.isRunning, ContinuousClock.now < deadline {
            usleep(10_000)
        }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
            throw Failure(description: "ffmpeg \(arguments.joined(separator: " ")) timed out")
        }
        guard process.terminationStatus == 0 else {
            throw Failure(description: "ffmpeg \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)")
        }
    }
}

extension Process {
    fileprivate var standardOutputFile: FileHandle {
        (standardOutput as? Pipe)?.fileHandleForReading ?? FileHandle.nullDevice
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

/// Adler-32 (RFC 1950 §8.2) as `ffmpeg -f framecrc` prints it per packet: started from 0
/// (`av_adler32_update(0, …)`), not from RFC 1950's 1.
func adler32(_ bytes: some Sequence<UInt8>) -> UInt32 {
    var a: UInt32 = 0
    var b: UInt32 = 0
    for byte in bytes {
        a = (a + UInt32(byte)) % 65_521
        b = (b + a) % 65_521
    }
    return b << 16 | a
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
