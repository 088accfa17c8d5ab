/// G.711 (PCMU, PCMA) over RTP (RFC 3551 §4.5.14): splits a buffer of 8-bit samples into payloads
/// of at most ``samplesPerPacket`` samples, each its own frame with its own timestamp.
///
/// Not a ``Packetizer``: every payload here starts a new RTP timestamp (one tick per sample), so
/// `emit` receives each payload's timestamp offset from the buffer's first sample instead of an
/// end-of-frame flag.
///
/// ```swift
/// var packetizer = G711Packetizer()  // 160 samples = 20 ms at 8 kHz
/// let increment = packetizer.packetize(samples) { payload, offset in
///     header.timestamp = base &+ offset
///     …
/// }
/// base &+= increment
/// ```
public struct G711Packetizer: Sendable {
    /// 160 samples: 20 ms at 8 kHz, the usual G.711 packet (RFC 3551 §4.5).
    public static let defaultSamplesPerPacket = 160

    /// The most samples (bytes) in one payload.
    public let samplesPerPacket: Int

    /// Creates a packetizer putting at most `samplesPerPacket` samples (≥ 1) in a payload.
    public init(samplesPerPacket: Int = G711Packetizer.defaultSamplesPerPacket) {
        precondition(samplesPerPacket >= 1, "a packet carries at least one sample")
        self.samplesPerPacket = samplesPerPacket
    }

    /// Calls `emit(payload, timestampOffset)` for each payload of `samples`, in order, and
    /// returns the RTP timestamp increment for the whole buffer (its sample count).
    ///
    /// - Complexity: O(n); allocates nothing (payloads are slices of `samples`).
    @discardableResult
    public func packetize(
        _ samples: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer, UInt32) throws -> Void
    ) rethrows -> UInt32 {
        var offset = 0
        while offset < samples.count {
            let end = min(offset + samplesPerPacket, samples.count)
            try emit(UnsafeRawBufferPointer(rebasing: samples[offset..<end]), UInt32(truncatingIfNeeded: offset))
            offset = end
        }
        return UInt32(truncatingIfNeeded: samples.count)
    }
}
