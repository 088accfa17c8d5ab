import Foundation
import Glibc
import PlayoutCore
import PlayoutRTP
import PlayoutTesting
import Testing

/// End-to-end interop with the real ffmpeg, both ways, through Playout's own intake path:
/// SDP file → UDPReceiver → SRTP unprotect → RTP parse → depacketize; and packetize → SRTP
/// protect → UDPSender → `ffmpeg -i our.sdp`.
@Suite("Intake interop with ffmpeg", .enabled(if: FFmpeg.isAvailable, "ffmpeg is not on PATH (make setup installs it)"))
struct IntakeInteropTests {
    /// A 2 s H.264 clip in MPEG-TS (Annex B, parameter sets in band) and a matching Opus clip.
    static func makeClips() throws -> (video: URL, audio: URL) {
        let video = FFmpeg.temporaryFile("video.ts")
        let audio = FFmpeg.temporaryFile("audio.ogg")
        try FFmpeg.run([
            "-f", "lavfi", "-i", "testsrc=size=320x240:rate=30:duration=2",
            "-c:v", "libx264", "-g", "30", "-bf", "0", "-pix_fmt", "yuv420p", video.path,
        ])
        try FFmpeg.run(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=2", "-c:a", "libopus", audio.path])
        return (video, audio)
    }

    /// Unprotects (when `session` is given), drops RTCP, sorts by sequence number and
    /// depacketizes.
    static func frames<D: Depacketizer>(
        from datagrams: [[UInt8]], session: SRTPSession?, depacketizer: inout D
    ) throws -> [EncodedFrame] {
        var packets: [[UInt8]] = []
        for datagram in datagrams {
            let isRTCP = datagram.count > 1 && (200...204).contains(datagram[1])
            if isRTCP { continue }
            packets.append(try session?.unprotectRTP(datagram) ?? datagram)
        }
        var unwrapper = SequenceNumberUnwrapper()
        let sorted = packets
            .map { (unwrapper.unwrap(SequenceNumber(rawValue: UInt16($0[2]) << 8 | UInt16($0[3]))), $0) }
            .sorted { $0.0 < $1.0 }
            .map(\.1)
        return try FFmpeg.depacketize(sorted, with: &depacketizer)
    }

    @Test("ffmpeg sends H.264 + Opus as RTP or SRTP with an SDP file; Playout's intake gives back every frame", arguments: [false, true])
    func ffmpegToPlayout(secure: Bool) throws {
        let (video, audio) = try Self.makeClips()
        defer { try? FileManager.default.removeItem(at: video); try? FileManager.default.removeItem(at: audio) }
        let sdpFile = FFmpeg.temporaryFile("stream.sdp")
        defer { try? FileManager.default.removeItem(at: sdpFile) }

        // Playout's receivers, on ports the kernel picks.
        let videoReceiver = try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
        let audioReceiver = try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
        let key = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
        func output(_ port: UInt16) -> [String] {
            secure
                ? ["-f", "rtp", "-srtp_out_suite", "AES_CM_128_HMAC_SHA1_80", "-srtp_out_params", key.base64, "srtp://127.0.0.1:\(port)"]
                : ["-f", "rtp", "rtp://127.0.0.1:\(port)"]
        }
        let process = try FFmpeg.start(
            ["-i", video.path, "-i", audio.path, "-map", "0:v", "-c", "copy"] + output(videoReceiver.localAddress.port)
                + ["-map", "1:a", "-c", "copy"] + output(audioReceiver.localAddress.port) + ["-sdp_file", sdpFile.path],
            captureOutput: false
        )
        let datagrams = try FFmpeg.collect(from: [videoReceiver, audioReceiver], while: process)
        #expect(process.terminationStatus == 0)

        // The SDP ffmpeg wrote says what each port carries and, for SRTP, the key.
        let sdp = try SessionDescription(parsing: String(contentsOf: sdpFile, encoding: .utf8))
        let videoMedia = try #require(sdp.media.first { $0.kind == .video })
        let audioMedia = try #require(sdp.media.first { $0.kind == .audio })
        #expect(videoMedia.port == videoReceiver.localAddress.port && audioMedia.port == audioReceiver.localAddress.port)
        let videoType = try #require(videoMedia.payloadTypes.first)
        #expect(videoMedia.rtpMap(for: videoType)?.encodingName.uppercased() == "H264")
        #expect(audioMedia.rtpMap(for: try #require(audioMedia.payloadTypes.first))?.encodingName.lowercased() == "opus")
        func session(_ media: MediaDescription) throws -> SRTPSession? {
            guard secure else {
                #expect(media.crypto.isEmpty)
                return nil
            }
            let crypto = try #require(media.crypto.first)
            return try SRTPSession(keyingMaterial: SRTPKeyingMaterial(crypto: crypto), direction: .inbound)
        }
        let videoSession = try session(videoMedia)
        let audioSession = try session(audioMedia)

        var h264 = H264Depacketizer(
            track: 1, parameterSets: videoMedia.formatParameters(for: videoType)?.spropParameterSets ?? []
        )
        let videoFrames = try Self.frames(from: datagrams[0], session: videoSession, depacketizer: &h264)
        var opus = OpusDepacketizer(track: 2)
        let audioFrames = try Self.frames(from: datagrams[1], session: audioSession, depacketizer: &opus)
        #expect(videoSession?.statistics.authFailures ?? 0 == 0)
        #expect(audioSession?.statistics.authFailures ?? 0 == 0)

        // The same elementary streams as `ffmpeg -c copy` writes them.
        let expectedVideo = try FFmpeg.packets(of: video, rawFormat: "h264")
        #expect(expectedVideo.count == 60)
        #expect(videoFrames.count == expectedVideo.count)
        for (index, (frame, expected)) in zip(videoFrames, expectedVideo).enumerated() {
            #expect(AnnexB.nalUnits(of: frame.bytes) == AnnexB.nalUnits(of: expected), "access unit \(index)")
        }
        #expect(videoFrames.filter(\.isKeyframe).count == 2)
        let expectedAudio = try FFmpeg.packetChecksums(of: audio)
        #expect(audioFrames.count == expectedAudio.count)
        #expect(audioFrames.map { FFmpeg.PacketChecksum(size: $0.bytes.count, adler32: adler32($0.bytes)) } == expectedAudio)
    }

    @Test("ffmpeg sends VP8 as RTP or SRTP with an SDP file; Playout's intake gives back the IVF file's frames", arguments: [false, true])
    func ffmpegVP8ToPlayout(secure: Bool) throws {
        let clip = FFmpeg.temporaryFile("vp8.ivf")
        let sdpFile = FFmpeg.temporaryFile("vp8.sdp")
        defer { try? FileManager.default.removeItem(at: clip); try? FileManager.default.removeItem(at: sdpFile) }
        try FFmpeg.run(["-f", "lavfi", "-i", "testsrc=size=320x240:rate=30:duration=1", "-c:v", "libvpx", "-g", "10", "-f", "ivf", clip.path])
        let receiver = try UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: 0))
        let key = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_32)
        let output = secure
            ? ["-f", "rtp", "-srtp_out_suite", "AES_CM_128_HMAC_SHA1_32", "-srtp_out_params", key.base64, "srtp://127.0.0.1:\(receiver.localAddress.port)"]
            : ["-f", "rtp", "rtp://127.0.0.1:\(receiver.localAddress.port)"]
        let process = try FFmpeg.start(["-i", clip.path, "-c", "copy"] + output + ["-sdp_file", sdpFile.path], captureOutput: false)
        let datagrams = try FFmpeg.collect(from: [receiver], while: process)
        let media = try #require(try SessionDescription(parsing: String(contentsOf: sdpFile, encoding: .utf8)).media.first)
        #expect(media.rtpMap(for: try #require(media.payloadTypes.first))?.encodingName.uppercased() == "VP8")
        let session = try media.crypto.first.map { try SRTPSession(keyingMaterial: SRTPKeyingMaterial(crypto: $0), direction: .inbound) }
        #expect((session != nil) == secure)
        var vp8 = VP8Depacketizer(track: 1)
        let frames = try Self.frames(from: datagrams[0], session: session, depacketizer: &vp8)
        let expected = try FFmpeg.packetChecksums(of: clip)
        #expect(expected.count == 30)
        #expect(frames.map { FFmpeg.PacketChecksum(size: $0.bytes.count, adler32: adler32($0.bytes)) } == expected)
        #expect(frames.filter(\.isKeyframe).count == 3)
        #expect(session?.statistics.authFailures ?? 0 == 0)
    }

    @Test("Playout packetizes and protects H.264; `ffmpeg -i our.sdp` decodes the same frames as the source", arguments: [false, true])
    func playoutToFFmpeg(secure: Bool) throws {
        let (video, audio) = try Self.makeClips()
        defer { try? FileManager.default.removeItem(at: video); try? FileManager.default.removeItem(at: audio) }
        let accessUnits = try FFmpeg.packets(of: video, rawFormat: "h264")

        // Free ports for ffmpeg to listen on (RTP, and RTCP at + 1).
        let port = try Self.freePortPair()
        let key = SRTPKeyingMaterial.random(for: .aesCM128HMACSHA1_80)
        var media = MediaDescription(kind: .video, port: port, proto: .rtpAVP, payloadTypes: [96])
        media.rtpMaps = [RTPMap(payloadType: 96, encodingName: "H264", clockRate: 90_000)]
        media.formatParameters = [FormatParameters(payloadType: 96, parameters: [.init(name: "packetization-mode", value: "1")])]
        if secure {
            media.crypto = [CryptoAttribute(suite: SDPCryptoSuite(rawValue: "AES_CM_128_HMAC_SHA1_80"), keys: [.init(keyAndSalt: key.concatenated)])]
        }
        var description = SessionDescription(sessionName: "Playout interop")
        description.connection = ConnectionData(addressType: .ip4, address: "127.0.0.1")
        description.media = [media]
        let sdpFile = FFmpeg.temporaryFile("our.sdp")
        defer { try? FileManager.default.removeItem(at: sdpFile) }
        try description.serialized().write(to: sdpFile, atomically: true, encoding: .utf8)

        // ffmpeg decodes what arrives; wait until its socket is bound (no sleeping on a guess).
        let decoded = FFmpeg.temporaryFile("decoded.framemd5")
        defer { try? FileManager.default.removeItem(at: decoded) }
        let receiver = try FFmpeg.start(
            ["-protocol_whitelist", "file,udp,rtp,srtp", "-buffer_size", "4194304", "-i", sdpFile.path, "-f", "framemd5", decoded.path],
            captureOutput: false
        )
        let bound = ContinuousClock.now + .seconds(20)
        while !Self.udpPortIsBound(port), ContinuousClock.now < bound, receiver.isRunning {
            usleep(1_000)  // polling a readiness condition, not waiting for things to settle
        }
        #expect(Self.udpPortIsBound(port), "ffmpeg never opened port \(port)")

        let sender = try UDPSender(to: SocketAddress(host: "127.0.0.1", port: port))
        let session = secure ? try SRTPSession(keyingMaterial: key, direction: .outbound) : nil
        var packetizer = H264Packetizer()
        var header = RTPPacketBuilder(payloadType: 96, sequenceNumber: 4_242, ssrc: 0xC0FFEE)
        var datagram = [UInt8](repeating: 0, count: 2_048)
        for (index, accessUnit) in accessUnits.enumerated() {
            header.timestamp = RTPTimestamp(rawValue: UInt32(index * 3_000))
            try accessUnit.withUnsafeBytes { frame in
                try packetizer.packetize(frame) { payload, isLast in
                    header.marker = isLast
                    try datagram.withUnsafeMutableBytes { buffer in
                        var length = try header.write(payload: payload, into: buffer)
                        if let session { length = try session.protectRTP(buffer, length: length) }
                        try sender.send(UnsafeRawBufferPointer(rebasing: buffer[0..<length]))
                    }
                    header.sequenceNumber = header.sequenceNumber.advanced(by: 1)
                }
            }
            usleep(10_000)  // pacing like a live sender (3× real time), so a busy ffmpeg keeps up
        }
        // RTCP BYE on the RTCP port (RTP port + 1) ends the stream for ffmpeg, as a live sender does.
        // ffmpeg's RTP reader takes the RTCP socket before the RTP one whenever both are readable,
        // so a BYE sent while ffmpeg is still behind (a busy machine) ends its input with the last
        // frames unread in the RTP socket: send it only once ffmpeg has read every datagram.
        let drained = ContinuousClock.now + .seconds(60)
        while Self.udpReceiveQueueBytes(port) != 0, ContinuousClock.now < drained, receiver.isRunning {
            usleep(1_000)  // polling a readiness condition, not waiting for things to settle
        }
        #expect(Self.udpReceiveQueueBytes(port) == 0, "ffmpeg did not read what was sent to port \(port) within 60 s")
        var bye = RTCPPacket.serializeCompound([
            .receiverReport(RTCPReceiverReport(ssrc: 0xC0FFEE)), .goodbye(RTCPGoodbye(ssrcs: [0xC0FFEE])),
        ])
        if let session { bye = try session.protectRTCP(bye) }
        try UDPSender(to: SocketAddress(host: "127.0.0.1", port: port + 1)).send(bye)
        let deadline = ContinuousClock.now + .seconds(30)
        while receiver.isRunning, ContinuousClock.now < deadline { usleep(10_000) }
        if receiver.isRunning { receiver.terminate() }
        receiver.waitUntilExit()

        let received = try Self.md5Lines(String(contentsOf: decoded, encoding: .utf8))
        let source = try Self.md5Lines(String(decoding: FFmpeg.run(["-i", video.path, "-f", "framemd5", "-"]), as: UTF8.self))
        #expect(received.count == accessUnits.count)
        #expect(received == source, "every decoded frame matches the source decode")
    }

    /// An even UDP port that is free on 127.0.0.1 with the next one (RTP and RTCP), drawn at
    /// random from 20000…32767, below Linux's ephemeral range. A port the kernel gave a bind to
    /// port 0 and the test released is one the kernel gives out again — to a sender's source
    /// port, another test's socket —: beside two builds and two `yes`, ffmpeg found port 59367
    /// taken and exited ("ffmpeg never opened port 59367"); the port above it was never checked.
    static func freePortPair() throws -> UInt16 {
        for _ in 0..<256 {
            let port = UInt16.random(in: 20_000...32_766) & ~1
            if let rtp = try? UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: port)),
               let rtcp = try? UDPReceiver(bindingTo: SocketAddress(host: "127.0.0.1", port: port + 1)) {
                withExtendedLifetime((rtp, rtcp)) {}
                return port
            }
        }
        throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "no two free UDP ports in 20000…32767"])
    }

    /// The hashes of a framemd5 listing (size and MD5 of each decoded frame).
    static func md5Lines(_ text: String) -> [String] {
        text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { line in
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            return fields.count >= 6 ? "\(fields[4]) \(fields[5])" : nil
        }
    }

    /// Whether some socket on this machine is bound to UDP `port` (from /proc/net/udp).
    static func udpPortIsBound(_ port: UInt16) -> Bool {
        !udpSockets(port).isEmpty
    }

    /// The bytes waiting in the receive queues of the sockets bound to UDP `port` (nil: none is
    /// bound).
    static func udpReceiveQueueBytes(_ port: UInt16) -> Int? {
        let sockets = udpSockets(port)
        return sockets.isEmpty ? nil : sockets.reduce(0) { $0 + $1.receiveQueue }
    }

    /// The sockets bound to UDP `port`, from /proc/net/udp and /proc/net/udp6: each line's second
    /// column is `address:port` in hex, its fifth `tx_queue:rx_queue` in hex bytes.
    private static func udpSockets(_ port: UInt16) -> [(line: Substring, receiveQueue: Int)] {
        let hexPort = String(format: ":%04X", port)
        var sockets: [(line: Substring, receiveQueue: Int)] = []
        for table in ["/proc/net/udp", "/proc/net/udp6"] {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let columns = line.split(separator: " ")
                guard columns.count > 4, columns[1].hasSuffix(hexPort) else { continue }
                let queues = columns[4].split(separator: ":")
                sockets.append((line, queues.count == 2 ? Int(queues[1], radix: 16) ?? 0 : 0))
            }
        }
        return sockets
    }
}
