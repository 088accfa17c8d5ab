public import PlayoutCore

/// Turns RTP packets of one payload format back into complete encoded frames.
///
/// Packets are pushed in sequence-number order (the receive path reorders first); each call emits
/// the frames the packet completed — none, one, or two (a packet of a new timestamp completes the
/// previous frame and may be a whole frame itself). A frame with a lost or malformed part is
/// discarded and counted, never emitted corrupt; the next emitted frame then has
/// ``EncodedFrame/followsLoss`` set, so the consumer can wait for a key frame. Completeness is
/// decided here, in one place; whether to wait for a key frame is decided by the consumer.
public protocol Depacketizer {
    /// The codec of the frames produced.
    var codec: Codec { get }
    /// Counters since creation.
    var statistics: DepacketizerStatistics { get }
    /// Feeds the next packet (in sequence order) received at `arrival`; calls `emit` with every
    /// frame it completes.
    mutating func push(_ packet: RTPPacket, arrival: MonotonicInstant, emit: (EncodedFrame) -> Void)
    /// Feeds a packet kept since it arrived (the jitter buffer's output), rebuilt from the header
    /// parsed then over its stored bytes: it is not parsed again. The default implementation
    /// forwards to the `RTPPacket` overload.
    mutating func push(_ stored: StoredRTPPacket, arrival: MonotonicInstant, emit: (EncodedFrame) -> Void)
    /// Emits the frame in progress if it is complete so far (end of stream), or discards it.
    mutating func flush(emit: (EncodedFrame) -> Void)
    /// Gives back the bytes of an emitted frame once they are no longer needed, so the next frames
    /// reuse the storage: with every frame recycled, depacketizing allocates nothing in steady
    /// state. Frames not recycled are simply freed.
    mutating func recycle(_ bytes: consuming [UInt8])
    /// From now on, frames carry their size and everything else but not their bytes
    /// (``EncodedFrame/elidedByteCount``): for a consumer that neither decodes nor writes them,
    /// such as a viewer that only times its frames, which then does not copy every payload. A
    /// format may go on copying (the default does; H.264 and H.265 elide).
    mutating func elidePayloads()
}

extension Depacketizer {
    /// Goes on copying payloads: for formats whose frames are small (audio) or that need their
    /// bytes to find frame boundaries.
    public mutating func elidePayloads() {}

    /// Rebuilds the stored packet and feeds it (a requirement, so that a call on `any
    /// Depacketizer` reaches a version specialized for the payload format).
    @inlinable
    public mutating func push(_ stored: StoredRTPPacket, arrival: MonotonicInstant, emit: (EncodedFrame) -> Void) {
        push(stored.packet, arrival: arrival, emit: emit)
        withExtendedLifetime(stored) {}
    }
}

/// What a depacketizer has seen and done.
public struct DepacketizerStatistics: Equatable, Sendable {
    /// Packets pushed.
    public var packetsReceived = 0
    /// Packets whose sequence number was not after the previous one (duplicates or out of order),
    /// dropped.
    public var packetsOutOfOrder = 0
    /// Packets missing from the sequence (gaps).
    public var packetsLost = 0
    /// Packets whose payload could not be understood (malformed, unsupported packetization).
    public var packetsMalformed = 0
    /// Frames emitted.
    public var framesEmitted = 0
    /// Frames discarded because a part was lost or malformed.
    public var framesDiscarded = 0

    public init() {}
}

/// The bookkeeping every depacketizer shares: sequence and timestamp unwrapping, loss detection,
/// frame boundaries by timestamp and marker, arrival times, and emitting or discarding. A payload
/// format only appends bytes to ``bytes`` and marks the frame damaged when a part is unusable.
struct FrameAssembler {
    let track: TrackID
    let codec: Codec
    let clockRate: Int32
    var statistics = DepacketizerStatistics()

    private var sequenceNumbers = SequenceNumberUnwrapper()
    private var timestamps = RTPTimestampUnwrapper()
    private var expectedSequence: Int64?

    /// The frame in progress.
    private(set) var isOpen = false
    private var timestamp: Int64 = 0
    private var firstArrival = MonotonicInstant.zero
    private var lastArrival = MonotonicInstant.zero
    private var firstSequence: Int64 = 0
    private var lastSequence: Int64 = 0
    /// The frame's bytes so far.
    var bytes: [UInt8] = []
    /// Whether payloads are copied into ``bytes``; when not, ``elidedByteCount`` counts them.
    var keepsBytes = true
    /// The frame's bytes so far that were counted, not copied.
    var elidedByteCount = 0
    /// Storage given back by the consumer, reused for the next frames.
    private var pool: [[UInt8]] = []
    /// The capacity reserved for a new frame buffer when the pool is empty.
    static let initialFrameCapacity = 64 * 1024
    /// The most buffers kept for reuse.
    static let poolLimit = 8
    var isKeyframe = false
    /// A part of the frame in progress was lost or unusable: it will be discarded.
    var isDamaged = false
    /// A fragmented unit (H.264/H.265 FU) is open: started, not yet ended. A frame that ends
    /// with one open is incomplete.
    var fragmentOpen = false
    /// Loss happened since the last emitted frame.
    private var lossPending = false

    init(track: TrackID, codec: Codec, clockRate: Int32) {
        self.track = track
        self.codec = codec
        self.clockRate = clockRate
        bytes.reserveCapacity(Self.initialFrameCapacity)
        pool.reserveCapacity(Self.poolLimit)
    }

    /// Appends `part` to the frame's bytes, or counts it when payloads are elided.
    mutating func append(_ part: some Collection<UInt8>) {
        if keepsBytes {
            bytes.append(contentsOf: part)
        } else {
            elidedByteCount += part.count
        }
    }

    /// Keeps `buffer` for a later frame (if the pool has room).
    mutating func recycle(_ buffer: consuming [UInt8]) {
        // Emptied when taken, not here: the consumer may still hold a reference right now, and
        // emptying a shared buffer would allocate a new one.
        guard pool.count < Self.poolLimit else { return }
        pool.append(buffer)
    }

    /// Hands the frame's bytes over without copying, replacing them with pooled (or new) storage.
    private mutating func takeBytes() -> [UInt8] {
        var next = pool.popLast() ?? []
        next.removeAll(keepingCapacity: true)
        if next.capacity == 0 { next.reserveCapacity(Self.initialFrameCapacity) }
        swap(&bytes, &next)
        return next
    }

    /// What `begin` decided about a packet.
    enum Start {
        /// A duplicate or out-of-order packet: drop it.
        case drop
        /// The packet continues the frame in progress.
        case sameFrame
        /// The packet starts a new frame (any previous one was finished first).
        case newFrame
    }

    /// Starts handling `packet`: detects loss and frame boundaries, and returns the previous frame
    /// if this packet completed it. Unless it says `.drop`, the caller then appends the packet's
    /// payload to ``bytes``.
    mutating func begin(_ packet: RTPPacket, arrival: MonotonicInstant) -> (start: Start, completed: EncodedFrame?) {
        statistics.packetsReceived += 1
        let sequence = sequenceNumbers.unwrap(packet.sequenceNumber)
        if let expected = expectedSequence {
            if sequence < expected {
                statistics.packetsOutOfOrder += 1
                return (.drop, nil)
            }
            if sequence > expected {
                statistics.packetsLost += Int(min(sequence - expected, Int64(Int32.max)))
                lossPending = true
                if isOpen { isDamaged = true }
            }
        }
        expectedSequence = sequence + 1
        let extendedTimestamp = timestamps.unwrap(packet.timestamp)
        var completed: EncodedFrame?
        if isOpen, extendedTimestamp != timestamp {
            // A new timestamp: the previous frame ended (its marker may have been lost — if a
            // packet was lost it is already damaged).
            completed = finish()
        }
        lastArrival = arrival
        lastSequence = sequence
        guard !isOpen else { return (.sameFrame, nil) }
        isOpen = true
        timestamp = extendedTimestamp
        firstArrival = arrival
        firstSequence = sequence
        bytes.removeAll(keepingCapacity: true)
        elidedByteCount = 0
        isKeyframe = false
        isDamaged = false
        fragmentOpen = false
        return (.newFrame, completed)
    }

    /// Counts a packet whose payload was unusable and damages the frame in progress.
    mutating func malformed() {
        statistics.packetsMalformed += 1
        isDamaged = true
        lossPending = true
    }

    /// Ends the frame in progress like ``finish()`` and opens the next one at once, `ticks` later
    /// on the media timeline, for payload formats that carry several frames in one packet (RFC 3640
    /// access units). The next frame starts with the current packet.
    mutating func finishAndContinue(advancingBy ticks: Int64) -> EncodedFrame? {
        let completed = finish()
        isOpen = true
        timestamp += ticks
        firstArrival = lastArrival
        firstSequence = lastSequence
        bytes.removeAll(keepingCapacity: true)
        elidedByteCount = 0
        isKeyframe = false
        isDamaged = false
        fragmentOpen = false
        return completed
    }

    /// Ends the frame in progress: returns it when intact and non-empty, discards it otherwise.
    mutating func finish() -> EncodedFrame? {
        guard isOpen else { return nil }
        isOpen = false
        defer { fragmentOpen = false }
        if isDamaged || fragmentOpen || (bytes.isEmpty && elidedByteCount == 0) {
            statistics.framesDiscarded += 1
            lossPending = true
            return nil
        }
        statistics.framesEmitted += 1
        var frame = EncodedFrame(
            track: track, codec: codec, mediaTime: MediaTime(ticks: timestamp, clockRate: clockRate),
            firstArrival: firstArrival, lastArrival: lastArrival, isKeyframe: isKeyframe, bytes: keepsBytes ? takeBytes() : [],
            sequenceRange: firstSequence...lastSequence, followsLoss: lossPending
        )
        frame.elidedByteCount = elidedByteCount
        lossPending = false
        return frame
    }
}
