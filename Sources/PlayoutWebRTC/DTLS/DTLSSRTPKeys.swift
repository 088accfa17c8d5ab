public import PlayoutRTP

/// A DTLS-SRTP protection profile (RFC 5764 §4.1.2, RFC 7714 §14.2) that Playout negotiates.
public enum DTLSSRTPProfile: UInt, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `SRTP_AES128_CM_SHA1_80` (0x0001): AES-128 counter mode, 80-bit HMAC-SHA1 tags.
    case aes128CMSHA1_80 = 0x0001
    /// `SRTP_AEAD_AES_128_GCM` (0x0007): AES-128 GCM, 128-bit tags. Preferred when offered.
    case aeadAES128GCM = 0x0007

    /// The name OpenSSL and the IANA registry use, e.g. `SRTP_AEAD_AES_128_GCM`.
    public var name: String {
        switch self {
        case .aes128CMSHA1_80: "SRTP_AES128_CM_SHA1_80"
        case .aeadAES128GCM: "SRTP_AEAD_AES_128_GCM"
        }
    }

    /// The libsrtp2 suite that protects packets under this profile.
    public var suite: SRTPCryptoSuite {
        switch self {
        case .aes128CMSHA1_80: .aesCM128HMACSHA1_80
        case .aeadAES128GCM: .aeadAES128GCM
        }
    }

    public var description: String { name }

    /// The profiles offered by default, best first: GCM, then AES-CM, each only if the linked
    /// libsrtp2 implements its suite.
    public static var defaultOffer: [DTLSSRTPProfile] {
        [.aeadAES128GCM, .aes128CMSHA1_80].filter(\.suite.isSupported)
    }
}

/// The SRTP keys a DTLS-SRTP handshake produced (RFC 5764 §4.2), ready for ``SRTPSession``s.
///
/// ```swift
/// case .connected(let keys):
///     let receive = try SRTPSession(keyingMaterial: keys.inbound, direction: .inbound)
///     let sendRTCP = try SRTPSession(keyingMaterial: keys.outbound, direction: .outbound)
/// ```
///
/// `description` does not reveal the keys.
public struct DTLSSRTPKeys: Sendable, Hashable, CustomStringConvertible {
    /// The negotiated protection profile.
    public let profile: DTLSSRTPProfile
    /// The peer's write key and salt: unprotects what the peer sends (its media, its RTCP).
    public let inbound: SRTPKeyingMaterial
    /// Our write key and salt: protects what we send (receiver reports, NACK, PLI, REMB).
    public let outbound: SRTPKeyingMaterial

    /// Keys from their parts.
    public init(profile: DTLSSRTPProfile, inbound: SRTPKeyingMaterial, outbound: SRTPKeyingMaterial) {
        self.profile = profile
        self.inbound = inbound
        self.outbound = outbound
    }

    /// Splits the exporter output `client key ‖ server key ‖ client salt ‖ server salt` (RFC 5764
    /// §4.2) for the side `role` plays.
    ///
    /// - Throws: ``SRTPError/invalidKeyLength(suite:actual:)`` unless `material` is exactly two
    ///   keys and two salts of the profile's suite.
    public init(exporterOutput material: [UInt8], profile: DTLSSRTPProfile, role: DTLSEndpoint.Role) throws(SRTPError) {
        let suite = profile.suite
        let key = suite.masterKeyLength
        let salt = suite.masterSaltLength
        guard material.count == 2 * (key + salt) else { throw .invalidKeyLength(suite: suite, actual: material.count / 2) }
        let client = try SRTPKeyingMaterial(
            masterKey: Array(material[0..<key]), masterSalt: Array(material[2 * key..<2 * key + salt]), suite: suite
        )
        let server = try SRTPKeyingMaterial(
            masterKey: Array(material[key..<2 * key]), masterSalt: Array(material[2 * key + salt..<2 * (key + salt)]), suite: suite
        )
        self.profile = profile
        switch role {
        case .client:
            inbound = server
            outbound = client
        case .server:
            inbound = client
            outbound = server
        }
    }

    public var description: String { "DTLSSRTPKeys(\(profile))" }
}
