import PlayoutCore
import PlayoutRTP
import PlayoutWebRTC

/// The m-lines the `bundle` harness routes to: video (mid "0", H.264 and its RTX, one announced
/// SSRC), audio (mid "1", Opus, one announced SSRC), and an m-line without a mid that shares
/// payload type 96 with video (so that type alone places nothing).
let bundleHarnessRoutes = [
    BundleRouter.Route(mid: "0", payloadTypes: [96, 97], ssrcs: [0x0000_1111]),
    BundleRouter.Route(mid: "1", payloadTypes: [111], ssrcs: [0x0000_2222]),
    BundleRouter.Route(mid: nil, payloadTypes: [96, 100]),
]

/// BUNDLE routing of one WebRTC transport (`BundleRouter`, after RFC 7983's demultiplexer), as
/// `WebRTCConnection` runs it. The input's first byte picks the `sdes:mid` extension id (0: not
/// negotiated); a few sources are learned first — by mid, by announced SSRC, by payload type, and
/// a padded SRTP packet by its mid — then the rest is cut into datagrams (2-byte big-endian
/// length, then the datagram; a short tail is one more), each routed as RTP and as RTCP, twice.
///
/// Invariants: a route is one of the m-lines; routing is deterministic (the same datagram twice
/// goes to the same m-line); a known SSRC keeps its m-line while nothing was forgotten; a new
/// source's placement follows the rules (mid, then `a=ssrc`, then a payload type only one m-line
/// has) — checked for every unpadded RTP datagram against a model kept here; every unrouted
/// datagram is counted once; and the table stays bounded (sources forgotten = sources learned
/// beyond ``BundleRouter/maximumSources``).
public func fuzzBundle(_ bytes: UnsafeRawBufferPointer) {
    guard let configuration = bytes.first else { return }
    let midID: UInt8? = configuration % 15 == 0 ? nil : configuration % 15
    var router = BundleRouter(routes: bundleHarnessRoutes, midExtensionID: midID)
    var demux = DatagramDemultiplexer()
    /// What the router was seen to place, by SSRC (the model's memory).
    var placed: [UInt32: Int] = [:]
    var unroutedRTP = 0
    var unroutedRTCP = 0

    // The sources a session starts with.
    for (packet, expected) in bundleHarnessWarmUp(midID: midID) {
        let route = packet.withUnsafeBytes { router.route(rtp: $0) }
        precondition(route == expected, "warm-up packet placed on \(String(describing: route)), not \(String(describing: expected))")
        let ssrc = packet.withUnsafeBytes { bundleWord($0, at: 8) }
        if let route { placed[ssrc] = route } else { unroutedRTP += 1 }
    }

    var offset = 1
    var count = 0
    while offset < bytes.count {
        var length = bytes.count - offset
        var start = offset
        if length >= 2 {
            length = min(Int(bytes[offset]) << 8 | Int(bytes[offset + 1]), bytes.count - offset - 2)
            start = offset + 2
        }
        let datagram = UnsafeRawBufferPointer(rebasing: bytes[start..<start + length])
        offset = start + length
        count += 1
        let kind = demux.classify(datagram)
        if kind == .rtp || kind == .rtcp {
            precondition((128...191).contains(datagram[0]) && datagram.count >= DatagramDemultiplexer.minimumRTCPLength)
        }

        // As RTP.
        let forgottenBefore = router.statistics.sourcesForgotten
        let first = router.route(rtp: datagram)
        let again = router.route(rtp: datagram)
        precondition(first == again, "the same RTP datagram went to \(String(describing: first)), then \(String(describing: again))")
        if let first { precondition(bundleHarnessRoutes.indices.contains(first)) } else { unroutedRTP += 2 }
        if datagram.count >= RTPPacket.fixedHeaderLength {
            let ssrc = bundleWord(datagram, at: 8)
            if let known = placed[ssrc], forgottenBefore == 0 {
                precondition(first == known, "known SSRC \(ssrc) moved from m-line \(known) to \(String(describing: first))")
            } else if placed[ssrc] == nil, datagram[0] & 0x20 == 0 {
                let expected = bundleExpectedPlacement(datagram, ssrc: ssrc, midID: midID)
                precondition(first == expected, "new SSRC \(ssrc) placed on \(String(describing: first)), the rules say \(String(describing: expected))")
            }
            if let first { placed[ssrc] = first }
        } else {
            precondition(first == nil, "a datagram shorter than an RTP header was routed")
        }

        // As RTCP.
        let forgottenBeforeControl = router.statistics.sourcesForgotten
        let control = router.route(rtcp: datagram)
        let controlAgain = router.route(rtcp: datagram)
        precondition(control == controlAgain, "the same RTCP datagram went to two m-lines")
        if let control { precondition(bundleHarnessRoutes.indices.contains(control)) } else { unroutedRTCP += 2 }
        if datagram.count >= DatagramDemultiplexer.minimumRTCPLength {
            let ssrc = bundleWord(datagram, at: 4)
            if let known = placed[ssrc], forgottenBeforeControl == 0 {
                precondition(control == known, "RTCP of known SSRC \(ssrc) went to \(String(describing: control)), not \(known)")
            } else if placed[ssrc] == nil {
                let announced = bundleHarnessRoutes.firstIndex { $0.ssrcs.contains(ssrc) }
                precondition(control == announced, "RTCP of new SSRC \(ssrc): \(String(describing: control)), announced \(String(describing: announced))")
            }
            if let control { placed[ssrc] = control }
        } else {
            precondition(control == nil, "a datagram shorter than an RTCP header was routed")
        }
        if length == 0 && offset >= bytes.count { break }
    }

    let statistics = router.statistics
    precondition(demux.statistics.total == count, "every datagram classified once")
    precondition(statistics.packetsUnrouted == unroutedRTP && statistics.controlPacketsUnrouted == unroutedRTCP, "every unrouted datagram counted once")
    let learned = statistics.sourcesByMid + statistics.sourcesBySSRC + statistics.sourcesByPayloadType
    precondition(statistics.sourcesForgotten == max(0, learned - BundleRouter.maximumSources), "the table holds at most maximumSources")
    if statistics.sourcesForgotten == 0 {
        precondition(learned == placed.count, "each source learned once: \(learned) learned, \(placed.count) seen placed")
    }
}

/// The packets a session starts with, and the m-line each must reach.
private func bundleHarnessWarmUp(midID: UInt8?) -> [([UInt8], Int?)] {
    let id = midID ?? 1
    func packet(pt: UInt8, ssrc: UInt32, mid: String?, padded: Bool = false) -> [UInt8] {
        var extensions = mid.map { [RTPPacketBuilder.Extension(id: id, bytes: Array($0.utf8))] } ?? []
        extensions.append(.init(id: id == 2 ? 3 : 2, bytes: AbsoluteCaptureTime(captureTimestamp: 0x0123_4567_89AB_CDEF).bytes))
        var bytes = try! RTPPacketBuilder(payloadType: pt, ssrc: ssrc, extensions: extensions).serialized(payload: [0x7C, 0x85, 1, 2, 3])
        if padded {
            // As SRTP sends a padded packet: P set, the padding count encrypted, a 10-byte tag
            // after it whose last byte, read as a padding count, runs past the packet.
            bytes[0] |= 0x20
            bytes += [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xFF]
        }
        return bytes
    }
    return [
        (packet(pt: 97, ssrc: 0xAAAA_0001, mid: "0"), 0),  // by mid, or by the only m-line with 97
        (packet(pt: 111, ssrc: 0xBBBB_0002, mid: "1"), 1),
        (packet(pt: 96, ssrc: 0x0000_1111, mid: nil), 0),  // announced
        (packet(pt: 100, ssrc: 0xCCCC_0003, mid: nil), 2),  // by payload type
        (packet(pt: 96, ssrc: 0xDDDD_0004, mid: "1", padded: true), midID == nil ? nil : 1),  // 96 alone is ambiguous
    ]
}

/// Where the rules place a new source whose unpadded RTP `datagram` is its first: by its mid (when
/// negotiated and one m-line has it), else by an announced SSRC, else by a payload type only one
/// m-line has; nil when it does not parse or nothing says.
private func bundleExpectedPlacement(_ datagram: UnsafeRawBufferPointer, ssrc: UInt32, midID: UInt8?) -> Int? {
    guard let packet = try? RTPPacket(parsing: datagram) else { return nil }
    if let midID, let mid = packet.headerExtension(id: midID).map(Array.init),
       let route = bundleHarnessRoutes.firstIndex(where: { $0.mid.map { Array($0.utf8) == mid } ?? false }) {
        return route
    }
    if let route = bundleHarnessRoutes.firstIndex(where: { $0.ssrcs.contains(ssrc) }) { return route }
    let byType = bundleHarnessRoutes.indices.filter { bundleHarnessRoutes[$0].payloadTypes.contains(packet.payloadType) }
    return byType.count == 1 ? byType[0] : nil
}

/// The big-endian 32-bit word at `offset`.
private func bundleWord(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
    bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
}
