import PlayoutRTP

/// Builders for the plain RTP and RTCP packets the SRTP tests protect.
enum SRTPTestPackets {
    /// A minimal RTP packet: V=2, no padding, extension or CSRCs, PT 96.
    static func rtp(sequenceNumber: UInt16, timestamp: UInt32 = 0, ssrc: UInt32 = 0xCAFE_BABE, payloadLength: Int = 100) -> [UInt8] {
        var packet: [UInt8] = [0x80, 96]
        packet += [UInt8(sequenceNumber >> 8), UInt8(truncatingIfNeeded: sequenceNumber)]
        packet += withUnsafeBytes(of: timestamp.bigEndian, Array.init)
        packet += withUnsafeBytes(of: ssrc.bigEndian, Array.init)
        // A payload that names its packet, so a mix-up shows.
        packet += (0..<payloadLength).map { UInt8(truncatingIfNeeded: Int(sequenceNumber) &+ $0) }
        return packet
    }

    /// An RTCP receiver report with no report blocks (PT 201), then `padding` payload words.
    static func rtcp(ssrc: UInt32 = 0xCAFE_BABE, words: Int = 6) -> [UInt8] {
        var packet: [UInt8] = [0x80, 201, 0, UInt8(1 + words)]
        packet += withUnsafeBytes(of: ssrc.bigEndian, Array.init)
        packet += (0..<(4 * words)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        return packet
    }
}

extension SRTPSession {
    /// An outbound and an inbound session sharing one key.
    static func pair(
        _ suite: SRTPCryptoSuite,
        keys: SRTPKeyingMaterial? = nil,
        configuration: Configuration = Configuration()
    ) throws -> (sender: SRTPSession, receiver: SRTPSession) {
        let keys = keys ?? SRTPKeyingMaterial.random(for: suite)
        return (
            try SRTPSession(keyingMaterial: keys, direction: .outbound, configuration: configuration),
            try SRTPSession(keyingMaterial: keys, direction: .inbound, configuration: configuration)
        )
    }
}
