public import PlayoutCore

/// VP8 over RTP (RFC 7741): the payload descriptor (§4.2) is stripped and the partitions are
/// concatenated into the raw VP8 frame, which is what decoders and `ffmpeg -f ivf` take.
///
/// A frame starts with the packet that has S = 1 and partition index 0 and ends with the marker
/// (or a new timestamp). A frame whose start packet was lost is discarded: its first partition,
/// with the frame header, is gone. Key frames are recognized by the VP8 payload header's inverse
/// key frame flag P (§4.3, RFC 6386 §9.1: 0 = key frame).
public struct VP8Depacketizer: Depacketizer {
    /// The payload descriptor's fields (RFC 7741 §4.2), as far as depacketizing needs them.
    struct Descriptor {
        /// S: the packet starts a VP8 partition.
        var isPartitionStart: Bool
        /// PID: the partition index.
        var partitionIndex: UInt8
        /// The 7- or 15-bit PictureID, if present.
        var pictureID: UInt16?
        /// The descriptor's length in bytes.
        var length: Int

        /// Parses the descriptor at the start of `payload`; nil when truncated.
        init?(parsing payload: UnsafeRawBufferPointer) {
            guard let first = payload.first else { return nil }
            isPartitionStart = first & 0x10 != 0
            partitionIndex = first & 0x07
            pictureID = nil
            var offset = 1
            if first & 0x80 != 0 {  // X: the extension byte follows
                guard offset < payload.count else { return nil }
                let extensions = payload[offset]
                offset += 1
                if extensions & 0x80 != 0 {  // I: PictureID, M = 1 for 15 bits
                    guard offset < payload.count else { return nil }
                    if payload[offset] & 0x80 != 0 {
                        guard offset + 1 < payload.count else { return nil }
                        pictureID = UInt16(payload[offset] & 0x7F) << 8 | UInt16(payload[offset + 1])
                        offset += 2
                    } else {
                        pictureID = UInt16(payload[offset])
                        offset += 1
                    }
                }
                if extensions & 0x40 != 0 { offset += 1 }  // L: TL0PICIDX
                if extensions & 0x30 != 0 { offset += 1 }  // T or K: TID | Y | KEYIDX
                guard offset <= payload.count else { return nil }
            }
            length = offset
        }
    }

    /// The RTP clock rate of VP8 (RFC 7741 §6.1).
    public static let defaultClockRate: Int32 = 90_000

    private var assembler: FrameAssembler

    public var codec: Codec { .vp8 }
    public var statistics: DepacketizerStatistics { assembler.statistics }

    public mutating func recycle(_ bytes: consuming [UInt8]) {
        assembler.recycle(bytes)
    }

    /// Creates a depacketizer for one track.
    public init(track: TrackID, clockRate: Int32 = VP8Depacketizer.defaultClockRate) {
        assembler = FrameAssembler(track: track, codec: .vp8, clockRate: clockRate)
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
        let startsFrame = descriptor.isPartitionStart && descriptor.partitionIndex == 0
        if startsFrame {
            if !assembler.bytes.isEmpty {
                // A second frame start under one timestamp: not a stream we can split reliably.
                assembler.malformed()
            }
            // The VP8 payload header's first byte: bit 0 is the inverse key frame flag.
            assembler.isKeyframe = data[0] & 0x01 == 0
        } else if start == .newFrame {
            // The frame's first packet was lost: its frame header is gone.
            assembler.isDamaged = true
        }
        if !assembler.isDamaged { assembler.bytes.append(contentsOf: data) }
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
