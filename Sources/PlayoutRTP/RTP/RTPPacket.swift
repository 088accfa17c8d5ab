public import PlayoutCore

/// Why bytes could not be parsed as an RTP packet. Every case carries numbers a caller can act on.
public enum RTPParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Fewer bytes than the header (or a declared part of it) needs.
    case truncated(needed: Int, available: Int)
    /// The version field is not 2.
    case unsupportedVersion(UInt8)
    /// The padding count is zero or larger than what follows the header.
    case invalidPadding(count: Int, available: Int)

    public var description: String {
        switch self {
        case .truncated(let needed, let available):
            return "RTP packet truncated: needs \(needed) bytes, has \(available)"
        case .unsupportedVersion(let version):
            return "RTP version \(version) is not supported (only version 2)"
        case .invalidPadding(let count, let available):
            return "RTP padding of \(count) bytes does not fit the \(available) bytes after the header"
        }
    }
}

/// An RTP packet (RFC 3550 §5.1) parsed in place: a view into the received bytes, never a copy.
///
/// The packet's `payload`, CSRCs and header extension are read from the buffer it was parsed from,
/// so that buffer must stay alive and unchanged while the packet is used — the receive loop's
/// datagram buffer, typically. Parsing allocates nothing.
///
/// What parsing found is one ``RTPHeader`` value (``header``): kept beside a copy of the bytes,
/// it rebuilds the packet later without parsing again (``init(header:bytes:)``), which is how the
/// jitter buffer hands stored packets to a depacketizer.
///
/// ```swift
/// let packet = try RTPPacket(parsing: datagram)
/// if let delay = packet.playoutDelay(id: 6) { … }
/// depacketizer.push(packet.payload, …)
/// ```
///
/// - Complexity: O(1); header-extension elements and CSRCs are read on demand.
public struct RTPPacket: @unchecked Sendable {
    /// The whole packet as received.
    public let bytes: UnsafeRawBufferPointer
    /// The header's fields and where the packet's parts lie, as parsed.
    public let header: RTPHeader

    /// The fixed header's length: 12 bytes.
    public static let fixedHeaderLength = 12

    /// Parses `bytes` as an RTP packet.
    ///
    /// - Throws: ``RTPParseError`` for anything that is not a well-formed RTP version-2 packet.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(RTPParseError) {
        header = try RTPHeader(parsing: bytes)
        self.bytes = bytes
    }

    /// The packet `header` was parsed from, rebuilt over `bytes` — a copy of the bytes it was
    /// parsed from — without parsing again.
    ///
    /// - Precondition: `bytes.count == header.packetLength` (the header's offsets were checked
    ///   against that length when it was parsed, so they are valid in any copy of the packet).
    @inlinable
    public init(header: RTPHeader, bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count == header.packetLength, "\(bytes.count) bytes for a \(header.packetLength)-byte RTP packet")
        self.header = header
        self.bytes = bytes
    }

    /// The M bit: for video, the last packet of a frame.
    @inlinable public var marker: Bool { header.marker }
    /// The payload type (0…127).
    @inlinable public var payloadType: UInt8 { header.payloadType }
    @inlinable public var sequenceNumber: SequenceNumber { header.sequenceNumber }
    @inlinable public var timestamp: RTPTimestamp { header.timestamp }
    /// The synchronization source.
    @inlinable public var ssrc: UInt32 { header.ssrc }
    /// The number of contributing sources (0…15).
    @inlinable public var csrcCount: Int { header.csrcCount }
    /// The header extension's profile (0xBEDE one-byte, 0x100x two-byte, others opaque), or nil.
    @inlinable public var extensionProfile: UInt16? { header.extensionProfile }
    /// The number of padding bytes at the end (0 without padding).
    @inlinable public var paddingLength: Int { header.paddingLength }

    /// The header extension's data (after its 4-byte header), empty without an extension.
    @inlinable
    public var extensionData: UnsafeRawBufferPointer {
        header.extensionProfile == nil
            ? UnsafeRawBufferPointer(start: nil, count: 0) : UnsafeRawBufferPointer(rebasing: bytes[header.extensionRange])
    }

    /// The payload, without header, extension or padding.
    @inlinable
    public var payload: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: bytes[header.payloadRange])
    }

    /// The length of the header including CSRCs and extension: where the payload starts.
    @inlinable public var headerLength: Int { header.headerLength }

    /// The contributing source at `index` (0 ..< ``csrcCount``).
    public func csrc(at index: Int) -> UInt32 {
        precondition(index >= 0 && index < csrcCount, "CSRC index \(index) out of 0..<\(csrcCount)")
        return bytes.loadBigEndian(UInt32.self, at: Self.fixedHeaderLength + 4 * index)
    }

    /// All contributing sources (allocates; for tests and diagnostics).
    public var csrcs: [UInt32] {
        (0..<csrcCount).map(csrc(at:))
    }

    /// The header extension's elements (RFC 8285), empty when the extension is absent or uses a
    /// profile other than one-byte (0xBEDE) or two-byte (0x100x).
    public var extensionElements: RTPHeaderExtensionElements {
        RTPHeaderExtensionElements(profile: extensionProfile, data: extensionData)
    }

    /// The data of the header-extension element with `id` (as negotiated by `a=extmap`), or nil.
    public func headerExtension(id: UInt8) -> UnsafeRawBufferPointer? {
        for element in extensionElements where element.id == id {
            return element.data
        }
        return nil
    }

    /// The `abs-capture-time` extension with `id`, if present and well-formed.
    public func absoluteCaptureTime(id: UInt8) -> AbsoluteCaptureTime? {
        headerExtension(id: id).flatMap(AbsoluteCaptureTime.init(parsing:))
    }

    /// The `playout-delay` extension with `id`, if present and well-formed.
    public func playoutDelay(id: UInt8) -> PlayoutDelayLimits? {
        headerExtension(id: id).flatMap(PlayoutDelayLimits.init(parsing:))
    }
}

extension UnsafeRawBufferPointer {
    /// Reads a big-endian integer at `offset` (no alignment needed). The caller checks bounds.
    @inlinable
    func loadBigEndian<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        T(bigEndian: loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}

extension UnsafeMutableRawBufferPointer {
    /// Writes `value` big-endian at `offset` (no alignment needed). The caller checks bounds.
    @inlinable
    func storeBigEndian<T: FixedWidthInteger>(_ value: T, at offset: Int) {
        storeBytes(of: value.bigEndian, toByteOffset: offset, as: T.self)
    }
}
