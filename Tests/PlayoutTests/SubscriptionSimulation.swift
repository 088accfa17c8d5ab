#if canImport(Glibc)
import Glibc
#endif
@testable import Playout
import PlayoutCodec
import PlayoutCore
import PlayoutJitter
import PlayoutRTP
import PlayoutTelemetry
import PlayoutTesting
import Testing

/// Real media for simulated subscriptions, encoded once per process: a 320×240 30 fps H.264 test
/// pattern (a key frame every second) and a 440 Hz tone as Opus in 20 ms frames.
enum SimulatedMedia {
    static let seconds = 12
    static let frameRate = 30

    static let video: [EncodedFrame] = {
        let pattern = TestPattern(width: 320, height: 240)
        let encoder = try! FFmpegEncoder(video: .init(codec: .h264, width: 320, height: 240, frameRate: frameRate, bitrate: 300_000, keyframeInterval: frameRate, threadCount: 1))
        var frames: [EncodedFrame] = []
        for index in 0..<(seconds * frameRate) {
            let picture = pattern.picture(frameNumber: UInt32(index), captureTimeMilliseconds: UInt32(index * 1_000 / frameRate))
            try! encoder.encode(picture: picture, timestamp: Int64(index) * 3_000) { frames.append($0) }
        }
        try! encoder.flush { frames.append($0) }
        return frames
    }()

    static let audio: [EncodedFrame] = {
        let encoder = try! FFmpegEncoder(audio: .init(), track: 1)
        let size = encoder.audioFrameSize
        var frames: [EncodedFrame] = []
        for block in 0..<(seconds * 48_000 / size) {
            var samples = [Float](repeating: 0, count: size * 2)
            for sample in 0..<size {
                let value = Float(0.2 * sin(2 * Double.pi * 440 * Double(block * size + sample) / 48_000))
                samples[2 * sample] = value
                samples[2 * sample + 1] = value
            }
            try! encoder.encode(samples: samples, timestamp: Int64(block * size)) { frames.append($0) }
        }
        return frames
    }()
}

/// One datagram on the simulated wire.
struct SimulatedDatagram {
    var arrival: MonotonicInstant
    var track: Int
    var bytes: [UInt8]
}

/// A sender on the simulated wire: sends the frames of `media` whose media time falls in
/// `range`, each at `origin` + its media time, arriving `transit` later, with `abs-capture-time`
/// stamped from the simulated wall clock.
struct SimulatedSender {
    var key: SRTPKeyingMaterial?
    var ssrc: UInt32 = 0x1234
    var firstSequenceNumber: UInt16 = 65_000
    var firstTimestamp: UInt32 = 4_294_000_000
    var transit: Duration = .milliseconds(10)
    /// The video frames sent (the shared test pattern unless a test alters them).
    var video = SimulatedMedia.video

    func datagrams(
        video range: Range<Duration>, audio audioRange: Range<Duration>? = nil, origin: MonotonicInstant
    ) throws -> [SimulatedDatagram] {
        var datagrams: [SimulatedDatagram] = []
        let tracks: [(frames: [EncodedFrame], codec: Codec, payloadType: UInt8, rate: Int32, range: Range<Duration>?, ssrc: UInt32)] = [
            (video, .h264, 96, 90_000, range, ssrc),
            (SimulatedMedia.audio, .opus, 97, 48_000, audioRange, ssrc &+ 1),
        ]
        for (index, track) in tracks.enumerated() {
            guard let range = track.range else { continue }
            var sender = try TrackSender(
                codec: track.codec, payloadType: track.payloadType, clockRate: track.rate, keyingMaterial: key, ssrc: track.ssrc,
                firstSequenceNumber: firstSequenceNumber, firstTimestamp: firstTimestamp, absoluteCaptureTimeID: SimulatedSubscription.captureTimeID
            )
            for frame in track.frames where range.contains(frame.mediaTime.duration) {
                let sent = origin.advanced(by: frame.mediaTime.duration)
                try sender.send(frame, captureTime: SimulatedSubscription.wallClock(at: sent)) { bytes in
                    datagrams.append(SimulatedDatagram(arrival: sent.advanced(by: transit), track: index, bytes: bytes))
                }
            }
        }
        return datagrams
    }
}

/// A whole subscription on a manual clock: a real ``Subscriber`` (tracks, pipelines, playout
/// loops, decoders, state machine, delay controller, feedback decisions) driven by the embedded
/// driver of PlayoutTesting, with datagrams injected at their arrival instants and every part
/// advanced at exactly the instants it asks for. No sockets, no threads, no sleeps: the same
/// input gives the same result, to the nanosecond.
final class SimulatedSubscription: @unchecked Sendable {
    static let captureTimeID: UInt8 = 1
    /// The simulated wall clock: the manual clock's (2026-01-01 plus its reading).
    static func wallClock(at instant: MonotonicInstant) -> Int64 { ManualClock.defaultWallClockOrigin + instant.nanoseconds }

    let clock: ManualClock
    let subscriber: Subscriber
    let driver: EmbeddedDriver
    /// The subscription's parts.
    var subscription: Subscription { driver.subscription }
    /// Every state published, with the instant it was delivered.
    private(set) var states: [(at: MonotonicInstant, state: SubscriberState)] = []
    /// Every QoS sample published.
    private(set) var samples: [SubscriberQoS] = []
    /// Every change of the delay in effect, with its instant.
    private(set) var delays: [(at: MonotonicInstant, delay: EffectivePlayoutDelay)] = []
    private var watches: [any Disposable] = []

    /// The session description of a simulated sender: H.264 on 5004, Opus on 5006 when `audio`;
    /// `feedback` adds `a=rtcp-fb` lines to the video section (e.g. `nack pli`).
    static func session(key: SRTPKeyingMaterial?, audio: Bool = false, feedback: [String] = []) -> SessionDescription {
        var media: [MediaDescription] = []
        for (kind, payloadType, name, rate, channels) in [(MediaKind.video, UInt8(96), "H264", UInt32(90_000), UInt16?.none), (.audio, 97, "opus", 48_000, 2)] {
            if kind == .audio, !audio { continue }
            var section = MediaDescription(
                kind: kind == .video ? .video : .audio, port: kind == .video ? 5_004 : 5_006, proto: key == nil ? .rtpAVP : .rtpSAVP,
                payloadTypes: [payloadType], rtpMaps: [RTPMap(payloadType: payloadType, encodingName: name, clockRate: rate, channels: channels)],
                extensionMaps: [ExtensionMap(id: UInt16(captureTimeID), uri: AbsoluteCaptureTime.uri)],
                frameRate: kind == .video ? 30 : nil
            )
            if kind == .video {
                section.attributes += feedback.map { SDPAttribute(name: "rtcp-fb", value: "\(payloadType) \($0)") }
            }
            if let key {
                section.crypto = [CryptoAttribute(suite: SDPCryptoSuite(rawValue: key.suite.name), keys: [.init(keyAndSalt: key.concatenated)])]
            }
            media.append(section)
        }
        return SessionDescription(sessionName: "simulated", connection: ConnectionData(addressType: .ip4, address: "127.0.0.1"), media: media)
    }

    /// A subscription to `session` started at `start` on a manual clock.
    init(session: SessionDescription, options: Subscriber.Options, start: MonotonicInstant = .init(nanoseconds: 10_000_000_000)) throws {
        let clock = ManualClock(start: start)
        self.clock = clock
        var options = options
        options.clock = clock
        subscriber = try Subscriber(sessionDescription: session, options: options)
        // Watching before the start: every value from the first is recorded.
        let states = LockedValue<[(at: MonotonicInstant, state: SubscriberState)]>([])
        watches = [
            subscriber.state.subscribe { state in states.withLock { $0.append((clock.now, state)) } },
        ]
        driver = try EmbeddedDriver(subscriber)
        self.states = states.withLock { $0 }
        watches = [
            subscriber.state.subscribe { [unowned self] in if self.states.last?.state != $0 { self.states.append((clock.now, $0)) } },
            subscriber.qos.subscribe { [unowned self] in samples.append($0) },
            subscriber.playoutDelay.subscribe { [unowned self] in delays.append((clock.now, $0)) },
        ]
    }

    /// Runs until the subscription finishes (its duration, or the input drained): delivers the
    /// datagrams at their arrival instants and advances the state machine and each playout loop
    /// at the instants they ask for; `at` runs extra steps (an override, a stop) at their instants.
    /// Returns the final sample.
    func run(_ datagrams: [SimulatedDatagram], at steps: [(MonotonicInstant, (SimulatedSubscription) -> Void)] = []) -> SubscriberQoS {
        let final = driver.run(
            datagrams.map { EmbeddedDriver.Datagram(arrival: $0.arrival, track: $0.track, bytes: $0.bytes) },
            steps: steps.map { step in (at: step.0, body: { step.1(self) }) }
        )
        watches.removeAll()
        return final
    }

    /// The first instant the state became `state`, as an offset from the start.
    func firstInstant(of state: SubscriberState) -> Duration? {
        states.first { $0.state == state }.map { subscription.startInstant.duration(to: $0.at) }
    }
}
