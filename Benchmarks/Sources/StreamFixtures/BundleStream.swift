// A subscription's video and audio as two SRTP streams that go on: the 720p30 H.264 stream of
// ContinuousProtectedStream (same frames, same packetizer) and 20 ms Opus frames of 160 bytes
// (64 kbit/s), in arrival order. In two shapes that carry the same media:
// - plain: each m-line on its own socket with its own SDES key (an SDP file's `a=crypto`), RTP
//   headers without extensions — what `playout subscribe x.sdp` receives;
// - bundle: both SSRCs on one socket under one key pair a DTLS-SRTP handshake exported, every
//   packet carrying `sdes:mid` and `abs-capture-time` in the one-byte form as libwebrtc senders
//   do (ids 1 and 2, as WHEPOffer offers them) — what a WHEP session receives.
import PlayoutCore
import PlayoutRTP
import PlayoutTesting
import PlayoutWebRTC

/// The two streams' fixed shape.
public enum BundleShape: Sendable {
    /// Each m-line on a socket of its own, SDES-keyed, no header extensions.
    case plain
    /// One socket, DTLS-SRTP keys, `sdes:mid` and `abs-capture-time` on every packet.
    case bundle

    public static let videoSSRC: UInt32 = 0x5EED
    public static let audioSSRC: UInt32 = 0xA0D10
    public static let videoPayloadType: UInt8 = 96
    public static let audioPayloadType: UInt8 = 111
    /// The extension ids WHEPOffer offers.
    public static let midExtensionID: UInt8 = 1
    public static let captureTimeExtensionID: UInt8 = 2
    /// The m-lines' mids, in order (video, audio).
    public static let mids = ["0", "1"]
    public static let audioFrameInterval = Duration.milliseconds(20)
    public static let audioPayloadSize = 160
    public static let audioClockRate: Int32 = 48_000
    /// The sender's wall clock at media time zero (Unix nanoseconds): where capture times start.
    public static let captureEpoch: Int64 = 1_764_000_000 * 1_000_000_000
}

/// Video and audio packets that go on, laid out a batch at a time as ``ContinuousProtectedStream``
/// lays out its one stream: packet `i` at `i * stride`, `lengths[i]` bytes, arriving at
/// `arrivals[i]` on m-line `tracks[i]` (for `.plain`, the socket it arrives on; for `.bundle`
/// what the router must find). Generating a batch allocates; call it outside the measurement.
public struct BundleStream {
    public let shape: BundleShape
    public let suite: SRTPCryptoSuite
    public let batchSize: Int
    /// `.plain`: each m-line's SDES key (video, audio).
    public let sdesKeys: [SRTPKeyingMaterial]
    /// `.bundle`: the keys the receiver's (DTLS client's) handshake exported.
    public let dtlsKeys: DTLSSRTPKeys
    public private(set) var bytes: [UInt8]
    public private(set) var lengths: [Int32] = []
    public private(set) var arrivals: [MonotonicInstant] = []
    public private(set) var tracks: [Int] = []
    /// Frames begun so far, per m-line.
    public private(set) var videoFrames = 0
    public private(set) var audioFrames = 0

    /// The sender's protecting sessions: one per m-line (`.plain`) or one for both (`.bundle`).
    private let outbound: [SRTPSession]
    private var videoPacketizer = H264Packetizer(maxPayloadSize: StreamShape.maxPayloadSize)
    private var videoHeader = RTPPacketBuilder(payloadType: BundleShape.videoPayloadType, ssrc: BundleShape.videoSSRC)
    private var audioHeader = RTPPacketBuilder(payloadType: BundleShape.audioPayloadType, ssrc: BundleShape.audioSSRC)
    private let keyframe: [UInt8]
    private let deltaFrame: [UInt8]
    private let audioFrame: [UInt8]
    /// Packets of the current frame not yet handed out, with their arrival and m-line.
    private var pending: [([UInt8], MonotonicInstant, Int)] = []
    private var pendingIndex = 0

    public init(shape: BundleShape, suite: SRTPCryptoSuite, batchSize: Int) {
        self.shape = shape
        self.suite = suite
        self.batchSize = batchSize
        var generator = SeededRandomNumberGenerator(seed: 0x5EED)
        keyframe = StreamShape.frame(isKey: true, using: &generator)
        deltaFrame = StreamShape.frame(isKey: false, using: &generator)
        // An Opus frame: a CELT fullband 20 ms TOC byte, then payload.
        audioFrame = [0xFC] + (1..<BundleShape.audioPayloadSize).map { _ in UInt8.random(in: 0...255, using: &generator) }
        sdesKeys = [SRTPKeyingMaterial.random(for: suite), SRTPKeyingMaterial.random(for: suite)]
        // What the DTLS exporter gives both ends (RFC 5764 §4.2): client key ‖ server key ‖
        // client salt ‖ server salt. The sender is the DTLS server here and protects with its
        // write key, the receiver's inbound key.
        let profile: DTLSSRTPProfile = suite == .aeadAES128GCM ? .aeadAES128GCM : .aes128CMSHA1_80
        let exported = (0..<2 * (suite.masterKeyLength + suite.masterSaltLength)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        dtlsKeys = try! DTLSSRTPKeys(exporterOutput: exported, profile: profile, role: .client)
        let sender = try! DTLSSRTPKeys(exporterOutput: exported, profile: profile, role: .server)
        switch shape {
        case .plain: outbound = sdesKeys.map { try! SRTPSession(keyingMaterial: $0, direction: .outbound) }
        case .bundle: outbound = [try! SRTPSession(keyingMaterial: sender.outbound, direction: .outbound)]
        }
        bytes = [UInt8](repeating: 0, count: batchSize * StreamShape.stride)
        lengths.reserveCapacity(batchSize)
        arrivals.reserveCapacity(batchSize)
        tracks.reserveCapacity(batchSize)
    }

    /// Lays out the next `batchSize` packets.
    public mutating func next() {
        lengths.removeAll(keepingCapacity: true)
        arrivals.removeAll(keepingCapacity: true)
        tracks.removeAll(keepingCapacity: true)
        while lengths.count < batchSize {
            if pendingIndex == pending.count { packetizeNextFrame() }
            let (packet, arrival, track) = pending[pendingIndex]
            pendingIndex += 1
            let index = lengths.count
            bytes.withUnsafeMutableBytes { all in
                all.baseAddress!.advanced(by: index * StreamShape.stride).copyMemory(from: packet, byteCount: packet.count)
            }
            lengths.append(Int32(packet.count))
            arrivals.append(arrival)
            tracks.append(track)
        }
    }

    /// Packetizes whichever frame is sent next: video every 1/30 s, audio every 20 ms, each
    /// arriving 10 ms after it was sent (as ContinuousProtectedStream's).
    private mutating func packetizeNextFrame() {
        pending.removeAll(keepingCapacity: true)
        pendingIndex = 0
        let videoSent = Int64(videoFrames) * StreamShape.frameInterval.nanoseconds
        let audioSent = Int64(audioFrames) * BundleShape.audioFrameInterval.nanoseconds
        var slot = [UInt8](repeating: 0, count: StreamShape.stride)
        var packets: [([UInt8], MonotonicInstant, Int)] = []
        if videoSent <= audioSent {
            let isKey = videoFrames % StreamShape.keyframeInterval == 0
            let arrival = MonotonicInstant(nanoseconds: 1_010_000_000 + videoSent)
            var header = videoHeader
            header.timestamp = RTPTimestamp(rawValue: UInt32(truncatingIfNeeded: videoFrames * 3_000))
            header.extensions = extensions(mid: 0, sent: videoSent)
            let session = outbound[0]
            (isKey ? keyframe : deltaFrame).withUnsafeBytes { frame in
                videoPacketizer.packetize(frame) { payload, isLast in
                    header.marker = isLast
                    packets.append((Self.protect(header, payload, session, into: &slot), arrival, 0))
                    header.sequenceNumber = header.sequenceNumber.advanced(by: 1)
                }
            }
            videoHeader = header
            videoFrames += 1
        } else {
            let arrival = MonotonicInstant(nanoseconds: 1_010_000_000 + audioSent)
            audioHeader.timestamp = RTPTimestamp(rawValue: UInt32(truncatingIfNeeded: audioFrames * 960))
            audioHeader.marker = audioFrames == 0
            audioHeader.extensions = extensions(mid: 1, sent: audioSent)
            let header = audioHeader
            let session = outbound[shape == .plain ? 1 : 0]
            audioFrame.withUnsafeBytes { payload in
                packets.append((Self.protect(header, payload, session, into: &slot), arrival, 1))
            }
            audioHeader.sequenceNumber = audioHeader.sequenceNumber.advanced(by: 1)
            audioFrames += 1
        }
        pending = packets
    }

    /// The header extensions of a packet of m-line `mid` sent (captured) at `sent` after media
    /// time zero: none for `.plain`.
    private func extensions(mid: Int, sent: Int64) -> [RTPPacketBuilder.Extension] {
        guard shape == .bundle else { return [] }
        let capture = AbsoluteCaptureTime(captureTimestamp: NTPTime.ntp(unixNanoseconds: BundleShape.captureEpoch + sent))
        return [
            .init(id: BundleShape.midExtensionID, bytes: Array(BundleShape.mids[mid].utf8)),
            .init(id: BundleShape.captureTimeExtensionID, bytes: capture.bytes),
        ]
    }

    private static func protect(_ header: RTPPacketBuilder, _ payload: UnsafeRawBufferPointer, _ session: SRTPSession, into slot: inout [UInt8]) -> [UInt8] {
        slot.withUnsafeMutableBytes { buffer in
            let length = try! header.write(payload: payload, into: buffer)
            let protected = try! session.protectRTP(buffer, length: length)
            return Array(buffer[0..<protected])
        }
    }
}
