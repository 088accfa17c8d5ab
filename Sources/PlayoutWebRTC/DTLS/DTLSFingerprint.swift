internal import COpenSSL
import PlayoutCore

/// A certificate fingerprint as SDP carries it (`a=fingerprint:sha-256 AB:CD:…`, RFC 8122 §5).
///
/// ```swift
/// let expected = try DTLSFingerprint(sdpValue: "sha-256 4A:AD:B9:…:D4")   // from the answer
/// let offer = "a=fingerprint:" + DTLSCertificate.shared().fingerprint.sdpValue
/// ```
///
/// Parsing is strict: a known hash function name (case-insensitive), one space or more, then
/// exactly the digest's length in upper- or lower-case hex pairs joined by colons.
public struct DTLSFingerprint: Sendable, Hashable, CustomStringConvertible {
    /// A hash function of RFC 8122's registry that Playout computes.
    public enum Algorithm: String, Sendable, Hashable, CaseIterable {
        /// SHA-1 (20 bytes): legacy, accepted when an answer uses it.
        case sha1 = "sha-1"
        /// SHA-256 (32 bytes): what Playout offers (RFC 8827 requires it).
        case sha256 = "sha-256"
        /// SHA-384 (48 bytes).
        case sha384 = "sha-384"
        /// SHA-512 (64 bytes).
        case sha512 = "sha-512"

        /// The digest length in bytes.
        public var digestLength: Int {
            switch self {
            case .sha1: 20
            case .sha256: 32
            case .sha384: 48
            case .sha512: 64
            }
        }

        /// The SDP token, e.g. `sha-256`.
        public var name: String { rawValue }

        var messageDigest: OpaquePointer? {
            switch self {
            case .sha1: EVP_sha1()
            case .sha256: EVP_sha256()
            case .sha384: EVP_sha384()
            case .sha512: EVP_sha512()
            }
        }
    }

    /// The hash function.
    public let algorithm: Algorithm
    /// The digest of the certificate's DER encoding: ``Algorithm/digestLength`` bytes.
    public let digest: [UInt8]

    /// A fingerprint from its parts.
    ///
    /// - Throws: ``DTLSFingerprintError/wrongDigestLength(algorithm:expected:actual:)``.
    public init(algorithm: Algorithm, digest: [UInt8]) throws(DTLSFingerprintError) {
        guard digest.count == algorithm.digestLength else {
            throw .wrongDigestLength(algorithm: algorithm.name, expected: algorithm.digestLength, actual: digest.count)
        }
        self.algorithm = algorithm
        self.digest = digest
    }

    /// The longest `a=fingerprint` value parsed: the SHA-512 form is 4 + 1 + 191 characters; a
    /// little room for extra spaces, nothing unbounded.
    public static let maximumSDPValueLength = 256

    /// Parses the value of an `a=fingerprint` attribute (`sha-256 AB:CD:…`, without `a=fingerprint:`).
    ///
    /// - Throws: a ``DTLSFingerprintError`` naming what is wrong.
    public init(sdpValue text: some StringProtocol) throws(DTLSFingerprintError) {
        let utf8 = Array(text.utf8)
        guard utf8.count <= Self.maximumSDPValueLength else { throw .tooLong(utf8.count) }
        guard let space = utf8.firstIndex(where: { $0 == 0x20 || $0 == 0x09 }) else { throw .missingDigest }
        let name = String(decoding: utf8[..<space], as: UTF8.self).lowercased()
        guard let algorithm = Algorithm(rawValue: name) else { throw .unsupportedAlgorithm(String(name.prefix(32))) }
        var rest = utf8[space...].drop(while: { $0 == 0x20 || $0 == 0x09 })
        while let last = rest.last, last == 0x20 || last == 0x09 || last == 0x0D || last == 0x0A { rest = rest.dropLast() }
        // "XX" then ":XX" per further byte.
        guard rest.count == algorithm.digestLength * 3 - 1 else {
            throw .wrongDigestLength(algorithm: algorithm.name, expected: algorithm.digestLength, actual: (rest.count + 1) / 3)
        }
        var digest: [UInt8] = []
        digest.reserveCapacity(algorithm.digestLength)
        var index = rest.startIndex
        for byte in 0..<algorithm.digestLength {
            if byte > 0 {
                guard rest[index] == UInt8(ascii: ":") else { throw .badHex(position: byte * 3 - 1) }
                index += 1
            }
            guard let high = rest[index].hexDigitValue, let low = rest[index + 1].hexDigitValue else {
                throw .badHex(position: byte * 3)
            }
            digest.append(high << 4 | low)
            index += 2
        }
        try self.init(algorithm: algorithm, digest: digest)
    }

    /// The digest of a DER-encoded certificate.
    public init(algorithm: Algorithm, certificateDER der: [UInt8]) {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = der.withUnsafeBytes { der in
            EVP_Digest(der.baseAddress, der.count, &output, &length, algorithm.messageDigest, nil)
        }
        precondition(ok == 1 && Int(length) == algorithm.digestLength, "OpenSSL computes \(algorithm.name)")
        self.algorithm = algorithm
        self.digest = Array(output.prefix(Int(length)))
    }

    /// The digest of an OpenSSL `X509*`.
    init(algorithm: Algorithm, certificate: OpaquePointer) {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = X509_digest(certificate, algorithm.messageDigest, &output, &length)
        precondition(ok == 1 && Int(length) == algorithm.digestLength, "OpenSSL computes \(algorithm.name)")
        self.algorithm = algorithm
        self.digest = Array(output.prefix(Int(length)))
    }

    /// The digest in upper-case hex pairs joined by colons, as SDP writes it (`AB:CD:…`).
    public var hexDigest: String {
        let hex = Array("0123456789ABCDEF".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(digest.count * 3)
        for (index, byte) in digest.enumerated() {
            if index > 0 { text.append(UInt8(ascii: ":")) }
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The `a=fingerprint` value: `sha-256 AB:CD:…`.
    public var sdpValue: String { algorithm.name + " " + hexDigest }

    public var description: String { sdpValue }
}

/// Why an `a=fingerprint` value was refused.
public enum DTLSFingerprintError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The hash function is not one of sha-1, sha-256, sha-384, sha-512.
    case unsupportedAlgorithm(String)
    /// No digest after the hash function's name.
    case missingDigest
    /// The digest has the wrong number of bytes for its hash function.
    case wrongDigestLength(algorithm: String, expected: Int, actual: Int)
    /// A character that is not a hex digit (or a missing colon) at this offset of the digest.
    case badHex(position: Int)
    /// The value is longer than ``DTLSFingerprint/maximumSDPValueLength``.
    case tooLong(Int)

    public var description: String {
        switch self {
        case .unsupportedAlgorithm(let name):
            "fingerprint hash function '\(name)' is not supported: use sha-256 (or sha-1, sha-384, sha-512)"
        case .missingDigest:
            "fingerprint has no digest: write 'sha-256 AB:CD:…'"
        case .wrongDigestLength(let algorithm, let expected, let actual):
            "\(algorithm) fingerprint must have \(expected) bytes (colon-separated hex pairs), got \(actual)"
        case .badHex(let position):
            "fingerprint digest is not colon-separated hex pairs at character \(position)"
        case .tooLong(let length):
            "fingerprint value of \(length) characters is longer than any digest (at most \(DTLSFingerprint.maximumSDPValueLength))"
        }
    }
}
