import PlayoutCore

/// An `a=crypto:<tag> <suite> inline:<key||salt>[|<lifetime>][|<MKI>:<length>] [<session params>]`
/// line (RFC 4568, SDES): the SRTP master key and salt for one media section.
///
/// ```text
/// a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:cEVITyFLCNiZuaQIDYdABVqrMmueJrlP90HR2ak0
/// ```
///
/// The suite name is kept as written (``SDPCryptoSuite/rawValue``). For the suites whose key and salt
/// lengths are known, the parser checks that the decoded key has exactly that length.
public struct CryptoAttribute: Sendable, Equatable {
    /// One `inline:` key parameter.
    public struct Key: Sendable, Equatable {
        /// The decoded master key followed by the master salt.
        public var keyAndSalt: [UInt8]
        /// The key's lifetime in packets (`|2^31` or `|1000`), when given.
        public var lifetime: UInt64?
        /// The master key identifier, when given.
        public var mki: MKI?

        /// Creates a key parameter.
        public init(keyAndSalt: [UInt8], lifetime: UInt64? = nil, mki: MKI? = nil) {
            self.keyAndSalt = keyAndSalt
            self.lifetime = lifetime
            self.mki = mki
        }
    }

    /// A master key identifier: `|<value>:<length in bytes>`.
    public struct MKI: Sendable, Equatable {
        /// The MKI value.
        public var value: UInt64
        /// The MKI field's length in the SRTP packet, 1…128 bytes.
        public var length: UInt8

        /// Creates an MKI.
        public init(value: UInt64, length: UInt8) {
            self.value = value
            self.length = length
        }
    }

    /// The tag that identifies this line in an offer/answer exchange (1…999999999).
    public var tag: UInt32
    /// The crypto suite, as written.
    public var suite: SDPCryptoSuite
    /// The key parameters (at least one).
    public var keys: [Key]
    /// The session parameters after the keys (`UNENCRYPTED_SRTCP`, `KDR=…`…), verbatim.
    public var sessionParameters: [String]

    /// Creates a crypto attribute.
    public init(tag: UInt32 = 1, suite: SDPCryptoSuite, keys: [Key], sessionParameters: [String] = []) {
        self.tag = tag
        self.suite = suite
        self.keys = keys
        self.sessionParameters = sessionParameters
    }

    /// The first key's master key and salt, concatenated (what ffmpeg's `-srtp_in_params` and
    /// libsrtp2 take).
    public var keyAndSalt: [UInt8] { keys.first?.keyAndSalt ?? [] }

    /// The first key's master key, when the suite's key length is known.
    public var masterKey: [UInt8]? {
        guard let length = suite.keyLength, keyAndSalt.count >= length else { return nil }
        return Array(keyAndSalt.prefix(length))
    }

    /// The first key's master salt, when the suite's key length is known.
    public var masterSalt: [UInt8]? {
        guard let length = suite.keyLength, keyAndSalt.count >= length else { return nil }
        return Array(keyAndSalt.dropFirst(length))
    }

    /// The text after `a=crypto:`.
    public var formatted: String {
        let keyText = keys.map { key in
            var text = "inline:" + Base64.encode(key.keyAndSalt)
            if let lifetime = key.lifetime { text += "|\(lifetime)" }
            if let mki = key.mki { text += "|\(mki.value):\(mki.length)" }
            return text
        }.joined(separator: ";")
        return ([String(tag), suite.rawValue, keyText] + sessionParameters).joined(separator: " ")
    }

    /// Parses the text after `a=crypto:`.
    init(parsing text: Substring) throws(SDPValueError) {
        let expected = "a=crypto:<tag> <suite> inline:<base64 key||salt>[|<lifetime>][|<MKI>:<length>]"
        let tokens = text.sdpTokens
        guard tokens.count >= 3, let tag = SDPNumber.unsigned(tokens[0], as: UInt32.self),
              tokens[0].utf8.count <= 9
        else { throw SDPValueError(expected) }
        self.tag = tag
        self.suite = SDPCryptoSuite(rawValue: String(tokens[1]))
        self.sessionParameters = tokens.dropFirst(3).map(String.init)
        self.keys = []
        for parameter in tokens[2].split(separator: ";", omittingEmptySubsequences: false) {
            guard parameter.lowercased().hasPrefix("inline:") else { throw SDPValueError(expected) }
            let parts = parameter.dropFirst("inline:".count).split(separator: "|", omittingEmptySubsequences: false)
            let keyAndSalt: [UInt8]
            do {
                keyAndSalt = try Base64.decode(parts[0])
            } catch {
                throw SDPValueError("a base64 key after inline: (\(error))")
            }
            if let length = suite.keyAndSaltLength, keyAndSalt.count != length {
                throw SDPValueError(
                    "a \(length)-byte key and salt for \(suite.rawValue), not \(keyAndSalt.count) bytes"
                )
            }
            guard !keyAndSalt.isEmpty else { throw SDPValueError(expected) }
            var key = Key(keyAndSalt: keyAndSalt)
            for part in parts.dropFirst() {
                if let colon = part.firstIndex(of: ":") {
                    guard key.mki == nil,
                          let value = SDPNumber.unsigned(part[..<colon], as: UInt64.self),
                          let length = SDPNumber.unsigned(part[part.index(after: colon)...], as: UInt8.self),
                          (1...128).contains(length)
                    else { throw SDPValueError("|<MKI>:<length 1…128> after the key") }
                    key.mki = MKI(value: value, length: length)
                } else {
                    guard key.lifetime == nil, key.mki == nil, let lifetime = Self.lifetime(part) else {
                        throw SDPValueError("|<lifetime> (2^n or a number of packets) after the key")
                    }
                    key.lifetime = lifetime
                }
            }
            keys.append(key)
        }
    }

    private static func lifetime(_ text: Substring) -> UInt64? {
        if text.hasPrefix("2^") {
            guard let exponent = SDPNumber.unsigned(text.dropFirst(2), as: UInt8.self), exponent < 64 else { return nil }
            return 1 << UInt64(exponent)
        }
        return SDPNumber.unsigned(text, as: UInt64.self)
    }
}

/// An SRTP crypto suite name (RFC 4568 §6.2, RFC 6188, RFC 7714). Open-ended: any name is kept as
/// written, and the well-known ones know their key lengths.
public struct SDPCryptoSuite: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The name as written, e.g. `AES_CM_128_HMAC_SHA1_80`.
    public var rawValue: String

    /// Wraps a suite name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `AES_CM_128_HMAC_SHA1_80` (RFC 4568): the default of ffmpeg and most SRTP senders.
    public static let aesCM128HMACSHA1_80 = SDPCryptoSuite(rawValue: "AES_CM_128_HMAC_SHA1_80")
    /// `AES_CM_128_HMAC_SHA1_32` (RFC 4568).
    public static let aesCM128HMACSHA1_32 = SDPCryptoSuite(rawValue: "AES_CM_128_HMAC_SHA1_32")
    /// `AES_192_CM_HMAC_SHA1_80` (RFC 6188).
    public static let aes192CMHMACSHA1_80 = SDPCryptoSuite(rawValue: "AES_192_CM_HMAC_SHA1_80")
    /// `AES_256_CM_HMAC_SHA1_80` (RFC 6188).
    public static let aes256CMHMACSHA1_80 = SDPCryptoSuite(rawValue: "AES_256_CM_HMAC_SHA1_80")
    /// `AEAD_AES_128_GCM` (RFC 7714).
    public static let aeadAES128GCM = SDPCryptoSuite(rawValue: "AEAD_AES_128_GCM")
    /// `AEAD_AES_256_GCM` (RFC 7714).
    public static let aeadAES256GCM = SDPCryptoSuite(rawValue: "AEAD_AES_256_GCM")

    /// The master key length in bytes, for the known suites (and ffmpeg's `SRTP_AES128_…` aliases).
    public var keyLength: Int? { Self.lengths[rawValue.uppercased()]?.key }

    /// The master salt length in bytes, for the known suites.
    public var saltLength: Int? { Self.lengths[rawValue.uppercased()]?.salt }

    /// ``keyLength`` + ``saltLength``: the length of the decoded `inline:` key.
    public var keyAndSaltLength: Int? { Self.lengths[rawValue.uppercased()].map { $0.key + $0.salt } }

    private static let lengths: [String: (key: Int, salt: Int)] = [
        "AES_CM_128_HMAC_SHA1_80": (16, 14), "AES_CM_128_HMAC_SHA1_32": (16, 14),
        "SRTP_AES128_CM_HMAC_SHA1_80": (16, 14), "SRTP_AES128_CM_HMAC_SHA1_32": (16, 14),
        "AES_CM_128_NULL_AUTH": (16, 14), "F8_128_HMAC_SHA1_80": (16, 14),
        "AES_192_CM_HMAC_SHA1_80": (24, 14), "AES_192_CM_HMAC_SHA1_32": (24, 14),
        "AES_256_CM_HMAC_SHA1_80": (32, 14), "AES_256_CM_HMAC_SHA1_32": (32, 14),
        "AEAD_AES_128_GCM": (16, 12), "AEAD_AES_256_GCM": (32, 12),
    ]

    public var description: String { rawValue }
}
