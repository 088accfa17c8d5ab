import PlayoutCore
import PlayoutRTP
import PlayoutTesting
import Testing

@Suite("Depacketizer factory: an SDP media section to the depacketizer of its payload type")
struct DepacketizerFactoryTests {
    static func section(_ encoding: String, clockRate: UInt32 = 90_000, payloadType: UInt8 = 96, fmtp: String? = nil) -> MediaDescription {
        var media = MediaDescription(kind: .video, port: 5_004, proto: .rtpAVP, payloadTypes: [payloadType])
        media.rtpMaps = [RTPMap(payloadType: payloadType, encodingName: encoding, clockRate: clockRate)]
        if let fmtp { media.formatParameters = [FormatParameters(payloadType: payloadType, parsing: fmtp)] }
        return media
    }

    @Test("each codec Playout receives gets its depacketizer, with the section's clock rate", arguments: [
        ("H264", Codec.h264, UInt32(90_000)), ("h264", .h264, 90_000), ("H265", .h265, 90_000), ("HEVC", .h265, 90_000),
        ("VP8", .vp8, 90_000), ("VP9", .vp9, 90_000), ("opus", .opus, 48_000), ("PCMU", .pcmu, 8_000), ("PCMA", .pcma, 8_000),
        ("MPEG4-GENERIC", .aac, 44_100),
    ])
    func codecs(encoding: String, codec: Codec, clockRate: UInt32) throws {
        let factory = try DepacketizerFactory(media: Self.section(encoding, clockRate: clockRate), track: 3)
        #expect(factory.codec == codec)
        #expect(factory.clockRate == Int32(clockRate))
        #expect(factory.payloadType == 96)
        #expect(factory.track == 3)
        #expect(factory.makeDepacketizer().codec == codec)
    }

    @Test("a static payload type without a=rtpmap uses its RFC 3551 assignment")
    func staticPayloadType() throws {
        let media = MediaDescription(kind: .audio, port: 5_006, proto: .rtpAVP, payloadTypes: [8])
        let factory = try DepacketizerFactory(media: media, track: 0)
        #expect(factory.codec == .pcma && factory.clockRate == 8_000)
    }

    @Test("a given payload type is used instead of the first")
    func chosenPayloadType() throws {
        var media = Self.section("H264")
        media.payloadTypes = [96, 98]
        media.rtpMaps.append(RTPMap(payloadType: 98, encodingName: "VP8", clockRate: 90_000))
        #expect(try DepacketizerFactory(media: media, track: 0).codec == .h264)
        #expect(try DepacketizerFactory(media: media, payloadType: 98, track: 0).codec == .vp8)
        #expect(throws: RTPMediaError.noSupportedCodec(kind: .video, port: 5_004, encodingName: nil)) {
            try DepacketizerFactory(media: media, payloadType: 100, track: 0)
        }
    }

    @Test("what cannot be received is a typed error whose text names the problem", arguments: [
        (Self.section("MP2T"), RTPMediaError.noSupportedCodec(kind: .video, port: 5_004, encodingName: "MP2T"), "no supported codec"),
        (MediaDescription(kind: .video, port: 5_004, proto: .rtpAVP, payloadTypes: []), .noSupportedCodec(kind: .video, port: 5_004, encodingName: nil), "no supported codec"),
        (MediaDescription(kind: .video, port: 5_004, proto: .rtpAVP, payloadTypes: [96]), .noSupportedCodec(kind: .video, port: 5_004, encodingName: nil), "no supported codec"),
        (Self.section("H264", clockRate: 0), .invalidClockRate(kind: .video, port: 5_004, clockRate: 0), "clock rate 0 Hz"),
        (Self.section("opus", clockRate: 20_000_000), .invalidClockRate(kind: .video, port: 5_004, clockRate: 20_000_000), "20000000 Hz is not an RTP clock rate"),
        (Self.section("H264", clockRate: UInt32.max), .invalidClockRate(kind: .video, port: 5_004, clockRate: .max), "not an RTP clock rate"),
        (Self.section("AV1"), .unsupportedCodec(.av1), "AV1 over RTP is not supported yet"),
    ])
    func errors(media: MediaDescription, expected: RTPMediaError, text: String) {
        #expect {
            try DepacketizerFactory(media: media, track: 0)
        } throws: { error in
            (error as? RTPMediaError) == expected && "\(error)".contains(text)
        }
    }

    @Test("the section's sprop-parameter-sets go before the first key frame")
    func parameterSets() throws {
        // SPS 67 42 00 1F, PPS 68 CE 3C 80 (base64 Z0IAHw==, aM48gA==).
        let factory = try DepacketizerFactory(media: Self.section("H264", fmtp: "packetization-mode=1;sprop-parameter-sets=Z0IAHw==,aM48gA=="), track: 0)
        var depacketizer = factory.makeDepacketizer()
        let idr = try RTPPacketBuilder(marker: true, payloadType: 96, ssrc: 1).serialized(payload: [0x65, 0x88, 0x84])
        var frames: [EncodedFrame] = []
        try idr.withUnsafeBytes { depacketizer.push(try RTPPacket(parsing: $0), arrival: .zero) { frames.append($0) } }
        depacketizer.flush { frames.append($0) }
        #expect(frames.first?.bytes == [0, 0, 0, 1, 0x67, 0x42, 0x00, 0x1F, 0, 0, 0, 1, 0x68, 0xCE, 0x3C, 0x80, 0, 0, 0, 1, 0x65, 0x88, 0x84])
    }

    @Test("each depacketizer it makes starts afresh")
    func freshDepacketizers() throws {
        let factory = try DepacketizerFactory(media: Self.section("VP8"), track: 0)
        var first = factory.makeDepacketizer()
        let packet = try RTPPacketBuilder(marker: true, payloadType: 96, ssrc: 1).serialized(payload: [0x10, 0x00, 0x9D, 0x01, 0x2A])
        try packet.withUnsafeBytes { first.push(try RTPPacket(parsing: $0), arrival: .zero) { _ in } }
        #expect(first.statistics.packetsReceived == 1)
        #expect(factory.makeDepacketizer().statistics.packetsReceived == 0)
    }
}
