public import PlayoutRTP

/// A STUN message (RFC 8489): the 20-byte header — class and method, the magic cookie and a
/// 96-bit transaction ID — and its attributes, in order.
///
/// Parsing is bounded (``maximumSize``) and throws a typed ``STUNParseError``; unknown
/// comprehension-optional attributes are kept as ``STUNAttribute/other(type:value:)`` (so what
/// parses serializes back byte for byte), unknown comprehension-required ones are listed in
/// ``unknownComprehensionRequired`` for the caller to answer with 420. Attributes after
/// MESSAGE-INTEGRITY other than FINGERPRINT are ignored (RFC 8489 §14.5); nothing may follow
/// FINGERPRINT.
///
/// ```swift
/// var request = STUNMessage(class: .request, method: .binding, transactionID: .random(using: &random))
/// request.attributes = [.username("remote:local"), .priority(1_853_824_767), .iceControlling(tieBreaker)]
/// let bytes = request.encoded(integrityKey: Array(remotePassword.utf8), fingerprint: true)
/// let parsed = try STUNMessage(parsing: bytes)
/// ```
public struct STUNMessage: Hashable, Sendable {
    /// The message class: the C0/C1 bits of the message type.
    public enum Class: UInt8, Hashable, Sendable {
        /// A request: answered with a success or error response.
        case request = 0
        /// An indication: never answered.
        case indication = 1
        /// A success response.
        case successResponse = 2
        /// An error response (with ERROR-CODE).
        case errorResponse = 3
    }

    /// A STUN method (12 bits); ICE uses ``binding`` only.
    public struct Method: RawRepresentable, Hashable, Sendable {
        /// The 12-bit method number.
        public var rawValue: UInt16
        /// Creates a method from its 12-bit number.
        public init(rawValue: UInt16) { self.rawValue = rawValue & 0x0FFF }
        /// Binding (0x001), the method of connectivity checks and server-reflexive discovery.
        public static let binding = Method(rawValue: 0x001)
    }

    /// The magic cookie, 0x2112A442, in every RFC 5389/8489 message.
    public static let magicCookie: UInt32 = 0x2112_A442
    /// The size of the header.
    public static let headerSize = 20
    /// The largest message accepted or produced: a UDP datagram on a 1500-byte Ethernet path.
    /// STUN over UDP stays below the path MTU (RFC 8489 §6.1), so anything larger is refused.
    public static let maximumSize = 1_500

    /// Request, indication, success or error response.
    public var messageClass: Class
    /// The method (Binding for ICE).
    public var method: Method
    /// The transaction ID that pairs a response with its request.
    public var transactionID: STUNTransactionID
    /// The attributes in wire order (MESSAGE-INTEGRITY and FINGERPRINT included when parsed).
    public var attributes: [STUNAttribute]
    /// The byte attributes are padded with: parsed from the first padding seen (RFC 5769's
    /// vectors pad with spaces), 0 for messages built here. Kept so a parsed message
    /// re-serializes to the same bytes.
    public var paddingByte: UInt8
    /// Types of comprehension-required attributes (0x0000–0x7FFF) this parser does not know,
    /// in order; a request carrying any is answered with 420 (Unknown Attribute).
    public var unknownComprehensionRequired: [UInt16]

    /// Creates a message with no attributes.
    public init(class messageClass: Class, method: Method = .binding, transactionID: STUNTransactionID, attributes: [STUNAttribute] = []) {
        self.messageClass = messageClass
        self.method = method
        self.transactionID = transactionID
        self.attributes = attributes
        paddingByte = 0
        unknownComprehensionRequired = []
    }

    /// The 14-bit message type: method bits interleaved with the class bits (RFC 8489 §5).
    public var messageType: UInt16 {
        let m = method.rawValue
        let c = UInt16(messageClass.rawValue)
        return (m & 0x000F) | ((m & 0x0070) << 1) | ((m & 0x0F80) << 2) | ((c & 0x1) << 4) | ((c & 0x2) << 7)
    }

    static func split(type: UInt16) -> (Class, Method) {
        let c = ((type >> 4) & 0x1) | ((type >> 7) & 0x2)
        let m = (type & 0x000F) | ((type >> 1) & 0x0070) | ((type >> 2) & 0x0F80)
        return (Class(rawValue: UInt8(c))!, Method(rawValue: m))
    }

    // MARK: Attribute accessors

    /// The first USERNAME, if any.
    public var username: String? {
        for case .username(let value) in attributes { return value }
        return nil
    }
    /// The first XOR-MAPPED-ADDRESS, else the first MAPPED-ADDRESS.
    public var mappedAddress: SocketAddress? {
        for case .xorMappedAddress(let value) in attributes { return value }
        for case .mappedAddress(let value) in attributes { return value }
        return nil
    }
    /// The PRIORITY value, if any.
    public var priority: UInt32? {
        for case .priority(let value) in attributes { return value }
        return nil
    }
    /// Whether USE-CANDIDATE is present.
    public var useCandidate: Bool {
        attributes.contains(.useCandidate)
    }
    /// The ICE-CONTROLLING tie-breaker, if present.
    public var iceControlling: UInt64? {
        for case .iceControlling(let value) in attributes { return value }
        return nil
    }
    /// The ICE-CONTROLLED tie-breaker, if present.
    public var iceControlled: UInt64? {
        for case .iceControlled(let value) in attributes { return value }
        return nil
    }
    /// The ERROR-CODE's number (300–699), if present.
    public var errorCode: Int? {
        for case .errorCode(let code, _) in attributes { return code }
        return nil
    }
    /// Whether MESSAGE-INTEGRITY is present.
    public var hasMessageIntegrity: Bool {
        attributes.contains { if case .messageIntegrity = $0 { true } else { false } }
    }
    /// Whether FINGERPRINT is present.
    public var hasFingerprint: Bool {
        attributes.contains { if case .fingerprint = $0 { true } else { false } }
    }
}

/// A 96-bit STUN transaction ID.
public struct STUNTransactionID: Hashable, Sendable, CustomStringConvertible {
    /// The first 32 bits on the wire.
    public var high: UInt32
    /// The last 64 bits on the wire.
    public var low: UInt64

    /// Creates an ID from its two halves.
    public init(high: UInt32, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Creates an ID from 12 bytes (nil for any other count).
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 12 else { return nil }
        var value = (UInt32(0), UInt64(0))
        for (index, byte) in bytes.enumerated() {
            if index < 4 { value.0 = value.0 << 8 | UInt32(byte) } else { value.1 = value.1 << 8 | UInt64(byte) }
        }
        self.init(high: value.0, low: value.1)
    }

    /// A uniformly random ID.
    public static func random(using generator: inout some RandomNumberGenerator) -> STUNTransactionID {
        STUNTransactionID(high: UInt32(truncatingIfNeeded: generator.next()), low: generator.next())
    }

    /// The 12 bytes, in wire order.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(12)
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: high >> UInt32(shift))) }
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: low >> UInt64(shift))) }
        return out
    }

    public var description: String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}

/// One STUN attribute, typed where RFC 8489 / RFC 8445 define it.
public enum STUNAttribute: Hashable, Sendable {
    /// MAPPED-ADDRESS (0x0001), the RFC 3489 form.
    case mappedAddress(SocketAddress)
    /// USERNAME (0x0006): for ICE, `"<receiver ufrag>:<sender ufrag>"`.
    case username(String)
    /// MESSAGE-INTEGRITY (0x0008): 20 bytes of HMAC-SHA1. When encoding with a key it is computed.
    case messageIntegrity([UInt8])
    /// ERROR-CODE (0x0009): a code 300–699 and its reason phrase.
    case errorCode(code: Int, reason: String)
    /// UNKNOWN-ATTRIBUTES (0x000A): the types a 420 response did not understand.
    case unknownAttributes([UInt16])
    /// XOR-MAPPED-ADDRESS (0x0020), IPv4 or IPv6.
    case xorMappedAddress(SocketAddress)
    /// PRIORITY (0x0024, RFC 8445): the priority of the peer-reflexive candidate the check would learn.
    case priority(UInt32)
    /// USE-CANDIDATE (0x0025, RFC 8445): the controlling agent nominates the pair.
    case useCandidate
    /// SOFTWARE (0x8022).
    case software(String)
    /// FINGERPRINT (0x8028): CRC-32 of the message before it, XOR 0x5354554E. Computed when encoding
    /// with `fingerprint: true`.
    case fingerprint(UInt32)
    /// ICE-CONTROLLED (0x8029, RFC 8445): the sender's tie-breaker.
    case iceControlled(UInt64)
    /// ICE-CONTROLLING (0x802A, RFC 8445): the sender's tie-breaker.
    case iceControlling(UInt64)
    /// Any other attribute, kept as its type and raw value.
    case other(type: UInt16, value: [UInt8])

    /// Attribute type numbers.
    public enum Kind {
        // The numbers of RFC 8489 §18.3 and RFC 8445 §16.1.
        /// mappedAddress (0x0001).
        /// mappedAddress (0x0001).
        public static let mappedAddress: UInt16 = 0x0001
        /// username (0x0006).
        public static let username: UInt16 = 0x0006
        /// messageIntegrity (0x0008).
        /// messageIntegrity (0x0008).
        public static let messageIntegrity: UInt16 = 0x0008
        /// errorCode (0x0009).
        public static let errorCode: UInt16 = 0x0009
        /// unknownAttributes (0x000A).
        /// unknownAttributes (0x000A).
        public static let unknownAttributes: UInt16 = 0x000A
        /// xorMappedAddress (0x0020).
        public static let xorMappedAddress: UInt16 = 0x0020
        /// priority (0x0024).
        /// priority (0x0024).
        public static let priority: UInt16 = 0x0024
        /// useCandidate (0x0025).
        public static let useCandidate: UInt16 = 0x0025
        /// software (0x8022).
        /// software (0x8022).
        public static let software: UInt16 = 0x8022
        /// fingerprint (0x8028).
        public static let fingerprint: UInt16 = 0x8028
        /// iceControlled (0x8029).
        /// iceControlled (0x8029).
        public static let iceControlled: UInt16 = 0x8029
        /// iceControlling (0x802A).
        public static let iceControlling: UInt16 = 0x802A
    }

    /// The attribute's type number.
    public var type: UInt16 {
        switch self {
        case .mappedAddress: Kind.mappedAddress
        case .username: Kind.username
        case .messageIntegrity: Kind.messageIntegrity
        case .errorCode: Kind.errorCode
        case .unknownAttributes: Kind.unknownAttributes
        case .xorMappedAddress: Kind.xorMappedAddress
        case .priority: Kind.priority
        case .useCandidate: Kind.useCandidate
        case .software: Kind.software
        case .fingerprint: Kind.fingerprint
        case .iceControlled: Kind.iceControlled
        case .iceControlling: Kind.iceControlling
        case .other(let type, _): type
        }
    }
}

/// Why bytes are not a STUN message: each case carries the numbers a caller can act on.
public enum STUNParseError: Error, Hashable, Sendable {
    /// Fewer bytes than the header or than the header's length says.
    case truncated(needed: Int, available: Int)
    /// More bytes than ``STUNMessage/maximumSize``.
    case tooLarge(size: Int, limit: Int)
    /// The first two bits are not 0 (this is RTP, DTLS or something else).
    case notSTUN(firstByte: UInt8)
    /// The magic cookie is not 0x2112A442.
    case badMagicCookie(UInt32)
    /// The header's length is not a multiple of 4 or does not match the datagram.
    case badLength(declared: Int, available: Int)
    /// An attribute runs past the end of the message.
    case attributeOverrun(type: UInt16, offset: Int)
    /// A known attribute's value has the wrong size or content.
    case malformedAttribute(type: UInt16, reason: String)
    /// An attribute follows FINGERPRINT, which must be last.
    case attributeAfterFingerprint(type: UInt16)
}

extension STUNParseError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .truncated(let needed, let available): "STUN message truncated: needs \(needed) bytes, has \(available)"
        case .tooLarge(let size, let limit): "STUN message of \(size) bytes exceeds the \(limit)-byte limit"
        case .notSTUN(let byte): "not a STUN message (first byte 0x\(String(byte, radix: 16)))"
        case .badMagicCookie(let cookie): "STUN magic cookie 0x\(String(cookie, radix: 16)) is not 0x2112a442"
        case .badLength(let declared, let available): "STUN length \(declared) does not match the \(available) bytes after the header"
        case .attributeOverrun(let type, let offset): "STUN attribute 0x\(String(type, radix: 16)) at offset \(offset) runs past the message"
        case .malformedAttribute(let type, let reason): "STUN attribute 0x\(String(type, radix: 16)) is malformed: \(reason)"
        case .attributeAfterFingerprint(let type): "STUN attribute 0x\(String(type, radix: 16)) follows FINGERPRINT, which must be last"
        }
    }
}
