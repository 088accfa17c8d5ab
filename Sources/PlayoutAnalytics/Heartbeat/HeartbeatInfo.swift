import PlayoutCore

/// What a player tells the heartbeat adapter about itself, as Adobe video heartbeat 1.x's
/// `PlayerDelegate` does: the video, the ad break and ad, the chapter and the QoS, read when a
/// call needs them (``HeartbeatTracker/trackVideoLoad()`` reads ``videoInfo``,
/// ``HeartbeatTracker/trackAdStart()`` the ad break and ad …), and two callbacks.
///
/// Called on the caller's thread (and ``qosInfo`` also on the telemetry engine's thread for
/// each heartbeat), so an implementation reads thread-safe state and returns at once. `Subscriber`
/// implements it (its QoS is the ``qosInfo``).
///
/// ```swift
/// struct Player: HeartbeatPlayerDelegate {
///     var videoInfo: HeartbeatVideoInfo? { HeartbeatVideoInfo(id: "v1", name: "News", length: .seconds(600), playhead: .zero, streamType: .vod, playerName: "app") }
///     var qosInfo: HeartbeatQoSInfo? { HeartbeatQoSInfo(bitrate: 1_500_000, fps: 30, droppedFrames: 2) }
/// }
/// ```
public protocol HeartbeatPlayerDelegate: Sendable {
    /// The video loaded (read by ``HeartbeatTracker/trackVideoLoad()``; nil: none).
    var videoInfo: HeartbeatVideoInfo? { get }
    /// The ad break in progress (read by ``HeartbeatTracker/trackAdStart()``).
    var adBreakInfo: HeartbeatAdBreakInfo? { get }
    /// The ad in progress (read by ``HeartbeatTracker/trackAdStart()``).
    var adInfo: HeartbeatAdInfo? { get }
    /// The chapter in progress (read by ``HeartbeatTracker/trackChapterStart()``).
    var chapterInfo: HeartbeatChapterInfo? { get }
    /// The quality of service now (read by ``HeartbeatTracker/trackBitrateChange()``, at the
    /// end of the video, and for every heartbeat).
    var qosInfo: HeartbeatQoSInfo? { get }
    /// A call broke one of the SDK's rules (``HeartbeatRule``); the session goes on.
    func onError(_ error: HeartbeatErrorInfo)
    /// The unload was handed to every telemetry backend (delivered, or dropped and counted).
    func onVideoUnloaded()
}

extension HeartbeatPlayerDelegate {
    /// No ad break.
    public var adBreakInfo: HeartbeatAdBreakInfo? { nil }
    /// No ad.
    public var adInfo: HeartbeatAdInfo? { nil }
    /// No chapter.
    public var chapterInfo: HeartbeatChapterInfo? { nil }
    /// Nothing to do.
    public func onError(_ error: HeartbeatErrorInfo) {}
    /// Nothing to do.
    public func onVideoUnloaded() {}
}

/// The longest metadata string the adapter accepts: 1,024 UTF-8 bytes (Playout's bound; the
/// guide sets none). A longer one makes its info invalid, so hostile input costs bounded memory.
public let heartbeatMaximumMetadataBytes = 1_024

/// How the video is delivered (Adobe's stream types).
public enum HeartbeatStreamType: String, Sendable, Hashable {
    /// Video on demand.
    case vod
    /// A live stream.
    case live
    /// A linear (scheduled) channel.
    case linear
}

/// The video: Adobe's `VideoInfo`.
public struct HeartbeatVideoInfo: Sendable, Hashable {
    /// The video's id (required, non-empty).
    public var id: String
    /// Its name.
    public var name: String
    /// Its length in seconds. For live and linear streams the guide sets it to -1
    /// (``liveLength``); nil is taken the same way.
    public var length: Duration?
    /// The play head's position in the content.
    public var playhead: Duration
    /// VOD, live or linear.
    public var streamType: HeartbeatStreamType
    /// The player's name (required, non-empty).
    public var playerName: String

    /// Video info with the given values.
    public init(id: String, name: String, length: Duration?, playhead: Duration, streamType: HeartbeatStreamType, playerName: String) {
        self.id = id
        self.name = name
        self.length = length
        self.playhead = playhead
        self.streamType = streamType
        self.playerName = playerName
    }

    /// -1 s: the length the guide gives live and linear streams.
    public static let liveLength: Duration = .seconds(-1)

    /// Why the info is unusable, or nil.
    var problem: String? {
        if id.isEmpty { return "videoInfo.id is empty" }
        if playerName.isEmpty { return "videoInfo.playerName is empty" }
        if length == Self.liveLength, streamType == .vod { return "videoInfo.length is -1, which is for live and linear streams: give the VOD asset's duration" }
        if let length, length < .zero, length != Self.liveLength { return "videoInfo.length is negative (\(length)); only live and linear streams use -1" }
        if playhead < .zero { return "videoInfo.playhead is negative (\(playhead))" }
        return oversized(["id": id, "name": name, "playerName": playerName], in: "videoInfo")
    }
}

/// The ad break: Adobe's `AdBreakInfo`.
public struct HeartbeatAdBreakInfo: Sendable, Hashable {
    /// The break's name (optional: may be empty).
    public var name: String
    /// Its position in the content, from 1 (pre-roll).
    public var position: Int
    /// Where in the content it starts (optional: nil is the main content's playhead at
    /// ``HeartbeatTracker/trackAdStart()``, as the guide defaults it).
    public var startTime: Duration?
    /// The ad player's name.
    public var playerName: String

    /// Ad-break info with the given values.
    public init(name: String = "", position: Int, startTime: Duration? = nil, playerName: String) {
        self.name = name
        self.position = position
        self.startTime = startTime
        self.playerName = playerName
    }

    var problem: String? {
        if position < 1 { return "adBreakInfo.position is \(position); positions start at 1" }
        if let startTime, startTime < .zero { return "adBreakInfo.startTime is negative (\(startTime))" }
        if playerName.isEmpty { return "adBreakInfo.playerName is empty" }
        return oversized(["name": name, "playerName": playerName], in: "adBreakInfo")
    }
}

/// The ad: Adobe's `AdInfo`.
public struct HeartbeatAdInfo: Sendable, Hashable {
    /// The ad's id (required, non-empty).
    public var id: String
    /// Its name.
    public var name: String
    /// Its length.
    public var length: Duration
    /// Its position in the break, from 1.
    public var position: Int
    /// The CPM value associated with the ad (optional).
    public var cpm: String?

    /// Ad info with the given values.
    public init(id: String, name: String = "", length: Duration, position: Int, cpm: String? = nil) {
        self.id = id
        self.name = name
        self.length = length
        self.position = position
        self.cpm = cpm
    }

    var problem: String? {
        if id.isEmpty { return "adInfo.id is empty" }
        if position < 1 { return "adInfo.position is \(position); positions start at 1" }
        if length < .zero { return "adInfo.length is negative (\(length))" }
        return oversized(["id": id, "name": name, "cpm": cpm ?? ""], in: "adInfo")
    }
}

/// The chapter: Adobe's `ChapterInfo`.
public struct HeartbeatChapterInfo: Sendable, Hashable {
    /// The chapter's name.
    public var name: String
    /// Its length.
    public var length: Duration
    /// Its position, from 1.
    public var position: Int
    /// Where in the content it starts.
    public var startTime: Duration

    /// Chapter info with the given values.
    public init(name: String, length: Duration, position: Int, startTime: Duration) {
        self.name = name
        self.length = length
        self.position = position
        self.startTime = startTime
    }

    var problem: String? {
        if position < 1 { return "chapterInfo.position is \(position); positions start at 1" }
        if length < .zero { return "chapterInfo.length is negative (\(length))" }
        return oversized(["name": name], in: "chapterInfo")
    }
}

/// The quality of service: Adobe's `QoSInfo` (bitrate in bps, fps — truncated to its integer
/// part when sent, as the guide says —, cumulated dropped frames, startup time), plus the
/// picture size for a `renditionchange`.
public struct HeartbeatQoSInfo: Sendable, Hashable {
    /// Bits per second.
    public var bitrate: Double
    /// Frames per second shown.
    public var fps: Double
    /// Frames dropped so far.
    public var droppedFrames: Int
    /// From the request to play to the first frame (nil: the adapter's own measurement, from
    /// ``HeartbeatTracker/trackSessionStart()`` to the first ``HeartbeatTracker/trackPlay()``).
    public var startupTime: Duration?
    /// The picture's width (0: unknown).
    public var width: Int
    /// The picture's height (0: unknown).
    public var height: Int

    /// QoS info with the given values.
    public init(bitrate: Double, fps: Double, droppedFrames: Int, startupTime: Duration? = nil, width: Int = 0, height: Int = 0) {
        self.bitrate = bitrate
        self.fps = fps
        self.droppedFrames = droppedFrames
        self.startupTime = startupTime
        self.width = width
        self.height = height
    }

    var problem: String? {
        if !bitrate.isFinite || bitrate < 0 { return "qosInfo.bitrate is \(bitrate); it must be finite and ≥ 0" }
        if !fps.isFinite || fps < 0 { return "qosInfo.fps is \(fps); it must be finite and ≥ 0" }
        if droppedFrames < 0 { return "qosInfo.droppedFrames is \(droppedFrames); it must be ≥ 0" }
        if let startupTime, startupTime < .zero { return "qosInfo.startupTime is negative (\(startupTime))" }
        if width < 0 || height < 0 { return "qosInfo's picture size is \(width)×\(height)" }
        return nil
    }
}

/// What ``HeartbeatPlayerDelegate/onError(_:)`` receives: the broken rule and what was wrong.
public struct HeartbeatErrorInfo: Sendable, Hashable {
    /// The rule broken.
    public var rule: HeartbeatRule
    /// The call that broke it.
    public var call: String
    /// What was wrong (the guide's `ErrorInfo.message`).
    public var message: String
    /// The guide's `ErrorInfo.details`: the rule and the section of the guide that states it.
    public var details: String { "\(rule.rawValue) (guide: \(rule.guideSection))" }
}

/// Names the first of `strings` longer than ``heartbeatMaximumMetadataBytes``.
private func oversized(_ strings: KeyValuePairs<String, String>, in info: String) -> String? {
    for (key, value) in strings where value.utf8.count > heartbeatMaximumMetadataBytes {
        return "\(info).\(key) is \(value.utf8.count) bytes; at most \(heartbeatMaximumMetadataBytes)"
    }
    return nil
}
