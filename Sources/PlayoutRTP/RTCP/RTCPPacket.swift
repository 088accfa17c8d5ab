/// Why bytes could not be parsed as an RTCP compound packet.
public enum RTCPParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Fewer bytes than a header or a declared length needs; `offset` is where the packet starts.
    case truncated(offset: Int, needed: Int, available: Int)
    /// The version field is not 2.
    case unsupportedVersion(UInt8, offset: Int)
    /// A packet's content does not fit its declared length (e.g. more report blocks than room).
    case malformed(packetType: UInt8, offset: Int, reason: String)
    /// Empty input.
    case empty

    public var description: String {
        switch self {
        case .truncated(let offset, let needed, let available):
            return "RTCP packet at byte \(offset) truncated: needs \(needed) bytes, has \(available)"
        case .unsupportedVersion(let version, let offset):
            return "RTCP packet at byte \(offset) has version \(version) (only version 2 is supported)"
        case .malformed(let type, let offset, let reason):
            return "RTCP packet type \(type) at byte \(offset) is malformed: \(reason)"
        case .empty:
            return "empty RTCP packet"
        }
    }
}

/// A reception report block (RFC 3550 §6.4.1), in sender and receiver reports.
public struct RTCPReportBlock: Equatable, Sendable {
    /// The source this block reports on.
    public var ssrc: UInt32
    /// Fraction of packets lost since the last report, in 1/256.
    public var fractionLost: UInt8
    /// Cumulative number of packets lost (24-bit signed: duplicates can make it negative).
    public var cumulativeLost: Int32
    /// Extended highest sequence number received.
    public var extendedHighestSequenceNumber: UInt32
    /// Interarrival jitter, in RTP timestamp units.
    public var jitter: UInt32
    /// Middle 32 bits of the NTP timestamp of the last sender report received.
    public var lastSenderReport: UInt32
    /// Delay since that sender report, in 1/65536 s.
    public var delaySinceLastSenderReport: UInt32

    public init(
        ssrc: UInt32, fractionLost: UInt8 = 0, cumulativeLost: Int32 = 0, extendedHighestSequenceNumber: UInt32 = 0,
        jitter: UInt32 = 0, lastSenderReport: UInt32 = 0, delaySinceLastSenderReport: UInt32 = 0
    ) {
        self.ssrc = ssrc
        self.fractionLost = fractionLost
        self.cumulativeLost = cumulativeLost
        self.extendedHighestSequenceNumber = extendedHighestSequenceNumber
        self.jitter = jitter
        self.lastSenderReport = lastSenderReport
        self.delaySinceLastSenderReport = delaySinceLastSenderReport
    }

    static let length = 24
}

/// A sender report (RFC 3550 §6.4.1): maps the sender's RTP timestamps to its wall clock.
public struct RTCPSenderReport: Equatable, Sendable {
    public var ssrc: UInt32
    /// The sender's wall clock as a 64-bit NTP timestamp (UQ32.32 seconds since 1900).
    public var ntpTimestamp: UInt64
    /// The RTP timestamp that corresponds to `ntpTimestamp`.
    public var rtpTimestamp: UInt32
    public var packetCount: UInt32
    public var octetCount: UInt32
    public var reports: [RTCPReportBlock]

    public init(ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32, reports: [RTCPReportBlock] = []) {
        self.ssrc = ssrc
        self.ntpTimestamp = ntpTimestamp
        self.rtpTimestamp = rtpTimestamp
        self.packetCount = packetCount
        self.octetCount = octetCount
        self.reports = reports
    }
}

/// A receiver report (RFC 3550 §6.4.2).
public struct RTCPReceiverReport: Equatable, Sendable {
    public var ssrc: UInt32
    public var reports: [RTCPReportBlock]

    public init(ssrc: UInt32, reports: [RTCPReportBlock] = []) {
        self.ssrc = ssrc
        self.reports = reports
    }
}

/// A source description chunk (RFC 3550 §6.5): items such as CNAME for one source.
public struct RTCPSourceDescriptionChunk: Equatable, Sendable {
    /// SDES item types (RFC 3550 §6.5).
    public enum ItemType: UInt8, Sendable {
        case cname = 1, name, email, phone, location, tool, note, priv
    }

    public var ssrc: UInt32
    /// Items as (type, value); unknown types are kept with their raw type number.
    public var items: [(type: UInt8, value: [UInt8])]

    public init(ssrc: UInt32, items: [(type: UInt8, value: [UInt8])]) {
        self.ssrc = ssrc
        self.items = items
    }

    /// The CNAME item, decoded as UTF-8.
    public var cname: String? {
        items.first { $0.type == ItemType.cname.rawValue }.map { String(decoding: $0.value, as: UTF8.self) }
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.ssrc == rhs.ssrc && lhs.items.count == rhs.items.count
            && zip(lhs.items, rhs.items).allSatisfy { $0.type == $1.type && $0.value == $1.value }
    }
}

/// A goodbye (RFC 3550 §6.6): these sources are leaving.
public struct RTCPGoodbye: Equatable, Sendable {
    public var ssrcs: [UInt32]
    public var reason: String?

    public init(ssrcs: [UInt32], reason: String? = nil) {
        self.ssrcs = ssrcs
        self.reason = reason
    }
}

/// One packet of an RTCP compound packet.
public enum RTCPPacket: Equatable, Sendable {
    case senderReport(RTCPSenderReport)
    case receiverReport(RTCPReceiverReport)
    case sourceDescription([RTCPSourceDescriptionChunk])
    case goodbye(RTCPGoodbye)
    /// A feedback message (RFC 4585 RTPFB/PSFB: NACK, PLI, FIR, TMMBR/TMMBN, REMB).
    case feedback(RTCPFeedback)
    /// An extended report (RFC 3611): RRTR and DLRR blocks, for a receiver's round-trip time.
    case extendedReport(RTCPExtendedReport)
    /// Any other type (APP, …), skipped: its type, count field and length in bytes.
    case other(packetType: UInt8, count: UInt8, length: Int)

    /// RTCP packet types (RFC 3550 §12.1).
    public static let senderReportType: UInt8 = 200
    public static let receiverReportType: UInt8 = 201
    public static let sourceDescriptionType: UInt8 = 202
    public static let goodbyeType: UInt8 = 203

    /// Parses a compound RTCP packet (or a single one) into its packets, in order.
    ///
    /// Unknown packet types are returned as ``other(packetType:count:length:)`` and skipped by
    /// their length field. Anything that does not fit its declared length is an error.
    ///
    /// - Complexity: O(n); allocates the result arrays (RTCP is a few packets a second).
    public static func parseCompound(_ bytes: UnsafeRawBufferPointer) throws(RTCPParseError) -> [RTCPPacket] {
        guard !bytes.isEmpty else { throw .empty }
        var packets: [RTCPPacket] = []
        var offset = 0
        while offset < bytes.count {
            let available = bytes.count - offset
            guard available >= 4 else { throw .truncated(offset: offset, needed: 4, available: available) }
            let first = bytes[offset]
            let version = first >> 6
            guard version == 2 else { throw .unsupportedVersion(version, offset: offset) }
            let hasPadding = first & 0x20 != 0
            let count = first & 0x1F
            let type = bytes[offset + 1]
            let length = 4 * (Int(bytes.loadBigEndian(UInt16.self, at: offset + 2)) + 1)
            guard available >= length else { throw .truncated(offset: offset, needed: length, available: available) }
            var body = UnsafeRawBufferPointer(rebasing: bytes[offset + 4..<offset + length])
            if hasPadding {
                let padding = Int(body.last ?? 0)
                guard padding > 0, padding <= body.count else {
                    throw .malformed(packetType: type, offset: offset, reason: "padding of \(padding) bytes in a \(body.count)-byte body")
                }
                body = UnsafeRawBufferPointer(rebasing: body[0..<body.count - padding])
            }
            packets.append(try parseOne(type: type, count: count, body: body, length: length, offset: offset))
            offset += length
        }
        return packets
    }

    static func parseOne(type: UInt8, count: UInt8, body: UnsafeRawBufferPointer, length: Int, offset: Int) throws(RTCPParseError) -> RTCPPacket {
        func fail(_ reason: String) -> RTCPParseError {
            .malformed(packetType: type, offset: offset, reason: reason)
        }
        func reportBlocks(at start: Int) throws(RTCPParseError) -> [RTCPReportBlock] {
            guard start + Int(count) * RTCPReportBlock.length <= body.count else {
                throw fail("\(count) report blocks do not fit \(body.count) bytes")
            }
            return (0..<Int(count)).map { index in
                let at = start + index * RTCPReportBlock.length
                let lost = body.loadBigEndian(UInt32.self, at: at + 4)
                let cumulative = Int32(bitPattern: (lost & 0x00FF_FFFF) << 8) >> 8  // sign-extend 24 bits
                return RTCPReportBlock(
                    ssrc: body.loadBigEndian(UInt32.self, at: at),
                    fractionLost: UInt8(lost >> 24),
                    cumulativeLost: cumulative,
                    extendedHighestSequenceNumber: body.loadBigEndian(UInt32.self, at: at + 8),
                    jitter: body.loadBigEndian(UInt32.self, at: at + 12),
                    lastSenderReport: body.loadBigEndian(UInt32.self, at: at + 16),
                    delaySinceLastSenderReport: body.loadBigEndian(UInt32.self, at: at + 20)
                )
            }
        }
        switch type {
        case senderReportType:
            guard body.count >= 24 else { throw fail("a sender report needs 24 bytes, has \(body.count)") }
            return .senderReport(RTCPSenderReport(
                ssrc: body.loadBigEndian(UInt32.self, at: 0),
                ntpTimestamp: body.loadBigEndian(UInt64.self, at: 4),
                rtpTimestamp: body.loadBigEndian(UInt32.self, at: 12),
                packetCount: body.loadBigEndian(UInt32.self, at: 16),
                octetCount: body.loadBigEndian(UInt32.self, at: 20),
                reports: try reportBlocks(at: 24)
            ))
        case receiverReportType:
            guard body.count >= 4 else { throw fail("a receiver report needs 4 bytes, has \(body.count)") }
            return .receiverReport(RTCPReceiverReport(ssrc: body.loadBigEndian(UInt32.self, at: 0), reports: try reportBlocks(at: 4)))
        case sourceDescriptionType:
            var chunks: [RTCPSourceDescriptionChunk] = []
            var at = 0
            for _ in 0..<count {
                guard at + 4 <= body.count else { throw fail("SDES chunk \(chunks.count) is truncated") }
                var chunk = RTCPSourceDescriptionChunk(ssrc: body.loadBigEndian(UInt32.self, at: at), items: [])
                at += 4
                while true {
                    guard at < body.count else { throw fail("SDES chunk \(chunks.count) has no end marker") }
                    let itemType = body[at]
                    if itemType == 0 {
                        at = (at + 4) & ~3  // the null item, then pad to 32 bits
                        break
                    }
                    guard at + 2 <= body.count, at + 2 + Int(body[at + 1]) <= body.count else {
                        throw fail("SDES item of type \(itemType) runs past the packet")
                    }
                    let itemLength = Int(body[at + 1])
                    chunk.items.append((itemType, Array(body[at + 2..<at + 2 + itemLength])))
                    at += 2 + itemLength
                }
                chunks.append(chunk)
            }
            return .sourceDescription(chunks)
        case goodbyeType:
            guard Int(count) * 4 <= body.count else { throw fail("\(count) SSRCs do not fit \(body.count) bytes") }
            let ssrcs = (0..<Int(count)).map { body.loadBigEndian(UInt32.self, at: 4 * $0) }
            var reason: String?
            let reasonAt = Int(count) * 4
            if reasonAt < body.count {
                let reasonLength = Int(body[reasonAt])
                guard reasonAt + 1 + reasonLength <= body.count else { throw fail("the reason runs past the packet") }
                reason = String(decoding: body[reasonAt + 1..<reasonAt + 1 + reasonLength], as: UTF8.self)
            }
            return .goodbye(RTCPGoodbye(ssrcs: ssrcs, reason: reason))
        case RTCPFeedback.transportLayerType, RTCPFeedback.payloadSpecificType:
            return .feedback(try RTCPFeedback.parse(type: type, format: count, body: body, fail: fail))
        case RTCPExtendedReport.packetType:
            return .extendedReport(try RTCPExtendedReport.parse(body: body, fail: fail))
        default:
            return .other(packetType: type, count: count, length: length)
        }
    }
}
