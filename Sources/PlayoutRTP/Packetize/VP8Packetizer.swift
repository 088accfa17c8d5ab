/// VP8 over RTP (RFC 7741) as ffmpeg sends it: every payload starts with a 4-byte descriptor —
/// X = 1, S = 1 on the frame's first payload, partition index 0, and the extension byte with only
/// I = 1 and a 15-bit PictureID (M = 1) that counts frames — followed by the next slice of the
/// frame. Partitions are not aligned to packets (RFC 7741 §4.4 allows any split).
public struct VP8Packetizer: Packetizer {
    /// The descriptor written before each slice: X, extension byte, 15-bit PictureID.
    static let descriptorLength = 4

    public let maxPayloadSize: Int
    /// The PictureID of the next frame (15 bits, wraps).
    public private(set) var pictureID: UInt16
    private var scratch: [UInt8] = []

    /// Creates a packetizer producing payloads of at most `maxPayloadSize` bytes (≥ 5), numbering
    /// frames from `firstPictureID` (taken modulo 2¹⁵).
    public init(maxPayloadSize: Int = PacketizerDefaults.maxPayloadSize, firstPictureID: UInt16 = 0) {
        precondition(maxPayloadSize > Self.descriptorLength, "a payload must hold the descriptor and some data")
        self.maxPayloadSize = maxPayloadSize
        pictureID = firstPictureID & 0x7FFF
        scratch.reserveCapacity(maxPayloadSize)
    }

    /// Emits `frame` (a raw VP8 frame) as payloads; nothing for an empty frame.
    public mutating func packetize(
        _ frame: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer, Bool) throws -> Void
    ) rethrows {
        guard !frame.isEmpty else { return }
        defer { pictureID = (pictureID + 1) & 0x7FFF }
        let chunk = maxPayloadSize - Self.descriptorLength
        var offset = 0
        while offset < frame.count {
            let end = min(offset + chunk, frame.count)
            scratch.removeAll(keepingCapacity: true)
            scratch.append(offset == 0 ? 0x90 : 0x80)  // X, S (first), PID 0
            scratch.append(0x80)  // I
            scratch.append(0x80 | UInt8(pictureID >> 8))  // M = 1: 15-bit PictureID
            scratch.append(UInt8(pictureID & 0xFF))
            scratch.append(contentsOf: frame[offset..<end])
            try scratch.withUnsafeBytes { try emit($0, end == frame.count) }
            offset = end
        }
    }
}
