internal import COpenSSL
import Synchronization

/// A self-signed ECDSA P-256 certificate and its private key: the identity a DTLS-SRTP endpoint
/// presents, bound to the session by the fingerprint in the SDP offer (RFC 8122, RFC 8827 §6.5).
///
/// One certificate serves every session of a process (``shared()``, created on first use);
/// tests create their own to play a second peer or an impostor.
///
/// ```swift
/// let certificate = try DTLSCertificate.shared()
/// offer += "a=fingerprint:\(certificate.fingerprint.sdpValue)\r\n"   // sha-256 AB:CD:…
/// ```
///
/// The OpenSSL objects are immutable after creation and reference-counted by OpenSSL, so the
/// value is safely shared across threads.
public final class DTLSCertificate: @unchecked Sendable {
    /// The certificate's validity: from a day before creation (clock skew) to 30 days after.
    public static let validity: Duration = .seconds(30 * 86_400)
    /// The subject and issuer common name.
    public static let commonName = "playout"

    /// The SHA-256 fingerprint of the certificate, as the SDP offer carries it.
    public let fingerprint: DTLSFingerprint
    /// The certificate in DER.
    public let der: [UInt8]

    /// `X509*` (owned).
    let certificate: OpaquePointer
    /// `EVP_PKEY*` (owned).
    let privateKey: OpaquePointer

    /// Creates a fresh key pair and self-signed certificate.
    ///
    /// - Throws: ``DTLSError/openSSL(_:)`` if OpenSSL fails (it does not in practice).
    public init() throws(DTLSError) {
        guard let key = playout_dtls_generate_p256_key() else { throw .openSSL("EC P-256 key generation failed: \(OpenSSLErrors.drain())") }
        guard let x509 = X509_new() else {
            EVP_PKEY_free(key)
            throw .openSSL("X509_new failed")
        }
        var serial = [UInt8](repeating: 0, count: 8)
        var ok = RAND_bytes(&serial, Int32(serial.count)) == 1
        serial[0] &= 0x7F  // a positive serial number
        var serialValue: UInt64 = 0
        for byte in serial { serialValue = serialValue << 8 | UInt64(byte) }
        ok = ok && X509_set_version(x509, 2) == 1  // X.509 v3
        ok = ok && ASN1_INTEGER_set_uint64(X509_get_serialNumber(x509), serialValue) == 1
        ok = ok && X509_gmtime_adj(X509_getm_notBefore(x509), -86_400) != nil
        ok = ok && X509_gmtime_adj(X509_getm_notAfter(x509), Int(Self.validity.components.seconds)) != nil
        ok = ok && X509_set_pubkey(x509, key) == 1
        if ok, let name = X509_get_subject_name(x509) {
            ok = X509_NAME_add_entry_by_txt(name, "CN", playout_dtls_mbstring_asc(), Self.commonName, -1, -1, 0) == 1
            ok = ok && X509_set_issuer_name(x509, name) == 1
        } else {
            ok = false
        }
        ok = ok && X509_sign(x509, key, EVP_sha256()) > 0
        var derPointer: UnsafeMutablePointer<UInt8>? = nil
        let derLength = ok ? i2d_X509(x509, &derPointer) : -1
        guard ok, derLength > 0, let derPointer else {
            X509_free(x509)
            EVP_PKEY_free(key)
            throw .openSSL("creating the self-signed certificate failed: \(OpenSSLErrors.drain())")
        }
        der = Array(UnsafeBufferPointer(start: derPointer, count: Int(derLength)))
        CRYPTO_free(derPointer, #fileID, #line)
        certificate = x509
        privateKey = key
        fingerprint = DTLSFingerprint(algorithm: .sha256, certificate: x509)
    }

    deinit {
        X509_free(certificate)
        EVP_PKEY_free(privateKey)
    }

    /// The fingerprint of this certificate with another hash function (to compare with an answer
    /// that uses sha-1, sha-384 or sha-512).
    public func fingerprint(_ algorithm: DTLSFingerprint.Algorithm) -> DTLSFingerprint {
        DTLSFingerprint(algorithm: algorithm, certificate: certificate)
    }

    private static let processCertificate = Mutex<DTLSCertificate?>(nil)

    /// The process's certificate, created on first use and the same for every session after.
    ///
    /// - Throws: ``DTLSError/openSSL(_:)`` if creating it fails (a later call tries again).
    public static func shared() throws(DTLSError) -> DTLSCertificate {
        try processCertificate.withLock { (current: inout DTLSCertificate?) throws(DTLSError) -> DTLSCertificate in
            if let current { return current }
            let created = try DTLSCertificate()
            current = created
            return created
        }
    }
}

/// OpenSSL's thread-local error queue, read into one line.
enum OpenSSLErrors {
    /// Empties the queue and returns its entries joined by "; " (or "no OpenSSL error").
    static func drain() -> String {
        var parts: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if parts.count < 4 {
                ERR_error_string_n(code, &buffer, buffer.count)
                parts.append(String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
        }
        return parts.isEmpty ? "no OpenSSL error" : parts.joined(separator: "; ")
    }
}
