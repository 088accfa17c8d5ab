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
/// ```swift
/// let packet = try RTPPacket(parsing: datagram)
/// if let delay = packet.playoutDelay(id: 6) { … }
/// depacketizer.push(packet.payload, …)
/// ```
///
/// - Complexity: O(1) plus O(number of CSRCs); header-extension elements are read on demand.
public struct RTPPacket: @unchecked Sendable {
    /// The whole packet as received.
    public let bytes: UnsafeRawBufferPointer
    /// The M bit: for video, the last packet of a frame.
    public let marker: Bool
    /// The payload type (0…127).
    public let payloadType: UInt8
    public let sequenceNumber: SequenceNumber
    public let timestamp: RTPTimestamp
    /// The synchronization source.
    public let ssrc: UInt32
    /// The number of contributing sources (0…15).
    public let csrcCount: Int
    /// The header extension's profile (0xBEDE one-byte, 0x100x two-byte, others opaque), or nil.
    public let extensionProfile: UInt16?
    /// The header extension's data (after its 4-byte header), empty without an extension.
    public let extensionData: UnsafeRawBufferPointer
    /// The payload, without header, extension or padding.
    public let payload: UnsafeRawBufferPointer
    /// The number of padding bytes at the end (0 without padding).
    public let paddingLength: Int

    /// The fixed header's length: 12 bytes.
    public static let fixedHeaderLength = 12

    /// Parses `bytes` as an RTP packet.
    ///
    /// - Throws: ``RTPParseError`` for anything that is not a well-formed RTP version-2 packet.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(RTPParseError) {
        let count = bytes.count
        guard count >= Self.fixedHeaderLength else { throw .truncated(needed: Self.fixedHeaderLength, available: count) }
        let first = bytes[0]
        let version = first >> 6
        guard version == 2 else { throw .unsupportedVersion(version) }
        let hasPadding = first & 0x20 != 0
        let hasExtension = first & 0x10 != 0
        csrcCount = Int(first & 0x0F)
        marker = bytes[1] & 0x80 != 0
        payloadType = bytes[1] & 0x7F
        sequenceNumber = SequenceNumber(rawValue: bytes.loadBigEndian(UInt16.self, at: 2))
        timestamp = RTPTimestamp(rawValue: bytes.loadBigEndian(UInt32.self, at: 4))
        ssrc = bytes.loadBigEndian(UInt32.self, at: 8)
        var offset = Self.fixedHeaderLength + 4 * csrcCount
        guard count >= offset else { throw .truncated(needed: offset, available: count) }
        if hasExtension {
            guard count >= offset + 4 else { throw .truncated(needed: offset + 4, available: count) }
            extensionProfile = bytes.loadBigEndian(UInt16.self, at: offset)
            let length = 4 * Int(bytes.loadBigEndian(UInt16.self, at: offset + 2))
            let start = offset + 4
            guard count >= start + length else { throw .truncated(needed: start + length, available: count) }
            extensionData = UnsafeRawBufferPointer(rebasing: bytes[start..<start + length])
            offset = start + length
        } else {
            extensionProfile = nil
            extensionData = UnsafeRawBufferPointer(start: nil, count: 0)
        }
        var end = count
        if hasPadding {
            let padding = Int(bytes[count - 1])
            guard padding > 0, padding <= count - offset else {
                throw .invalidPadding(count: padding, available: count - offset)
            }
            end -= padding
            paddingLength = padding
        } else {
            paddingLength = 0
        }
        self.bytes = bytes
        payload = UnsafeRawBufferPointer(rebasing: bytes[offset..<end])
    }

    /// The length of the header including CSRCs and extension: where the payload starts.
    public var headerLength: Int {
        bytes.count - payload.count - paddingLength
    }

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
