/// The rules of Adobe video heartbeat 1.x (the "VideoHeartbeat SDK 1.x" integration guides: its
/// `VideoPlayerPlugin` tracking calls and `PlayerDelegate`) that ``HeartbeatTracker`` checks on
/// every call. A broken rule is reported to ``HeartbeatPlayerDelegate/onError(_:)`` and, in
/// conformance mode, recorded as a ``ConformanceFinding``; the call is then not forwarded, and
/// the session goes on.
public enum HeartbeatRule: String, Sendable, Hashable, CaseIterable {
    /// The guide: `trackVideoLoad()` starts the tracking of a video and comes before every other
    /// tracking call; after `trackVideoUnload()` the next video begins with `trackVideoLoad()`
    /// again. Broken by any other call while no video is loaded (an unload without a load too).
    case callBeforeVideoLoad
    /// The guide: a loaded video is unloaded with `trackVideoUnload()` before the next
    /// `trackVideoLoad()`. Broken by a load while a video is loaded (after a player error the
    /// load is the way out of the error state, so it is allowed there).
    case loadWhileLoaded
    /// The guide: on `trackVideoLoad()` the SDK asks the player delegate's `getVideoInfo()` for
    /// the video's id, name, length, playhead, stream type and player name. Broken when there is
    /// none, or the id or player name is empty, a time is negative (a length of -1 is the
    /// guide's for live and linear streams), or a string is longer than
    /// ``heartbeatMaximumMetadataBytes`` (Playout's bound). The tracker then enters the error
    /// state, as the guide's library does, until the next `trackVideoLoad()`.
    case invalidVideoInfo
    /// The guide: on `trackAdStart()` the SDK asks `getAdBreakInfo()` and `getAdInfo()` (ad id,
    /// length, position from 1). Broken when either is missing or invalid.
    case invalidAdInfo
    /// The guide: on `trackChapterStart()` the SDK asks `getChapterInfo()` (name, length,
    /// position from 1, start time). Broken when it is missing or invalid.
    case invalidChapterInfo
    /// The guide: on `trackBitrateChange()` the SDK reads the new values through `getQoSInfo()`
    /// (bitrate, fps, dropped frames, startup time). Broken when it is missing or not finite
    /// and ≥ 0.
    case invalidQoSInfo
    /// The guide pairs each start with its completion: `trackSeekStart`/`trackSeekComplete`,
    /// `trackBufferStart`/`trackBufferComplete`, `trackAdStart`/`trackAdComplete`,
    /// `trackChapterStart`/`trackChapterComplete`. Broken by a completion with no start open.
    case completeWithoutStart
    /// The guide: after `trackVideoPlayerError()` the tracker stops tracking the video; calls are
    /// ignored until the next `trackVideoLoad()` (`trackVideoUnload()` is still taken, so the view
    /// can end). Broken by any other call in that state.
    case callInErrorState
    /// The guide: `trackComplete()` marks the end of the content; what follows is
    /// `trackVideoUnload()`. Broken by any other tracking call after it.
    case callAfterComplete
    /// The guide's mandatory configuration parameters (`trackingServer`, `jobId`, `publisher`)
    /// are non-empty in what ``HeartbeatTracker/configure(_:)`` is given. Broken by an empty one;
    /// `trackVideoLoad()` then enters the error state until `configure` gets a valid one.
    case invalidConfiguration
    /// The guide: after `destroy()` the instance is torn down. Broken by any tracking call after
    /// it (ignored).
    case callAfterDestroy
    /// The guide: no other track call signals the move between content and an ad ("you should
    /// not signal the pause of the main video (via trackPause) when an ad starts"). Broken by
    /// `trackPause()` straight after `trackAdStart()` (ignored).
    case adTransitionCall
    /// The guide: `trackVideoPlayerError(errorId)` and `trackApplicationError(errorId)` name the
    /// error by a non-empty id. Broken by an empty or oversized id.
    case invalidErrorId
}

extension HeartbeatRule {
    /// The section of the guide (video heartbeat SDK 1.4 for iOS) that states the rule; every
    /// finding's detail ends with it.
    public var guideSection: String {
        switch self {
        case .callBeforeVideoLoad, .loadWhileLoaded, .callAfterComplete: "Handle Player Events: Playback Tracking"
        case .invalidVideoInfo: "Implement the Player Delegate: 1. Gather video content data"
        case .invalidAdInfo: "Implement the Player Delegate: 2. Gather ad break data, 3. Gather ad content data"
        case .invalidChapterInfo: "Implement the Player Delegate: 4. Gather chapter data"
        case .invalidQoSInfo: "Implement the Player Delegate: 5. Gather QoS data"
        case .completeWithoutStart: "Handle Player Events (track...Start and track...Complete pairs)"
        case .callInErrorState: "Implement the Player Delegate: 7. Monitor the Error State"
        case .invalidErrorId: "Handle Player Events: Error Tracking"
        case .invalidConfiguration: "Instantiation and configuration: Mandatory configuration parameters"
        case .callAfterDestroy: "Destroy operations for the VideoHeartbeat library"
        case .adTransitionCall: "Handle Player Events: Ad Tracking"
        }
    }
}
