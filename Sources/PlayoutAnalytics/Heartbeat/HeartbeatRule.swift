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
    /// none, or the id or player name is empty, a time is negative, or a string is longer than
    /// ``heartbeatMaximumMetadataBytes`` (Playout's bound).
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
    /// The guide: `trackVideoPlayerError(errorId)` and `trackApplicationError(errorId)` name the
    /// error by a non-empty id. Broken by an empty or oversized id.
    case invalidErrorId
}
