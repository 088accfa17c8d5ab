import PlayoutCore

/// One element of an RFC 8285 header extension.
public struct RTPHeaderExtensionElement: @unchecked Sendable {
    /// The element's ID (1…14 in the one-byte form, 1…255 in the two-byte form).
    public let id: UInt8
    /// The element's data, a view into the packet.
    public let data: UnsafeRawBufferPointer
}

/// The elements of an RTP header extension in either RFC 8285 form, read lazily from the packet.
///
/// One-byte form (profile 0xBEDE): each element is `ID(4 bits) | length−1 (4 bits)` then data;
/// ID 0 is a padding byte, ID 15 ends processing. Two-byte form (profile 0x100x): `ID, length`,
/// then data; ID 0 is a padding byte. A malformed element (running past the block) ends the
/// iteration: what was well-formed before it is still returned. Other profiles have no elements.
public struct RTPHeaderExtensionElements: Sequence, @unchecked Sendable {
    /// RFC 8285 one-byte header profile.
    public static let oneByteProfile: UInt16 = 0xBEDE
    /// RFC 8285 two-byte header profile (the low 4 bits are application bits).
    public static let twoByteProfile: UInt16 = 0x1000

    let form: Form?
    let data: UnsafeRawBufferPointer

    enum Form {
        case oneByte, twoByte
    }

    init(profile: UInt16?, data: UnsafeRawBufferPointer) {
        switch profile {
        case Self.oneByteProfile?: form = .oneByte
        case let value? where value & 0xFFF0 == Self.twoByteProfile: form = .twoByte
        default: form = nil
        }
        self.data = data
    }

    public struct Iterator: IteratorProtocol {
        let form: Form?
        let data: UnsafeRawBufferPointer
        var offset = 0

        public mutating func next() -> RTPHeaderExtensionElement? {
            guard let form else { return nil }
            while offset < data.count {
                let byte = data[offset]
                if byte == 0 {  // padding
                    offset += 1
                    continue
                }
                let id: UInt8
                let length: Int
                let start: Int
                switch form {
                case .oneByte:
                    id = byte >> 4
                    if id == 15 { offset = data.count; return nil }
                    length = Int(byte & 0x0F) + 1
                    start = offset + 1
                case .twoByte:
                    guard offset + 1 < data.count else { offset = data.count; return nil }
                    id = byte
                    length = Int(data[offset + 1])
                    start = offset + 2
                }
                guard start + length <= data.count else { offset = data.count; return nil }
                offset = start + length
                return RTPHeaderExtensionElement(id: id, data: UnsafeRawBufferPointer(rebasing: data[start..<start + length]))
            }
            return nil
        }
    }

    public func makeIterator() -> Iterator {
        Iterator(form: form, data: data)
    }
}

/// The `abs-capture-time` header extension
/// (`http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time`): when the frame was captured,
/// on the capturer's NTP clock, and optionally that clock's estimated offset from the sender's.
public struct AbsoluteCaptureTime: Equatable, Sendable {
    /// The extension's URI, as it appears in `a=extmap`.
    public static let uri = "http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time"

    /// Capture time as a 64-bit NTP timestamp (UQ32.32 seconds since 1900).
    public var captureTimestamp: UInt64
    /// Estimated offset of the capturer's clock from the sender's (Q32.32 seconds), if sent.
    public var estimatedCaptureClockOffset: Int64?

    public init(captureTimestamp: UInt64, estimatedCaptureClockOffset: Int64? = nil) {
        self.captureTimestamp = captureTimestamp
        self.estimatedCaptureClockOffset = estimatedCaptureClockOffset
    }

    /// Reads the 8- or 16-byte element data; nil for any other length.
    public init?(parsing data: UnsafeRawBufferPointer) {
        guard data.count == 8 || data.count == 16 else { return nil }
        captureTimestamp = data.loadBigEndian(UInt64.self, at: 0)
        estimatedCaptureClockOffset = data.count == 16 ? data.loadBigEndian(Int64.self, at: 8) : nil
    }

    /// The element data (8 or 16 bytes).
    public var bytes: [UInt8] {
        var bytes = withUnsafeBytes(of: captureTimestamp.bigEndian, Array.init)
        if let offset = estimatedCaptureClockOffset {
            bytes += withUnsafeBytes(of: offset.bigEndian, Array.init)
        }
        return bytes
    }
}

/// The `playout-delay` header extension
/// (`http://www.webrtc.org/experiments/rtp-hdrext/playout-delay`): the sender's minimum and maximum
/// playout delay, each 12 bits in units of 10 ms (0…40.95 s).
public struct PlayoutDelayLimits: Equatable, Sendable {
    /// The extension's URI, as it appears in `a=extmap`.
    public static let uri = "http://www.webrtc.org/experiments/rtp-hdrext/playout-delay"
    /// The unit of both fields: 10 ms.
    public static let granularity: Duration = .milliseconds(10)
    /// The largest value either field can carry: 4095 × 10 ms.
    public static let maximumValue: Duration = .milliseconds(40_950)

    public var minimum: Duration
    public var maximum: Duration

    /// Creates limits; values are rounded down to 10 ms and clamped to 0…40.95 s on the wire.
    public init(minimum: Duration, maximum: Duration) {
        self.minimum = minimum
        self.maximum = maximum
    }

    /// Reads the 3-byte element data; nil for any other length.
    public init?(parsing data: UnsafeRawBufferPointer) {
        guard data.count == 3 else { return nil }
        let raw = UInt32(data[0]) << 16 | UInt32(data[1]) << 8 | UInt32(data[2])
        minimum = .milliseconds(10 * Int64(raw >> 12))
        maximum = .milliseconds(10 * Int64(raw & 0xFFF))
    }

    /// The 3-byte element data.
    public var bytes: [UInt8] {
        func units(_ duration: Duration) -> UInt32 {
            UInt32(min(max(duration.nanoseconds / 10_000_000, 0), 4_095))
        }
        let raw = units(minimum) << 12 | units(maximum)
        return [UInt8(raw >> 16), UInt8((raw >> 8) & 0xFF), UInt8(raw & 0xFF)]
    }
}
