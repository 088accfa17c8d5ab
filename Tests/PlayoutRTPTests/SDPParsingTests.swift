import Foundation
import PlayoutRTP
import Testing

@Suite("SDP parsing of real writers' output")
struct SDPParsingTests {
    private func parse(_ fixture: SDPFixture) throws -> SessionDescription {
        try SessionDescription(parsing: fixture.crlf)
    }

    private func base64(_ text: String) -> [UInt8] {
        [UInt8](Data(base64Encoded: text)!)
    }

    @Test("every fixture parses, with CRLF and with LF line endings, to the same value", arguments: SDPFixture.all)
    func parsesBothLineEndings(fixture: SDPFixture) throws {
        let crlf = try SessionDescription(parsing: fixture.crlf)
        let lf = try SessionDescription(parsing: fixture.text)
        #expect(crlf == lf)
        #expect(!crlf.media.isEmpty)
    }

    @Test("ffmpeg's session lines: origin, name, timing and the unexpanded a=tool")
    func ffmpegSession() throws {
        let sdp = try parse(.h264AndOpus)
        #expect(sdp.origin == SDPOrigin(username: "-", sessionID: "0", sessionVersion: "0",
                                     networkType: "IN", addressType: .ip4, address: "127.0.0.1"))
        #expect(sdp.sessionName == "No Name")
        #expect(sdp.timing == [SDPTiming(start: 0, stop: 0)])
        #expect(sdp.connection == nil)
        #expect(sdp.direction == .sendrecv)
        #expect(sdp.attributes == [SDPAttribute(name: "tool", value: "libavformat LIBAVFORMAT_VERSION")])
        #expect(sdp.attribute("TOOL") == "libavformat LIBAVFORMAT_VERSION")
        #expect(sdp.attribute("missing") == nil)
    }

    @Test("ffmpeg H.264 + Opus: two media sections with their own c=, rtpmap, fmtp and b=")
    func h264AndOpus() throws {
        let sdp = try parse(.h264AndOpus)
        #expect(sdp.media.count == 2)
        let video = sdp.media[0]
        #expect(video.kind == .video)
        #expect(video.port == 5004)
        #expect(video.portCount == 1)
        #expect(video.proto == .rtpAVP)
        #expect(video.proto.isRTP && !video.proto.isSecure)
        #expect(video.payloadTypes == [96])
        #expect(video.connection == ConnectionData(address: "127.0.0.1"))
        #expect(video.rtpMaps == [RTPMap(payloadType: 96, encodingName: "H264", clockRate: 90000)])
        #expect(video.formatParameters(for: 96)?.packetizationMode == 1)
        #expect(video.formatParameters(for: 96)?.spropParameterSets == nil)
        #expect(video.crypto.isEmpty)
        #expect(video.direction == .sendrecv)
        let audio = sdp.media[1]
        #expect(audio.kind == .audio)
        #expect(audio.port == 5006)
        #expect(audio.bandwidths == [SDPBandwidth(type: "AS", value: 64)])
        #expect(audio.bandwidths[0].bitsPerSecond == 64_000)
        let opus = try #require(audio.rtpMap(for: 97))
        #expect(opus.encodingName == "opus" && opus.hasEncoding("OPUS"))
        #expect(opus.clockRate == 48000)
        #expect(opus.channels == 2)
        #expect(audio.formatParameters(for: 97) == nil)
    }

    @Test("H.264 sprop-parameter-sets decode to SPS and PPS NAL units; profile-level-id to 3 bytes")
    func h264ParameterSets() throws {
        let sdp = try parse(.h264GlobalHeaderAndOpus)
        let fmtp = try #require(sdp.media[0].formatParameters(for: 96))
        #expect(fmtp.parameters.map(\.name) == ["packetization-mode", "sprop-parameter-sets", "profile-level-id"])
        #expect(fmtp["Profile-Level-Id"] == "F4000D")
        #expect(fmtp.profileLevelID == [0xF4, 0x00, 0x0D])
        let sets = try #require(fmtp.spropParameterSets)
        #expect(sets == [base64("Z/QADZGbKCg/YCIAAAMAAgAAAwB4HihTLA=="), base64("aOvjxEhE")])
        #expect(sets[0][0] & 0x1F == 7)  // SPS
        #expect(sets[1][0] & 0x1F == 8)  // PPS
        #expect(sets[0][1] == 0xF4)      // profile_idc 244 (High 4:4:4), as profile-level-id says

        let baseline = try parse(.h264Baseline).media[0].formatParameters(for: 96)
        #expect(baseline?.profileLevelID == [0x42, 0xC0, 0x0D])
        #expect(baseline?.spropParameterSets?.map { $0[0] & 0x1F } == [7, 8])
    }

    @Test("H.265 sprop-vps, sprop-sps and sprop-pps decode to VPS, SPS and PPS")
    func h265ParameterSets() throws {
        let media = try parse(.h265).media[0]
        #expect(media.rtpMap(for: 96)?.encodingName == "H265")
        let fmtp = try #require(media.formatParameters(for: 96))
        #expect(fmtp.spropVPS == [base64("QAEMAf//BAgAAAMAnggAAAMAADyVmAk=")])
        #expect(fmtp.spropSPS == [base64("QgEBBAgAAAMAnggAAAMAADyQAUEB4ssrNJJleAtwICAAQAAAAwBAAAAHgg==")])
        #expect(fmtp.spropPPS == [base64("RAHBcoYMRiQ=")])
        // H.265 NAL unit type is bits 1…6 of the first byte: 32 VPS, 33 SPS, 34 PPS.
        #expect(fmtp.spropVPS?.first.map { ($0[0] >> 1) & 0x3F } == 32)
        #expect(fmtp.spropSPS?.first.map { ($0[0] >> 1) & 0x3F } == 33)
        #expect(fmtp.spropPPS?.first.map { ($0[0] >> 1) & 0x3F } == 34)
        #expect(fmtp.packetizationMode == nil)
    }

    @Test("VP8: rtpmap and b=AS only")
    func vp8() throws {
        let media = try parse(.vp8).media[0]
        #expect(media.rtpMap(for: 96) == RTPMap(payloadType: 96, encodingName: "VP8", clockRate: 90000))
        #expect(media.bandwidths == [SDPBandwidth(type: "AS", value: 256)])
        #expect(media.formatParameters.isEmpty)
        #expect(media.connection == ConnectionData(address: "127.0.0.1"))  // inherited from the session
    }

    @Test("AAC: MPEG4-GENERIC mode, lengths and config (with ffmpeg's stray space before config)")
    func aac() throws {
        let media = try parse(.aac).media[0]
        #expect(media.rtpMap(for: 97) == RTPMap(payloadType: 97, encodingName: "MPEG4-GENERIC", clockRate: 44100, channels: 1))
        let fmtp = try #require(media.formatParameters(for: 97))
        #expect(fmtp.mode == "AAC-hbr")
        #expect(fmtp.sizeLength == 13)
        #expect(fmtp.indexLength == 3)
        #expect(fmtp.indexDeltaLength == 3)
        #expect(fmtp.config == [0x12, 0x08, 0x56, 0xE5, 0x00])
        #expect(fmtp["profile-level-id"] == "1")
        #expect(fmtp.profileLevelID == nil)  // "1" is MPEG-4's decimal profile, not H.264's 3 bytes
        #expect(fmtp.parameters.last == FormatParameters.Parameter(name: "config", value: "120856E500"))
    }

    @Test("static payload type 0 without a=rtpmap resolves to PCMU/8000/1")
    func staticPayloadType() throws {
        let media = try parse(.pcmu8000).media[0]
        #expect(media.payloadTypes == [0])
        #expect(media.rtpMaps.isEmpty)
        #expect(media.rtpMap(for: 0) == RTPMap(payloadType: 0, encodingName: "PCMU", clockRate: 8000, channels: 1))
        #expect(media.resolvedRTPMaps == [RTPMap(payloadType: 0, encodingName: "PCMU", clockRate: 8000, channels: 1)])
        #expect(media.rtpMap(for: 96) == nil)
        let pcmu44 = try parse(.pcmu44100).media[0]
        #expect(pcmu44.rtpMap(for: 97) == RTPMap(payloadType: 97, encodingName: "PCMU", clockRate: 44100, channels: 1))
    }

    @Test("RFC 3551 static payload types", arguments: [
        (UInt8(0), "PCMU", UInt32(8000), UInt16?(1)), (3, "GSM", 8000, 1), (8, "PCMA", 8000, 1),
        (9, "G722", 8000, 1), (10, "L16", 44100, 2), (11, "L16", 44100, 1), (14, "MPA", 90000, nil),
        (18, "G729", 8000, 1), (26, "JPEG", 90000, nil), (31, "H261", 90000, nil), (33, "MP2T", 90000, nil),
        (34, "H263", 90000, nil),
    ])
    func staticTable(payloadType: UInt8, name: String, clockRate: UInt32, channels: UInt16?) {
        #expect(RTPMap.staticPayloadType(payloadType)
            == RTPMap(payloadType: payloadType, encodingName: name, clockRate: clockRate, channels: channels))
    }

    @Test("unassigned and dynamic payload types have no static default", arguments: [UInt8(1), 2, 19, 24, 35, 72, 96, 127])
    func noStaticDefault(payloadType: UInt8) {
        #expect(RTPMap.staticPayloadType(payloadType) == nil)
    }

    @Test("ffmpeg SRTP: a=crypto under RTP/AVP, suite as written, decoded key and salt")
    func srtp() throws {
        let media = try parse(.srtpH264).media[0]
        #expect(media.proto == .rtpAVP)
        #expect(!media.proto.isSecure)
        #expect(media.crypto.count == 1)
        let crypto = media.crypto[0]
        #expect(crypto.tag == 1)
        #expect(crypto.suite == .aesCM128HMACSHA1_80)
        #expect(crypto.suite.rawValue == "AES_CM_128_HMAC_SHA1_80")
        let bytes = base64("cEVITyFLCNiZuaQIDYdABVqrMmueJrlP90HR2ak0")
        #expect(bytes.count == 30)
        #expect(crypto.keyAndSalt == bytes)
        #expect(crypto.masterKey == Array(bytes.prefix(16)))
        #expect(crypto.masterSalt == Array(bytes.suffix(14)))
        #expect(crypto.keys == [CryptoAttribute.Key(keyAndSalt: bytes)])
        #expect(crypto.sessionParameters.isEmpty)
    }

    @Test("ffmpeg SRTP with a different suite per media section")
    func srtpTwoSuites() throws {
        let sdp = try parse(.srtpTwoSuites)
        #expect(sdp.media.map { $0.crypto.first?.suite } == [.aesCM128HMACSHA1_80, .aesCM128HMACSHA1_32])
        #expect(sdp.media[1].crypto[0].keyAndSalt == base64("XGyIV/nOPCm+tVORq7gku/IOT79gYRZls8czfuBC"))
    }

    @Test("IPv4 multicast c= with TTL, inherited by the media section")
    func ipv4Multicast() throws {
        let sdp = try parse(.multicastIPv4)
        let expected = ConnectionData(networkType: "IN", addressType: .ip4, address: "239.1.1.1", ttl: 127)
        #expect(sdp.connection == expected)
        #expect(sdp.connection?.isMulticast == true)
        #expect(sdp.media[0].connection == expected)
        #expect(sdp.media[0].rtpMap(for: 97)?.encodingName == "PCMA")
    }

    @Test("IPv6 multicast c= has no TTL; Opus sprop-stereo")
    func ipv6Multicast() throws {
        let sdp = try parse(.opusIPv6Multicast)
        #expect(sdp.origin?.addressType == .ip6)
        #expect(sdp.origin?.address == "::1")
        #expect(sdp.connection == ConnectionData(addressType: .ip6, address: "ff02::1"))
        #expect(sdp.connection?.isMulticast == true)
        #expect(sdp.connection?.ttl == nil)
        let fmtp = try #require(sdp.media[0].formatParameters(for: 97))
        #expect(fmtp.spropStereo == true)
        #expect(fmtp.stereo == nil)
    }

    @Test("GStreamer style: IPv6, ;-joined fmtp, clock attributes, framerate, ptime, sendonly, control")
    func gstreamer() throws {
        let sdp = try parse(.gstreamer)
        #expect(sdp.origin?.sessionID == "1188340656180883")
        #expect(sdp.sessionName == "Session streamed with GStreamer")
        #expect(sdp.otherFields == [SDPField(type: "i", value: "rtsp-server")])
        #expect(sdp.attribute("control") == "*")
        #expect(sdp.attribute("range") == "npt=now-")
        let video = sdp.media[0]
        let connection = ConnectionData(addressType: .ip6, address: "ff15::1:2")
        #expect(video.connection == connection)
        #expect(connection.isMulticast)
        #expect(video.direction == .sendonly)
        #expect(video.control == "stream=0")
        #expect(video.frameRate == 30)
        let fmtp = try #require(video.formatParameters(for: 96))
        #expect(fmtp.profileLevelID == [0x42, 0xC0, 0x0D])
        #expect(fmtp.spropParameterSets?.count == 2)
        #expect(video.attribute("ts-refclk") == "ptp=IEEE1588-2008:00-11-22-FF-FE-33-44-55:0")
        #expect(video.attribute("mediaclk") == "direct=0")
        #expect(video.attribute("rtcp-fb") == "96 nack pli")
        let audio = sdp.media[1]
        #expect(audio.rtpMap(for: 97)?.hasEncoding("opus") == true)
        let opus = try #require(audio.formatParameters(for: 97))
        #expect(opus.spropStereo == false)
        #expect(opus.stereo == true)
        #expect(opus.useInbandFEC == true)
        #expect(opus.maxPlaybackRate == 48000)
        #expect(opus.minimumPacketTime == .milliseconds(10))
        #expect(audio.packetTime == .milliseconds(20))
        #expect(audio.control == "stream=1")
    }

    @Test("RFC 8866 §5: i/u/e/p kept, static PT 0, a media-level IPv6 c= overriding the session's")
    func rfc8866() throws {
        let sdp = try parse(.rfc8866Example)
        #expect(sdp.origin?.username == "jdoe")
        #expect(sdp.origin?.sessionVersion == "3724394405")
        #expect(sdp.sessionName == "Call to John Smith")
        #expect(sdp.otherFields.map(\.type) == ["i", "u", "e", "p"])
        #expect(sdp.otherFields[3].value == "+1 617 555-6011")
        #expect(sdp.media.map(\.port) == [49170, 49180, 51372])
        #expect(sdp.media[0].connection == ConnectionData(address: "198.51.100.1"))
        #expect(sdp.media[0].connection?.isMulticast == false)
        #expect(sdp.media[1].rtpMap(for: 0)?.encodingName == "PCMU")
        #expect(sdp.media[2].connection == ConnectionData(addressType: .ip6, address: "2001:db8::2"))
        #expect(sdp.media[2].rtpMap(for: 99) == RTPMap(payloadType: 99, encodingName: "h263-1998", clockRate: 90000))
    }

    @Test("SAVPF section: rtcp with address, rtcp-mux, extmaps, ssrc, several crypto keys, ptime")
    func webRTCAudio() throws {
        let sdp = try parse(.webRTCStyle)
        #expect(sdp.extensionMaps == [ExtensionMap(id: 15, uri: "urn:ietf:params:rtp-hdrext:sdes:mid")])
        let audio = sdp.media[0]
        #expect(audio.proto == .rtpSAVPF && audio.proto.isSecure && audio.proto.isRTP)
        #expect(audio.payloadTypes == [111, 0, 8, 101])
        #expect(audio.resolvedRTPMaps.map(\.encodingName) == ["opus", "PCMU", "PCMA", "telephone-event"])
        #expect(audio.bandwidths[0].bitsPerSecond == 64000)
        #expect(audio.rtcp == RTCPAttribute(port: 49171, connection: ConnectionData(address: "192.0.2.11")))
        #expect(audio.rtcpMux)
        #expect(audio.direction == .recvonly)
        #expect(audio.extensionMaps == [
            ExtensionMap(id: 1, uri: "urn:ietf:params:rtp-hdrext:ssrc-audio-level", extensionAttributes: "vad=on"),
            ExtensionMap(id: 2, direction: .recvonly, uri: "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time"),
        ])
        #expect(audio.ssrcAttributes == [
            SSRCAttribute(ssrc: 0xDEAD_BEEF, name: "cname", value: "alice@example.com"),
            SSRCAttribute(ssrc: 0xDEAD_BEEF, name: "msid", value: "stream0 audio0"),
        ])
        #expect(audio.packetTime == .microseconds(2500))
        #expect(audio.formatParameters(for: 101)?.parameters == [FormatParameters.Parameter(name: "0-15")])
        #expect(audio.formatParameters(for: 101)?["0-15"] == "")
        #expect(audio.formatParameters(for: 111)?.minimumPacketTime == .milliseconds(10))
        #expect(audio.attribute("rtcp-fb") == "111 transport-cc")

        let gcm = audio.crypto[0]
        #expect(gcm.suite == .aeadAES128GCM)
        #expect(gcm.keys == [CryptoAttribute.Key(
            keyAndSalt: Array(0..<28), lifetime: 1 << 31, mki: CryptoAttribute.MKI(value: 1, length: 4)
        )])
        #expect(gcm.masterKey == Array(0..<16))
        #expect(gcm.masterSalt == Array(16..<28))
        let cm = audio.crypto[1]
        #expect(cm.tag == 2)
        #expect(cm.keys == [
            CryptoAttribute.Key(keyAndSalt: Array(0..<30), lifetime: 1_048_576),
            CryptoAttribute.Key(keyAndSalt: Array((0..<30).reversed())),
        ])
        #expect(cm.sessionParameters == ["UNENCRYPTED_SRTCP"])
    }

    @Test("port count, multicast TTL and count, AEAD-256, framerate 29.97, inactive, non-RTP section")
    func webRTCVideoAndData() throws {
        let sdp = try parse(.webRTCStyle)
        let video = sdp.media[1]
        #expect(video.port == 51372 && video.portCount == 2)
        #expect(video.connection == ConnectionData(address: "233.252.0.1", ttl: 127, addressCount: 2))
        #expect(video.crypto[0].suite == .aeadAES256GCM)
        #expect(video.crypto[0].keyAndSalt == Array(0..<44))
        #expect(video.crypto[0].masterKey?.count == 32)
        #expect(video.frameRate == 29.97)
        #expect(video.direction == .inactive)
        let data = sdp.media[2]
        #expect(data.kind == .application)
        #expect(!data.proto.isRTP)
        #expect(data.payloadTypes.isEmpty)
        #expect(data.otherFormats == ["webrtc-datachannel"])
        #expect(data.attribute("sctp-port") == "5000")
        #expect(data.direction == .sendrecv)
    }

    @Test("session-level direction and c= are inherited; a media section's own ones win")
    func inheritance() throws {
        let sdp = try SessionDescription(parsing: """
            v=0
            o=- 1 1 IN IP4 10.0.0.1
            s=x
            c=IN IP4 10.0.0.2
            a=recvonly
            m=audio 5000 RTP/AVP 0
            m=video 5002 RTP/AVP 26
            c=IN IP4 10.0.0.3
            a=sendonly
            """)
        #expect(sdp.direction == .recvonly)
        #expect(sdp.media.map(\.direction) == [.recvonly, .sendonly])
        #expect(sdp.media.map { $0.connection?.address } == ["10.0.0.2", "10.0.0.3"])
    }

    @Test("lenient: session lines in any order, trailing spaces, blank lines, no o=/s=/t=, unknown letters")
    func lenient() throws {
        let sdp = try SessionDescription(parsing: "v=0  \n\nc=IN IP4 127.0.0.1\t\nx=unknown letter\nm=video 5004 RTP/AVP 96 \na=rtpmap:96 H264/90000  \r\na=whatever:value \n")
        #expect(sdp.origin == nil)
        #expect(sdp.sessionName == "-")
        #expect(sdp.timing == [SDPTiming()])
        #expect(sdp.otherFields == [SDPField(type: "x", value: "unknown letter")])
        #expect(sdp.media[0].connection == ConnectionData(address: "127.0.0.1"))
        #expect(sdp.media[0].rtpMap(for: 96)?.clockRate == 90000)
        #expect(sdp.media[0].attributes == [SDPAttribute(name: "whatever", value: "value")])

        let reordered = try SessionDescription(parsing: "v=0\nt=0 0\ns=late\nc=IN IP4 1.2.3.4\no=- 5 6 IN IP4 1.2.3.4\nm=audio 1 RTP/AVP 8\n")
        #expect(reordered.sessionName == "late")
        #expect(reordered.origin?.sessionID == "5")
    }

    @Test("repeated one-off attributes: the first counts")
    func repeatedAttributes() throws {
        let sdp = try SessionDescription(parsing: """
            v=0
            m=video 5004 RTP/AVP 96
            c=IN IP4 1.1.1.1
            c=IN IP4 2.2.2.2
            a=control:first
            a=control:second
            a=sendonly
            a=recvonly
            a=rtcp:7000
            a=rtcp:8000
            """)
        let media = sdp.media[0]
        #expect(media.connection?.address == "1.1.1.1")
        #expect(media.control == "first")
        #expect(media.direction == .sendonly)
        #expect(media.rtcp == RTCPAttribute(port: 7000))
    }

    @Test("bandwidth types and their units", arguments: [
        ("AS", UInt64(64), UInt64?(64_000)), ("CT", 128, 128_000), ("TIAS", 64000, 64000), ("X-YZ", 1, nil),
    ])
    func bandwidth(type: String, value: UInt64, bitsPerSecond: UInt64?) {
        #expect(SDPBandwidth(type: type, value: value).bitsPerSecond == bitsPerSecond)
    }

    @Test("multicast detection", arguments: [
        (SDPAddressType.ip4, "224.0.0.1", true), (.ip4, "239.255.255.255", true), (.ip4, "240.0.0.1", false),
        (.ip4, "127.0.0.1", false), (.ip4, "example.com", false), (.ip6, "FF02::1", true), (.ip6, "::1", false),
        (.ip6, "2001:db8::1", false),
    ])
    func multicast(type: SDPAddressType, address: String, multicast: Bool) {
        #expect(ConnectionData(addressType: type, address: address).isMulticast == multicast)
    }

    @Test("crypto suites know their key and salt lengths", arguments: [
        (SDPCryptoSuite.aesCM128HMACSHA1_80, 16, 14), (.aesCM128HMACSHA1_32, 16, 14), (.aes192CMHMACSHA1_80, 24, 14),
        (.aes256CMHMACSHA1_80, 32, 14), (.aeadAES128GCM, 16, 12), (.aeadAES256GCM, 32, 12),
        (SDPCryptoSuite(rawValue: "SRTP_AES128_CM_HMAC_SHA1_80"), 16, 14),
    ])
    func suiteLengths(suite: SDPCryptoSuite, key: Int, salt: Int) {
        #expect(suite.keyLength == key)
        #expect(suite.saltLength == salt)
        #expect(suite.keyAndSaltLength == key + salt)
    }

    @Test("an unknown suite is kept with its key of any length")
    func unknownSuite() throws {
        let sdp = try SessionDescription(parsing: "v=0\nm=audio 1 RTP/SAVP 0\na=crypto:7 FUTURE_SUITE inline:AAEC\n")
        let crypto = sdp.media[0].crypto[0]
        #expect(crypto.suite.rawValue == "FUTURE_SUITE")
        #expect(crypto.suite.keyLength == nil)
        #expect(crypto.keyAndSalt == [0, 1, 2])
        #expect(crypto.masterKey == nil)
    }

    @Test("Opus flags and accessors read only 0 and 1; malformed values read as nil by hand-built parameters")
    func accessorsOnHandBuiltParameters() {
        let fmtp = FormatParameters(payloadType: 111, parsing: " stereo=2 ; useinbandfec=1;maxplaybackrate=abc;minptime=7.5; sizelength= 13 ;config=ABC")
        #expect(fmtp.stereo == nil)
        #expect(fmtp.useInbandFEC == true)
        #expect(fmtp.maxPlaybackRate == nil)
        #expect(fmtp.minimumPacketTime == .microseconds(7500))
        #expect(fmtp.sizeLength == 13)
        #expect(fmtp.config == nil)
        #expect(fmtp.formatted == "stereo=2;useinbandfec=1;maxplaybackrate=abc;minptime=7.5;sizelength=13;config=ABC")
        let h264 = FormatParameters(payloadType: 96, parsing: "packetization-mode=3;profile-level-id=42e01")
        #expect(h264.packetizationMode == nil)
        #expect(h264.profileLevelID == nil)
        #expect(FormatParameters(payloadType: 96, parsing: "packetization-mode=2").packetizationMode == 2)
    }
}
