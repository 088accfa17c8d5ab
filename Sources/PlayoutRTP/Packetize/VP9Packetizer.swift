/// VP9 over RTP (RFC 9628) in non-flexible mode with one spatial and temporal layer: every
/// payload starts with a descriptor carrying I = 1 and a 15-bit PictureID that counts frames, P on
/// frames that are not key frames, B on a frame's first payload and E on its last. A key frame's
/// first payload also carries a scalability structure (V = 1, §4.2.1) with its resolution, read
/// from the VP9 uncompressed header (omitted when the header cannot be read).
///
/// Input frames are raw VP9 frames or superframes, as in IVF files; a superframe is one frame here.
public struct VP9Packetizer: Packetizer {
    /// The longest descriptor written: the first byte, a 15-bit PictureID, and a scalability
    /// structure with one resolution.
    static let maxDescriptorLength = 8

    public let maxPayloadSize: Int
    /// The PictureID of the next frame (15 bits, wraps).
    public private(set) var pictureID: UInt16
    private var scratch: [UInt8] = []

    /// Creates a packetizer producing payloads of at most `maxPayloadSize` bytes (≥ 9), numbering
    /// frames from `firstPictureID` (taken modulo 2¹⁵).
    public init(maxPayloadSize: Int = PacketizerDefaults.maxPayloadSize, firstPictureID: UInt16 = 0) {
        precondition(maxPayloadSize > Self.maxDescriptorLength, "a payload must hold the descriptor and some data")
        self.maxPayloadSize = maxPayloadSize
        pictureID = firstPictureID & 0x7FFF
        scratch.reserveCapacity(maxPayloadSize)
    }

    /// Emits `frame` (a raw VP9 frame) as payloads; nothing for an empty frame.
    public mutating func packetize(
        _ frame: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer, Bool) throws -> Void
    ) rethrows {
        guard !frame.isEmpty else { return }
        defer { pictureID = (pictureID + 1) & 0x7FFF }
        let header = VP9FrameHeader(parsing: frame)
        let isKeyFrame = header?.isKeyFrame ?? false
        var offset = 0
        while offset < frame.count {
            scratch.removeAll(keepingCapacity: true)
            let isFirst = offset == 0
            var flags: UInt8 = 0x80  // I
            if !isKeyFrame { flags |= 0x40 }  // P
            if isFirst { flags |= 0x08 }  // B
            scratch.append(flags)
            scratch.append(0x80 | UInt8(pictureID >> 8))  // M = 1: 15-bit PictureID
            scratch.append(UInt8(pictureID & 0xFF))
            if isFirst, isKeyFrame, let width = header?.width, let height = header?.height {
                scratch[0] |= 0x02  // V
                scratch.append(0x10)  // N_S = 0 (one spatial layer), Y = 1, G = 0
                scratch.append(UInt8(width >> 8))
                scratch.append(UInt8(width & 0xFF))
                scratch.append(UInt8(height >> 8))
                scratch.append(UInt8(height & 0xFF))
            }
            let end = min(offset + maxPayloadSize - scratch.count, frame.count)
            if end == frame.count { scratch[0] |= 0x04 }  // E
            scratch.append(contentsOf: frame[offset..<end])
            try scratch.withUnsafeBytes { try emit($0, end == frame.count) }
            offset = end
        }
    }
}
