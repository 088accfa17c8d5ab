/// Opus over RTP (RFC 7587 §4.2): one Opus packet per RTP payload, never fragmented. A frame
/// larger than ``maxPayloadSize`` is an error (``PacketizerError/frameTooLarge(size:maxPayloadSize:)``),
/// not split: lower the encoder's bitrate or frame duration instead.
///
/// The caller advances the RTP timestamp by the frame's duration at 48 kHz (960 for 20 ms).
public struct OpusPacketizer: Packetizer {
    public let maxPayloadSize: Int

    /// Creates a packetizer accepting frames of up to `maxPayloadSize` bytes (≥ 1).
    public init(maxPayloadSize: Int = PacketizerDefaults.maxPayloadSize) {
        precondition(maxPayloadSize >= 1, "a payload must hold at least one byte")
        self.maxPayloadSize = maxPayloadSize
    }

    /// Emits `frame` as one payload, the last of its frame.
    ///
    /// - Throws: ``PacketizerError/frameTooLarge(size:maxPayloadSize:)`` when `frame` does not fit
    ///   one payload; nothing is emitted for an empty frame.
    public mutating func packetize(
        _ frame: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer, Bool) throws -> Void
    ) throws {
        guard frame.count <= maxPayloadSize else {
            throw PacketizerError.frameTooLarge(size: frame.count, maxPayloadSize: maxPayloadSize)
        }
        guard !frame.isEmpty else { return }
        try emit(frame, true)
    }
}
