import Logging
public import PlayoutAnalytics
import PlayoutCore
import PlayoutTelemetry

/// A subscriber is the heartbeat's player: its QoS is the QoS info — the numbers of its latest
/// sample — and its session description names the video (a live stream).
///
/// | subscriber | heartbeat QoS info |
/// |---|---|
/// | the video's bitrate over the sample's window (``SubscriberQoS/renditionBitrate``) | `bitrate` |
/// | the video's frame rate over the sample's window (``TrackQoS/framesPerSecond``) | `fps` |
/// | video frames lost: dropped less skipped on a delay decrease (``SubscriberQoS/videoFramesLost``) | `droppedFrames` |
/// | the video's picture size | `width`, `height` |
extension Subscriber: HeartbeatPlayerDelegate {
    /// The session's id (the SDP origin's session id, else `"playout"`), its name (`s=`), live
    /// (length -1, as the guide sets it),
    /// the play head at the time since the start, player `"Playout"`.
    public var videoInfo: HeartbeatVideoInfo? {
        let description = sessionDescription
        let id = description?.origin?.sessionID ?? ""
        return HeartbeatVideoInfo(
            id: id.isEmpty ? "playout" : id, name: description?.sessionName ?? "", length: HeartbeatVideoInfo.liveLength, playhead: qos.value.elapsed,
            streamType: .live, playerName: "Playout")
    }

    /// The latest QoS sample's numbers (startup time: the adapter's measurement).
    public var qosInfo: HeartbeatQoSInfo? {
        let sample = qos.value
        return HeartbeatQoSInfo(
            bitrate: sample.renditionBitrate, fps: sample.video?.framesPerSecond ?? 0, droppedFrames: sample.videoFramesLost,
            width: sample.video?.frameWidth ?? 0, height: sample.video?.frameHeight ?? 0)
    }
}

/// Feeds a ``HeartbeatTracker`` from a real subscription: the subscriber is the delegate, and its
/// story (``SubscriberPlayerStory``, through the one ``SubscriberEventFeed``) becomes the tracking calls — load, session start, play,
/// buffer start/complete, an application error for a stall, pause/play around a requested delay
/// increase, bitrate changes, and at the end complete (or a player error) and unload.
///
/// It watches the subscriber's observables, so the calls run on the subscriber's observer
/// observer thread, never on a media thread. Create it before `start()`.
///
/// ```swift
/// let bridge = HeartbeatSubscriberBridge(subscriber: subscriber, instrument: instrument)
/// try subscriber.start()
/// _ = subscriber.waitUntilEnded()          // the bridge has called trackComplete and trackVideoUnload
/// ```
public final class HeartbeatSubscriberBridge: Sendable {
    /// The adapter the subscription drives.
    public let heartbeat: HeartbeatTracker
    private let feed: SubscriberEventFeed

    /// A bridge from `subscriber` to a new ``HeartbeatTracker`` on `instrument`; `onVideoUnloaded`
    /// runs once the unload has reached every backend.
    public init(
        subscriber: Subscriber, instrument: TelemetryInstrument, configuration: HeartbeatTracker.Configuration = .init(),
        options: AnalyticsAdapterOptions<HeartbeatRule> = .init(), onVideoUnloaded: @escaping @Sendable () -> Void = {}
    ) {
        subscriber.analyticsBridge(reportsInto: instrument)
        let heartbeat = HeartbeatTracker(instrument: instrument, delegate: subscriber, configuration: configuration, options: options)
        self.heartbeat = heartbeat
        @Sendable func perform(_ steps: [SubscriberPlayerStory.Step]) {
            for step in steps {
                switch step {
                case .load: heartbeat.trackVideoLoad()
                case .start: heartbeat.trackSessionStart()
                case .firstFrame, .resume: heartbeat.trackPlay()
                case .bufferStart: heartbeat.trackBufferStart()
                case .bufferEnd: heartbeat.trackBufferComplete()
                case .stallWarning: heartbeat.trackApplicationError("stalled")
                case .pause: heartbeat.trackPause()
                case .renditionChange: heartbeat.trackBitrateChange()
                case .sample: break  // heartbeats read the QoS
                case .ended:
                    heartbeat.trackComplete()
                    heartbeat.trackVideoUnload(completion: onVideoUnloaded)
                case .failed(let reason, _):
                    heartbeat.trackVideoPlayerError(reason)
                    heartbeat.trackVideoUnload(completion: onVideoUnloaded)
                }
            }
        }
        feed = SubscriberEventFeed(subscriber) { perform($0.steps) }
    }
}
