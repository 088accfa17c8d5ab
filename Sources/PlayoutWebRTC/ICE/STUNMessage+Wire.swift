import PlayoutRTP

// Parsing and serialization of STUN messages (RFC 8489 §5, §14).

extension STUNMessage {
    /// Whether `bytes` looks like a STUN message, for the RFC 7983 demultiplexer: first byte 0–3,
    /// the magic cookie, a length that is a multiple of 4 and matches the datagram. Reads 8 bytes,
    /// allocates nothing.
    ///
    /// - Complexity: O(1).
    @inlinable
    public static func looksLikeSTUN(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= headerSize, bytes.count <= maximumSize, bytes[0] <= 3 else { return false }
        let length = Int(bytes[2]) << 8 | Int(bytes[3])
        guard length & 3 == 0, length + headerSize == bytes.count else { return false }
        return bytes[4] == 0x21 && bytes[5] == 0x12 && bytes[6] == 0xA4 && bytes[7] == 0x42
    }

    /// ``looksLikeSTUN(_:)-(UnsafeRawBufferPointer)`` for an array.
    public static func looksLikeSTUN(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { looksLikeSTUN($0) }
    }

    /// Parses one STUN message that fills `bytes` exactly.
    public init(parsing bytes: [UInt8]) throws(STUNParseError) {
        let result: Result<STUNMessage, STUNParseError> = bytes.withUnsafeBytes { raw in
            do throws(STUNParseError) { return .success(try STUNMessage(parsing: raw)) } catch { return .failure(error) }
        }
        self = try result.get()
    }

    /// Parses one STUN message that fills `bytes` exactly.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(STUNParseError) {
        let count = bytes.count
        guard count <= Self.maximumSize else { throw .tooLarge(size: count, limit: Self.maximumSize) }
        guard count >= Self.headerSize else { throw .truncated(needed: Self.headerSize, available: count) }
        guard bytes[0] & 0xC0 == 0 else { throw .notSTUN(firstByte: bytes[0]) }
        let cookie = bytes.stunUInt32(at: 4)
        guard cookie == Self.magicCookie else { throw .badMagicCookie(cookie) }
        let length = Int(bytes.stunUInt16(at: 2))
        guard length & 3 == 0, length + Self.headerSize == count else {
            if length + Self.headerSize > count { throw .truncated(needed: length + Self.headerSize, available: count) }
            throw .badLength(declared: length, available: count - Self.headerSize)
        }
        let (messageClass, method) = Self.split(type: bytes.stunUInt16(at: 0) & 0x3FFF)
        let transactionID = STUNTransactionID(high: bytes.stunUInt32(at: 8), low: bytes.stunUInt64(at: 12))
        self.init(class: messageClass, method: method, transactionID: transactionID)

        var offset = Self.headerSize
        var sawIntegrity = false
        var sawFingerprint = false
        var sawPadding = false
        while offset < count {
            guard offset + 4 <= count else { throw .attributeOverrun(type: 0, offset: offset) }
            let type = bytes.stunUInt16(at: offset)
            let valueLength = Int(bytes.stunUInt16(at: offset + 2))
            let valueStart = offset + 4
            let padded = (valueLength + 3) & ~3
            guard valueStart + padded <= count else { throw .attributeOverrun(type: type, offset: offset) }
            if sawFingerprint { throw .attributeAfterFingerprint(type: type) }
            let value = UnsafeRawBufferPointer(rebasing: bytes[valueStart..<(valueStart + valueLength)])
            offset = valueStart + padded
            if sawIntegrity && type != STUNAttribute.Kind.fingerprint { continue }  // RFC 8489 §14.5: ignored
            if padded > valueLength, !sawPadding {
                sawPadding = true
                paddingByte = bytes[valueStart + valueLength]
            }
            let attribute = try Self.parseAttribute(type: type, value: value, transactionID: transactionID)
            switch attribute {
            case .messageIntegrity: sawIntegrity = true
            case .fingerprint: sawFingerprint = true
            case .other(let type, _) where type < 0x8000: unknownComprehensionRequired.append(type)
            default: break
            }
            attributes.append(attribute)
        }
    }

    static func parseAttribute(type: UInt16, value: UnsafeRawBufferPointer, transactionID: STUNTransactionID) throws(STUNParseError) -> STUNAttribute {
        typealias Kind = STUNAttribute.Kind
        func fixed(_ size: Int) throws(STUNParseError) {
            guard value.count == size else { throw .malformedAttribute(type: type, reason: "\(value.count) bytes where \(size) are expected") }
        }
        func text(limit: Int) throws(STUNParseError) -> String {
            guard value.count <= limit else { throw .malformedAttribute(type: type, reason: "\(value.count) bytes, more than \(limit)") }
            guard let string = String(validating: value, as: UTF8.self) else { throw .malformedAttribute(type: type, reason: "not UTF-8") }
            return string
        }
        switch type {
        case Kind.mappedAddress:
            return .mappedAddress(try parseAddress(type: type, value: value, xor: nil))
        case Kind.xorMappedAddress:
            return .xorMappedAddress(try parseAddress(type: type, value: value, xor: transactionID))
        case Kind.username:
            return .username(try text(limit: 513))
        case Kind.messageIntegrity:
            try fixed(20)
            return .messageIntegrity(Array(value))
        case Kind.errorCode:
            guard value.count >= 4 else { throw .malformedAttribute(type: type, reason: "\(value.count) bytes, fewer than 4") }
            guard value[0] == 0, value[1] == 0, value[2] & 0xF8 == 0 else { throw .malformedAttribute(type: type, reason: "reserved bits set") }
            let errorClass = Int(value[2] & 0x07)
            let number = Int(value[3])
            guard (3...6).contains(errorClass), number < 100 else {
                throw .malformedAttribute(type: type, reason: "code \(errorClass * 100 + number) is not 300–699")
            }
            let reasonBytes = UnsafeRawBufferPointer(rebasing: value[4...])
            guard reasonBytes.count <= 763, let reason = String(validating: reasonBytes, as: UTF8.self) else {
                throw .malformedAttribute(type: type, reason: "reason phrase is not UTF-8 of at most 763 bytes")
            }
            return .errorCode(code: errorClass * 100 + number, reason: reason)
        case Kind.unknownAttributes:
            guard value.count.isMultiple(of: 2) else { throw .malformedAttribute(type: type, reason: "odd length \(value.count)") }
            return .unknownAttributes(stride(from: 0, to: value.count, by: 2).map { value.stunUInt16(at: $0) })
        case Kind.priority:
            try fixed(4)
            return .priority(value.stunUInt32(at: 0))
        case Kind.useCandidate:
            try fixed(0)
            return .useCandidate
        case Kind.software:
            return .software(try text(limit: 763))
        case Kind.fingerprint:
            try fixed(4)
            return .fingerprint(value.stunUInt32(at: 0))
        case Kind.iceControlled:
            try fixed(8)
            return .iceControlled(value.stunUInt64(at: 0))
        case Kind.iceControlling:
            try fixed(8)
            return .iceControlling(value.stunUInt64(at: 0))
        default:
            return .other(type: type, value: Array(value))
        }
    }

    static func parseAddress(type: UInt16, value: UnsafeRawBufferPointer, xor: STUNTransactionID?) throws(STUNParseError) -> SocketAddress {
        guard value.count >= 4 else { throw .malformedAttribute(type: type, reason: "\(value.count) bytes, fewer than 4") }
        let family = value[1]
        var port = value.stunUInt16(at: 2)
        var address = Array(value[4...])
        switch (family, address.count) {
        case (0x01, 4), (0x02, 16): break
        default: throw .malformedAttribute(type: type, reason: "family \(family) with \(address.count) address bytes")
        }
        if let xor {
            port ^= UInt16(STUNMessage.magicCookie >> 16)
            let mask = STUNMessage.cookieBytes + xor.bytes
            for index in address.indices { address[index] ^= mask[index] }
        }
        guard let host = ICEAddressBytes.text(address) else { throw .malformedAttribute(type: type, reason: "unprintable address") }
        guard let socketAddress = try? SocketAddress(host: host, port: port) else {
            throw .malformedAttribute(type: type, reason: "address \(host) not usable")
        }
        return socketAddress
    }

    static let cookieBytes: [UInt8] = [0x21, 0x12, 0xA4, 0x42]

    // MARK: Serialization

    /// The message as it is: every attribute in order, MESSAGE-INTEGRITY and FINGERPRINT with
    /// their stored values, padding with ``paddingByte``. A parsed message re-serializes to the
    /// bytes it was parsed from (when its padding was uniform).
    public func encoded() -> [UInt8] {
        var out = header()
        for attribute in attributes { append(attribute, to: &out) }
        Self.setLength(&out)
        return out
    }

    /// The message with MESSAGE-INTEGRITY computed with `integrityKey` (the short-term password's
    /// bytes; none when nil) and FINGERPRINT (when `fingerprint`), appended after the other
    /// attributes; any stored MESSAGE-INTEGRITY and FINGERPRINT are replaced.
    public func encoded(integrityKey: [UInt8]?, fingerprint: Bool) -> [UInt8] {
        var out = header()
        for attribute in attributes {
            switch attribute {
            case .messageIntegrity, .fingerprint: continue
            default: append(attribute, to: &out)
            }
        }
        if let integrityKey {
            let start = out.count
            Self.setLength(&out, extra: 24)
            let mac = STUNIntegrity.hmacSHA1(key: integrityKey, message: out)
            out.append(contentsOf: [0x00, 0x08, 0x00, 0x14])
            out.append(contentsOf: mac)
            precondition(out.count == start + 24)
        }
        if fingerprint {
            Self.setLength(&out, extra: 8)
            let crc = STUNIntegrity.fingerprint(of: out)
            out.append(contentsOf: [0x80, 0x28, 0x00, 0x04])
            out.stunAppend32(crc)
        }
        Self.setLength(&out)
        return out
    }

    private func header() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        out.stunAppend16(messageType)
        out.stunAppend16(0)
        out.stunAppend32(Self.magicCookie)
        out.append(contentsOf: transactionID.bytes)
        return out
    }

    /// Sets the header's length to the bytes after the header plus `extra`.
    static func setLength(_ out: inout [UInt8], extra: Int = 0) {
        let length = out.count - headerSize + extra
        out[2] = UInt8(truncatingIfNeeded: length >> 8)
        out[3] = UInt8(truncatingIfNeeded: length)
    }

    private func append(_ attribute: STUNAttribute, to out: inout [UInt8]) {
        var value: [UInt8] = []
        switch attribute {
        case .mappedAddress(let address): value = Self.addressValue(address, xor: nil)
        case .xorMappedAddress(let address): value = Self.addressValue(address, xor: transactionID)
        case .username(let text), .software(let text): value = Array(text.utf8)
        case .messageIntegrity(let mac): value = mac
        case .errorCode(let code, let reason):
            value = [0, 0, UInt8(truncatingIfNeeded: (code / 100) & 0x7), UInt8(truncatingIfNeeded: code % 100)] + Array(reason.utf8)
        case .unknownAttributes(let types): for type in types { value.stunAppend16(type) }
        case .priority(let priority): value.stunAppend32(priority)
        case .useCandidate: break
        case .fingerprint(let crc): value.stunAppend32(crc)
        case .iceControlled(let tieBreaker), .iceControlling(let tieBreaker): value.stunAppend64(tieBreaker)
        case .other(_, let bytes): value = bytes
        }
        out.stunAppend16(attribute.type)
        out.stunAppend16(UInt16(truncatingIfNeeded: value.count))
        out.append(contentsOf: value)
        let padding = (4 - value.count & 3) & 3
        for _ in 0..<padding { out.append(paddingByte) }
    }

    static func addressValue(_ address: SocketAddress, xor: STUNTransactionID?) -> [UInt8] {
        guard var raw = ICEAddressBytes.bytes(address.host) else { return [0, 0x01, 0, 0, 0, 0, 0, 0] }
        var port = address.port
        if let xor {
            port ^= UInt16(STUNMessage.magicCookie >> 16)
            let mask = STUNMessage.cookieBytes + xor.bytes
            for index in raw.indices { raw[index] ^= mask[index] }
        }
        var value: [UInt8] = [0, raw.count == 4 ? 0x01 : 0x02]
        value.stunAppend16(port)
        value.append(contentsOf: raw)
        return value
    }
}

extension STUNMessage {
    /// Where MESSAGE-INTEGRITY and FINGERPRINT sit in a message's bytes (offsets of their
    /// attribute headers), found by walking the attributes without decoding them.
    struct Layout {
        var integrityOffset: Int?
        var fingerprintOffset: Int?
    }

    static func layout(of bytes: UnsafeRawBufferPointer) -> Layout? {
        guard bytes.count >= headerSize, bytes.count <= maximumSize else { return nil }
        var layout = Layout()
        var offset = headerSize
        while offset + 4 <= bytes.count {
            let type = bytes.stunUInt16(at: offset)
            let length = Int(bytes.stunUInt16(at: offset + 2))
            if type == STUNAttribute.Kind.messageIntegrity, layout.integrityOffset == nil { layout.integrityOffset = offset }
            if type == STUNAttribute.Kind.fingerprint { layout.fingerprintOffset = offset }
            offset += 4 + ((length + 3) & ~3)
        }
        guard offset == bytes.count else { return nil }
        return layout
    }

    /// Whether `bytes` end with a FINGERPRINT attribute whose CRC matches (RFC 8489 §14.7).
    public static func verifyFingerprint(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let layout = layout(of: bytes), let offset = layout.fingerprintOffset, offset + 8 == bytes.count,
            bytes.stunUInt16(at: offset + 2) == 4
        else { return false }
        let expected = bytes.stunUInt32(at: offset + 4)
        return STUNIntegrity.fingerprint(of: UnsafeRawBufferPointer(rebasing: bytes[..<offset])) == expected
    }

    /// Whether `bytes` carry a MESSAGE-INTEGRITY that matches HMAC-SHA1 with `key` over the
    /// message up to it, with the header's length counting up to its end (RFC 8489 §14.5).
    /// The comparison takes the same time wherever the MACs differ.
    public static func verifyIntegrity(_ bytes: UnsafeRawBufferPointer, key: [UInt8]) -> Bool {
        guard let layout = layout(of: bytes), let offset = layout.integrityOffset, offset + 24 <= bytes.count,
            bytes.stunUInt16(at: offset + 2) == 20
        else { return false }
        var prefix = Array(bytes[..<offset])
        let length = offset + 24 - headerSize
        prefix[2] = UInt8(truncatingIfNeeded: length >> 8)
        prefix[3] = UInt8(truncatingIfNeeded: length)
        let mac = STUNIntegrity.hmacSHA1(key: key, message: prefix)
        var difference: UInt8 = 0
        for index in 0..<20 { difference |= mac[index] ^ bytes[offset + 4 + index] }
        return difference == 0
    }

    /// ``verifyFingerprint(_:)-(UnsafeRawBufferPointer)`` for an array.
    public static func verifyFingerprint(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { verifyFingerprint($0) }
    }

    /// ``verifyIntegrity(_:key:)-(UnsafeRawBufferPointer,_)`` for an array.
    public static func verifyIntegrity(_ bytes: [UInt8], key: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { verifyIntegrity($0, key: key) }
    }
}

extension UnsafeRawBufferPointer {
    @inlinable
    func stunUInt16(at offset: Int) -> UInt16 {
        UInt16(self[offset]) << 8 | UInt16(self[offset + 1])
    }

    @inlinable
    func stunUInt32(at offset: Int) -> UInt32 {
        UInt32(stunUInt16(at: offset)) << 16 | UInt32(stunUInt16(at: offset + 2))
    }

    @inlinable
    func stunUInt64(at offset: Int) -> UInt64 {
        UInt64(stunUInt32(at: offset)) << 32 | UInt64(stunUInt32(at: offset + 4))
    }
}

extension Array where Element == UInt8 {
    mutating func stunAppend16(_ value: UInt16) {
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }

    mutating func stunAppend32(_ value: UInt32) {
        stunAppend16(UInt16(truncatingIfNeeded: value >> 16))
        stunAppend16(UInt16(truncatingIfNeeded: value))
    }

    mutating func stunAppend64(_ value: UInt64) {
        stunAppend32(UInt32(truncatingIfNeeded: value >> 32))
        stunAppend32(UInt32(truncatingIfNeeded: value))
    }
}
