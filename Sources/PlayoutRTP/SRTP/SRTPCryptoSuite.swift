internal import CSRTP

/// An SRTP crypto suite, named as RFC 4568 (`a=crypto`), RFC 7714 and ffmpeg's `-srtp_out_suite`
/// spell it.
///
/// ```swift
/// let suite = try SRTPCryptoSuite(name: "AES_CM_128_HMAC_SHA1_80")
/// suite.keyingMaterialLength   // 30: 16 key + 14 salt, the length of an `inline:` key
/// ```
///
/// Whether the linked libsrtp2 implements a suite is detected at run time (``isSupported``): the GCM
/// suites exist only when libsrtp2 was built with a crypto library (Debian builds it with NSS).
public enum SRTPCryptoSuite: String, CaseIterable, Sendable, Hashable, CustomStringConvertible {
    /// AES-128 counter mode with an 80-bit HMAC-SHA1 tag (RFC 3711 default, RFC 4568 §6.2.1).
    case aesCM128HMACSHA1_80 = "AES_CM_128_HMAC_SHA1_80"
    /// AES-128 counter mode with a 32-bit HMAC-SHA1 tag (RFC 4568 §6.2.2), on SRTP and SRTCP alike,
    /// as ffmpeg and most SDES peers do it. (DTLS-SRTP's `SRTP_AES128_CM_HMAC_SHA1_32` differs: its
    /// SRTCP tag is 80 bits, RFC 5764 §4.1.2.)
    case aesCM128HMACSHA1_32 = "AES_CM_128_HMAC_SHA1_32"
    /// AES-128 GCM with a 128-bit tag (RFC 7714 §14.2).
    case aeadAES128GCM = "AEAD_AES_128_GCM"
    /// AES-256 GCM with a 128-bit tag (RFC 7714 §14.2).
    case aeadAES256GCM = "AEAD_AES_256_GCM"

    /// Whether it is an AEAD suite (GCM): decryption and authentication in one step.
    public var isAEAD: Bool { self == .aeadAES128GCM || self == .aeadAES256GCM }

    /// The suite with this RFC 4568 name (case-sensitive, as in SDP).
    ///
    /// - Throws: ``SRTPError/unknownSuite(_:)`` naming the suites that exist.
    public init(name: some StringProtocol) throws(SRTPError) {
        guard let suite = SRTPCryptoSuite(rawValue: String(name)) else { throw .unknownSuite(String(name)) }
        self = suite
    }

    /// The RFC 4568 name, e.g. `"AES_CM_128_HMAC_SHA1_80"`.
    public var name: String { rawValue }

    public var description: String { rawValue }

    /// Length of the master key in bytes (16 or 32).
    public var masterKeyLength: Int {
        switch self {
        case .aesCM128HMACSHA1_80, .aesCM128HMACSHA1_32, .aeadAES128GCM: 16
        case .aeadAES256GCM: 32
        }
    }

    /// Length of the master salt in bytes: 14 for AES-CM (RFC 3711), 12 for GCM (RFC 7714 §11).
    public var masterSaltLength: Int {
        switch self {
        case .aesCM128HMACSHA1_80, .aesCM128HMACSHA1_32: 14
        case .aeadAES128GCM, .aeadAES256GCM: 12
        }
    }

    /// Master key ‖ master salt: the length of an SDP `inline:` key or ffmpeg's `-srtp_out_params`.
    public var keyingMaterialLength: Int { masterKeyLength + masterSaltLength }

    /// Bytes of authentication tag appended to each SRTP (RTP) packet: 10, 4, or 16 for GCM.
    public var authenticationTagLength: Int {
        switch self {
        case .aesCM128HMACSHA1_80: 10
        case .aesCM128HMACSHA1_32: 4
        case .aeadAES128GCM, .aeadAES256GCM: 16
        }
    }

    /// Bytes of authentication tag on each SRTCP packet: the same as on SRTP for these SDES suites
    /// (ffmpeg's `AES_CM_128_HMAC_SHA1_32` tags SRTCP with 32 bits too).
    public var rtcpAuthenticationTagLength: Int { authenticationTagLength }

    /// Bytes SRTP adds to an RTP packet (the tag; no MKI).
    public var rtpOverhead: Int { authenticationTagLength }

    /// Bytes SRTCP adds to an RTCP packet: the E flag + SRTCP index word and the tag.
    public var rtcpOverhead: Int { 4 + rtcpAuthenticationTagLength }

    /// Whether the linked libsrtp2 can create a session with this suite, detected once per process by
    /// creating (and freeing) one. `false` also when libsrtp2 fails to initialize.
    public var isSupported: Bool { Self.supported.contains(self) }

    /// All suites the linked libsrtp2 supports, in declaration order.
    public static var supportedSuites: [SRTPCryptoSuite] { allCases.filter(\.isSupported) }

    private static let supported: Set<SRTPCryptoSuite> = {
        guard (try? SRTPLibrary.initialize()) != nil else { return [] }
        var result: Set<SRTPCryptoSuite> = []
        for suite in allCases {
            var policy = srtp_policy_t()
            suite.configure(&policy)
            policy.ssrc.type = ssrc_any_inbound
            var key = [UInt8](repeating: 0x5A, count: suite.keyingMaterialLength)
            let status = key.withUnsafeMutableBufferPointer { key -> srtp_err_status_t in
                policy.key = key.baseAddress
                var context: srtp_t?
                let status = srtp_create(&context, &policy)
                if status == srtp_err_status_ok, let context { srtp_dealloc(context) }
                return status
            }
            if status == srtp_err_status_ok { result.insert(suite) }
        }
        return result
    }()

    /// Fills the RTP and RTCP crypto policies of `policy` for this suite.
    func configure(_ policy: inout srtp_policy_t) {
        switch self {
        case .aesCM128HMACSHA1_80:
            playout_srtp_policy_aes_cm_128_hmac_sha1_80(&policy.rtp)
            playout_srtp_policy_aes_cm_128_hmac_sha1_80(&policy.rtcp)
        case .aesCM128HMACSHA1_32:
            // SDES peers (ffmpeg among them) use the 32-bit tag on SRTCP too, although libsrtp2's
            // documentation recommends a longer one there; interop decides.
            srtp_crypto_policy_set_aes_cm_128_hmac_sha1_32(&policy.rtp)
            srtp_crypto_policy_set_aes_cm_128_hmac_sha1_32(&policy.rtcp)
        case .aeadAES128GCM:
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
        case .aeadAES256GCM:
            srtp_crypto_policy_set_aes_gcm_256_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_256_16_auth(&policy.rtcp)
        }
    }
}
