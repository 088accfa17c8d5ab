import PlayoutCore
import PlayoutJitter
import PlayoutTesting

typealias Buffer = JitterBuffer<Int>

/// `milliseconds` after the origin.
func ms(_ milliseconds: Double) -> MonotonicInstant {
    MonotonicInstant(nanoseconds: Int64((milliseconds * 1_000_000).rounded()))
}

/// What a consumer saw from a run of polls.
struct Drained {
    var packets: [Buffer.Packet] = []
    var lost: [ClosedRange<Int64>] = []
    var restarts: [UInt32] = []
    /// Every result except the final wait/empty, in order.
    var events: [Buffer.PollResult] = []
    var last: Buffer.PollResult = .empty

    var payloads: [Int] { packets.map(\.payload) }
    var lostCount: Int { lost.reduce(0) { $0 + $1.count } }

    mutating func append(_ other: Drained) {
        packets += other.packets
        lost += other.lost
        restarts += other.restarts
        events += other.events
        last = other.last
    }
}

extension JitterBuffer<Int> {
    /// Polls until `.wait` or `.empty` (bounded, so a livelock fails instead of hanging).
    mutating func drain(now: MonotonicInstant, limit: Int = 1_000_000) -> Drained {
        var drained = Drained()
        for _ in 0..<limit {
            let result = poll(now: now)
            switch result {
            case .packet(let packet): drained.packets.append(packet)
            case .lost(let range): drained.lost.append(range)
            case .restart(let ssrc): drained.restarts.append(ssrc)
            case .wait, .empty:
                drained.last = result
                return drained
            }
            drained.events.append(result)
        }
        preconditionFailure("poll did not settle after \(limit) calls")
    }

    /// Inserts a packet whose payload is `payload` (default: the wire sequence number).
    @discardableResult
    mutating func insert(
        _ sequence: UInt16, timestamp: UInt32 = 0, ssrc: UInt32 = 1, frameEnd: Bool = false, bytes: Int = 1_200,
        payload: Int? = nil, at now: MonotonicInstant
    ) -> Buffer.InsertResult {
        insert(
            sequenceNumber: SequenceNumber(rawValue: sequence), timestamp: RTPTimestamp(rawValue: timestamp), ssrc: ssrc,
            isFrameEnd: frameEnd, byteCount: bytes, payload: payload ?? Int(sequence), now: now
        )
    }
}

/// Indices `0..<count` in an arrival order where each is displaced by at most `maximum` positions
/// (and the first stays first, so it sets the stream's start).
func boundedShuffle(count: Int, maximum: Int, using random: inout SeededRandomNumberGenerator) -> [Int] {
    let keys = (0..<count).map { index in index == 0 ? -1.0 : Double(index) + Double.random(in: 0...Double(maximum), using: &random) }
    return (0..<count).sorted { keys[$0] < keys[$1] }
}

extension Buffer.PollResult {
    var waitDeadline: MonotonicInstant? {
        if case .wait(let until) = self { return until }
        return nil
    }
}
