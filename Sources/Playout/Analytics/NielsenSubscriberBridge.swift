public import PlayoutAnalytics
import PlayoutCore
import PlayoutTelemetry

/// Drives a ``NielsenAppSDK`` from a real subscription, as a player integrating the SDK would:
/// built on ``SubscriberEventFeed`` (the subscriber's one ``SubscriberTelemetryTranslator``).
///
/// | subscription (translator event) | Nielsen calls |
/// |---|---|
/// | `play` (connecting) | `play(channelInfo)`, `loadMetadata(metadata)` |
/// | `playing` | playheads once a second (``NielsenPlayheadTicker``) |
/// | `rebufferstart` (buffering, stalled) | playheads withheld; `stop` after ``Options/stopAfterBuffering`` |
/// | `rebufferend` | after a `stop`: `loadMetadata(metadata)`; playheads again |
/// | `ended` | `end()` |
/// | `error` (fatal) | `stop()` |
///
/// The instance's heartbeats carry the subscriber's QoS (``SubscriberEventFeed/heartbeatFields``),
/// and when the subscription ends the bridge finishes by itself: the last events, then a last
/// heartbeat with the final QoS sample, before ``Subscriber/waitUntilEnded()`` returns — so the
/// QoS numbers in its view are the subscriber's own.
///
/// ```swift
/// let bridge = NielsenSubscriberBridge(subscriber: subscriber, sdk: nielsen, ticker: ticker,
///                                      options: .init(channelInfo: ["channelName": "news"], metadata: content))
/// try subscriber.start()
/// _ = subscriber.waitUntilEnded()          // the bridge has ended the session and reported the final QoS
/// ```
public final class NielsenSubscriberBridge: Sendable {
    /// What the player passes to the SDK.
    public struct Options: Sendable {
        /// `play`'s channel info.
        public var channelInfo: [String: NielsenValue]
        /// The content metadata (`loadMetadata`).
        public var metadata: [String: NielsenValue]
        /// Live (the default: playheads are the Unix time) or on demand (the position).
        public var mode: NielsenPlayheadSchedule.Mode
        /// How long buffering may last before `stop` (default 30 s, the guide's; `.zero` treats
        /// a stall as an interruption: `stop` at once).
        public var stopAfterBuffering: Duration

        /// Options with the guide's defaults.
        public init(
            channelInfo: [String: NielsenValue], metadata: [String: NielsenValue], mode: NielsenPlayheadSchedule.Mode = .live,
            stopAfterBuffering: Duration = NielsenStateMachine.longestBuffering
        ) {
            self.channelInfo = channelInfo
            self.metadata = metadata
            self.mode = mode
            self.stopAfterBuffering = stopAfterBuffering
        }
    }

    /// The instance driven.
    public let sdk: NielsenAppSDK
    private let ticker: NielsenPlayheadTicker
    private let id: Int
    private let options: Options
    private let feed: LockedValue<SubscriberEventFeed?> = LockedValue(nil)  // set once, after `self` exists

    /// Watches `subscriber` (before it starts) and drives `sdk`, its playheads on `ticker`.
    public init(subscriber: Subscriber, sdk: NielsenAppSDK, ticker: NielsenPlayheadTicker, options: Options) {
        self.sdk = sdk
        self.ticker = ticker
        subscriber.analyticsBridge(reportsInto: sdk.instrument)
        self.options = options
        id = ticker.add(sdk, mode: options.mode)
        let feed = SubscriberEventFeed(subscriber) { [weak self] update in
            for event in update.events { self?.handle(event) }
            if let final = update.final { self?.finish(final: final) }
        }
        self.feed.withLock { $0 = feed }
        sdk.setQoSProvider { [feed] in feed.heartbeatFields }
    }

    /// The subscription ended with `final`: no more playheads, a last heartbeat with the final
    /// QoS sample.
    private func finish(final: SubscriberQoS) {
        ticker.remove(id)
        sdk.reportQoS(SubscriberTelemetryTranslator.heartbeatFields(final))
    }

    private func handle(_ event: TelemetryEvent) {
        switch event {
        case .play:
            sdk.play(options.channelInfo)
            sdk.loadMetadata(options.metadata)
        case .playing:
            ticker.play(id)
        case .rebufferStart:
            if options.stopAfterBuffering <= .zero {
                ticker.hold(id)
                sdk.stop()
            } else {
                ticker.hold(id, stopAfter: options.stopAfterBuffering)
            }
        case .rebufferEnd:
            if sdk.state == .idle { sdk.loadMetadata(options.metadata) }  // stopped: resume the session
            ticker.play(id)
        case .ended:
            ticker.remove(id)
            sdk.end()
        case .error(let error) where error.severity == .fatal:
            ticker.remove(id)
            sdk.stop()
        default:
            break
        }
    }
}
