public import PlayoutAnalytics

/// Feeds a ``MuxCore`` player from a real subscription: the subscriber's story
/// (``SubscriberPlayerStory``) becomes Mux's events — `viewinit`, the video's data (live:
/// `video_source_is_live`) with the customer player data, and `playerready` at the load, `play`,
/// `playing`, `rebufferstart`/`rebufferend`, a warning `error` for a stall, `pause` and `play`/`playing` around a requested delay increase, a data
/// event with the rendition before each `renditionchange`, a `timeupdate` and the dropped-frame
/// count with every QoS sample, and at the end `ended` (or a fatal `error`) and
/// `destroyPlayer` (`viewend`).
///
/// The numbers are the subscriber's, of the QoS sample that reported them (the final sample's at
/// the end):
///
/// | subscriber | Mux |
/// |---|---|
/// | the video's picture size | `video_source_width`, `video_source_height` |
/// | the video's bitrate over the sample's window (``SubscriberQoS/renditionBitrate``) | `video_source_advertised_bitrate` |
/// | the video's bitrate over the sample's window, weighted by the time played in it over the view | `renditionBitrate` on a heartbeat record → `weighted_average_bitrate` |
/// | the video's frame rate over the sample's window (``TrackQoS/framesPerSecond``) | `framesPerSecond` on the same heartbeat record |
/// | video frames lost: dropped less skipped on a delay decrease (``SubscriberQoS/videoFramesLost``) | `view_dropped_frame_count` |
/// | the sample's elapsed time | `player_playhead_time` (`timeupdate`) |
/// | a delay pause: the override's increase, and the first frame presented after it (``Subscriber/delayPauseEnded``) | `pause`, then `play` and `playing` |
///
/// Calls run on the subscriber's observer thread (on the embedded driver, at the instant of the
/// change). Create it before `start()`.
///
/// ```swift
/// let mux = MuxCore(instrument: instrument)
/// let bridge = MuxSubscriberBridge(
///     subscriber: subscriber, mux: mux, player: "main", customerPlayerData: MuxCustomerPlayerData(environmentKey: "env-123"))
/// try subscriber.start()
/// _ = subscriber.waitUntilEnded()          // the player was destroyed: viewend
/// ```
public final class MuxSubscriberBridge: Sendable {
    /// The core the subscription dispatches to.
    public let mux: MuxCore
    /// The player's name.
    public let player: String
    private let feed: SubscriberEventFeed

    /// A bridge from `subscriber` to the player `player` of `mux`; `video` describes the stream
    /// (default: the session description's id and name, live); `customerPlayerData` (with the
    /// environment key, where the Mux guide puts it) goes with the video's data after `viewinit`.
    public init(
        subscriber: Subscriber, mux: MuxCore, player: String = "playout", video: MuxVideoData? = nil, customerPlayerData: MuxCustomerPlayerData? = nil
    ) {
        self.mux = mux
        self.player = player
        subscriber.analyticsBridge(reportsInto: mux.instrument)
        let description = subscriber.sessionDescription
        let video = video ?? MuxVideoData(
            id: description?.origin?.sessionID.isEmpty == false ? description!.origin!.sessionID : "playout",
            title: description?.sessionName ?? "", streamType: "live")
        @Sendable func perform(_ steps: [SubscriberPlayerStory.Step]) {
            for step in steps {
                switch step {
                case .load:
                    mux.dispatch(.viewInit, player: player)
                    mux.dispatch(.data(MuxDataEvent(video: video, sourceIsLive: true, customerPlayerData: customerPlayerData)), player: player)
                    mux.dispatch(.playerReady, player: player)
                case .start: mux.dispatch(.play, player: player)
                case .firstFrame: mux.dispatch(.playing, player: player)
                case .resume:
                    mux.dispatch(.play, player: player)
                    mux.dispatch(.playing, player: player)
                case .bufferStart: mux.dispatch(.rebufferStart, player: player)
                case .bufferEnd: mux.dispatch(.rebufferEnd, player: player)
                case .stallWarning(let reason):
                    mux.dispatch(.error(MuxError(code: 0, message: reason, context: "subscriber", severity: .warning)), player: player)
                case .pause: mux.dispatch(.pause, player: player)
                case .renditionChange(let bitrate, let width, let height):
                    mux.dispatch(.data(MuxDataEvent(sourceWidth: width, sourceHeight: height, sourceBitrate: bitrate)), player: player)
                    mux.dispatch(.renditionChange, player: player)
                case .sample(let sample):
                    mux.dispatch(.timeUpdate(playhead: sample.elapsed), player: player)
                    mux.dispatch(.data(Self.measures(sample)), player: player)
                case .ended(let final):
                    mux.dispatch(.timeUpdate(playhead: final.elapsed), player: player)
                    mux.dispatch(.data(Self.measures(final)), player: player)
                    mux.dispatch(.ended, player: player)
                    mux.destroyPlayer(player)
                case .failed(let reason, let final):
                    mux.dispatch(.data(Self.measures(final)), player: player)
                    mux.dispatch(.error(MuxError(code: 1, message: reason, context: "subscriber", severity: .fatal)), player: player)
                    mux.destroyPlayer(player)
                }
            }
        }
        feed = SubscriberEventFeed(subscriber) { perform($0.steps) }
    }

    /// What a QoS sample tells Mux: the video frames lost so far, and the video's bitrate and
    /// frame rate over the sample's window.
    private static func measures(_ sample: SubscriberQoS) -> MuxDataEvent {
        MuxDataEvent(droppedFrames: sample.videoFramesLost, measuredBitrate: sample.renditionBitrate, framesPerSecond: sample.video?.framesPerSecond)
    }
}
