// JitterBuffer insert + poll per packet for a 720p30 stream (13 packets a frame, 390 packets/s,
// 1 % of packets reordered by 1–5 positions), with one packet lost every 1 s or 10 s of packets and
// maximumReorderDelay as long, so the buffer always holds up to 1 s or 10 s of packets behind a
// gap. Against a naive reference measured in the same run: a `[Packet]` kept sorted by extended
// sequence number (binary-search insertion), released from the front.
// Each benchmark handles 1,000 arrivals per iteration (scalingFactor .kilo): scaled results are
// per packet. The stream goes on across iterations (the buffers are warmed up first), so the
// numbers are steady state: JitterBuffer's budget is 0 allocations per packet.
import Benchmark
import PlayoutCore
import PlayoutJitter
import PlayoutTesting

/// The synthetic stream: packet `g` (global index) has sequence number `g mod 2^16`, frame `g / 13`,
/// arrives in the order of a fixed 2^16-long permutation, and is lost when `g % lossPeriod` is
/// half the period.
struct Stream {
    static let packetsPerFrame = 13
    static let packetsPerSecond = 30 * packetsPerFrame
    static let interval = Duration.nanoseconds(1_000_000_000 / Int64(packetsPerSecond))
    static let cycle = 1 << 16

    /// Arrival position within a cycle → packet offset within the cycle.
    let order: [Int32]
    let lossPeriod: Int

    init(holding seconds: Int) {
        lossPeriod = seconds * Self.packetsPerSecond
        var random = SeededRandomNumberGenerator(seed: 0x5EED)
        var order = (0..<Int32(Self.cycle)).map { $0 }
        var index = 0
        while index < Self.cycle - 6 {
            if random.next() % 100 == 0 {
                // Delay this packet by 1–5 positions.
                let by = Int(random.next() % 5) + 1
                let packet = order.remove(at: index)
                order.insert(packet, at: index + by)
                index += by + 1
            } else {
                index += 1
            }
        }
        self.order = order
    }

    /// What arrives at `position` (nil when that packet is lost).
    @inline(__always)
    func packet(at position: Int) -> (sequenceNumber: SequenceNumber, timestamp: RTPTimestamp, isFrameEnd: Bool, index: Int)? {
        let global = (position / Self.cycle) * Self.cycle + Int(order[position % Self.cycle])
        if global % lossPeriod == lossPeriod / 2 { return nil }
        return (
            SequenceNumber(rawValue: UInt16(truncatingIfNeeded: global)),
            RTPTimestamp(rawValue: UInt32(truncatingIfNeeded: global / Self.packetsPerFrame * 3_000)),
            global % Self.packetsPerFrame == Self.packetsPerFrame - 1, global
        )
    }

    func arrival(at position: Int) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: 1_000_000_000 + Int64(position) * Self.interval.nanoseconds)
    }
}

/// The naive reference: packets kept sorted by extended sequence number in one array, inserted by
/// binary search, released from the front with `removeFirst()`; same rules (release in order, give
/// up on a gap when the packet after it has waited `delay`).
struct SortedArrayJitterBuffer {
    struct Packet {
        var sequenceNumber: Int64
        var timestamp: Int64
        var isFrameEnd: Bool
        var payload: Int
        var arrival: MonotonicInstant
    }

    enum PollResult {
        case packet(Packet)
        case lost(ClosedRange<Int64>)
        case wait(MonotonicInstant)
        case empty
    }

    var packets: [Packet] = []
    var sequenceUnwrapper = SequenceNumberUnwrapper()
    var timestampUnwrapper = RTPTimestampUnwrapper()
    var head: Int64?
    let delay: Duration

    init(delay: Duration) {
        self.delay = delay
        packets.reserveCapacity(1 << 16)
    }

    mutating func insert(sequenceNumber: SequenceNumber, timestamp: RTPTimestamp, isFrameEnd: Bool, payload: Int, now: MonotonicInstant) {
        let sequence = sequenceUnwrapper.unwrap(sequenceNumber)
        let timestamp = timestampUnwrapper.unwrap(timestamp)
        if head == nil { head = sequence }
        guard let head, sequence >= head else { return }  // late
        var low = 0
        var high = packets.count
        while low < high {
            let middle = (low + high) / 2
            if packets[middle].sequenceNumber < sequence { low = middle + 1 } else { high = middle }
        }
        if low < packets.count && packets[low].sequenceNumber == sequence { return }  // duplicate
        packets.insert(Packet(sequenceNumber: sequence, timestamp: timestamp, isFrameEnd: isFrameEnd, payload: payload, arrival: now), at: low)
    }

    mutating func poll(now: MonotonicInstant) -> PollResult {
        guard let first = packets.first, let head else { return .empty }
        if first.sequenceNumber == head {
            self.head = head + 1
            return .packet(packets.removeFirst())
        }
        let deadline = first.arrival.advanced(by: delay)
        guard now >= deadline else { return .wait(deadline) }
        self.head = first.sequenceNumber
        return .lost(head...(first.sequenceNumber - 1))
    }
}

/// A stream and a buffer that go on from one benchmark iteration to the next.
final class Run<Buffer>: @unchecked Sendable {
    let stream: Stream
    var buffer: Buffer
    var position = 0

    init(stream: Stream, buffer: Buffer) {
        self.stream = stream
        self.buffer = buffer
    }
}

extension Run<JitterBuffer<Int>> {
    func feed(_ count: Int) {
        for _ in 0..<count {
            let now = stream.arrival(at: position)
            if let packet = stream.packet(at: position) {
                _ = buffer.insert(
                    sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp, ssrc: 0x5EED, isFrameEnd: packet.isFrameEnd,
                    byteCount: 1_200, payload: packet.index, now: now
                )
            }
            polling: while true {
                switch buffer.poll(now: now) {
                case .packet(let packet): blackHole(packet.payload)
                case .lost(let range): blackHole(range)
                case .restart: break
                case .wait, .empty: break polling
                }
            }
            position += 1
        }
    }
}

extension Run<SortedArrayJitterBuffer> {
    func feed(_ count: Int) {
        for _ in 0..<count {
            let now = stream.arrival(at: position)
            if let packet = stream.packet(at: position) {
                buffer.insert(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp, isFrameEnd: packet.isFrameEnd, payload: packet.index, now: now)
            }
            polling: while true {
                switch buffer.poll(now: now) {
                case .packet(let packet): blackHole(packet.payload)
                case .lost(let range): blackHole(range)
                case .wait, .empty: break polling
                }
            }
            position += 1
        }
    }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .instructions, .mallocCountTotal],
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 5_000
    )
    for seconds in [1, 10] {
        let stream = Stream(holding: seconds)
        let delay = Duration.seconds(seconds)
        let warmUp = 3 * seconds * Stream.packetsPerSecond
        let ours = Run(stream: stream, buffer: JitterBuffer<Int>(configuration: .init(maximumReorderDelay: delay)))
        ours.feed(warmUp)
        let reference = Run(stream: stream, buffer: SortedArrayJitterBuffer(delay: delay))
        reference.feed(warmUp)

        Benchmark("insert + poll, 720p30 holding \(seconds) s: sorted array (reference)") { benchmark in
            for _ in benchmark.scaledIterations {
                reference.feed(1)
            }
        }
        Benchmark("insert + poll, 720p30 holding \(seconds) s: JitterBuffer") { benchmark in
            for _ in benchmark.scaledIterations {
                ours.feed(1)
            }
            precondition(ours.buffer.statistics.packetsDropped == 0 && ours.buffer.statistics.restarts == 0)
        }
    }
}
