import PlayoutCore

/// An SRTP master key and master salt for one ``SRTPCryptoSuite``, validated against its lengths.
///
/// The text form is the one SDES (`a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:<base64>`, RFC 4568
/// §6.1) and ffmpeg's `-srtp_out_params` use: base64 of the key followed by the salt.
///
/// ```swift
/// let keys = try SRTPKeyingMaterial(base64: "zRxmKMKp…", suite: .aesCM128HMACSHA1_80)
/// let session = try SRTPSession(keyingMaterial: keys, direction: .inbound)
/// ```
///
/// `description` does not reveal the key.
public struct SRTPKeyingMaterial: Sendable, Hashable, CustomStringConvertible {
    /// The suite the lengths were checked against.
    public let suite: SRTPCryptoSuite
    /// The master key: ``SRTPCryptoSuite/masterKeyLength`` bytes.
    public let masterKey: [UInt8]
    /// The master salt: ``SRTPCryptoSuite/masterSaltLength`` bytes.
    public let masterSalt: [UInt8]

    /// Key and salt given apart.
    ///
    /// - Throws: ``SRTPError/invalidKeyLength(suite:actual:)`` unless both lengths match `suite`.
    public init(masterKey: [UInt8], masterSalt: [UInt8], suite: SRTPCryptoSuite) throws(SRTPError) {
        guard masterKey.count == suite.masterKeyLength, masterSalt.count == suite.masterSaltLength else {
            throw .invalidKeyLength(suite: suite, actual: masterKey.count + masterSalt.count)
        }
        self.suite = suite
        self.masterKey = masterKey
        self.masterSalt = masterSalt
    }

    /// Key ‖ salt concatenated, as SDES and ffmpeg carry them.
    ///
    /// - Throws: ``SRTPError/invalidKeyLength(suite:actual:)``, e.g. "SRTP key for
    ///   AES_CM_128_HMAC_SHA1_80 must be 30 bytes (16 key + 14 salt), got 24".
    public init(concatenated bytes: some Collection<UInt8>, suite: SRTPCryptoSuite) throws(SRTPError) {
        let bytes = Array(bytes)
        guard bytes.count == suite.keyingMaterialLength else {
            throw .invalidKeyLength(suite: suite, actual: bytes.count)
        }
        try self.init(
            masterKey: Array(bytes[..<suite.masterKeyLength]),
            masterSalt: Array(bytes[suite.masterKeyLength...]),
            suite: suite
        )
    }

    /// Base64 of key ‖ salt, as in ffmpeg's `-srtp_out_params` or an SDP `a=crypto` key parameter.
    /// Also accepts the SDP form `inline:<base64>` with an optional `|<lifetime>` (ignored); an MKI
    /// (`|<value>:<length>`) is refused because sessions here do not use MKIs.
    ///
    /// - Throws: ``SRTPError/invalidKeyEncoding(_:)``, ``SRTPError/invalidKeyLength(suite:actual:)``
    ///   or ``SRTPError/badParameter(_:)`` for an MKI.
    public init(base64 text: some StringProtocol, suite: SRTPCryptoSuite) throws(SRTPError) {
        var text = Substring(text)
        if text.hasPrefix("inline:") { text = text.dropFirst("inline:".count) }
        if let bar = text.firstIndex(of: "|") {
            if text[bar...].contains(":") {
                throw .badParameter("SRTP keys with an MKI (inline:KEY|LIFETIME|MKI:LENGTH) are not supported: remove the MKI")
            }
            text = text[..<bar]
        }
        let bytes: [UInt8]
        do {
            bytes = try Base64.decode(text)
        } catch {
            throw .invalidKeyEncoding(error)
        }
        try self.init(concatenated: bytes, suite: suite)
    }

    /// Fresh random keying material for `suite` from the system's cryptographically secure generator.
    public static func random(for suite: SRTPCryptoSuite) -> SRTPKeyingMaterial {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<suite.keyingMaterialLength).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        // The length is right by construction.
        return try! SRTPKeyingMaterial(concatenated: bytes, suite: suite)
    }

    /// Key ‖ salt.
    public var concatenated: [UInt8] { masterKey + masterSalt }

    /// Base64 of key ‖ salt: the value for ffmpeg's `-srtp_out_params` or `a=crypto … inline:`.
    public var base64: String { Base64.encode(concatenated) }

    public var description: String {
        "SRTPKeyingMaterial(\(suite), \(suite.masterKeyLength)-byte key, \(suite.masterSaltLength)-byte salt)"
    }
}
