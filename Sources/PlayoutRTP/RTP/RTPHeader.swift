public import PlayoutCore

/// What parsing an RTP packet (RFC 3550 §5.1) found: the header's fields, and where the CSRCs,
/// the header extension, the payload and the padding lie in the packet's bytes.
///
/// A value exists only as the result of a successful parse (``RTPPacket/header``), so its offsets
/// are valid for any copy of the bytes it was parsed from. The receive path keeps it beside its
/// copy of a packet's bytes, so that when the jitter buffer releases the packet it is rebuilt with
/// ``RTPPacket/init(header:bytes:)`` instead of being parsed again.
///
/// ```swift
/// let packet = try RTPPacket(parsing: datagram)
/// let stored = pool.store(packet)            // bytes copied once, header kept beside them
/// // … later, in sequence order:
/// stored.withPacket { depacketizer.push($0, arrival: arrival, emit: handle) }
/// ```
public struct RTPHeader: Equatable, Sendable {
    // Stored compactly (the jitter buffer holds one per queued packet and moves it on release):
    // offsets in the header fit 32 bits, since an extension is at most 4 × 65,535 bytes.
    @usableFromInline let packetSize: Int
    @usableFromInline let payloadStart: UInt32
    @usableFromInline let extensionLength: UInt32
    @usableFromInline let extensionStart: UInt8
    @usableFromInline let padding: UInt8
    @usableFromInline let contributors: UInt8

    /// The M bit: for video, the last packet of a frame.
    public let marker: Bool
    /// The payload type (0…127).
    public let payloadType: UInt8
    public let sequenceNumber: SequenceNumber
    public let timestamp: RTPTimestamp
    /// The synchronization source.
    public let ssrc: UInt32
    /// The header extension's profile (0xBEDE one-byte, 0x100x two-byte, others opaque), or nil.
    public let extensionProfile: UInt16?

    /// The number of contributing sources (0…15).
    @inlinable public var csrcCount: Int { Int(contributors) }
    /// Where the header extension's data (after its 4-byte header) lies; empty without one.
    @inlinable public var extensionRange: Range<Int> { Int(extensionStart)..<Int(extensionStart) + Int(extensionLength) }
    /// Where the payload lies (after the header, CSRCs and extension; before the padding).
    @inlinable public var payloadRange: Range<Int> { Int(payloadStart)..<packetSize - Int(padding) }
    /// The number of padding bytes at the end (0 without padding).
    @inlinable public var paddingLength: Int { Int(padding) }
    /// The whole packet's length, in bytes.
    @inlinable public var packetLength: Int { packetSize }
    /// The length of the header including CSRCs and extension: where the payload starts.
    @inlinable public var headerLength: Int { Int(payloadStart) }

    /// An empty header (a zero-length packet's), for storage not yet filled.
    @usableFromInline static let placeholder = RTPHeader()

    private init() {
        packetSize = 0
        payloadStart = 0
        extensionLength = 0
        extensionStart = 0
        padding = 0
        contributors = 0
        marker = false
        payloadType = 0
        sequenceNumber = SequenceNumber(rawValue: 0)
        timestamp = RTPTimestamp(rawValue: 0)
        ssrc = 0
        extensionProfile = nil
    }

    /// Parses the header of the RTP packet `bytes` and checks that every part it declares fits.
    ///
    /// - Throws: ``RTPParseError`` for anything that is not a well-formed RTP version-2 packet.
    init(parsing bytes: UnsafeRawBufferPointer) throws(RTPParseError) {
        let count = bytes.count
        let fixed = RTPPacket.fixedHeaderLength
        guard count >= fixed else { throw .truncated(needed: fixed, available: count) }
        let first = bytes[0]
        let version = first >> 6
        guard version == 2 else { throw .unsupportedVersion(version) }
        let hasPadding = first & 0x20 != 0
        let hasExtension = first & 0x10 != 0
        contributors = first & 0x0F
        marker = bytes[1] & 0x80 != 0
        payloadType = bytes[1] & 0x7F
        sequenceNumber = SequenceNumber(rawValue: bytes.loadBigEndian(UInt16.self, at: 2))
        timestamp = RTPTimestamp(rawValue: bytes.loadBigEndian(UInt32.self, at: 4))
        ssrc = bytes.loadBigEndian(UInt32.self, at: 8)
        var offset = fixed + 4 * Int(contributors)
        guard count >= offset else { throw .truncated(needed: offset, available: count) }
        if hasExtension {
            guard count >= offset + 4 else { throw .truncated(needed: offset + 4, available: count) }
            extensionProfile = bytes.loadBigEndian(UInt16.self, at: offset)
            let length = 4 * Int(bytes.loadBigEndian(UInt16.self, at: offset + 2))
            let start = offset + 4
            guard count >= start + length else { throw .truncated(needed: start + length, available: count) }
            extensionStart = UInt8(start)  // at most 12 + 60 + 4
            extensionLength = UInt32(length)
            offset = start + length
        } else {
            extensionProfile = nil
            extensionStart = UInt8(offset)
            extensionLength = 0
        }
        if hasPadding {
            let padding = Int(bytes[count - 1])
            guard padding > 0, padding <= count - offset else {
                throw .invalidPadding(count: padding, available: count - offset)
            }
            self.padding = UInt8(padding)
        } else {
            padding = 0
        }
        payloadStart = UInt32(offset)  // at most 76 + 4 × 65,535
        packetSize = count
    }
}
