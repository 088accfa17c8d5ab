/// Splits encoded frames into RTP payloads of one payload format, for the test publisher.
///
/// The caller writes each payload behind an RTP header (``RTPPacketBuilder``), setting the marker
/// bit on the frame's last payload. Packetizers reuse their scratch storage: steady state
/// allocates nothing.
public protocol Packetizer {
    /// The largest payload produced, in bytes (the MTU minus IP, UDP, RTP and SRTP overhead).
    var maxPayloadSize: Int { get }
    /// Calls `emit(payload, isLastOfFrame)` for each payload of `frame`, in order.
    ///
    /// - Throws: ``PacketizerError`` when the payload format cannot carry `frame` (nothing is
    ///   emitted then), or what `emit` throws.
    mutating func packetize(
        _ frame: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer, Bool) throws -> Void
    ) throws
}

/// Why a frame could not be packetized. Every case carries the numbers to act on.
public enum PacketizerError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The format does not fragment frames (Opus, RFC 7587 §4.2) and this one is larger than a
    /// payload may be.
    case frameTooLarge(size: Int, maxPayloadSize: Int)
    /// The frame is larger than the format's size field can express (RFC 3640 AU-size).
    case frameSizeNotRepresentable(size: Int, maximum: Int)

    public var description: String {
        switch self {
        case .frameTooLarge(let size, let maxPayloadSize):
            return "a \(size)-byte frame does not fit a \(maxPayloadSize)-byte payload and this format cannot fragment it: raise maxPayloadSize or lower the encoder's frame size"
        case .frameSizeNotRepresentable(let size, let maximum):
            return "a \(size)-byte frame exceeds the \(maximum) bytes the AU-size field can express: raise sizelength"
        }
    }
}

/// Packetizer defaults.
public enum PacketizerDefaults {
    /// The default largest payload: 1,200 bytes, which leaves room for IPv6, UDP, RTP with header
    /// extensions and an SRTP tag within a 1,280-byte path MTU.
    public static let maxPayloadSize = 1_200
}

