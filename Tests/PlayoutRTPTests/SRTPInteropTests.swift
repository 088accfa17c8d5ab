#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import PlayoutRTP
import PlayoutTesting
import Testing

/// The `ffmpeg` executable on PATH, if any.
let srtpInteropFFmpeg: String? = {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/ffmpeg" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}()

/// Interop with a real peer: ffmpeg's own SRTP implementation (libavformat/srtp.c, not libsrtp2)
/// sends H.264 over SRTP to a UDP socket the test owns, and ``SRTPSession`` unprotects it.
@Suite("SRTP interop with ffmpeg", .enabled(if: srtpInteropFFmpeg != nil, "ffmpeg is not on PATH: install ffmpeg to run the SRTP interop tests"))
struct SRTPInteropTests {
    static var ffmpeg: String? { srtpInteropFFmpeg }

    /// Runs ffmpeg sending one second of 160×120 H.264 as SRTP (RTCP muxed onto the same port) and
    /// returns every datagram received, within a 30-second deadline.
    static func receiveFromFFmpeg(keys: SRTPKeyingMaterial) throws -> (datagrams: [[UInt8]], status: Int32) {
        let receiver = try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
        let port = receiver.localAddress.port
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ffmpeg!)
        process.arguments = [
            "-hide_banner", "-loglevel", "error", "-nostdin",
            "-f", "lavfi", "-i", "testsrc=size=160x120:rate=30", "-t", "1",
            "-c:v", "libx264", "-f", "rtp",
            "-srtp_out_suite", keys.suite.name, "-srtp_out_params", keys.base64,
            "srtp://127.0.0.1:\(port)?rtcpport=\(port)",
        ]
        process.standardOutput = FileHandle.nullDevice  // the SDP ffmpeg prints
        try process.run()
        let datagrams = try FFmpeg.collect(from: [receiver], while: process, limit: .seconds(30))[0]
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return (datagrams, process.terminationStatus)
    }

    /// RTCP packet types 200…204 (RFC 5761 §4), which ffmpeg muxes onto the RTP port here.
    static func isRTCP(_ datagram: [UInt8]) -> Bool {
        datagram.count > 1 && (200...204).contains(datagram[1])
    }

    /// ffmpeg 5–7 implement only the AES-CM suites (no GCM), so GCM is covered by the known-answer tests.
    @Test("every packet ffmpeg protects authenticates, RTP and RTCP", arguments: [SRTPCryptoSuite.aesCM128HMACSHA1_80, .aesCM128HMACSHA1_32])
    func ffmpegToSession(suite: SRTPCryptoSuite) throws {
        let keys = SRTPKeyingMaterial.random(for: suite)
        let (datagrams, status) = try Self.receiveFromFFmpeg(keys: keys)
        #expect(status == 0)
        let rtcp = datagrams.filter(Self.isRTCP)
        let rtp = datagrams.filter { !Self.isRTCP($0) }
        #expect(rtp.count >= 10)
        #expect(rtcp.count >= 1)

        let session = try SRTPSession(keyingMaterial: keys, direction: .inbound)
        for datagram in rtp {
            let packet = try session.unprotectRTP(datagram)
            #expect(packet.count == datagram.count - suite.authenticationTagLength)
            #expect(packet[0] >> 6 == 2)
            #expect(packet[1] & 0x7F == 96)  // ffmpeg's dynamic payload type for H.264
        }
        for datagram in rtcp {
            let packet = try session.unprotectRTCP(datagram)
            #expect(packet.count == datagram.count - suite.rtcpOverhead)
            #expect(packet[1] == 200)  // a sender report
        }
        // The first H.264 packets carry SPS (NAL type 7) in the clear after decryption.
        #expect(
            try rtp.prefix(3).contains { datagram in
                let check = try SRTPSession(keyingMaterial: keys, direction: .inbound)
                let packet = try check.unprotectRTP(datagram)
                let nal = packet[12] & 0x1F
                return nal == 7 || (nal == 24 && packet[15] & 0x1F == 7)
            }
        )
        var expected = SRTPSession.Statistics()
        expected.packetsUnprotected = datagrams.count
        #expect(session.statistics == expected)
    }

    @Test("with a wrong key every packet fails authentication and one clear error appears")
    func ffmpegWrongKey() throws {
        let keys = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
        let (datagrams, status) = try Self.receiveFromFFmpeg(keys: keys)
        #expect(status == 0)
        let rtp = datagrams.filter { !Self.isRTCP($0) }
        try #require(rtp.count >= 10)

        let session = try SRTPSession(
            keyingMaterial: .random(for: .aesCM128HMACSHA1_80),
            direction: .inbound,
            configuration: .init(authenticationFailureReportThreshold: 10)
        )
        var reports: [String] = []
        for datagram in rtp {
            #expect(throws: SRTPError.authenticationFailed) { try session.unprotectRTP(datagram) }
            if let report = session.takeAuthenticationFailureReport() { reports.append(report.description) }
        }
        #expect(reports == ["SRTP authentication failed for 10 of 10 packets: check the key"])
        #expect(session.statistics.authFailures == rtp.count)
        #expect(session.statistics.packetsUnprotected == 0)
        #expect(session.statistics.replayDrops == 0)
    }
}
