public import PlayoutCore

/// AAC over RTP as MPEG4-GENERIC (RFC 3640) in AAC-hbr mode, as `ffmpeg -c:a aac -f rtp` sends it:
/// each payload starts with the AU-headers-length (16 bits, in bits) and one AU header per access
/// unit — AU-size (`sizeLength` bits) and AU-Index / AU-Index-delta — then the access units.
/// Several access units in one packet become several frames, each `samplesPerAccessUnit` ticks
/// after the previous one (§3.2.3.2); an access unit larger than a packet arrives fragmented, every
/// fragment repeating its AU header with the whole size (§3.2.3.2), the marker on the last, and is
/// reassembled. Frames are raw AAC access units (no ADTS header); every frame is a key frame.
///
/// Interleaving (a non-zero AU-Index or AU-Index-delta), CTS/DTS deltas and auxiliary data are not
/// supported: such packets are counted as malformed. The SDP's `sizelength`, `indexlength` and
/// `indexdeltalength` are passed in as numbers.
public struct AACDepacketizer: Depacketizer {
    /// AAC-hbr's AU-size width: 13 bits (RFC 3640 §3.3.6).
    public static let defaultSizeLength = 13
    /// AAC-hbr's AU-Index width: 3 bits (RFC 3640 §3.3.6).
    public static let defaultIndexLength = 3
    /// AAC-hbr's AU-Index-delta width: 3 bits (RFC 3640 §3.3.6).
    public static let defaultIndexDeltaLength = 3
    /// Samples per AAC-LC access unit (one frame of 1,024 samples).
    public static let defaultSamplesPerAccessUnit = 1_024

    private var assembler: FrameAssembler
    private let sizeLength: Int
    private let indexLength: Int
    private let indexDeltaLength: Int
    private let samplesPerAccessUnit: Int64
    /// The whole size of the fragmented access unit in progress.
    private var fragmentedSize = 0
    /// Sizes of the access units of the current packet (reused).
    private var sizes: [Int] = []

    public var codec: Codec { .aac }
    public var statistics: DepacketizerStatistics { assembler.statistics }

    public mutating func recycle(_ bytes: consuming [UInt8]) {
        assembler.recycle(bytes)
    }

    /// Creates a depacketizer for one track. `clockRate` is the SDP's sampling rate
    /// (`a=rtpmap:97 MPEG4-GENERIC/48000/2`); the field lengths are the SDP's `sizelength`,
    /// `indexlength` and `indexdeltalength` (1…16 bits for the size, 0…16 for the indices).
    public init(
        track: TrackID, clockRate: Int32, sizeLength: Int = AACDepacketizer.defaultSizeLength,
        indexLength: Int = AACDepacketizer.defaultIndexLength, indexDeltaLength: Int = AACDepacketizer.defaultIndexDeltaLength,
        samplesPerAccessUnit: Int = AACDepacketizer.defaultSamplesPerAccessUnit
    ) {
        precondition((1...16).contains(sizeLength), "sizelength is 1…16 bits")
        precondition((0...16).contains(indexLength) && (0...16).contains(indexDeltaLength), "index lengths are 0…16 bits")
        assembler = FrameAssembler(track: track, codec: .aac, clockRate: clockRate)
        self.sizeLength = sizeLength
        self.indexLength = indexLength
        self.indexDeltaLength = indexDeltaLength
        self.samplesPerAccessUnit = Int64(samplesPerAccessUnit)
        sizes.reserveCapacity(64)
    }

    public mutating func push(_ packet: RTPPacket, arrival: MonotonicInstant, emit: (EncodedFrame) -> Void) {
        let (start, completed) = assembler.begin(packet, arrival: arrival)
        if let completed { emit(completed) }
        guard start != .drop else { return }
        let payload = packet.payload
        guard let dataOffset = parseHeaders(payload) else {
            assembler.malformed()
            return finishIfMarked(packet, emit)
        }
        let data = UnsafeRawBufferPointer(rebasing: payload[dataOffset...])
        let total = sizes.reduce(0, +)
        if sizes.count == 1, sizes[0] > data.count {
            // A fragment of an access unit larger than a packet.
            if !assembler.fragmentOpen || fragmentedSize != sizes[0] {
                if start == .sameFrame, !assembler.bytes.isEmpty { assembler.isDamaged = true }
                assembler.bytes.removeAll(keepingCapacity: true)
                assembler.fragmentOpen = true
                fragmentedSize = sizes[0]
            }
            assembler.bytes.append(contentsOf: data)
            assembler.isKeyframe = true
            if assembler.bytes.count > fragmentedSize {
                assembler.malformed()
            } else if assembler.bytes.count == fragmentedSize {
                assembler.fragmentOpen = false
                if let frame = assembler.finish() { emit(frame) }
                return
            }
            return finishIfMarked(packet, emit)
        }
        guard total == data.count else {
            assembler.malformed()
            return finishIfMarked(packet, emit)
        }
        if start == .sameFrame, assembler.fragmentOpen || !assembler.bytes.isEmpty {
            // Whole access units under the timestamp of an unfinished fragmented one.
            assembler.isDamaged = true
            if let frame = assembler.finishAndContinue(advancingBy: 0) { emit(frame) }
        }
        var offset = 0
        for (index, size) in sizes.enumerated() {
            assembler.bytes.append(contentsOf: data[offset..<offset + size])
            assembler.isKeyframe = true
            offset += size
            if index < sizes.count - 1 {
                if let frame = assembler.finishAndContinue(advancingBy: samplesPerAccessUnit) { emit(frame) }
            } else if let frame = assembler.finish() {
                emit(frame)
            }
        }
    }

    public mutating func flush(emit: (EncodedFrame) -> Void) {
        if let frame = assembler.finish() { emit(frame) }
    }

    private mutating func finishIfMarked(_ packet: RTPPacket, _ emit: (EncodedFrame) -> Void) {
        guard packet.marker, let frame = assembler.finish() else { return }
        emit(frame)
    }

    /// Reads the AU header section into ``sizes`` and returns where the access units start, or
    /// nil when the section is malformed or uses interleaving.
    private mutating func parseHeaders(_ payload: UnsafeRawBufferPointer) -> Int? {
        sizes.removeAll(keepingCapacity: true)
        guard payload.count >= 2 else { return nil }
        let headerBits = Int(payload[0]) << 8 | Int(payload[1])
        let headerBytes = (headerBits + 7) / 8
        guard headerBits > 0, 2 + headerBytes <= payload.count else { return nil }
        var reader = BitReader(UnsafeRawBufferPointer(rebasing: payload[2..<2 + headerBytes]))
        while reader.position < headerBits {
            let indexBits = sizes.isEmpty ? indexLength : indexDeltaLength
            guard reader.position + sizeLength + indexBits <= headerBits,
                  let size = reader.read(sizeLength), let index = reader.read(indexBits),
                  size > 0, index == 0
            else { return nil }
            sizes.append(size)
        }
        return 2 + headerBytes
    }
}
