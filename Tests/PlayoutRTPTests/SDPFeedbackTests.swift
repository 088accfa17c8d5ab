import PlayoutRTP
import Testing

/// What a media section announces about feedback (RFC 4585 `a=rtcp-fb`) and retransmission
/// (RFC 4588 `rtx` with `apt=`).
@Suite("SDP: rtcp-fb and RTX payload types")
struct SDPFeedbackTests {
    static let sdp = """
        v=0
        o=- 0 0 IN IP4 127.0.0.1
        s=feedback
        c=IN IP4 127.0.0.1
        t=0 0
        m=video 5004 RTP/AVPF 96 97
        a=rtpmap:96 H264/90000
        a=rtpmap:97 rtx/90000
        a=fmtp:97 apt=96
        a=rtcp-fb:96 nack
        a=rtcp-fb:96 nack pli
        a=rtcp-fb:96 CCM FIR
        a=rtcp-fb:* goog-remb
        a=rtcp-fb:96 ccm tmmbr
        a=rtcp-fb:bogus nack
        a=rtcp-fb:200 nack
        a=rtcp-fb:96
        a=rtcp-fb:96 nack pli extra words
        m=audio 5006 RTP/AVP 111
        a=rtpmap:111 opus/48000/2

        """

    @Test("the kinds a sender accepts, per payload type and for *, malformed lines skipped")
    func capabilities() throws {
        let session = try SessionDescription(parsing: Self.sdp)
        let video = session.media[0]
        #expect(video.rtcpFeedback == [.nack(96), .pictureLoss(96), .fullIntraRequest(96), .receiverEstimatedMaximumBitrate(nil), .temporaryMaximumBitrate(96)])
        #expect(video.acceptsFeedback(.nack(nil), payloadType: 96))
        #expect(video.acceptsFeedback(.receiverEstimatedMaximumBitrate(nil), payloadType: 96), "a * line applies to every payload type")
        #expect(!video.acceptsFeedback(.nack(nil), payloadType: 97))
        #expect(video.retransmissionPayloadTypes.map { [$0.rtx, $0.original] } == [[97, 96]])
        let audio = session.media[1]
        #expect(audio.rtcpFeedback.isEmpty && audio.retransmissionPayloadTypes.isEmpty, "ffmpeg's SDPs announce nothing: no feedback is sent")
    }

    @Test("lines write back as they read", arguments: ["96 nack", "96 nack pli", "* goog-remb", "0 ccm fir", "127 ccm tmmbr"])
    func roundTrip(value: String) throws {
        let capability = try #require(RTCPFeedbackCapability(attributeValue: value))
        #expect(capability.attributeValue == value)
    }

    @Test("an RTX payload type without apt, with a bad apt, or without rtpmap gives no pair", arguments: [
        "a=rtpmap:97 rtx/90000", "a=rtpmap:97 rtx/90000\na=fmtp:97 apt=300", "a=rtpmap:97 rtx/90000\na=fmtp:97 apt=x", "a=fmtp:97 apt=96",
    ])
    func badRTX(lines: String) throws {
        let sdp = "v=0\no=- 0 0 IN IP4 127.0.0.1\ns=x\nc=IN IP4 127.0.0.1\nt=0 0\nm=video 5004 RTP/AVP 96 97\na=rtpmap:96 H264/90000\n\(lines)\n"
        let session = try SessionDescription(parsing: sdp)
        #expect(session.media[0].retransmissionPayloadTypes.isEmpty)
    }
}
