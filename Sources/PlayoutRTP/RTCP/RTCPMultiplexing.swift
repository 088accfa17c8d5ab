/// What a datagram on a port that carries both RTP and RTCP (`a=rtcp-mux`) is.
public enum MultiplexedPacketKind: Equatable, Sendable {
    /// An RTP packet (SRTP when the session is encrypted).
    case rtp
    /// An RTCP compound packet (SRTCP when the session is encrypted).
    case rtcp
    /// Neither: too short, or not RTP version 2 (STUN, DTLS, garbage).
    case unknown

    /// The second octets RTCP packet types take (RFC 5761 §4): 192–223 — 200–204 in use (SR, RR,
    /// SDES, BYE, APP), 205–207 feedback, the rest reserved so that RTP never uses them.
    public static let rtcpSecondOctets: ClosedRange<UInt8> = 192...223

    /// Tells RTP from RTCP by the rule of RFC 5761 §4: both start with version 2 (first octet
    /// 128–191, as RFC 7983 §7 also uses to tell them from STUN and DTLS), and RTCP's packet type,
    /// which takes the place of RTP's marker bit and payload type, is in 192–223 — the values of
    /// RTP payload types 64–95 with the marker set, which RFC 5761 forbids a multiplexed stream to
    /// use. Looks at two octets and the length only: the packet is not validated.
    ///
    /// - Parameter bytes: The datagram as received (SRTP and SRTCP leave these octets in clear).
    /// - Returns: ``rtcp`` for a datagram of at least 4 bytes (an RTCP header) whose second octet
    ///   is in ``rtcpSecondOctets``, ``rtp`` for one of at least 12 bytes (an RTP fixed header)
    ///   whose second octet is not, and ``unknown`` otherwise.
    @inlinable
    public init(classifying bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= 4, bytes[0] >> 6 == 2 else {
            self = .unknown
            return
        }
        if Self.rtcpSecondOctets.contains(bytes[1]) {
            self = .rtcp
        } else {
            self = bytes.count >= RTPPacket.fixedHeaderLength ? .rtp : .unknown
        }
    }
}
