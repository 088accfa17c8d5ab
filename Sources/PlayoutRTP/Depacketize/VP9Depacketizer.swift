public import PlayoutCore

/// VP9 over RTP (RFC 9628, and the earlier drafts as ffmpeg and GStreamer send it): the payload
/// descriptor (§4.2) is stripped and the packets from the one with B = 1 (beginning of a frame) to
/// the one with E = 1 (end of a frame) are concatenated into the raw VP9 frame, which is what
/// decoders and `ffmpeg -f ivf` take. Superframes pass through untouched.
///
/// A frame whose beginning or end was lost is discarded. Key frames need B = 1 and P = 0 (not
/// inter-picture predicted) and, when the VP9 uncompressed header can be read, `frame_type` = 0
/// (KEY_FRAME): ffmpeg sends P = 0 on every frame, so the header decides. Spatial layers of one
/// picture (several B…E runs under one timestamp) are concatenated as they come; they are not
/// assembled into a superframe.
public struct VP9Depacketizer: Depacketizer {
    /// The payload descriptor's fields (RFC 9628 §4.2), as far as depacketizing needs them.
    struct Descriptor {
        /// P: inter-picture predicted.
        var isPredicted: Bool
        /// B: the packet starts a frame.
        var isFrameStart: Bool
        /// E: the packet ends a frame.
        var isFrameEnd: Bool
        /// The 7- or 15-bit PictureID, if present.
        var pictureID: UInt16?
        /// The descriptor's length in bytes.
        var length: Int

        /// Parses the descriptor at the start of `payload`; nil when truncated or inconsistent.
        init?(parsing payload: UnsafeRawBufferPointer) {
            guard let first = payload.first else { return nil }
            let hasPictureID = first & 0x80 != 0
            isPredicted = first & 0x40 != 0
            let hasLayerIndices = first & 0x20 != 0
            let isFlexible = first & 0x10 != 0
            isFrameStart = first & 0x08 != 0
            isFrameEnd = first & 0x04 != 0
            let hasScalabilityStructure = first & 0x02 != 0
            pictureID = nil
            var offset = 1
            func byte() -> UInt8? {
                guard offset < payload.count else { return nil }
                defer { offset += 1 }
                return payload[offset]
            }
            if hasPictureID {
                guard let high = byte() else { return nil }
                if high & 0x80 != 0 {
                    guard let low = byte() else { return nil }
                    pictureID = UInt16(high & 0x7F) << 8 | UInt16(low)
                } else {
                    pictureID = UInt16(high)
                }
            }
            if hasLayerIndices {
                guard byte() != nil else { return nil }  // TID | U | SID | D
                if !isFlexible, byte() == nil { return nil }  // TL0PICIDX
            }
            if isFlexible, isPredicted {
                // Up to three reference indices, P_DIFF(7) | N(1): N = 1 means another follows.
                var count = 0
                while true {
                    guard let diff = byte() else { return nil }
                    count += 1
                    if diff & 0x01 == 0 { break }
                    if count == 3 { return nil }
                }
            }
            if hasScalabilityStructure {
                // N_S(3) | Y | G | RSV(3), then N_S + 1 resolutions, then the picture group.
                guard let header = byte() else { return nil }
                let spatialLayers = Int(header >> 5) + 1
                if header & 0x10 != 0 { offset += 4 * spatialLayers }
                if header & 0x08 != 0 {
                    guard let groupSize = byte() else { return nil }
                    for _ in 0..<groupSize {
                        guard let picture = byte() else { return nil }  // T(3) | U | R(2) | RSV(2)
                        offset += Int(picture >> 2 & 0x03)
                    }
                }
                guard offset <= payload.count else { return nil }
            }
            length = offset
        }
    }

    /// The RTP clock rate of VP9 (RFC 9628 §7.1).
    public static let defaultClockRate: Int32 = 90_000

    private var assembler: FrameAssembler

    public var codec: Codec { .vp9 }
    public var statistics: DepacketizerStatistics { assembler.statistics }

    public mutating func recycle(_ bytes: consuming [UInt8]) {
        assembler.recycle(bytes)
    }

    /// Creates a depacketizer for one track.
    public init(track: TrackID, clockRate: Int32 = VP9Depacketizer.defaultClockRate) {
        assembler = FrameAssembler(track: track, codec: .vp9, clockRate: clockRate)
    }

    public mutating func push(_ packet: RTPPacket, arrival: MonotonicInstant, emit: (EncodedFrame) -> Void) {
        let (start, completed) = assembler.begin(packet, arrival: arrival)
        if let completed { emit(completed) }
        guard start != .drop else { return }
        let payload = packet.payload
        guard let descriptor = Descriptor(parsing: payload), descriptor.length < payload.count else {
            assembler.malformed()
            return finishIfMarked(packet, emit)
        }
        let data = UnsafeRawBufferPointer(rebasing: payload[descriptor.length...])
        if descriptor.isFrameStart {
            if assembler.fragmentOpen { assembler.isDamaged = true }  // the previous frame's end was lost
            if start == .newFrame, !descriptor.isPredicted {
                assembler.isKeyframe = VP9FrameHeader(parsing: data)?.isKeyFrame ?? true
            }
            assembler.fragmentOpen = true
        } else if !assembler.fragmentOpen {
            // A middle or end packet without its frame's beginning: the beginning was lost.
            assembler.isDamaged = true
        }
        if !assembler.isDamaged { assembler.bytes.append(contentsOf: data) }
        if descriptor.isFrameEnd { assembler.fragmentOpen = false }
        finishIfMarked(packet, emit)
    }

    public mutating func flush(emit: (EncodedFrame) -> Void) {
        if let frame = assembler.finish() { emit(frame) }
    }

    private mutating func finishIfMarked(_ packet: RTPPacket, _ emit: (EncodedFrame) -> Void) {
        guard packet.marker, let frame = assembler.finish() else { return }
        emit(frame)
    }
}

/// The first fields of a VP9 uncompressed header (VP9 bitstream specification §6.2): enough to
/// tell key frames and, for key frames, the frame size.
struct VP9FrameHeader {
    var profile: Int
    var showExistingFrame: Bool
    var isKeyFrame: Bool
    /// The frame size, for key frames whose header is long enough.
    var width: Int?
    var height: Int?

    /// Parses the header at the start of `frame`; nil unless it starts with frame_marker = 2.
    init?(parsing frame: UnsafeRawBufferPointer) {
        var reader = BitReader(frame)
        guard reader.read(2) == 2 else { return nil }  // frame_marker
        let low = reader.read(1) ?? 0
        let high = reader.read(1) ?? 0
        profile = high << 1 | low
        if profile == 3 { _ = reader.read(1) }  // reserved_zero
        guard let showExisting = reader.read(1) else { return nil }
        showExistingFrame = showExisting == 1
        guard !showExistingFrame else {
            isKeyFrame = false
            return
        }
        guard let frameType = reader.read(1) else { return nil }
        isKeyFrame = frameType == 0
        guard isKeyFrame else { return }
        _ = reader.read(2)  // show_frame, error_resilient_mode
        guard reader.read(24) == 0x49_83_42 else { return }  // frame_sync_code
        if profile >= 2 { _ = reader.read(1) }  // ten_or_twelve_bit
        let colorSpace = reader.read(3)
        if colorSpace != 7 {  // not CS_RGB
            _ = reader.read(1)  // color_range
            if profile == 1 || profile == 3 { _ = reader.read(3) }  // subsampling_x, subsampling_y, reserved_zero
        } else if profile == 1 || profile == 3 {
            _ = reader.read(1)  // reserved_zero
        }
        guard let widthMinusOne = reader.read(16), let heightMinusOne = reader.read(16) else { return }
        width = widthMinusOne + 1
        height = heightMinusOne + 1
    }
}
