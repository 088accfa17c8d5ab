@testable import Playout
import PlayoutCodec
import PlayoutCore
import PlayoutJitter
import PlayoutRTP
import PlayoutTelemetry
import PlayoutTesting
import Testing

/// Real media for simulated subscriptions, encoded once per process: PlayoutTesting's
/// ``SimulatedStream`` test pattern (320×240 30 fps H.264, a key frame every second) and tone
/// (Opus in 20 ms frames).
enum SimulatedMedia {
    static let seconds = SimulatedStream.maximumSeconds
    static let frameRate = 30
    static let video: [EncodedFrame] = try! SimulatedStream.videoFrames()
    static let audio: [EncodedFrame] = try! SimulatedStream.audioFrames()
}

/// One datagram on the simulated wire.
typealias SimulatedDatagram = EmbeddedDriver.Datagram

/// A sender on the simulated wire: sends the frames of the test media whose media time falls in
/// `range`, each at `origin` + its media time, arriving `transit` later, with `abs-capture-time`
/// stamped from the simulated wall clock (a ``SimulatedStream`` without impairment).
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
        var configuration = SimulatedStream.Configuration(audio: audioRange != nil, keyingMaterial: key)
        configuration.ssrc = ssrc
        configuration.firstSequenceNumber = firstSequenceNumber
        configuration.firstTimestamp = firstTimestamp
        configuration.transit = transit
        return try SimulatedStream(configuration).datagrams(for: range, audio: audioRange, origin: origin, video: video)
    }
}

/// A whole subscription on a manual clock: a real ``Subscriber`` (tracks, pipelines, playout
/// loops, decoders, state machine, delay controller, feedback decisions) driven by the embedded
/// driver of PlayoutTesting, with datagrams injected at their arrival instants and every part
/// advanced at exactly the instants it asks for. No sockets, no threads, no sleeps: the same
/// input gives the same result, to the nanosecond.
final class SimulatedSubscription: @unchecked Sendable {
    static let captureTimeID = SimulatedStream.captureTimeID
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
        SimulatedStream(.init(audio: audio, keyingMaterial: key, feedback: feedback)).sessionDescription
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
