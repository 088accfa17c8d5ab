/// The DTLS record layer's framing (RFC 6347 §4.1), read without OpenSSL: validation of a
/// received datagram before OpenSSL sees it, and packing of OpenSSL's records into datagrams.
///
/// Allocation-free when validating.
enum DTLSRecords {
    /// Bytes of a DTLS 1.0/1.2 record header: type, version, epoch, sequence number, length.
    static let headerLength = 13
    /// The largest record body accepted: 2^14 bytes of plaintext plus 2,048 of expansion (RFC 6347).
    static let maximumRecordLength = 16_384 + 2_048

    /// Whether `datagram` is one or more whole DTLS records of a known content type
    /// (change_cipher_spec, alert, handshake, application_data) and version (DTLS 1.0 or 1.2),
    /// with nothing after the last.
    static func isWellFormed(_ datagram: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        guard datagram.count >= headerLength else { return false }
        while offset < datagram.count {
            guard datagram.count - offset >= headerLength else { return false }
            let type = datagram[offset]
            guard (20...23).contains(type) else { return false }
            guard datagram[offset + 1] == 0xFE, datagram[offset + 2] == 0xFF || datagram[offset + 2] == 0xFD else { return false }
            let length = Int(datagram[offset + 11]) << 8 | Int(datagram[offset + 12])
            guard length <= maximumRecordLength, datagram.count - offset - headerLength >= length else { return false }
            offset += headerLength + length
        }
        return true
    }

    /// Splits `bytes` (records OpenSSL wrote back to back) at record boundaries and packs whole
    /// records into datagrams of at most `mtu` bytes; a record longer than `mtu` goes alone.
    /// Bytes that do not frame as records (never, from OpenSSL) go out as one datagram.
    static func pack(_ bytes: ArraySlice<UInt8>, mtu: Int) -> [[UInt8]] {
        var datagrams: [[UInt8]] = []
        var current: [UInt8] = []
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            guard bytes.endIndex - offset >= headerLength else {
                current.append(contentsOf: bytes[offset...])
                break
            }
            let length = Int(bytes[offset + 11]) << 8 | Int(bytes[offset + 12])
            let end = min(bytes.endIndex, offset + headerLength + length)
            if !current.isEmpty, current.count + (end - offset) > mtu {
                datagrams.append(current)
                current = []
            }
            current.append(contentsOf: bytes[offset..<end])
            offset = end
        }
        if !current.isEmpty { datagrams.append(current) }
        return datagrams
    }
}
