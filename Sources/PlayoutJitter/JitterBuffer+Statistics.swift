/// A snapshot of a ``JitterBuffer``'s counters, named after W3C webrtc-stats `inbound-rtp` where a
/// name exists. Counters are cumulative since the buffer was created (across restarts).
public struct JitterBufferStatistics: Equatable, Sendable {
    /// Packets received, each sequence number once: duplicates are not counted again; late,
    /// dropped (overflow) and discarded packets are.
    public var packetsReceived = 0
    /// RFC 3550 §6.4.1 cumulative loss: packets expected (highest − lowest extended sequence number
    /// + 1, summed over sender restarts) minus packets received in sequence. A gap still waiting for
    /// its reordered packets counts as lost until they arrive; a packet that arrives after its gap
    /// was declared lost is late (``packetsDiscarded``) and no longer lost.
    public var packetsLost = 0
    /// Packets that arrived too late to be released in order (after their sequence number was
    /// declared lost or later packets were released), or so far from the stream that they could not
    /// be placed in it (a restart that was not confirmed).
    public var packetsDiscarded = 0
    /// Copies of a packet already queued, released or dropped.
    public var packetsDuplicated = 0
    /// Packets dropped because the buffer was over ``JitterBufferConfiguration/maximumBytes`` or
    /// ``JitterBufferConfiguration/maximumPackets`` (the oldest go first), or a single packet larger
    /// than `maximumBytes`.
    public var packetsDropped = 0
    /// Payload bytes of the packets counted in ``packetsReceived``.
    public var bytesReceived = 0
    /// RFC 3550 Appendix A.8 interarrival jitter, in seconds, over packets that advance the highest
    /// sequence number.
    public var jitter: Double = 0
    /// The highest extended sequence number received (contiguous across restarts, see
    /// ``JitterBuffer/Packet/sequenceNumber``); -1 before the first packet.
    public var highestSequenceNumber: Int64 = -1
    /// Sender restarts: a new SSRC or a confirmed sequence-number jump.
    public var restarts = 0
    /// Gaps given up on (one per ``JitterBuffer/PollResult/lost(range:)`` event).
    public var lossEvents = 0
    /// Packets held now.
    public var bufferedPackets = 0
    /// Payload bytes held now.
    public var bufferedBytes = 0

    /// All zero.
    public init() {}
}
