#if canImport(Glibc)
import Glibc
#endif
import Playout
public import PlayoutCore
import PlayoutCodec
public import PlayoutRTP
public import PlayoutSender

/// Real media for an ``EmbeddedDriver``, sans-IO: the test pattern as H.264 (its frame number and
/// capture time drawn in, a key frame every ``Configuration/keyframeInterval`` frames) and a
/// 440 Hz tone as Opus in 20 ms frames, encoded once; packetized (and SRTP-protected) by the
/// publisher's own ``TrackSender``, each frame sent at its media time with `abs-capture-time`
/// from the clock's wall time, and carried through a seeded ``NetworkImpairment`` (loss, bursts,
/// jitter, reordering, outages). The same configuration gives the same datagrams.
///
/// ```swift
/// let stream = try SimulatedStream(.init(impairment: .init(loss: 0.02, seed: 7)))
/// let clock = ManualClock()
/// let subscriber = try Subscriber(sessionDescription: stream.sessionDescription, options: .init(duration: .seconds(5), clock: clock))
/// let driver = try EmbeddedDriver(subscriber)
/// let final = driver.run(try stream.datagrams(for: .zero..<Duration.seconds(5), origin: clock.now))
/// ```
public struct SimulatedStream: Sendable {
    /// What is sent, and over what network.
    public struct Configuration: Sendable {
        /// The video: H.264 at this size, rate and bit rate (libx264 on one thread, so the bytes
        /// are the same on every machine and run).
        public var width = 320
        public var height = 240
        public var frameRate = 30
        public var bitrate = 300_000
        public var keyframeInterval = 30
        /// Whether an Opus track is sent too.
        public var audio = false
        /// SRTP, when given.
        public var keyingMaterial: SRTPKeyingMaterial?
        /// `a=rtcp-fb` values the video section announces (e.g. `nack`, `nack pli`).
        public var feedback: [String] = []
        /// The one-way delay of every datagram before the impairment.
        public var transit: Duration = .milliseconds(10)
        /// The simulated network (default: none).
        public var impairment = NetworkImpairment.Configuration()
        /// The sender's wall time at ``MonotonicInstant/zero`` (ns since 1970), for the frames'
        /// `abs-capture-time`: a `ManualClock`'s by default; the real clock's offset for a stream
        /// sent in real time (`MonotonicClock().wallClockNanoseconds - MonotonicClock().now.nanoseconds`).
        public var wallClockOrigin = ManualClock.defaultWallClockOrigin
        /// The RTP bases, fixed so runs compare (near the wrap, to exercise it).
        public var ssrc: UInt32 = 0x1234
        public var firstSequenceNumber: UInt16 = 65_000
        public var firstTimestamp: UInt32 = 4_294_000_000

        /// A 320×240 30 fps H.264 stream with a key frame every second, no audio, no impairment.
        public init(
            width: Int = 320, height: Int = 240, frameRate: Int = 30, keyframeInterval: Int = 30, audio: Bool = false,
            keyingMaterial: SRTPKeyingMaterial? = nil, feedback: [String] = [], impairment: NetworkImpairment.Configuration = .init()
        ) {
            self.width = width
            self.height = height
            self.frameRate = frameRate
            self.keyframeInterval = keyframeInterval
            self.audio = audio
            self.keyingMaterial = keyingMaterial
            self.feedback = feedback
            self.impairment = impairment
        }
    }

    /// The `a=extmap` id of `abs-capture-time` in the session description.
    public static let captureTimeID: UInt8 = 1

    public let configuration: Configuration
    /// The session description that announces the stream (video on port 5004, audio on 5006;
    /// no socket is ever bound to them under the embedded driver).
    public let sessionDescription: SessionDescription

    /// Creates the stream.
    public init(_ configuration: Configuration = Configuration()) {
        self.configuration = configuration
        sessionDescription = Self.session(configuration)
    }

    /// The datagrams of the frames whose media time falls in `range` (from the stream's start),
    /// each sent at `origin` + its media time, as they arrive after the transit and the network:
    /// in arrival order, for ``EmbeddedDriver/run(_:steps:)``. `audioRange` defaults to `range`;
    /// `video` replaces the test pattern's frames (altered, say, to test a decoder's recovery).
    ///
    /// - Throws: ``PlayoutError`` when the encoder cannot open or the impairment is invalid.
    public func datagrams(
        for range: Range<Duration>, audio audioRange: Range<Duration>? = nil, origin: MonotonicInstant, video: [EncodedFrame]? = nil
    ) throws -> [EmbeddedDriver.Datagram] {
        let configuration = configuration
        var sent: [(at: MonotonicInstant, track: Int, bytes: [UInt8])] = []
        var tracks: [(frames: [EncodedFrame], codec: Codec, payloadType: UInt8, rate: Int32, range: Range<Duration>)] = [
            (try video ?? Self.videoFrames(configuration), .h264, 96, 90_000, range),
        ]
        if configuration.audio { tracks.append((try Self.audioFrames(), .opus, 97, 48_000, audioRange ?? range)) }
        for (index, track) in tracks.enumerated() {
            var sender = try TrackSender(
                codec: track.codec, payloadType: track.payloadType, clockRate: track.rate, keyingMaterial: configuration.keyingMaterial,
                ssrc: configuration.ssrc &+ UInt32(index), firstSequenceNumber: configuration.firstSequenceNumber,
                firstTimestamp: configuration.firstTimestamp, absoluteCaptureTimeID: Self.captureTimeID
            )
            for frame in track.frames where track.range.contains(frame.mediaTime.duration) {
                let at = origin.advanced(by: frame.mediaTime.duration)
                try sender.send(frame, captureTime: configuration.wallClockOrigin + at.nanoseconds) { bytes in
                    sent.append((at, index, bytes))
                }
            }
        }
        sent.sort { ($0.at, $0.track) < ($1.at, $1.track) }
        // Through the network: each datagram submitted when sent; each copy the network lets
        // through taken at the instant it leaves, and arriving `transit` later.
        var network = try NetworkImpairment(configuration: configuration.impairment)
        var arrived: [EmbeddedDriver.Datagram] = []
        var now = sent.first?.at ?? origin
        func release(upTo limit: MonotonicInstant) {
            while true {
                switch network.poll(now: now) {
                case .send(let bytes, let label):
                    arrived.append(EmbeddedDriver.Datagram(arrival: now.advanced(by: configuration.transit), track: label, bytes: bytes))
                case .wait(let until) where until <= limit:
                    now = until
                case .wait, .idle:
                    return
                }
            }
        }
        for datagram in sent {
            release(upTo: datagram.at)
            now = datagram.at
            network.submit(datagram.bytes, label: datagram.track, now: datagram.at)
            release(upTo: datagram.at)
        }
        release(upTo: MonotonicInstant(nanoseconds: .max))
        return arrived.sorted { $0.arrival < $1.arrival }
    }

    private static func session(_ configuration: Configuration) -> SessionDescription {
        var media: [MediaDescription] = []
        let sections: [(MediaKind, UInt8, String, UInt32, UInt16?)] = [(.video, 96, "H264", 90_000, nil), (.audio, 97, "opus", 48_000, 2)]
        for (kind, payloadType, name, rate, channels) in sections {
            if kind == .audio, !configuration.audio { continue }
            var section = MediaDescription(
                kind: kind == .video ? .video : .audio, port: kind == .video ? 5_004 : 5_006, proto: configuration.keyingMaterial == nil ? .rtpAVP : .rtpSAVP,
                payloadTypes: [payloadType], rtpMaps: [RTPMap(payloadType: payloadType, encodingName: name, clockRate: rate, channels: channels)],
                extensionMaps: [ExtensionMap(id: UInt16(captureTimeID), uri: AbsoluteCaptureTime.uri)],
                frameRate: kind == .video ? Double(configuration.frameRate) : nil
            )
            if kind == .video {
                section.attributes += configuration.feedback.map { SDPAttribute(name: "rtcp-fb", value: "\(payloadType) \($0)") }
            }
            if let key = configuration.keyingMaterial {
                section.crypto = [CryptoAttribute(suite: SDPCryptoSuite(rawValue: key.suite.name), keys: [.init(keyAndSalt: key.concatenated)])]
            }
            media.append(section)
        }
        return SessionDescription(sessionName: "simulated", connection: ConnectionData(addressType: .ip4, address: "127.0.0.1"), media: media)
    }

    /// The test pattern's frames for `configuration` (``maximumSeconds`` of them), encoded once
    /// per size, rate and bit rate in a process.
    public static func videoFrames(_ configuration: Configuration = Configuration()) throws -> [EncodedFrame] {
        let key = VideoKey(configuration)
        if let frames = cache.withLock({ $0.video[key] }) { return frames }
        let pattern = TestPattern(width: configuration.width, height: configuration.height)
        let encoder = try FFmpegEncoder(video: .init(
            codec: .h264, width: configuration.width, height: configuration.height, frameRate: configuration.frameRate, bitrate: configuration.bitrate,
            keyframeInterval: configuration.keyframeInterval, threadCount: 1
        ))
        var frames: [EncodedFrame] = []
        for index in 0..<(maximumSeconds * configuration.frameRate) {
            let picture = pattern.picture(frameNumber: UInt32(index), captureTimeMilliseconds: UInt32(index * 1_000 / configuration.frameRate))
            try encoder.encode(picture: picture, timestamp: Int64(index) * Int64(90_000 / configuration.frameRate)) { frames.append($0) }
        }
        try encoder.flush { frames.append($0) }
        cache.withLock { $0.video[key] = frames }
        return frames
    }

    /// The tone's Opus frames (``maximumSeconds`` of them), encoded once in a process.
    public static func audioFrames() throws -> [EncodedFrame] {
        if let frames = cache.withLock({ $0.audio }) { return frames }
        let encoder = try FFmpegEncoder(audio: .init(), track: 1)
        let size = encoder.audioFrameSize
        var frames: [EncodedFrame] = []
        for block in 0..<(maximumSeconds * 48_000 / size) {
            var samples = [Float](repeating: 0, count: size * 2)
            for sample in 0..<size {
                let value = Float(0.2 * sin(2 * Double.pi * 440 * Double(block * size + sample) / 48_000))
                samples[2 * sample] = value
                samples[2 * sample + 1] = value
            }
            try encoder.encode(samples: samples, timestamp: Int64(block * size)) { frames.append($0) }
        }
        cache.withLock { $0.audio = frames }
        return frames
    }

    /// How much media is encoded (and so the longest stream).
    public static let maximumSeconds = 12

    private struct VideoKey: Hashable {
        var width, height, frameRate, bitrate, keyframeInterval: Int
        init(_ configuration: Configuration) {
            (width, height, frameRate, bitrate, keyframeInterval) = (
                configuration.width, configuration.height, configuration.frameRate, configuration.bitrate, configuration.keyframeInterval
            )
        }
    }

    private static let cache = LockedValue<(video: [VideoKey: [EncodedFrame]], audio: [EncodedFrame]?)>(([:], nil))
}
