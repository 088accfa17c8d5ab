import PlayoutRTP

/// How a stream served from one encode rewrites the publisher's canonical packet into its own:
/// the one piece ``WHEPSession`` (one WHEP subscriber's stream) and ``FanoutStream`` (one
/// `--fanout` viewer's stream) share. The header is written by hand — the stream's payload type,
/// sequence number, timestamp and SSRC, and a one-byte-form extension block (RFC 8285) with
/// `sdes:mid` and `abs-capture-time` under the stream's ids — then the payload is copied.
/// Allocates nothing.
enum RTPRewrite {
    /// Writes the stream's version of canonical packet `parsed` into `out`; returns its length,
    /// or 0 when it does not fit with `trailer` spare bytes after it (room for the SRTP tag).
    ///
    /// - Parameters:
    ///   - mid: the `sdes:mid` element's id and bytes (nil, or empty bytes: none; at most 16 bytes).
    ///   - captureTime: the `abs-capture-time` element's id and value (nil: none; 1…16 bytes).
    static func write(
        _ parsed: RTPPacket, into out: UnsafeMutableRawBufferPointer, payloadType: UInt8, sequenceNumber sequence: UInt16, timestamp: UInt32,
        ssrc: UInt32, mid: (id: UInt8, bytes: [UInt8])?, captureTime: (id: UInt8, value: UnsafeRawBufferPointer)?, trailer: Int
    ) -> Int {
        let mid = mid.flatMap { (1...16).contains($0.bytes.count) && (1...14).contains($0.id) ? $0 : nil }
        let capture = captureTime.flatMap { (1...16).contains($0.value.count) && (1...14).contains($0.id) ? $0 : nil }
        let elements = (mid.map { 1 + $0.bytes.count } ?? 0) + (capture.map { 1 + $0.value.count } ?? 0)
        let padded = (elements + 3) & ~3
        let headerLength = 12 + (elements > 0 ? 4 + padded : 0)
        let payload = parsed.payload
        guard headerLength + payload.count + trailer <= out.count else { return 0 }
        out[0] = 0x80 | (elements > 0 ? 0x10 : 0)
        out[1] = (parsed.marker ? 0x80 : 0) | (payloadType & 0x7F)
        out[2] = UInt8(sequence >> 8)
        out[3] = UInt8(truncatingIfNeeded: sequence)
        for shift in 0..<4 {
            out[4 + shift] = UInt8(truncatingIfNeeded: timestamp >> UInt32(24 - 8 * shift))
            out[8 + shift] = UInt8(truncatingIfNeeded: ssrc >> UInt32(24 - 8 * shift))
        }
        var offset = 12
        if elements > 0 {
            out[12] = 0xBE
            out[13] = 0xDE
            out[14] = UInt8((padded / 4) >> 8)
            out[15] = UInt8(truncatingIfNeeded: padded / 4)
            offset = 16
            if let mid {
                out[offset] = mid.id << 4 | UInt8(mid.bytes.count - 1)
                offset += 1
                for byte in mid.bytes {
                    out[offset] = byte
                    offset += 1
                }
            }
            if let capture {
                out[offset] = capture.id << 4 | UInt8(capture.value.count - 1)
                offset += 1
                for byte in capture.value {
                    out[offset] = byte
                    offset += 1
                }
            }
            while offset < headerLength {
                out[offset] = 0
                offset += 1
            }
        }
        if let source = payload.baseAddress, !payload.isEmpty {
            (out.baseAddress! + offset).copyMemory(from: source, byteCount: payload.count)
        }
        return headerLength + payload.count
    }
}
