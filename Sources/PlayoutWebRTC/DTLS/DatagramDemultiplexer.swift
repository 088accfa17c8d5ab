/// What one datagram on the shared WebRTC socket is, by RFC 7983 §7 (updated by RFC 9443) and
/// RFC 5761 §4.
public enum DatagramKind: Sendable, Hashable {
    /// STUN (first byte 0…3): ICE connectivity checks and consent.
    case stun
    /// DTLS (first byte 20…63): the handshake, alerts, close_notify.
    case dtls
    /// SRTP (first byte 128…191, second byte not an RTCP packet type).
    case rtp
    /// SRTCP (first byte 128…191, second byte 192…223: an RTCP packet type, RFC 5761 §4).
    case rtcp
    /// Anything else (ZRTP 16…19, TURN channels 64…79, empty, too short): counted and dropped.
    case unknown
}

/// Classifies datagrams on the one socket a WebRTC session uses (RFC 7983: STUN, DTLS, SRTP and
/// SRTCP share it), and counts each kind.
///
/// ```swift
/// var demux = DatagramDemultiplexer()
/// switch demux.classify(datagram) {
/// case .stun: ice.receive(datagram, now: now)
/// case .dtls: dtls.receive(datagram, now: now)
/// case .rtp, .rtcp: pipeline.receive(datagram)       // SRTP unprotect, then the usual path
/// case .unknown: break                               // counted in demux.statistics
/// }
/// ```
///
/// - Complexity: O(1); reads at most the first two bytes; allocates nothing.
public struct DatagramDemultiplexer: Sendable {
    /// Per-kind counters.
    public struct Statistics: Sendable, Hashable {
        /// STUN datagrams.
        public var stun = 0
        /// DTLS datagrams.
        public var dtls = 0
        /// SRTP datagrams.
        public var rtp = 0
        /// SRTCP datagrams.
        public var rtcp = 0
        /// Datagrams of no kind here, dropped.
        public var unknown = 0
        /// Of ``unknown``: empty, or an RTP/RTCP first byte without the header's minimum length.
        public var truncated = 0

        /// Every datagram classified.
        public var total: Int { stun + dtls + rtp + rtcp + unknown }

        /// All zero.
        public init() {}
    }

    /// Shortest RTP packet: the fixed header (RFC 3550 §5.1).
    public static let minimumRTPLength = 12
    /// Shortest RTCP packet: a header and an SSRC (RFC 3550 §6.4).
    public static let minimumRTCPLength = 8

    /// The counters.
    public private(set) var statistics = Statistics()

    /// A demultiplexer with zeroed counters.
    public init() {}

    /// The kind of `datagram` by its first byte (and the second for RTP against RTCP), without
    /// counting: for callers that count elsewhere.
    public static func kind(of datagram: UnsafeRawBufferPointer) -> DatagramKind {
        guard let first = datagram.first else { return .unknown }
        switch first {
        case 0...3:
            return .stun
        case 20...63:
            return .dtls
        case 128...191:
            guard datagram.count >= 2 else { return .unknown }
            if (192...223).contains(datagram[1]) {
                return datagram.count >= minimumRTCPLength ? .rtcp : .unknown
            }
            return datagram.count >= minimumRTPLength ? .rtp : .unknown
        default:
            return .unknown
        }
    }

    /// Classifies `datagram` and counts it.
    public mutating func classify(_ datagram: UnsafeRawBufferPointer) -> DatagramKind {
        let kind = Self.kind(of: datagram)
        switch kind {
        case .stun: statistics.stun += 1
        case .dtls: statistics.dtls += 1
        case .rtp: statistics.rtp += 1
        case .rtcp: statistics.rtcp += 1
        case .unknown:
            statistics.unknown += 1
            if datagram.isEmpty || (128...191).contains(datagram[0]) { statistics.truncated += 1 }
        }
        return kind
    }

    /// Classifies `datagram` and counts it.
    public mutating func classify(_ datagram: [UInt8]) -> DatagramKind {
        datagram.withUnsafeBytes { classify($0) }
    }
}
