/// An RTCP extended report (XR, packet type 207; RFC 3611) — the two blocks a receiver that
/// sends no RTP needs to learn its round-trip time: it sends a Receiver Reference Time block
/// (RRTR, §4.4) with its NTP clock, and the sender answers with a DLRR block (§4.5) giving the
/// middle 32 bits of that time and the delay since, both in 1/65536 s — as LSR/DLSR do the other
/// way. Other block types are kept as their type and length, and skipped.
///
/// ```swift
/// let rrtr = RTCPPacket.extendedReport(RTCPExtendedReport(ssrc: me, blocks: [.receiverReferenceTime(ntp: NTPTime.ntp(unixNanoseconds: now))]))
/// // the sender, at the next sender report:
/// let dlrr = RTCPExtendedReport(ssrc: sender, blocks: [.delaySinceLastReceiverReport([.init(ssrc: me, lastReceiverReport: middle, delay: delay)])])
/// ```
public struct RTCPExtendedReport: Equatable, Sendable {
    /// The extended-report packet type (RFC 3611 §2).
    public static let packetType: UInt8 = 207

    /// One DLRR sub-block: about receiver `ssrc`, the middle 32 bits of its last RRTR's NTP time
    /// and the delay since it arrived (1/65536 s).
    public struct DelaySinceLastReceiverReport: Equatable, Sendable {
        public var ssrc: UInt32
        public var lastReceiverReport: UInt32
        public var delay: UInt32

        public init(ssrc: UInt32, lastReceiverReport: UInt32, delay: UInt32) {
            self.ssrc = ssrc
            self.lastReceiverReport = lastReceiverReport
            self.delay = delay
        }
    }

    /// One report block.
    public enum Block: Equatable, Sendable {
        /// Receiver Reference Time (block type 4): the receiver's NTP time when it sent the report.
        case receiverReferenceTime(ntp: UInt64)
        /// DLRR (block type 5): per receiver, its last RRTR and the delay since.
        case delaySinceLastReceiverReport([DelaySinceLastReceiverReport])
        /// Any other block: its type and length in bytes (skipped).
        case other(blockType: UInt8, length: Int)
    }

    /// The SSRC of the packet's sender.
    public var ssrc: UInt32
    /// Its blocks, in order.
    public var blocks: [Block]

    public init(ssrc: UInt32, blocks: [Block]) {
        self.ssrc = ssrc
        self.blocks = blocks
    }

    static func parse(body: UnsafeRawBufferPointer, fail: (String) -> RTCPParseError) throws(RTCPParseError) -> RTCPExtendedReport {
        guard body.count >= 4 else { throw fail("an extended report needs 4 bytes, has \(body.count)") }
        var report = RTCPExtendedReport(ssrc: body.loadBigEndian(UInt32.self, at: 0), blocks: [])
        var at = 4
        while at < body.count {
            guard at + 4 <= body.count else { throw fail("XR block header at \(at) is truncated") }
            let type = body[at]
            let length = 4 * Int(body.loadBigEndian(UInt16.self, at: at + 2))
            let start = at + 4
            guard start + length <= body.count else { throw fail("XR block of type \(type) runs past the packet") }
            switch type {
            case 4:
                guard length == 8 else { throw fail("an RRTR block has 8 bytes, not \(length)") }
                report.blocks.append(.receiverReferenceTime(ntp: body.loadBigEndian(UInt64.self, at: start)))
            case 5:
                guard length % 12 == 0 else { throw fail("a DLRR block's \(length) bytes are not sub-blocks of 12") }
                let items = (0..<length / 12).map { index in
                    let item = start + 12 * index
                    return DelaySinceLastReceiverReport(
                        ssrc: body.loadBigEndian(UInt32.self, at: item), lastReceiverReport: body.loadBigEndian(UInt32.self, at: item + 4),
                        delay: body.loadBigEndian(UInt32.self, at: item + 8)
                    )
                }
                report.blocks.append(.delaySinceLastReceiverReport(items))
            default:
                report.blocks.append(.other(blockType: type, length: length))
            }
            at = start + length
        }
        return report
    }

    /// The body as written (after the common header), at most 255 DLRR sub-blocks a block.
    func serializedBody() -> [UInt8] {
        var body: [UInt8] = []
        func append32(_ value: UInt32) {
            body += [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
        }
        append32(ssrc)
        for block in blocks {
            switch block {
            case .receiverReferenceTime(let ntp):
                body += [4, 0, 0, 2]
                append32(UInt32(ntp >> 32))
                append32(UInt32(ntp & 0xFFFF_FFFF))
            case .delaySinceLastReceiverReport(let items):
                let items = items.prefix(255)
                let words = UInt16(items.count * 3)
                body += [5, 0, UInt8(words >> 8), UInt8(words & 0xFF)]
                for item in items {
                    append32(item.ssrc)
                    append32(item.lastReceiverReport)
                    append32(item.delay)
                }
            case .other(let type, let length):
                let words = UInt16(clamping: max(0, length) / 4)
                body += [type, 0, UInt8(words >> 8), UInt8(words & 0xFF)] + [UInt8](repeating: 0, count: Int(words) * 4)
            }
        }
        return body
    }
}
