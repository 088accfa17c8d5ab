public import PlayoutCore

/// Decides, per RTP packet, whether it belongs to the stream a track plays: RFC 3550 §6.2.1 /
/// Appendix A.1 source validation and sequence checking, one locked source per track, and a
/// timestamp plausibility check. Sans-IO: it reads no clock; every call takes `now`.
///
/// - A new SSRC is a valid source only after ``Configuration/minimumSequential`` packets in
///   sequence (A.1's `MIN_SEQUENTIAL`, probation). Until then its latest packet is held (so the
///   first packets of a real stream are not lost) and handed back with the packet that validates
///   it; packets of a source that never validates are counted ``Statistics/packetsInProbation``.
/// - The first valid source is played (locked). Another valid source takes over only when the
///   played one has said RTCP BYE (``receiveGoodbye(ssrc:)``) or has sent nothing for
///   ``Configuration/switchAfterSilence``; until then its packets are counted
///   ``Statistics/packetsNotPlayed``. A switch is returned as ``Restart/newSource(from:to:)``.
/// - Packets of the played source go through A.1's `update_seq`: a step forward of less than
///   ``Configuration/maximumDropout`` (a gap is loss) or back of at most
///   ``Configuration/maximumMisorder`` (reordering, duplicates) is played; a larger jump is held
///   and played, with this packet before it, only when the next packet follows it in sequence
///   (A.1's `bad_seq`: the sender restarted its sequence) — a ``Restart/resync``. A packet whose
///   RTP time is far from what its sequence number and arrival imply (more than
///   ``Configuration/timestampTolerance`` behind the last one, or ahead of it by more than the
///   time that passed plus the tolerance, or a jump of many packets in no time) is treated the
///   same way: foreign unless the next packet confirms the new timeline.
///
/// Every packet is counted once: played (the caller counts it), or in one of ``Statistics``'
/// reasons when it is finally not played (a held packet when it is given up).
///
/// ```swift
/// var validator = RTPSourceValidator<StoredRTPPacket>(configuration: .init(clockRate: 90_000))
/// switch validator.receive(ssrc: p.ssrc, sequenceNumber: p.sequenceNumber.rawValue,
///                          timestamp: p.timestamp.rawValue, payload: stored, now: arrival) {
/// case .play(let previous, let restart): // restart the buffer if asked, file `previous`, then this packet
/// case .hold, .reject: break
/// }
/// ```
///
/// - Complexity: O(1) for the played source; O(``Configuration/maximumCandidates``) for others.
public struct RTPSourceValidator<Payload> {
    public typealias Configuration = RTPSourceValidation.Configuration
    public typealias Restart = RTPSourceValidation.Restart
    public typealias Rejection = RTPSourceValidation.Rejection
    public typealias Statistics = RTPSourceValidation.Statistics

    /// What to do with a packet.
    public enum Decision {
        /// Play it. When `restart` is set, the stream starts again before it (the caller restarts
        /// its buffer unless the SSRC change does); `previous`, when set, is played first.
        case play(previous: Payload?, restart: Restart?)
        /// The validator keeps the packet until the next packet of its source decides (played
        /// with it, or counted).
        case hold
        /// Not played; counted under its reason.
        case reject(Rejection)
    }

    /// The state of the played source (A.1's `source` plus the timestamp reference).
    struct Played {
        var ssrc: UInt32
        var maxSequence: UInt16
        var lastTimestamp: UInt32
        var lastArrival: MonotonicInstant
        var lastSeen: MonotonicInstant
        /// Mean RTP ticks per sequence number, over steps of one.
        var ticksPerPacket: Double = 0
        var ended = false
        /// A packet that jumped, waiting for the next to confirm it.
        var held: Payload?
        var heldSequence: UInt16 = 0
        var heldTimestamp: UInt32 = 0
        var heldArrival = MonotonicInstant.zero
        var heldForTimestamp = false
    }

    /// Another source: in probation, or valid and waiting.
    struct Candidate {
        var ssrc: UInt32
        var maxSequence: UInt16
        var probation: Int
        var lastSeen: MonotonicInstant
        var ended = false
        var held: Payload?
    }

    /// The tunables it was created with.
    public let configuration: Configuration
    /// What it has counted so far.
    public private(set) var statistics = Statistics()
    var played: Played?
    var candidates: [Candidate] = []

    /// ``Configuration/timestampTolerance`` in seconds.
    private let toleranceSeconds: Double

    /// Creates a validator that plays no source yet.
    public init(configuration: Configuration) {
        self.configuration = configuration
        toleranceSeconds = configuration.timestampTolerance.seconds
        candidates.reserveCapacity(configuration.maximumCandidates)
    }

    /// The SSRC played, once one is.
    public var playedSSRC: UInt32? { played?.ssrc }

    /// Packets held now, waiting for the next packet of their source to decide (at most one per
    /// source remembered). Every packet received is played, counted in ``statistics``, or held.
    public var packetsHeld: Int {
        candidates.reduce(played?.held == nil ? 0 : 1) { $0 + ($1.held == nil ? 0 : 1) }
    }

    /// The source `ssrc` said RTCP BYE: if it is played, another valid source may take over at
    /// once.
    @_specialize(exported: true, where Payload == ArrivedRTPPacket)
    public mutating func receiveGoodbye(ssrc: UInt32) {
        if played?.ssrc == ssrc {
            played?.ended = true
        } else if let index = candidates.firstIndex(where: { $0.ssrc == ssrc }) {
            candidates[index].ended = true
        }
    }

    /// Decides about one packet that arrived at `now`.
    @_specialize(exported: true, where Payload == ArrivedRTPPacket)
    public mutating func receive(ssrc: UInt32, sequenceNumber: UInt16, timestamp: UInt32, payload: Payload, now: MonotonicInstant) -> Decision {
        if played?.ssrc == ssrc {
            return receivePlayed(sequenceNumber: sequenceNumber, timestamp: timestamp, payload: payload, now: now)
        }
        return receiveOther(ssrc: ssrc, sequenceNumber: sequenceNumber, timestamp: timestamp, payload: payload, now: now)
    }

    // MARK: The played source

    private mutating func receivePlayed(sequenceNumber: UInt16, timestamp: UInt32, payload: Payload, now: MonotonicInstant) -> Decision {
        // The common case in place (no copy of the source's state): the next packets in sequence,
        // a plausible timestamp, nothing held. The same decision as the general path below.
        if let current = played, current.held == nil {
            let step = sequenceNumber &- current.maxSequence
            if step != 0, Int(step) < configuration.maximumDropout,
               isPlausible(timestamp: timestamp, arrival: now, step: Int(step), lastTimestamp: current.lastTimestamp,
                           lastArrival: current.lastArrival, ticksPerPacket: current.ticksPerPacket) {
                if step == 1 {
                    let ticks = Double(Int32(bitPattern: timestamp &- current.lastTimestamp))
                    played!.ticksPerPacket += (max(0, ticks) - current.ticksPerPacket) / 16
                }
                played!.lastSeen = now
                played!.maxSequence = sequenceNumber
                played!.lastTimestamp = timestamp
                played!.lastArrival = now
                return .play(previous: nil, restart: nil)
            }
        }
        guard var source = played else { return .reject(.probation) }
        played = nil  // keeps `source` uniquely referenced while it changes
        defer { played = source }
        source.lastSeen = now
        let step = sequenceNumber &- source.maxSequence
        let forward = Int(step) < configuration.maximumDropout
        let backward = Int(step) > (1 << 16) - configuration.maximumMisorder
        if forward || backward || step == 0 {
            if isPlausible(timestamp: timestamp, arrival: now, step: forward ? Int(step) : 0, reference: source) {
                dropHeld(&source)
                if forward, step != 0 {
                    if step == 1 {
                        let ticks = Double(Int32(bitPattern: timestamp &- source.lastTimestamp))
                        source.ticksPerPacket += (max(0, ticks) - source.ticksPerPacket) / 16
                    }
                    source.maxSequence = sequenceNumber
                    source.lastTimestamp = timestamp
                    source.lastArrival = now
                }
                return .play(previous: nil, restart: nil)
            }
            return hold(&source, payload: payload, sequenceNumber: sequenceNumber, timestamp: timestamp, now: now, forTimestamp: true)
        }
        return hold(&source, payload: payload, sequenceNumber: sequenceNumber, timestamp: timestamp, now: now, forTimestamp: false)
    }

    /// A jump: confirmed when this packet follows the held one (resync), else this one is held.
    private mutating func hold(
        _ source: inout Played, payload: Payload, sequenceNumber: UInt16, timestamp: UInt32, now: MonotonicInstant, forTimestamp: Bool
    ) -> Decision {
        if let held = source.held, sequenceNumber == source.heldSequence &+ 1 {
            let reference = Played(ssrc: source.ssrc, maxSequence: source.heldSequence, lastTimestamp: source.heldTimestamp, lastArrival: source.heldArrival, lastSeen: now)
            if isPlausible(timestamp: timestamp, arrival: now, step: 1, reference: reference) {
                source.held = nil
                source.maxSequence = sequenceNumber
                source.lastTimestamp = timestamp
                source.lastArrival = now
                statistics.resyncs += 1
                return .play(previous: held, restart: .resync)
            }
        }
        dropHeld(&source)
        source.held = payload
        source.heldSequence = sequenceNumber
        source.heldTimestamp = timestamp
        source.heldArrival = now
        source.heldForTimestamp = forTimestamp
        return .hold
    }

    private mutating func dropHeld(_ source: inout Played) {
        guard source.held != nil else { return }
        source.held = nil
        if source.heldForTimestamp {
            statistics.packetsImplausibleTimestamp += 1
        } else {
            statistics.packetsOutOfSequence += 1
        }
    }

    /// Whether a packet `step` sequence numbers after `reference`'s highest, with RTP time
    /// `timestamp`, arriving at `arrival`, fits the timeline: not more than the tolerance behind,
    /// not ahead of the time that passed by more than the tolerance, and, for a jump of more than
    /// ``Configuration/maximumMisorder`` packets, not a jump of many packets in almost no time.
    private func isPlausible(timestamp: UInt32, arrival: MonotonicInstant, step: Int, reference: Played) -> Bool {
        isPlausible(
            timestamp: timestamp, arrival: arrival, step: step, lastTimestamp: reference.lastTimestamp, lastArrival: reference.lastArrival,
            ticksPerPacket: reference.ticksPerPacket
        )
    }

    private func isPlausible(
        timestamp: UInt32, arrival: MonotonicInstant, step: Int, lastTimestamp: UInt32, lastArrival: MonotonicInstant, ticksPerPacket: Double
    ) -> Bool {
        // Plain Int64 and Double arithmetic: a Duration's `seconds` costs 128-bit multiplications,
        // and this runs for every packet.
        let rate = Double(configuration.clockRate)
        let media = Double(Int32(bitPattern: timestamp &- lastTimestamp)) / rate
        let elapsed = max(0, Double(arrival.nanoseconds &- lastArrival.nanoseconds) / 1e9)
        let tolerance = toleranceSeconds
        if media < -tolerance || media > elapsed + tolerance { return false }
        if step > configuration.maximumMisorder, ticksPerPacket > 0 {
            let implied = Double(step) * ticksPerPacket / rate
            if implied > 4 * max(media, elapsed) + 0.5 { return false }
        }
        return true
    }

    // MARK: Other sources

    private mutating func receiveOther(ssrc: UInt32, sequenceNumber: UInt16, timestamp: UInt32, payload: Payload, now: MonotonicInstant) -> Decision {
        let index: Int
        if let found = candidates.firstIndex(where: { $0.ssrc == ssrc }) {
            index = found
            candidates[index].lastSeen = now
            if candidates[index].probation > 0 {
                if sequenceNumber == candidates[index].maxSequence &+ 1 {
                    candidates[index].probation -= 1
                    candidates[index].maxSequence = sequenceNumber
                } else {
                    if candidates[index].held != nil { statistics.packetsInProbation += 1 }
                    candidates[index].probation = configuration.minimumSequential - 1
                    candidates[index].maxSequence = sequenceNumber
                    candidates[index].held = payload
                    return .hold
                }
            } else {
                candidates[index].maxSequence = sequenceNumber
            }
        } else {
            index = insertCandidate(Candidate(ssrc: ssrc, maxSequence: sequenceNumber, probation: configuration.minimumSequential - 1, lastSeen: now))
        }
        if candidates[index].probation > 0 {
            if candidates[index].held != nil { statistics.packetsInProbation += 1 }
            candidates[index].held = payload
            return .hold
        }
        // A valid source: played when nothing is, or when the played one ended or fell silent.
        let held = candidates[index].held
        candidates[index].held = nil
        let takeOver: Bool
        if let current = played {
            takeOver = current.ended || current.lastSeen.duration(to: now) >= configuration.switchAfterSilence
        } else {
            takeOver = true
        }
        guard takeOver else {
            statistics.packetsNotPlayed += held == nil ? 1 : 2
            return .reject(.notPlayed)
        }
        candidates.remove(at: index)
        let previous = played
        if var old = previous {
            dropHeld(&old)
            statistics.sourceSwitches += 1
            _ = insertCandidate(Candidate(ssrc: old.ssrc, maxSequence: old.maxSequence, probation: 0, lastSeen: old.lastSeen, ended: old.ended))
        }
        played = Played(ssrc: ssrc, maxSequence: sequenceNumber, lastTimestamp: timestamp, lastArrival: now, lastSeen: now)
        return .play(previous: held, restart: .newSource(from: previous?.ssrc, to: ssrc))
    }

    /// Adds `candidate`, forgetting the source seen least recently when the table is full (its
    /// held packet counted as never validated); returns its index.
    private mutating func insertCandidate(_ candidate: Candidate) -> Int {
        if candidates.count >= configuration.maximumCandidates {
            var oldest = 0
            for index in candidates.indices where candidates[index].lastSeen < candidates[oldest].lastSeen {
                oldest = index
            }
            if candidates[oldest].held != nil { statistics.packetsInProbation += 1 }
            candidates[oldest] = candidate
            return oldest
        }
        candidates.append(candidate)
        return candidates.count - 1
    }
}

/// The types of ``RTPSourceValidator`` that do not depend on its payload.
public enum RTPSourceValidation {
    /// The tunables, with RFC 3550 A.1's constants as defaults.
    public struct Configuration: Equatable, Sendable {
        /// A.1's `MIN_SEQUENTIAL`: packets in sequence before a new source is valid.
        public static let defaultMinimumSequential = 2
        /// A.1's `MAX_DROPOUT`: the largest forward step that is loss, not a jump.
        public static let defaultMaximumDropout = 3_000
        /// A.1's `MAX_MISORDER`: the largest backward step that is reordering, not a jump.
        public static let defaultMaximumMisorder = 100
        /// The default ``switchAfterSilence``: 1 s (the subscriber's default stall timeout).
        public static let defaultSwitchAfterSilence: Duration = .seconds(1)
        /// The default ``maximumCandidates``: 32 sources in probation or waiting at once.
        public static let defaultMaximumCandidates = 32
        /// The default ``timestampTolerance``: 3 s.
        public static let defaultTimestampTolerance: Duration = .seconds(3)

        /// Packets in sequence before a new source is valid (default ``defaultMinimumSequential``).
        public var minimumSequential: Int
        /// The largest forward step that is loss (default ``defaultMaximumDropout``).
        public var maximumDropout: Int
        /// The largest backward step that is reordering (default ``defaultMaximumMisorder``).
        public var maximumMisorder: Int
        /// How long the played source must be silent before another valid source is played.
        public var switchAfterSilence: Duration
        /// The most other sources remembered; beyond it the one seen least recently is forgotten.
        public var maximumCandidates: Int
        /// How far a packet's RTP time may be from what its arrival implies.
        public var timestampTolerance: Duration
        /// The RTP clock rate (Hz) of the payload.
        public var clockRate: Int32

        /// Creates a configuration; every parameter but the clock rate has a documented default.
        public init(
            clockRate: Int32, minimumSequential: Int = Self.defaultMinimumSequential, maximumDropout: Int = Self.defaultMaximumDropout,
            maximumMisorder: Int = Self.defaultMaximumMisorder, switchAfterSilence: Duration = Self.defaultSwitchAfterSilence,
            maximumCandidates: Int = Self.defaultMaximumCandidates, timestampTolerance: Duration = Self.defaultTimestampTolerance
        ) {
            self.clockRate = max(1, clockRate)
            self.minimumSequential = max(1, minimumSequential)
            self.maximumDropout = min(max(1, maximumDropout), 1 << 15)
            self.maximumMisorder = min(max(0, maximumMisorder), 1 << 15)
            self.switchAfterSilence = switchAfterSilence
            self.maximumCandidates = max(1, maximumCandidates)
            self.timestampTolerance = timestampTolerance
        }
    }

    /// Why the stream that is played starts again.
    public enum Restart: Equatable, Sendable {
        /// Another source is played from now on (`from` is nil for the first one).
        case newSource(from: UInt32?, to: UInt32)
        /// The played source jumped in sequence number or RTP time, confirmed by the next packet.
        case resync
    }

    /// Why a packet is not played.
    public enum Rejection: Equatable, Sendable {
        /// Its source has not (yet) passed probation.
        case probation
        /// Its source is valid but another one is played.
        case notPlayed
    }

    /// What the validator has done (packets not played, by reason; switches and resyncs).
    public struct Statistics: Equatable, Sendable {
        /// Packets of sources that did not pass probation.
        public var packetsInProbation = 0
        /// Packets of valid sources that were not the played one.
        public var packetsNotPlayed = 0
        /// Packets of the played source dropped for a sequence jump that the next packet did not confirm.
        public var packetsOutOfSequence = 0
        /// Packets of the played source dropped because their RTP time was implausible.
        public var packetsImplausibleTimestamp = 0
        /// Times the played source changed (the first lock is not counted).
        public var sourceSwitches = 0
        /// Times the played source's sequence or timeline was resynchronized.
        public var resyncs = 0

        /// Packets of sources not played: ``packetsInProbation`` + ``packetsNotPlayed``.
        public var packetsFromOtherSources: Int { packetsInProbation + packetsNotPlayed }

        public init() {}
    }
}

/// A pooled packet with its arrival: what the receive path holds while a source is validated.
/// ``RTPSourceValidator`` is specialized for it in this module (`@_specialize(exported: true)`):
/// a generic type's methods are not specialized across modules otherwise, and the generic
/// validator cost ≈ 600 ns a packet in metadata look-ups, value-witness calls and copies of its state.
public struct ArrivedRTPPacket {
    /// The packet, as parsed and stored once.
    public var packet: StoredRTPPacket
    /// When its datagram arrived.
    public var arrival: MonotonicInstant

    public init(packet: StoredRTPPacket, arrival: MonotonicInstant) {
        self.packet = packet
        self.arrival = arrival
    }
}
