internal import COpenSSL

/// The two checksums of STUN: MESSAGE-INTEGRITY's HMAC-SHA1 (OpenSSL) and FINGERPRINT's CRC-32.
enum STUNIntegrity {
    /// HMAC-SHA1 of `message` with `key` (20 bytes), through OpenSSL's one-shot `HMAC()`.
    static func hmacSHA1(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { messageBytes in
                digest.withUnsafeMutableBufferPointer { out in
                    HMAC(EVP_sha1(), keyBytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(keyBytes.count),
                         messageBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), messageBytes.count, out.baseAddress, &length)
                }
            }
        }
        // HMAC() fails only when OpenSSL cannot allocate; a MAC of zeros then fails every check.
        guard result != nil, length == 20 else { return [UInt8](repeating: 0, count: 20) }
        return Array(digest.prefix(20))
    }

    /// FINGERPRINT's value: CRC-32 (ISO 3309 / IEEE 802.3) of `bytes` XOR 0x5354554E.
    static func fingerprint(of bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { fingerprint(of: $0) }
    }

    /// FINGERPRINT's value: CRC-32 (ISO 3309 / IEEE 802.3) of `bytes` XOR 0x5354554E.
    static func fingerprint(of bytes: UnsafeRawBufferPointer) -> UInt32 {
        crc32(bytes) ^ 0x5354_554E
    }

    /// The reflected CRC-32 with polynomial 0xEDB88320 (zlib's `crc32`).
    static func crc32(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc = crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
        }
        return crc ^ 0xFFFF_FFFF
    }

    static let crcTable: [UInt32] = (0..<256).map { index -> UInt32 in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }
}
