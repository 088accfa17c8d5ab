public import PlayoutAnalytics
import PlayoutCore
import PlayoutTelemetry

/// Drives an OpenAVT tracker from a real subscription, as a player's OpenAVT tracker would: built
/// on ``SubscriberEventFeed`` (the subscriber's one ``SubscriberTelemetryTranslator``).
///
/// | subscription (translator event) | OpenAVT action |
/// |---|---|
/// | `playerready` | `PlayerReady` |
/// | `play` (connecting) | `MediaRequest`, `StreamLoad` |
/// | `playing` | `Start` |
/// | `renditionchange` | `QualityChangeUp` / `QualityChangeDown` (getters `bitrate`, `resolutionWidth`, `resolutionHeight`) |
/// | `playoutdelaychange` | `PlayoutDelayChange` (a user action; getter `playoutDelay`, ms) |
/// | `rebufferstart` / `rebufferend` | `BufferBegin` / `BufferFinish` |
/// | `ended` | `End` |
/// | `error` | `Error` with its context |
///
/// Pings (the engine's heartbeats, and a last `Ping` with the final sample when the subscription
/// ends — the bridge finishes by itself, before ``Subscriber/waitUntilEnded()`` returns) carry the
/// subscriber's QoS, so the QoS numbers in the tracker's records are the subscriber's own.
///
/// ```swift
/// let tracker = instrument.addTracker(name: "subscriber")
/// let bridge = OpenAVTSubscriberBridge(subscriber: subscriber, instrument: instrument, trackerId: tracker)
/// instrument.ready()
/// try subscriber.start()
/// _ = subscriber.waitUntilEnded()          // the bridge has emitted End and the last Ping
/// ```
public final class OpenAVTSubscriberBridge: Sendable {
    /// The user action a playout-delay change becomes.
    public static let playoutDelayChange = OpenAVTAction(name: "PlayoutDelayChange")

    /// The instrument driven.
    public let instrument: OpenAVTInstrument
    /// The tracker driven.
    public let trackerId: Int
    private let player = LockedValue(Player())
    private let feed: LockedValue<SubscriberEventFeed?> = LockedValue(nil)

    /// What the getters read: the latest rendition and delay, and the final sample.
    private struct Player {
        var rendition: (bitrate: Int64, width: Int32, height: Int32)?
        var delay: Duration?
        var final: SubscriberQoS?
    }

    /// Watches `subscriber` (before it starts) and drives tracker `trackerId` of `instrument`.
    public init(subscriber: Subscriber, instrument: OpenAVTInstrument, trackerId: Int) {
        self.instrument = instrument
        self.trackerId = trackerId
        subscriber.analyticsBridge(reportsInto: instrument.engine)
        // The getters first: the feed may report the current delay at once.
        let changesQuality: (OpenAVTEvent, OpenAVTAttribute) -> Bool = { event, _ in
            event.getAction() == .qualityChangeUp || event.getAction() == .qualityChangeDown
        }
        instrument.registerGetter(attribute: .bitrate, getter: { [player] in player.withLock { $0.rendition?.bitrate } }, trackerId: trackerId, filter: changesQuality)
        instrument.registerGetter(
            attribute: .resolutionWidth, getter: { [player] in player.withLock { $0.rendition.map { Int($0.width) } } }, trackerId: trackerId, filter: changesQuality)
        instrument.registerGetter(
            attribute: .resolutionHeight, getter: { [player] in player.withLock { $0.rendition.map { Int($0.height) } } }, trackerId: trackerId, filter: changesQuality)
        instrument.registerGetter(attribute: "playoutDelay", getter: { [player] in player.withLock { $0.delay.map { Int($0.nanoseconds / 1_000_000) } } }, trackerId: trackerId) { event, _ in
            event.getAction() == Self.playoutDelayChange
        }
        let feed = SubscriberEventFeed(subscriber) { [weak self] update in
            for event in update.events { self?.handle(event) }
            if let final = update.final { self?.finish(final: final) }
        }
        self.feed.withLock { $0 = feed }
        instrument.setPingProvider(trackerId: trackerId) { [player, feed] in
            player.withLock { $0.final }.map(SubscriberTelemetryTranslator.heartbeatFields) ?? feed.heartbeatFields
        }
    }

    /// The subscription ended with `final`: a last `Ping` with the final QoS sample.
    private func finish(final: SubscriberQoS) {
        player.withLock { $0.final = final }
        instrument.emit(action: .ping, trackerId: trackerId)
    }

    private func handle(_ event: TelemetryEvent) {
        func emit(_ action: OpenAVTAction) { instrument.emit(action: action, trackerId: trackerId) }
        switch event {
        case .playerReady: emit(.playerReady)
        case .play:
            emit(.mediaRequest)
            emit(.streamLoad)
        case .playing: emit(.start)
        case .renditionChange(let bitrate, let width, let height):
            let previous = player.withLock { player in
                defer { player.rendition = (bitrate, width, height) }
                return player.rendition
            }
            emit(Int64(width) * Int64(height) >= Int64(previous?.width ?? 0) * Int64(previous?.height ?? 0) ? .qualityChangeUp : .qualityChangeDown)
        case .playoutDelayChange(let delay, _):
            player.withLock { $0.delay = delay }
            emit(Self.playoutDelayChange)
        case .rebufferStart: emit(.bufferBegin)
        case .rebufferEnd: emit(.bufferFinish)
        case .ended: emit(.end)
        case .error(let error): instrument.emit(error: error, trackerId: trackerId)
        default: break
        }
    }
}
