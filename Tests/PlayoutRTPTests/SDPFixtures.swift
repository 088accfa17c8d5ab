import Testing

/// Real SDPs for the SDP tests. The ffmpeg ones were written by ffmpeg 5.1.9 (Debian 12,
/// `ffmpeg version 5.1.9-0+deb12u1`) with `-sdp_file`; the command is above each. ffmpeg writes
/// CRLF line endings: the literals here use LF and ``SDPFixture/crlf`` gives the original bytes.
/// (Debian's build writes `a=tool:libavformat LIBAVFORMAT_VERSION` literally: the version macro is
/// not expanded.)
struct SDPFixture: Sendable, CustomTestStringConvertible {
    let name: String
    let text: String

    /// The text with CRLF line endings, as the writers produce it.
    var crlf: String { text.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\r\n") }

    var testDescription: String { name }

    static let all: [SDPFixture] = [
        h264AndOpus, h264GlobalHeaderAndOpus, h264Baseline, h265, vp8, aac, pcmu8000, pcmu44100, srtpH264, srtpTwoSuites,
        multicastIPv4, opusIPv6Multicast, gstreamer, rfc8866Example, webRTCStyle,
    ]

    // ffmpeg -hide_banner -f lavfi -i testsrc=size=320x240:rate=30 -f lavfi -i sine -t 1
    //   -map 0:v -c:v libx264 -f rtp rtp://127.0.0.1:5004
    //   -map 1:a -c:a libopus -f rtp rtp://127.0.0.1:5006 -sdp_file h264opus.sdp
    // (no sprop-parameter-sets: without +global_header x264 sends SPS/PPS in band; each m= has its
    // own c= and there is no session-level c=)
    static let h264AndOpus = SDPFixture(name: "ffmpeg H.264 + Opus", text: """
        v=0
        o=- 0 0 IN IP4 127.0.0.1
        s=No Name
        t=0 0
        a=tool:libavformat LIBAVFORMAT_VERSION
        m=video 5004 RTP/AVP 96
        c=IN IP4 127.0.0.1
        a=rtpmap:96 H264/90000
        a=fmtp:96 packetization-mode=1
        m=audio 5006 RTP/AVP 97
        c=IN IP4 127.0.0.1
        b=AS:64
        a=rtpmap:97 opus/48000/2

        """)

    // ffmpeg -hide_banner -f lavfi -i testsrc=size=320x240:rate=30:duration=1 -f lavfi -i sine=duration=1
    //   -map 0:v -c:v libx264 -flags +global_header -f rtp rtp://127.0.0.1:5004
    //   -map 1:a -c:a libopus -f rtp rtp://127.0.0.1:5006 -sdp_file h264gh_opus.sdp
    static let h264GlobalHeaderAndOpus = SDPFixture(name: "ffmpeg H.264 (global header) + Opus", text: """
        v=0
        o=- 0 0 IN IP4 127.0.0.1
        s=No Name
        t=0 0
        a=tool:libavformat LIBAVFORMAT_VERSION
        m=video 5004 RTP/AVP 96
        c=IN IP4 127.0.0.1
        a=rtpmap:96 H264/90000
        a=fmtp:96 packetization-mode=1; sprop-parameter-sets=Z/QADZGbKCg/YCIAAAMAAgAAAwB4HihTLA==,aOvjxEhE; profile-level-id=F4000D
        m=audio 5006 RTP/AVP 97
        c=IN IP4 127.0.0.1
        b=AS:64
        a=rtpmap:97 opus/48000/2

        """)

    // ffmpeg -hide_banner -f lavfi -i testsrc=size=320x240:rate=30:duration=1 -c:v libx264
    //   -profile:v baseline -pix_fmt yuv420p -flags +global_header -f rtp rtp://127.0.0.1:5004 -sdp_file base.sdp
    static let h264Baseline = SDPFixture(name: "ffmpeg H.264 baseline", text: """
        v=0
        o=- 0 0 IN IP4 127.0.0.1
        s=No Name
        c=IN IP4 127.0.0.1
        t=0 0
        a=tool:libavformat LIBAVFORMAT_VERSION
        m=video 5004 RTP/AVP 96
        a=rtpmap:96 H264/90000
        a=fmtp:96 packetization-mode=1; sprop-parameter-sets=Z0LADdkBQfsBEAAAAwAQAAADA8DxQqSA,aMuDyyA=; profile-level-id=42C00D

        """)

    // ffmpeg -hide_banner -f lavfi -i testsrc=size=320x240:rate=30:duration=1 -c:v libx265
    //   -flags +global_header -f rtp rtp://127.0.0.1:5010 -sdp_file h265gh.sdp
    static let h265 = SDPFixture(name: "ffmpeg H.265", text: """
        v=0
        o=- 0 0 IN IP4 127.0.0.1
        s=No Name
        c=IN IP4 127.0.0.1
        t=0 0
        a=tool:libavformat LIBAVFORMAT_VERSION
        m=video 5010 RTP/AVP 96
        a=rtpmap:96 H265/90000
        a=fmtp:96 sprop-vps=QAEMAf//BAgAAAMAnggAAAMAADyVmAk=; sprop-sps=QgEBBAgAAAMAnggAAAMAADyQAUEB4ssrNJJleAtwICAAQAAAAwBAAAAHgg==; sprop-pps=RAHBcoYMRiQ=

        """)

    // ffmpeg -hide_banner -f lavfi -i testsrc=size=320x240:rate=30 -t 1 -c:v libvpx
    //   -f rtp rtp://127.0.0.1:5004 -sdp_file vp8.sdp
    static let vp8 = SDPFixture(name: "ffmpeg VP8", text: """
        v=0
        o=- 0 0 IN IP4 127.0.0.1
        s=No Name
        c=IN IP4 127.0.0.1
        t=0 0
        a=tool:libavformat LIBAVFORMAT_VERSION
        m=video 5004 RTP/AVP 96
        b=AS:256
        a=rtpmap:96 VP8/90000

        """)

    // ffmpeg -hide_banner -f lavfi -i sine -t 1 -c:a aac -f rtp rtp://127.0.0.1:5006 -sdp_file aac.sdp
    // (note "; config=": ffmpeg puts a space before the last parameter only)
    static let aac = SDPFixture(name: "ffmpeg AAC (MPEG4-GENERIC)", text: """
        v=0
        o=- 0 0 IN IP4 127.0.0.1
        s=No Name
        c=IN IP4 127.0.0.1
        t=0 0
        a=tool:libavformat LIBAVFORMAT_VERSION
        m=audio 5006 RTP/AVP 97
        b=AS:69
        a=rtpmap:97 MPEG4-GENERIC/44100/1
        a=fmtp:97 profile-level-id=1;mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3; config=120856E500

        """)

    // ffmpeg -hide_banner -f lavfi -i sine=duration=1 -c:a pcm_mulaw -ar 8000 -ac 1
    //   -f rtp rtp://127.0.0.1:5006 -sdp_file pcmu8k.sdp
    // (static payload type 0 and no a=rtpmap at all)
    static let pcmu8000 = SDPFixture(name: "ffmpeg PCMU 8 kHz (static PT 0)", text: """
        v=0
        o=- 0 0 IN IP4 127.0.0.1
        s=No Name
        c=IN IP4 127.0.0.1
        t=0 0
        a=tool:libavformat LIBAVFORMAT_VERSION
        m=audio 5006 RTP/AVP 0
        b=AS:64

        """)

    // ffmpeg -hide_banner -f lavfi -i sine -t 1 -c:a pcm_mulaw -f rtp rtp://127.0.0.1:5006 -sdp_file pcmu.sdp
    // (44.1 kHz is not PT 0's rate, so ffmpeg picks dynamic PT 97)
    static let pcmu44100 = SDPFixture(name: "ffmpeg PCMU 44.1 kHz (dynamic PT)", text: """
        v=0
        o=- 0 0 IN IP4 127.0.0.1
        s=No Name
        c=IN IP4 127.0.0.1
        t=0 0
        a=tool:libavformat LIBAVFORMAT_VERSION
        m=audio 5006 RTP/AVP 97
        b=AS:352
        a=rtpmap:97 PCMU/44100/1

        """)

    // ffmpeg -hide_banner -f lavfi -i testsrc=size=320x240:rate=30 -t 1 -c:v libx264
    //   -srtp_out_suite AES_CM_128_HMAC_SHA1_80 -srtp_out_params "$(head -c 30 /dev/urandom | base64)"
    //   -f rtp srtp://127.0.0.1:5008 -sdp_file srtp.sdp
    // (RTP/AVP, not RTP/SAVP, next to a=crypto)
    static let srtpH264 = SDPFixture(name: "ffmpeg SRTP H.264", text: """
        v=0
        o=- 0 0 IN IP4 127.0.0.1
        s=No Name
        c=IN IP4 127.0.0.1
        t=0 0
        a=tool:libavformat LIBAVFORMAT_VERSION
        m=video 5008 RTP/AVP 96
        a=rtpmap:96 H264/90000
        a=fmtp:96 packetization-mode=1
        a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:cEVITyFLCNiZuaQIDYdABVqrMmueJrlP90HR2ak0

        """)

    // ffmpeg -hide_banner -f lavfi -i testsrc=size=320x240:rate=30:duration=1 -f lavfi -i sine=duration=1
    //   -map 0:v -c:v libx264 -flags +global_header -srtp_out_suite AES_CM_128_HMAC_SHA1_80
    //   -srtp_out_params "$(head -c 30 /dev/urandom | base64)" -f rtp srtp://127.0.0.1:5008
    //   -map 1:a -c:a libopus -srtp_out_suite AES_CM_128_HMAC_SHA1_32
    //   -srtp_out_params "$(head -c 30 /dev/urandom | base64)" -f rtp srtp://127.0.0.1:5010 -sdp_file srtp2.sdp
    static let srtpTwoSuites = SDPFixture(name: "ffmpeg SRTP H.264 + Opus, two suites", text: """
        v=0
        o=- 0 0 IN IP4 127.0.0.1
        s=No Name
        t=0 0
        a=tool:libavformat LIBAVFORMAT_VERSION
        m=video 5008 RTP/AVP 96
        c=IN IP4 127.0.0.1
        a=rtpmap:96 H264/90000
        a=fmtp:96 packetization-mode=1; sprop-parameter-sets=Z/QADZGbKCg/YCIAAAMAAgAAAwB4HihTLA==,aOvjxEhE; profile-level-id=F4000D
        a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:2cQbURL1tZvfNaEnjgIWpz1IVeNLNbWXcoz/aY42
        m=audio 5010 RTP/AVP 97
        c=IN IP4 127.0.0.1
        b=AS:64
        a=rtpmap:97 opus/48000/2
        a=crypto:1 AES_CM_128_HMAC_SHA1_32 inline:XGyIV/nOPCm+tVORq7gku/IOT79gYRZls8czfuBC

        """)

    // ffmpeg -hide_banner -f lavfi -i sine -t 1 -c:a pcm_alaw -f rtp "rtp://239.1.1.1:5014?ttl=127" -sdp_file mcast.sdp
    static let multicastIPv4 = SDPFixture(name: "ffmpeg IPv4 multicast PCMA", text: """
        v=0
        o=- 0 0 IN IP4 127.0.0.1
        s=No Name
        c=IN IP4 239.1.1.1/127
        t=0 0
        a=tool:libavformat LIBAVFORMAT_VERSION
        m=audio 5014 RTP/AVP 97
        b=AS:352
        a=rtpmap:97 PCMA/44100/1

        """)

    // ffmpeg -hide_banner -f lavfi -i sine -t 1 -c:a libopus -ac 2 -f rtp "rtp://[ff02::1]:5012" -sdp_file opus6.sdp
    // (IPv6 multicast: no TTL; the origin becomes IN IP6 ::1)
    static let opusIPv6Multicast = SDPFixture(name: "ffmpeg IPv6 multicast Opus stereo", text: """
        v=0
        o=- 0 0 IN IP6 ::1
        s=No Name
        c=IN IP6 ff02::1
        t=0 0
        a=tool:libavformat LIBAVFORMAT_VERSION
        m=audio 5012 RTP/AVP 97
        b=AS:96
        a=rtpmap:97 opus/48000/2
        a=fmtp:97 sprop-stereo=1

        """)

    // Written by hand in the form of GStreamer's SDP writer (gst_sdp_message_as_text, as used by
    // gst-rtsp-server and the `sdpsink`/`rtpbin` examples): fmtp parameters joined by ";" with
    // no space, lowercase profile-level-id, RFC 7273 clock attributes, an IPv6 multicast c= line.
    static let gstreamer = SDPFixture(name: "GStreamer-style IPv6", text: """
        v=0
        o=- 1188340656180883 1 IN IP6 2001:db8::1
        s=Session streamed with GStreamer
        i=rtsp-server
        t=0 0
        a=tool:GStreamer
        a=type:broadcast
        a=control:*
        a=range:npt=now-
        m=video 5000 RTP/AVP 96
        c=IN IP6 ff15::1:2
        a=rtpmap:96 H264/90000
        a=framerate:30
        a=fmtp:96 packetization-mode=1;sprop-parameter-sets=Z0LADdkBQfsBEAAAAwAQAAADA8DxQqSA,aMuDyyA=;profile-level-id=42c00d
        a=ts-refclk:ptp=IEEE1588-2008:00-11-22-FF-FE-33-44-55:0
        a=mediaclk:direct=0
        a=rtcp-fb:96 nack pli
        a=control:stream=0
        a=sendonly
        m=audio 5002 RTP/AVP 97
        c=IN IP6 ff15::1:2
        a=rtpmap:97 OPUS/48000/2
        a=fmtp:97 sprop-stereo=0;stereo=1;useinbandfec=1;maxplaybackrate=48000;minptime=10
        a=ptime:20
        a=ts-refclk:ptp=IEEE1588-2008:00-11-22-FF-FE-33-44-55:0
        a=mediaclk:direct=0
        a=control:stream=1
        a=sendonly

        """)

    // RFC 8866 §5, the example session description.
    static let rfc8866Example = SDPFixture(name: "RFC 8866 §5 example", text: """
        v=0
        o=jdoe 3724394400 3724394405 IN IP4 198.51.100.1
        s=Call to John Smith
        i=SDP Offer #1
        u=http://www.jdoe.example.com/home.html
        e=Jane Doe <jane@jdoe.example.com>
        p=+1 617 555-6011
        c=IN IP4 198.51.100.1
        t=0 0
        m=audio 49170 RTP/AVP 0
        m=audio 49180 RTP/AVP 0
        m=video 51372 RTP/AVP 99
        c=IN IP6 2001:db8::2
        a=rtpmap:99 h263-1998/90000

        """)

    // Written by hand: the attributes ffmpeg never writes (SAVPF, extmap, rtcp, rtcp-mux, ssrc,
    // several keys with lifetime and MKI, AEAD suites, a port count, a non-RTP section).
    static let webRTCStyle = SDPFixture(name: "hand-written SAVPF with extmap, rtcp, ssrc", text: """
        v=0
        o=alice 2890844526 2890844527 IN IP4 192.0.2.10
        s=-
        t=0 0
        a=extmap:15 urn:ietf:params:rtp-hdrext:sdes:mid
        m=audio 49170 RTP/SAVPF 111 0 8 101
        c=IN IP4 192.0.2.10
        b=TIAS:64000
        a=rtcp:49171 IN IP4 192.0.2.11
        a=rtpmap:111 opus/48000/2
        a=rtpmap:101 telephone-event/8000
        a=fmtp:111 minptime=10;useinbandfec=1
        a=fmtp:101 0-15
        a=crypto:1 AEAD_AES_128_GCM inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGw==|2^31|1:4
        a=crypto:2 AES_CM_128_HMAC_SHA1_80 inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd|1048576;inline:HRwbGhkYFxYVFBMSERAPDg0MCwoJCAcGBQQDAgEA UNENCRYPTED_SRTCP
        a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level vad=on
        a=extmap:2/recvonly http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
        a=rtcp-mux
        a=recvonly
        a=ssrc:3735928559 cname:alice@example.com
        a=ssrc:3735928559 msid:stream0 audio0
        a=ptime:2.5
        a=rtcp-fb:111 transport-cc
        m=video 51372/2 RTP/SAVPF 96
        c=IN IP4 233.252.0.1/127/2
        a=rtpmap:96 VP8/90000
        a=crypto:1 AEAD_AES_256_GCM inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKis=
        a=framerate:29.97
        a=inactive
        m=application 9 UDP/DTLS/SCTP webrtc-datachannel
        c=IN IP4 0.0.0.0
        a=sctp-port:5000

        """)
}
