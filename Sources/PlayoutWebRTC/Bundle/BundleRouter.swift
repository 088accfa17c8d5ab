import PlayoutRTP

/// Routes the RTP and RTCP of one BUNDLE transport (RFC 8843 §9.2) to their m-lines, sans-IO and
/// without allocating once a source is known: an SSRC seen before goes where it went; a new one
/// is placed by its `sdes:mid` header extension, then the `a=ssrc` lines of the answer, then its
/// payload type (when only one m-line has it), and remembered. RTCP goes by the SSRC of its
/// first packet's sender (bytes 4–8, which SRTCP leaves in the clear). What cannot be placed is
/// counted and dropped.
///
/// SRTP encrypts an RTP packet's padding count and appends the authentication tag after it, so
/// a packet with the P bit set (a sender's padding-only probe, typically on its RTX SSRC) is
/// placed by its header alone: the last byte it ends with says nothing here.
///
/// - Complexity: a known SSRC is a scan of at most ``maximumSources`` entries, no parse, no
///   allocation (the `Receive` benchmark's WHEP-shaped stream holds it to that).
///
/// ```swift
/// var router = BundleRouter(routes: [.init(mid: "0", payloadTypes: [96, 97]), .init(mid: "1", payloadTypes: [111])], midExtensionID: 1)
/// if let mline = router.route(rtp: datagram) { tracks[mline].deliver(datagram) }
/// ```
public struct BundleRouter: Sendable {
    /// What identifies one m-line's packets.
    public struct Route: Sendable, Equatable {
        /// Its `a=mid` (nil: none).
        public var mid: String?
        /// Its payload types, RTX included.
        public var payloadTypes: [UInt8]
        /// Its `a=ssrc` SSRCs (media and RTX), when announced.
        public var ssrcs: [UInt32]

        /// A route.
        public init(mid: String?, payloadTypes: [UInt8], ssrcs: [UInt32] = []) {
            self.mid = mid
            self.payloadTypes = payloadTypes
            self.ssrcs = ssrcs
        }
    }

    /// How packets were placed.
    public struct Statistics: Sendable, Equatable {
        /// New SSRCs placed by their `sdes:mid`, their announced SSRC (from RTP or RTCP), their
        /// payload type.
        public var sourcesByMid = 0
        public var sourcesBySSRC = 0
        public var sourcesByPayloadType = 0
        /// RTP packets no m-line could be found for (dropped).
        public var packetsUnrouted = 0
        /// RTCP packets from a sender SSRC no m-line is known for (dropped).
        public var controlPacketsUnrouted = 0
        /// Learned SSRCs forgotten to make room (more sources than ``BundleRouter/maximumSources``).
        public var sourcesForgotten = 0

        public init() {}
    }

    /// The most SSRCs remembered at once; the oldest gives way.
    public static let maximumSources = 32

    /// The m-lines, in order: ``route(rtp:)`` returns an index into this.
    public let routes: [Route]
    /// The negotiated `sdes:mid` extension id (nil: not negotiated).
    public let midExtensionID: UInt8?
    /// What it did.
    public private(set) var statistics = Statistics()
    private let mids: [[UInt8]?]
    private var learned: [(ssrc: UInt32, route: Int)] = []
    private var nextToForget = 0

    /// A router over `routes` (the answer's m-lines in order), reading the mid from extension
    /// `midExtensionID`.
    public init(routes: [Route], midExtensionID: UInt8?) {
        self.routes = routes
        self.midExtensionID = midExtensionID
        mids = routes.map { $0.mid.map { Array($0.utf8) } }
        learned.reserveCapacity(Self.maximumSources)
    }

    /// The m-line of an RTP (or SRTP: the header is in the clear) datagram, or nil (counted).
    public mutating func route(rtp datagram: UnsafeRawBufferPointer) -> Int? {
        guard datagram.count >= 12 else {
            statistics.packetsUnrouted += 1
            return nil
        }
        let ssrc = Self.word(datagram, at: 8)
        if let known = find(ssrc) { return known }
        guard datagram[0] & 0x20 != 0 else {
            guard let packet = try? RTPPacket(parsing: datagram) else {
                statistics.packetsUnrouted += 1
                return nil
            }
            return place(ssrc, packet)
        }
        // Padded: the header alone, copied without its P bit (see the type's notes on SRTP).
        guard let end = Self.headerEnd(datagram) else {
            statistics.packetsUnrouted += 1
            return nil
        }
        return withUnsafeTemporaryAllocation(byteCount: end, alignment: 1) { header in
            header.copyMemory(from: UnsafeRawBufferPointer(rebasing: datagram[0..<end]))
            header[0] &= ~0x20
            guard let packet = try? RTPPacket(parsing: UnsafeRawBufferPointer(header)) else {
                statistics.packetsUnrouted += 1
                return nil
            }
            return place(ssrc, packet)
        }
    }

    /// Places the new source `ssrc` by `packet` (its first packet seen): by mid, then announced
    /// SSRC, then payload type; nil (counted) when none says.
    private mutating func place(_ ssrc: UInt32, _ packet: RTPPacket) -> Int? {
        if let id = midExtensionID, let mid = packet.headerExtension(id: id), let route = mids.firstIndex(where: { $0.map { mid.elementsEqual($0) } ?? false }) {
            statistics.sourcesByMid += 1
            return learn(ssrc, route)
        }
        if let route = routes.firstIndex(where: { $0.ssrcs.contains(ssrc) }) {
            statistics.sourcesBySSRC += 1
            return learn(ssrc, route)
        }
        var byType: Int?
        for index in routes.indices where routes[index].payloadTypes.contains(packet.payloadType) {
            guard byType == nil else {
                byType = nil  // two m-lines have it: it says nothing
                break
            }
            byType = index
        }
        guard let byType else {
            statistics.packetsUnrouted += 1
            return nil
        }
        statistics.sourcesByPayloadType += 1
        return learn(ssrc, byType)
    }

    /// The m-line of an RTCP (or SRTCP) compound datagram: its first packet's sender SSRC's,
    /// or nil (counted).
    public mutating func route(rtcp datagram: UnsafeRawBufferPointer) -> Int? {
        guard datagram.count >= 8 else {
            statistics.controlPacketsUnrouted += 1
            return nil
        }
        let ssrc = Self.word(datagram, at: 4)
        if let known = find(ssrc) { return known }
        if let route = routes.firstIndex(where: { $0.ssrcs.contains(ssrc) }) {
            statistics.sourcesBySSRC += 1
            return learn(ssrc, route)
        }
        statistics.controlPacketsUnrouted += 1
        return nil
    }

    /// The big-endian 32-bit word at `offset` (in bounds: checked by the callers).
    private static func word(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    /// Where the header of an RTP `datagram` (at least 12 bytes) ends: after its CSRCs and header
    /// extension; nil when they run past its end.
    private static func headerEnd(_ datagram: UnsafeRawBufferPointer) -> Int? {
        var end = RTPPacket.fixedHeaderLength + 4 * Int(datagram[0] & 0x0F)
        if datagram[0] & 0x10 != 0 {
            guard end + 4 <= datagram.count else { return nil }
            end += 4 + 4 * (Int(datagram[end + 2]) << 8 | Int(datagram[end + 3]))
        }
        return end <= datagram.count ? end : nil
    }

    private func find(_ ssrc: UInt32) -> Int? {
        learned.withUnsafeBufferPointer { entries in
            for entry in entries where entry.ssrc == ssrc { return entry.route }
            return nil
        }
    }

    private mutating func learn(_ ssrc: UInt32, _ route: Int) -> Int {
        if learned.count < Self.maximumSources {
            learned.append((ssrc, route))
        } else {
            learned[nextToForget] = (ssrc, route)
            nextToForget = (nextToForget + 1) % Self.maximumSources
            statistics.sourcesForgotten += 1
        }
        return route
    }
}
