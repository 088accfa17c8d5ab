import PlayoutCore
import PlayoutRTP
import Testing

@testable import PlayoutWebRTC

/// BUNDLE routing: SSRCs learned from `sdes:mid`, `a=ssrc` and payload type, in that order;
/// RTCP by its sender; hostile datagrams counted, never routed.
@Suite("BUNDLE router")
struct BundleRouterTests {
    static let routes = [
        BundleRouter.Route(mid: "0", payloadTypes: [96, 97]),
        BundleRouter.Route(mid: "1", payloadTypes: [111], ssrcs: [0xA0D10]),
    ]

    static func packet(pt: UInt8, ssrc: UInt32, mid: String? = nil, midID: UInt8 = 1, twoByte: Bool = false) -> [UInt8] {
        var extensions = mid.map { [RTPPacketBuilder.Extension(id: midID, bytes: Array($0.utf8))] } ?? []
        // An element over 16 bytes forces the two-byte form.
        if twoByte { extensions.append(.init(id: 9, bytes: Array(repeating: 7, count: 20))) }
        return try! RTPPacketBuilder(payloadType: pt, ssrc: ssrc, extensions: extensions).serialized(payload: [1, 2, 3])
    }

    static func route(_ router: inout BundleRouter, _ bytes: [UInt8]) -> Int? {
        bytes.withUnsafeBytes { router.route(rtp: $0) }
    }

    @Test("the mid places a new SSRC, which is remembered (later packets carry no mid)")
    func midThenRemembered() {
        var router = BundleRouter(routes: Self.routes, midExtensionID: 1)
        // Payload type 111 would say audio; the mid says video.
        #expect(Self.route(&router, Self.packet(pt: 111, ssrc: 5, mid: "0")) == 0)
        #expect(Self.route(&router, Self.packet(pt: 111, ssrc: 5)) == 0)
        #expect(Self.route(&router, Self.packet(pt: 96, ssrc: 6, mid: "1", twoByte: true)) == 1)
        #expect(router.statistics.sourcesByMid == 2 && router.statistics.sourcesByPayloadType == 0)
    }

    @Test("without a mid: the answer's a=ssrc, then a payload type only one m-line has")
    func ssrcThenPayloadType() {
        var router = BundleRouter(routes: Self.routes, midExtensionID: nil)
        #expect(Self.route(&router, Self.packet(pt: 96, ssrc: 0xA0D10)) == 1)  // announced for audio
        #expect(Self.route(&router, Self.packet(pt: 97, ssrc: 77)) == 0)  // RTX of video
        #expect(Self.route(&router, Self.packet(pt: 111, ssrc: 78)) == 1)
        #expect(Self.route(&router, Self.packet(pt: 100, ssrc: 79)) == nil)  // nobody's
        #expect(router.statistics.sourcesBySSRC == 1 && router.statistics.sourcesByPayloadType == 2 && router.statistics.packetsUnrouted == 1)
        // An unknown mid falls back to the payload type.
        var withMid = BundleRouter(routes: Self.routes, midExtensionID: 1)
        #expect(Self.route(&withMid, Self.packet(pt: 111, ssrc: 9, mid: "7")) == 1)
    }

    @Test("a payload type two m-lines share places nothing")
    func ambiguousPayloadType() {
        var router = BundleRouter(routes: [.init(mid: "0", payloadTypes: [96]), .init(mid: "1", payloadTypes: [96])], midExtensionID: nil)
        #expect(Self.route(&router, Self.packet(pt: 96, ssrc: 1)) == nil)
        #expect(router.statistics.packetsUnrouted == 1)
    }

    @Test("RTCP goes by its first packet's sender SSRC: learned from RTP, or announced")
    func control() {
        var router = BundleRouter(routes: Self.routes, midExtensionID: 1)
        _ = Self.route(&router, Self.packet(pt: 96, ssrc: 42, mid: "0"))
        func rtcp(_ ssrc: UInt32) -> [UInt8] {
            [0x80, 200, 0, 6] + withUnsafeBytes(of: ssrc.bigEndian, Array.init) + [UInt8](repeating: 0, count: 20)
        }
        #expect(rtcp(42).withUnsafeBytes { router.route(rtcp: $0) } == 0)
        #expect(rtcp(0xA0D10).withUnsafeBytes { router.route(rtcp: $0) } == 1)
        #expect(rtcp(43).withUnsafeBytes { router.route(rtcp: $0) } == nil)
        #expect([UInt8]([0x80, 200, 0]).withUnsafeBytes { router.route(rtcp: $0) } == nil)
        #expect(router.statistics.controlPacketsUnrouted == 2)
    }

    @Test("more sources than it remembers: the oldest gives way, memory stays bounded")
    func boundedMemory() {
        var router = BundleRouter(routes: Self.routes, midExtensionID: 1)
        for ssrc in 1...UInt32(BundleRouter.maximumSources + 10) {
            #expect(Self.route(&router, Self.packet(pt: 96, ssrc: ssrc, mid: "0")) == 0)
        }
        #expect(router.statistics.sourcesForgotten == 10)
        // The first source was forgotten: without its mid now, it is placed by payload type again.
        #expect(Self.route(&router, Self.packet(pt: 111, ssrc: 1)) == 1)
    }

    @Test("hostile datagrams: truncated, random, foreign — counted, never routed, never a crash")
    func hostile() {
        var router = BundleRouter(routes: Self.routes, midExtensionID: 1)
        var random = SeededRandomNumberGenerator(seed: 29)
        var routed = 0
        for length in 0..<2_000 {
            let bytes = (0..<(length % 200)).map { _ in UInt8.random(in: 0...255, using: &random) }
            if bytes.withUnsafeBytes({ router.route(rtp: $0) }) != nil { routed += 1 }
            _ = bytes.withUnsafeBytes { router.route(rtcp: $0) }
        }
        // A truncated header extension, and one whose length runs past the end.
        var truncated = Self.packet(pt: 96, ssrc: 5000, mid: "0")
        truncated.removeLast(6)
        _ = Self.route(&router, truncated)
        var overlong = Self.packet(pt: 120, ssrc: 5001, mid: "0")
        overlong[15] = 0xFF
        #expect(Self.route(&router, overlong) == nil)
        #expect(router.statistics.packetsUnrouted > 0 && routed < 2_000)
        #expect(router.statistics.packetsUnrouted + router.statistics.sourcesByMid + router.statistics.sourcesByPayloadType
            + router.statistics.sourcesBySSRC <= 2_002)
    }

    @Test("a new source whose first SRTP packet is padded is placed by its header (its last byte is the auth tag's)")
    func paddedFirstPacket() {
        var router = BundleRouter(routes: Self.routes, midExtensionID: 1)
        var bytes = Self.packet(pt: 96, ssrc: 7, mid: "0")
        bytes[0] |= 0x20  // padding, as libwebrtc's padding-only probes are
        bytes += [0xAB, 0xCD, 0xEF, 0x01, 0x23, 0x45, 0x67, 0x89, 0xFF, 0xFF]  // an auth tag whose last byte is no count
        #expect(Self.route(&router, bytes) == 0)
    }
}
