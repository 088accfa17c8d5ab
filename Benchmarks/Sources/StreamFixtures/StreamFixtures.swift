// The 720p30 H.264 streams the Intake and Receive benchmarks feed: frames of plausible sizes (a
// 90 kB key frame every 60 frames, 14 kB otherwise: ≈ 4 Mbit/s, ≈ 13 packets a frame), packetized
// by the real H.264 packetizer into 1,200-byte payloads and protected by a real SRTP session.
import PlayoutCore
import PlayoutRTP
import PlayoutTesting

/// The stream's frame sizes and layout.
public enum StreamShape {
    /// One packet slot: an MTU-sized packet plus the largest SRTP trailer.
    public static let stride = 1_500 + SRTPSession.maximumTrailerLength
    public static let keyframeInterval = 60
    public static let keyframeSize = 90_000
    public static let deltaFrameSize = 14_000
    public static let maxPayloadSize = 1_200
    public static let clockRate: Int32 = 90_000
    public static let frameInterval = Duration.nanoseconds(1_000_000_000 / 30)

    /// One H.264 access unit of the stream's size: a start code, an IDR or non-IDR slice header
    /// byte, then random bytes (never zero, so no start code appears inside).
    public static func frame(isKey: Bool, using generator: inout some RandomNumberGenerator) -> [UInt8] {
        let size = isKey ? keyframeSize : deltaFrameSize
        return [0, 0, 0, 1, isKey ? 0x65 : 0x41] + (0..<size).map { _ in UInt8.random(in: 1...255, using: &generator) }
    }
}

/// A fixed batch of `count` protected packets laid out at ``StreamShape/stride`` bytes (the start
/// of a stream), for benchmarks that start a fresh receive session each iteration.
public struct ProtectedStream {
    public static let stride = StreamShape.stride
    public var bytes: [UInt8]
    public var lengths: [Int32]
    public var count: Int { lengths.count }
    public let keys: SRTPKeyingMaterial

    public init(suite: SRTPCryptoSuite, packets: Int) {
        var source = ContinuousProtectedStream(suite: suite, batchSize: packets)
        source.next()
        keys = source.keys
        bytes = source.bytes
        lengths = source.lengths
    }
}

/// A protected stream that goes on: each ``next()`` lays out the next `batchSize` packets (sequence
/// numbers, timestamps and SRTP indices continue), each with its arrival instant (its frame's send
/// time plus 10 ms), so a receiver that persists across benchmark iterations stays in steady
/// state. Generating a batch allocates; call it outside the measured part.
public struct ContinuousProtectedStream {
    public let keys: SRTPKeyingMaterial
    public let batchSize: Int
    /// The current batch: packet `i` at `i * stride`, `lengths[i]` bytes, arriving at `arrivals[i]`.
    public private(set) var bytes: [UInt8]
    public private(set) var lengths: [Int32] = []
    public private(set) var arrivals: [MonotonicInstant] = []
    /// Frames begun so far.
    public private(set) var frames = 0

    private let outbound: SRTPSession
    private var packetizer = H264Packetizer(maxPayloadSize: StreamShape.maxPayloadSize)
    private var header = RTPPacketBuilder(payloadType: 96, ssrc: 0x5EED)
    private let keyframe: [UInt8]
    private let deltaFrame: [UInt8]
    /// Packets of the current frame not yet handed out, with their arrival.
    private var pending: [([UInt8], MonotonicInstant)] = []
    private var pendingIndex = 0

    public init(suite: SRTPCryptoSuite, batchSize: Int, keys: SRTPKeyingMaterial? = nil) {
        self.keys = keys ?? SRTPKeyingMaterial.random(for: suite)
        self.batchSize = batchSize
        outbound = try! SRTPSession(keyingMaterial: self.keys, direction: .outbound)
        var generator = SeededRandomNumberGenerator(seed: 0x5EED)  // fast, seeded (the system's asks the kernel each call)
        keyframe = StreamShape.frame(isKey: true, using: &generator)
        deltaFrame = StreamShape.frame(isKey: false, using: &generator)
        bytes = [UInt8](repeating: 0, count: batchSize * StreamShape.stride)
        lengths.reserveCapacity(batchSize)
        arrivals.reserveCapacity(batchSize)
    }

    /// Lays out the next `batchSize` packets.
    public mutating func next() {
        lengths.removeAll(keepingCapacity: true)
        arrivals.removeAll(keepingCapacity: true)
        while lengths.count < batchSize {
            if pendingIndex == pending.count { packetizeNextFrame() }
            let (packet, arrival) = pending[pendingIndex]
            pendingIndex += 1
            let index = lengths.count
            bytes.withUnsafeMutableBytes { all in
                all.baseAddress!.advanced(by: index * StreamShape.stride).copyMemory(from: packet, byteCount: packet.count)
            }
            lengths.append(Int32(packet.count))
            arrivals.append(arrival)
        }
    }

    private mutating func packetizeNextFrame() {
        pending.removeAll(keepingCapacity: true)
        pendingIndex = 0
        let isKey = frames % StreamShape.keyframeInterval == 0
        header.timestamp = RTPTimestamp(rawValue: UInt32(truncatingIfNeeded: frames * 3_000))
        let arrival = MonotonicInstant(nanoseconds: 1_010_000_000 + Int64(frames) * StreamShape.frameInterval.nanoseconds)
        var slot = [UInt8](repeating: 0, count: StreamShape.stride)
        var header = self.header
        let outbound = self.outbound
        var packets: [([UInt8], MonotonicInstant)] = []
        (isKey ? keyframe : deltaFrame).withUnsafeBytes { frame in
            packetizer.packetize(frame) { payload, isLast in
                header.marker = isLast
                slot.withUnsafeMutableBytes { buffer in
                    let length = try! header.write(payload: payload, into: buffer)
                    let protected = try! outbound.protectRTP(buffer, length: length)
                    packets.append((Array(buffer[0..<protected]), arrival))
                }
                header.sequenceNumber = header.sequenceNumber.advanced(by: 1)
            }
        }
        self.header = header
        pending = packets
        frames += 1
    }
}
