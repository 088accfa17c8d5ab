public import PlayoutCore

/// Why an RTP packet could not be written.
public enum RTPWriteError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The destination buffer is smaller than the packet.
    case bufferTooSmall(needed: Int, available: Int)
    /// More than 15 CSRCs.
    case tooManyCSRCs(Int)
    /// An extension element that neither RFC 8285 form can carry (ID 0 or 255, or over 255 bytes).
    case invalidExtension(id: UInt8, length: Int)
    /// Padding outside 0…255 bytes.
    case invalidPadding(Int)
    /// A payload type above 127.
    case invalidPayloadType(UInt8)

    public var description: String {
        switch self {
        case .bufferTooSmall(let needed, let available):
            return "RTP packet needs \(needed) bytes, the buffer has \(available)"
        case .tooManyCSRCs(let count):
            return "an RTP packet carries at most 15 CSRCs, not \(count)"
        case .invalidExtension(let id, let length):
            return "RTP header extension element id \(id) with \(length) bytes cannot be encoded (ids 1…254, up to 255 bytes)"
        case .invalidPadding(let count):
            return "RTP padding must be 0…255 bytes, not \(count)"
        case .invalidPayloadType(let type):
            return "RTP payload type must be 0…127, not \(type)"
        }
    }
}

/// The header of an RTP packet to write (RFC 3550 §5.1, RFC 8285 extensions).
///
/// Extensions use the one-byte form when every element fits it (IDs 1…14, 1…16 bytes) and the
/// two-byte form otherwise. Reuse one builder per stream and change the fields per packet; writing
/// into a caller-owned buffer allocates nothing.
///
/// ```swift
/// var header = RTPPacketBuilder(payloadType: 96, ssrc: 0x1234)
/// header.sequenceNumber = 7
/// let length = try header.write(payload: nal, into: datagram)
/// ```
public struct RTPPacketBuilder: Equatable, Sendable {
    /// One header-extension element to write.
    public struct Extension: Equatable, Sendable {
        public var id: UInt8
        public var bytes: [UInt8]

        public init(id: UInt8, bytes: [UInt8]) {
            self.id = id
            self.bytes = bytes
        }
    }

    public var marker: Bool
    public var payloadType: UInt8
    public var sequenceNumber: SequenceNumber
    public var timestamp: RTPTimestamp
    public var ssrc: UInt32
    public var csrcs: [UInt32]
    public var extensions: [Extension]
    /// Padding bytes to append (0…255); the last one holds the count (RFC 3550 §5.1).
    public var padding: Int

    public init(
        marker: Bool = false, payloadType: UInt8, sequenceNumber: SequenceNumber = 0, timestamp: RTPTimestamp = 0,
        ssrc: UInt32, csrcs: [UInt32] = [], extensions: [Extension] = [], padding: Int = 0
    ) {
        self.marker = marker
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.csrcs = csrcs
        self.extensions = extensions
        self.padding = padding
    }

    var usesOneByteExtensions: Bool {
        extensions.allSatisfy { (1...14).contains($0.id) && (1...16).contains($0.bytes.count) }
    }

    /// The length of the extension data after its 4-byte header, padded to 32 bits.
    var extensionDataLength: Int {
        let perElement = usesOneByteExtensions ? 1 : 2
        let raw = extensions.reduce(0) { $0 + perElement + $1.bytes.count }
        return (raw + 3) & ~3
    }

    /// The length of the header (fixed part, CSRCs, extension).
    public var headerLength: Int {
        RTPPacket.fixedHeaderLength + 4 * csrcs.count + (extensions.isEmpty ? 0 : 4 + extensionDataLength)
    }

    /// The length of a packet with a payload of `payloadCount` bytes.
    public func packetLength(payloadCount: Int) -> Int {
        headerLength + payloadCount + padding
    }

    /// Writes the packet with `payload` into `buffer` and returns its length.
    public func write(payload: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer) throws(RTPWriteError) -> Int {
        guard csrcs.count <= 15 else { throw .tooManyCSRCs(csrcs.count) }
        guard (0...255).contains(padding) else { throw .invalidPadding(padding) }
        guard payloadType <= 127 else { throw .invalidPayloadType(payloadType) }
        for element in extensions where element.id == 0 || element.id == 255 || element.bytes.count > 255 {
            throw .invalidExtension(id: element.id, length: element.bytes.count)
        }
        let length = packetLength(payloadCount: payload.count)
        guard buffer.count >= length else { throw .bufferTooSmall(needed: length, available: buffer.count) }
        buffer[0] = 0x80 | (padding > 0 ? 0x20 : 0) | (extensions.isEmpty ? 0 : 0x10) | UInt8(csrcs.count)
        buffer[1] = (marker ? 0x80 : 0) | payloadType
        buffer.storeBigEndian(sequenceNumber.rawValue, at: 2)
        buffer.storeBigEndian(timestamp.rawValue, at: 4)
        buffer.storeBigEndian(ssrc, at: 8)
        var offset = RTPPacket.fixedHeaderLength
        for csrc in csrcs {
            buffer.storeBigEndian(csrc, at: offset)
            offset += 4
        }
        if !extensions.isEmpty {
            let oneByte = usesOneByteExtensions
            let dataLength = extensionDataLength
            buffer.storeBigEndian(oneByte ? RTPHeaderExtensionElements.oneByteProfile : RTPHeaderExtensionElements.twoByteProfile, at: offset)
            buffer.storeBigEndian(UInt16(dataLength / 4), at: offset + 2)
            offset += 4
            let end = offset + dataLength
            for element in extensions {
                if oneByte {
                    buffer[offset] = element.id << 4 | UInt8(element.bytes.count - 1)
                    offset += 1
                } else {
                    buffer[offset] = element.id
                    buffer[offset + 1] = UInt8(element.bytes.count)
                    offset += 2
                }
                for byte in element.bytes {
                    buffer[offset] = byte
                    offset += 1
                }
            }
            while offset < end {
                buffer[offset] = 0
                offset += 1
            }
        }
        if payload.count > 0 {
            UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<offset + payload.count]).copyMemory(from: payload)
        }
        offset += payload.count
        if padding > 0 {
            for index in offset..<offset + padding - 1 { buffer[index] = 0 }
            buffer[offset + padding - 1] = UInt8(padding)
        }
        return length
    }

    /// The packet with `payload` as a new array (allocates; for tests and tools).
    public func serialized(payload: some Collection<UInt8>) throws(RTPWriteError) -> [UInt8] {
        let payload = Array(payload)
        var output = [UInt8](repeating: 0, count: packetLength(payloadCount: payload.count))
        let result: Result<Int, RTPWriteError> = payload.withUnsafeBytes { source in
            output.withUnsafeMutableBytes { destination in
                Result { () throws(RTPWriteError) -> Int in try write(payload: source, into: destination) }
            }
        }
        _ = try result.get()
        return output
    }
}
