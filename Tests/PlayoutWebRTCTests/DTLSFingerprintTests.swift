import PlayoutCore
import PlayoutWebRTC
import Testing

@Suite("DTLS certificate and a=fingerprint")
struct DTLSFingerprintTests {
    @Test("the process certificate is created once, with a SHA-256 fingerprint SDP can carry")
    func sharedCertificate() throws {
        let first = try DTLSCertificate.shared()
        let second = try DTLSCertificate.shared()
        #expect(first === second)
        let value = first.fingerprint.sdpValue
        #expect(value.hasPrefix("sha-256 "))
        #expect(value.count == 8 + 32 * 3 - 1)
        #expect(value.dropFirst(8).allSatisfy { $0 == ":" || $0.isHexDigit && !$0.isLowercase })
        #expect(try DTLSFingerprint(sdpValue: value) == first.fingerprint)
        #expect(DTLSFingerprint(algorithm: .sha256, certificateDER: first.der) == first.fingerprint)
    }

    @Test("two certificates have different fingerprints")
    func distinct() throws {
        #expect(try DTLSCertificate().fingerprint != DTLSCertificate().fingerprint)
    }

    @Test("every supported hash function round-trips", arguments: DTLSFingerprint.Algorithm.allCases)
    func algorithms(algorithm: DTLSFingerprint.Algorithm) throws {
        let certificate = try DTLSCertificate()
        let fingerprint = certificate.fingerprint(algorithm)
        #expect(fingerprint.digest.count == algorithm.digestLength)
        #expect(try DTLSFingerprint(sdpValue: fingerprint.sdpValue) == fingerprint)
        #expect(try DTLSFingerprint(sdpValue: fingerprint.sdpValue.uppercased()) == fingerprint)
        #expect(try DTLSFingerprint(sdpValue: fingerprint.sdpValue.lowercased()) == fingerprint)
    }

    @Test("the RFC 8122 example parses")
    func rfcExample() throws {
        // RFC 8122 §5 (a SHA-1 example, in upper case as the RFC writes it).
        let value = "SHA-1 4A:AD:B9:B1:3F:82:18:3B:54:02:12:DF:3E:5D:49:6B:19:E5:7C:AB"
        let fingerprint = try DTLSFingerprint(sdpValue: value)
        #expect(fingerprint.algorithm == .sha1)
        #expect(fingerprint.digest.first == 0x4A && fingerprint.digest.last == 0xAB)
        #expect(fingerprint.sdpValue == "sha-1 4A:AD:B9:B1:3F:82:18:3B:54:02:12:DF:3E:5D:49:6B:19:E5:7C:AB")
    }

    static let hostileValues: [(String, DTLSFingerprintError)] = [
        ("md5 4A:AD", .unsupportedAlgorithm("md5")),
        ("sha-256", .missingDigest),
        ("sha-256 ", .wrongDigestLength(algorithm: "sha-256", expected: 32, actual: 0)),
        ("sha-1 4A:AD:B9", .wrongDigestLength(algorithm: "sha-1", expected: 20, actual: 3)),
        ("sha-1 4A:AD:B9:B1:3F:82:18:3B:54:02:12:DF:3E:5D:49:6B:19:E5:7C:AG", .badHex(position: 57)),
        ("sha-1 4A-AD:B9:B1:3F:82:18:3B:54:02:12:DF:3E:5D:49:6B:19:E5:7C:AB", .badHex(position: 2)),
        (String(repeating: "A", count: 300), .tooLong(300)),
    ]

    @Test("hostile values get typed errors", arguments: hostileValues)
    func hostile(value: String, error: DTLSFingerprintError) {
        #expect(throws: error) { try DTLSFingerprint(sdpValue: value) }
    }

    @Test("random values never crash and never parse to a wrong length")
    func randomValues() {
        var random = SeededRandom(seed: 8122)
        let alphabet = Array("sha-1256384 :0123456789ABCDEFabcdefxyz\t".utf8)
        for _ in 0..<5_000 {
            let length = Int.random(in: 0...140, using: &random)
            let bytes = (0..<length).map { _ in alphabet.randomElement(using: &random)! }
            if let fingerprint = try? DTLSFingerprint(sdpValue: String(decoding: bytes, as: UTF8.self)) {
                #expect(fingerprint.digest.count == fingerprint.algorithm.digestLength)
            }
        }
        for _ in 0..<1_000 {
            let bytes = random.bytes(Int.random(in: 0...300, using: &random))
            _ = try? DTLSFingerprint(sdpValue: String(decoding: bytes, as: UTF8.self))
        }
    }
}
