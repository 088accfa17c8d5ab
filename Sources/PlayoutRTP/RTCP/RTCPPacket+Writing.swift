extension RTCPPacket {
    /// The packet in wire format (RFC 3550 §6.4–6.6). ``other(packetType:count:length:)``
    /// writes an empty packet of that type and count, `length` bytes long.
    public var serialized: [UInt8] {
        var body: [UInt8] = []
        func append32(_ value: UInt32) {
            body += [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
        }
        func appendReports(_ reports: [RTCPReportBlock]) {
            for report in reports.prefix(31) {
                append32(report.ssrc)
                append32(UInt32(report.fractionLost) << 24 | (UInt32(bitPattern: report.cumulativeLost) & 0x00FF_FFFF))
                append32(report.extendedHighestSequenceNumber)
                append32(report.jitter)
                append32(report.lastSenderReport)
                append32(report.delaySinceLastSenderReport)
            }
        }
        let type: UInt8
        let count: Int
        switch self {
        case .senderReport(let report):
            type = Self.senderReportType
            count = min(report.reports.count, 31)
            append32(report.ssrc)
            append32(UInt32(report.ntpTimestamp >> 32))
            append32(UInt32(report.ntpTimestamp & 0xFFFF_FFFF))
            append32(report.rtpTimestamp)
            append32(report.packetCount)
            append32(report.octetCount)
            appendReports(report.reports)
        case .receiverReport(let report):
            type = Self.receiverReportType
            count = min(report.reports.count, 31)
            append32(report.ssrc)
            appendReports(report.reports)
        case .sourceDescription(let chunks):
            type = Self.sourceDescriptionType
            count = min(chunks.count, 31)
            for chunk in chunks.prefix(31) {
                append32(chunk.ssrc)
                for item in chunk.items where item.type != 0 {
                    let value = item.value.prefix(255)
                    body += [item.type, UInt8(value.count)] + value
                }
                body.append(0)
                while body.count % 4 != 0 { body.append(0) }
            }
        case .goodbye(let goodbye):
            type = Self.goodbyeType
            count = min(goodbye.ssrcs.count, 31)
            goodbye.ssrcs.prefix(31).forEach(append32)
            if let reason = goodbye.reason {
                let text = Array(reason.utf8.prefix(255))
                body += [UInt8(text.count)] + text
                while body.count % 4 != 0 { body.append(0) }
            }
        case .feedback(let feedback):
            type = feedback.message.typeAndFormat.type
            let written = feedback.serializedBody()
            count = Int(written.format)
            body = written.body
        case .extendedReport(let report):
            type = RTCPExtendedReport.packetType
            count = 0
            body = report.serializedBody()
        case .other(let packetType, let otherCount, let length):
            type = packetType
            count = Int(otherCount & 0x1F)
            body = [UInt8](repeating: 0, count: max(0, (length - 4) & ~3))
        }
        let words = UInt16((body.count + 4) / 4 - 1)
        return [0x80 | UInt8(count), type, UInt8(words >> 8), UInt8(words & 0xFF)] + body
    }

    /// Several packets as one compound packet.
    public static func serializeCompound(_ packets: [RTCPPacket]) -> [UInt8] {
        packets.flatMap(\.serialized)
    }
}
