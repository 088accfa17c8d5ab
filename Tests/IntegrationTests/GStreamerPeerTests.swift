#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Playout
import PlayoutSender
import PlayoutTesting
import RealTimeTesting
import Testing

/// A real peer: GStreamer's `rtpbin` sending VP8 with retransmission (`rtprtxsend`, RTX payload
/// type 98 for 96), 3 % of its RTP dropped on the way out (`identity drop-probability`). The
/// subscriber's NACKs must come back as RTX that fills the gaps, and GStreamer must parse its
/// receiver reports: its `rtpsource` debug log (`GST_DEBUG=rtpsource:5`) prints each report block
/// it takes and the round-trip time it computes from LSR/DLSR — the session statistics'
/// `rb-round-trip`. gst-launch cannot make `udpsink` send from `udpsrc`'s socket, so GStreamer's
/// reports come from a port it does not listen on; the subscriber is told where to send
/// (`Subscriber.Options.feedbackDestinations`).
@Suite("GStreamer rtpbin sender: NACK → RTX, receiver reports parsed", .realTime(weight: 2), .serialized)
struct GStreamerPeerTests {
    static var gstLaunch: String? {
        ["/usr/bin/gst-launch-1.0", "/usr/local/bin/gst-launch-1.0"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test("GStreamer answers the subscriber's NACKs with RTX and computes an RTT from its reports", .enabled(if: gstLaunch != nil))
    func nackAndReports() throws {
        let ports = try Publisher.freeLoopbackDestination().port  // four free: RTP, RTCP, GStreamer's RTCP in
        let rtcpIn = ports + 2
        let gst = Process()
        gst.executableURL = URL(fileURLWithPath: Self.gstLaunch!)
        gst.arguments = """
            -q rtpbin name=rtpbin rtp-profile=avpf \
            videotestsrc is-live=true pattern=ball ! video/x-raw,width=320,height=240,framerate=30/1 \
            ! vp8enc deadline=1 keyframe-max-dist=60 target-bitrate=600000 ! rtpvp8pay pt=96 ssrc=305419896 picture-id-mode=15-bit \
            ! rtprtxsend payload-type-map=application/x-rtp-pt-map,96=(uint)98 max-size-time=2000 ! rtpbin.send_rtp_sink_0 \
            rtpbin.send_rtp_src_0 ! identity drop-probability=0.03 ! udpsink host=127.0.0.1 port=\(ports) \
            rtpbin.send_rtcp_src_0 ! udpsink host=127.0.0.1 port=\(ports + 1) sync=false async=false \
            udpsrc port=\(rtcpIn) address=127.0.0.1 ! rtpbin.recv_rtcp_sink_0
            """.split(separator: " ").map(String.init)
        gst.environment = ProcessInfo.processInfo.environment.merging(["GST_DEBUG": "rtpsource:5", "GST_DEBUG_NO_COLOR": "1"]) { $1 }
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("playout-gst-\(ports).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        defer {
            try? handle.close()
            try? FileManager.default.removeItem(at: log)
        }
        gst.standardOutput = FileHandle.nullDevice
        gst.standardError = handle
        let sdp = """
            v=0
            o=- 0 0 IN IP4 127.0.0.1
            s=gstreamer
            c=IN IP4 127.0.0.1
            t=0 0
            m=video \(ports) RTP/AVP 96 98
            a=rtpmap:96 VP8/90000
            a=rtpmap:98 rtx/90000
            a=fmtp:98 apt=96
            a=rtcp-fb:96 nack
            a=rtcp-fb:96 nack pli
            a=recvonly

            """
        var options = Subscriber.Options(duration: .seconds(8))
        options.feedbackDestinations = [.video: try SocketAddress(host: "127.0.0.1", port: rtcpIn)]
        let subscriber = try Subscriber(sessionDescription: try SessionDescription(parsing: sdp), options: options)
        try subscriber.start()
        try gst.run()
        let final = subscriber.waitUntilEnded()
        // The test runner's threads block SIGTERM, and a child inherits the mask: SIGKILL.
        kill(gst.processIdentifier, SIGKILL)
        gst.waitUntilExit()
        try handle.synchronize()
        let video = try #require(final.video)
        #expect(video.framesRendered > 150, "\(video.framesRendered) frames rendered in 8 s")
        #expect(video.nackCount > 0, "3 % loss asks for retransmissions")
        #expect(video.retransmittedPacketsReceived > 0 && video.retransmittedPacketsDropped == 0, "\(video.retransmittedPacketsReceived) RTX restored, \(video.retransmittedPacketsDropped) dropped")
        // Repaired: a loss left unrepaired costs its frame and those after it until GStreamer's next
        // key frame (PLI), ≈ 16 losses in 8 s at 3 %. Beside the suite a frame may be late (both
        // processes share two cores): that is not the network's loss.
        let lostToNetwork = video.framesIncomplete + video.framesDroppedWaitingForKeyframe - video.framesDroppedBeforeFirstKeyframe
        let repair = """
                \(video.framesRendered) of \(video.framesReceived) rendered, \(lostToNetwork) lost to the network \
                (\(video.framesIncomplete) incomplete, \(video.framesDroppedWaitingForKeyframe) waiting for a key frame), \
                \(video.framesLate) late; \(video.packetsLost) packets lost, \(video.nackCount) NACKs, \(video.pliCount) PLIs, \
                RTX \(video.retransmittedPacketsReceived) restored, \(video.retransmittedPacketsLate) late, \
                \(video.retransmittedPacketsDuplicated) duplicated; round trip \(video.roundTripTime.map { "\($0)" } ?? "none")
                """
        #expect(lostToNetwork <= 3 && video.framesRendered * 20 >= video.framesReceived * 19, "repaired: \(repair)")
        // GStreamer's side: report blocks from our SSRC about its stream, and round trips from them.
        let text = try String(contentsOf: log, encoding: .utf8)
        let blocks = text.split(separator: "\n").filter { $0.contains("got RB packet") && $0.contains("LSR") && !$0.contains("LSR 0000:0000") }
        #expect(!blocks.isEmpty, "GStreamer parsed receiver reports with an LSR")
        let roundTrips = text.split(separator: "\n").compactMap { line -> Double? in
            // "… NTP a986:d3f2, round trip 0000:0041" — 16.16 fixed-point seconds.
            guard let range = line.range(of: "round trip ") else { return nil }
            let parts = line[range.upperBound...].prefix(9).split(separator: ":")
            guard parts.count == 2, let seconds = UInt32(parts[0], radix: 16), let fraction = UInt32(parts[1], radix: 16) else { return nil }
            return Double(seconds) + Double(fraction) / 65_536
        }
        #expect(!roundTrips.isEmpty && roundTrips.allSatisfy { $0 < 1 }, "GStreamer's round trips from our reports: \(roundTrips)")
        print("gstreamer: \(repair); GStreamer took \(blocks.count) report blocks, round trips \(roundTrips.map { Int($0 * 1_000_000) }) µs")
    }
}
