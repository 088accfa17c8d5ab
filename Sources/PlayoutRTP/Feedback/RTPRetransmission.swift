import PlayoutCore

/// RTP retransmission payload format (RFC 4588 §4): an RTX packet carries the original sequence
/// number (OSN) in the first two bytes of its payload, then the original payload; its header keeps
/// the original timestamp, marker, CSRCs and header extension, with the RTX stream's payload type,
/// SSRC and sequence number.
public enum RTPRetransmission {
    /// Turns the RTX packet in `bytes[0..<length]` back into the original packet, in place: the
    /// header moves two bytes on over the OSN and gets the original sequence number, payload type
    /// and SSRC. Returns where the restored packet starts (2) and its length, or nil when the
    /// packet is not RTP or carries no OSN (an RTX packet of padding only, used as a probe).
    ///
    /// ```swift
    /// if let (start, count) = RTPRetransmission.restore(datagram, length: n, payloadType: 96, ssrc: mediaSSRC) {
    ///     receive(UnsafeMutableRawBufferPointer(rebasing: datagram[start..<start + count]), …)
    /// }
    /// ```
    public static func restore(
        _ bytes: UnsafeMutableRawBufferPointer, length: Int, payloadType: UInt8, ssrc: UInt32
    ) -> (start: Int, length: Int)? {
        let length = min(max(length, 0), bytes.count)
        guard let packet = try? RTPPacket(parsing: UnsafeRawBufferPointer(rebasing: bytes[0..<length])), packet.payload.count >= 2 else {
            return nil
        }
        let headerLength = packet.headerLength
        let original = packet.payload.loadBigEndian(UInt16.self, at: 0)
        guard let base = bytes.baseAddress else { return nil }
        // The header moves over the OSN; the payload (and any padding) stays where it is.
        (base + 2).copyMemory(from: base, byteCount: headerLength)
        let restored = UnsafeMutableRawBufferPointer(rebasing: bytes[2..<length])
        restored[1] = (restored[1] & 0x80) | (payloadType & 0x7F)
        restored[2] = UInt8(original >> 8)
        restored[3] = UInt8(original & 0xFF)
        restored[8] = UInt8(ssrc >> 24)
        restored[9] = UInt8((ssrc >> 16) & 0xFF)
        restored[10] = UInt8((ssrc >> 8) & 0xFF)
        restored[11] = UInt8(ssrc & 0xFF)
        return (2, length - 2)
    }

    /// Writes the RTX packet of `original` (a whole RTP packet) into `output`: RTX payload type
    /// `payloadType`, SSRC `ssrc` and sequence number `sequenceNumber`, the OSN, then the original
    /// payload (padding dropped). Returns its length, or nil when `original` is not RTP or
    /// `output` is too small.
    public static func packetize(
        _ original: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer, payloadType: UInt8, ssrc: UInt32, sequenceNumber: UInt16
    ) -> Int? {
        guard let packet = try? RTPPacket(parsing: original) else { return nil }
        let headerLength = packet.headerLength
        let payload = packet.payload
        let total = headerLength + 2 + payload.count
        guard output.count >= total, let destination = output.baseAddress, let source = original.baseAddress else { return nil }
        destination.copyMemory(from: source, byteCount: headerLength)
        output[0] &= ~0x20  // no padding in the RTX packet
        output[1] = (output[1] & 0x80) | (payloadType & 0x7F)
        output[2] = UInt8(sequenceNumber >> 8)
        output[3] = UInt8(sequenceNumber & 0xFF)
        output[8] = UInt8(ssrc >> 24)
        output[9] = UInt8((ssrc >> 16) & 0xFF)
        output[10] = UInt8((ssrc >> 8) & 0xFF)
        output[11] = UInt8(ssrc & 0xFF)
        let osn = packet.sequenceNumber.rawValue
        output[headerLength] = UInt8(osn >> 8)
        output[headerLength + 1] = UInt8(osn & 0xFF)
        if let payloadBase = payload.baseAddress, !payload.isEmpty {
            (destination + headerLength + 2).copyMemory(from: payloadBase, byteCount: payload.count)
        }
        return total
    }
}
