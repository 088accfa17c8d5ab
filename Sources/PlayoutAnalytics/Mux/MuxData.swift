public import PlayoutTelemetry
import PlayoutCore

/// The longest metadata string the Mux adapter accepts: 1,024 UTF-8 bytes (Playout's bound; the
/// guide sets none), and the most players one ``MuxCore`` tracks at once: 1,024.
public enum MuxLimits {
    /// Longest string, in UTF-8 bytes.
    public static let maximumMetadataBytes = 1_024
    /// Most players at once.
    public static let maximumPlayers = 1_024
}

/// The data Mux's core SDK holds for every player: the environment key and the viewer (Mux's
/// `env_key` and `viewer_*` fields).
public struct MuxGlobalData: Sendable, Hashable {
    /// The environment key (required before any playback event).
    public var environmentKey: String
    /// The viewer's user id.
    public var viewerUserId: String
    /// The device's name (`viewer_device_name`).
    public var deviceName: String
    /// The device's category (`viewer_device_category`: desktop, tv, phone …).
    public var deviceCategory: String
    /// The operating system (`viewer_os_family`).
    public var osFamily: String
    /// Its version (`viewer_os_version`).
    public var osVersion: String

    /// Global data with the given values.
    public init(
        environmentKey: String, viewerUserId: String = "", deviceName: String = "", deviceCategory: String = "", osFamily: String = "",
        osVersion: String = ""
    ) {
        self.environmentKey = environmentKey
        self.viewerUserId = viewerUserId
        self.deviceName = deviceName
        self.deviceCategory = deviceCategory
        self.osFamily = osFamily
        self.osVersion = osVersion
    }

    /// The non-empty values by Mux's field names.
    var fields: [TelemetryField] {
        [
            ("env_key", environmentKey), ("viewer_user_id", viewerUserId), ("viewer_device_name", deviceName),
            ("viewer_device_category", deviceCategory), ("viewer_os_family", osFamily), ("viewer_os_version", osVersion),
        ].filter { !$0.1.isEmpty }.map { TelemetryField($0.0, .string($0.1)) }
    }
}

/// The video being played (Mux's `video_*` fields).
public struct MuxVideoData: Sendable, Hashable {
    /// `video_id`.
    public var id: String
    /// `video_title`.
    public var title: String
    /// `video_duration` (nil: live or unknown).
    public var duration: Duration?
    /// `video_stream_type` (`live`, `on-demand`).
    public var streamType: String

    /// Video data with the given values.
    public init(id: String, title: String = "", duration: Duration? = nil, streamType: String = "live") {
        self.id = id
        self.title = title
        self.duration = duration
        self.streamType = streamType
    }

    var fields: [TelemetryField] {
        var fields = [TelemetryField("video_id", .string(id)), TelemetryField("video_title", .string(title)),
                      TelemetryField("video_stream_type", .string(streamType))]
        if let duration { fields.append(TelemetryField("video_duration", .double(duration.seconds))) }
        return fields
    }
}

/// A data event: new video data, or the player's rendition and counters; only the values set
/// change.
public struct MuxDataEvent: Sendable, Hashable {
    /// A new video (the video-change sequence dispatches one between `viewend` and `viewinit`).
    public var video: MuxVideoData?
    /// The rendition's width (`video_source_width`).
    public var sourceWidth: Int?
    /// The rendition's height (`video_source_height`).
    public var sourceHeight: Int?
    /// The rendition's bitrate, bits/s (`video_source_advertised_bitrate`).
    public var sourceBitrate: Double?
    /// Frames dropped so far (`view_dropped_frame_count`).
    public var droppedFrames: Int?

    /// A data event with the given values.
    public init(video: MuxVideoData? = nil, sourceWidth: Int? = nil, sourceHeight: Int? = nil, sourceBitrate: Double? = nil, droppedFrames: Int? = nil) {
        self.video = video
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
        self.sourceBitrate = sourceBitrate
        self.droppedFrames = droppedFrames
    }

    /// Whether it carries a whole rendition (width, height and bitrate).
    var rendition: (bitrate: Double, width: Int, height: Int)? {
        guard let sourceBitrate, let sourceWidth, let sourceHeight else { return nil }
        return (sourceBitrate, sourceWidth, sourceHeight)
    }

    /// Why the data is unusable, or nil.
    var problem: String? {
        if let video {
            if video.id.isEmpty { return "video.id is empty" }
            if let duration = video.duration, duration < .zero { return "video.duration is negative (\(duration))" }
            for (key, value) in [("id", video.id), ("title", video.title), ("streamType", video.streamType)]
            where value.utf8.count > MuxLimits.maximumMetadataBytes {
                return "video.\(key) is \(value.utf8.count) bytes; at most \(MuxLimits.maximumMetadataBytes)"
            }
        }
        if let sourceWidth, sourceWidth < 0 { return "sourceWidth is \(sourceWidth)" }
        if let sourceHeight, sourceHeight < 0 { return "sourceHeight is \(sourceHeight)" }
        if let sourceBitrate, !sourceBitrate.isFinite || sourceBitrate < 0 { return "sourceBitrate is \(sourceBitrate); it must be finite and ≥ 0" }
        if let droppedFrames, droppedFrames < 0 { return "droppedFrames is \(droppedFrames)" }
        return nil
    }

    /// The attributes it sets.
    var attributes: [TelemetryEvent] {
        var events = video?.fields.map { TelemetryEvent.attribute($0.name, $0.value) } ?? []
        if let sourceWidth { events.append(.attribute("video_source_width", .int(Int64(sourceWidth)))) }
        if let sourceHeight { events.append(.attribute("video_source_height", .int(Int64(sourceHeight)))) }
        if let sourceBitrate { events.append(.attribute("video_source_advertised_bitrate", .double(sourceBitrate))) }
        if let droppedFrames { events.append(.attribute("view_dropped_frame_count", .int(Int64(droppedFrames)))) }
        return events
    }
}

/// An error as Mux takes it: code, message, context, severity and the business-exception flag.
public struct MuxError: Sendable, Hashable {
    /// `player_error_code`.
    public var code: Int
    /// `player_error_message` (required, non-empty).
    public var message: String
    /// `player_error_context`.
    public var context: String
    /// Fatal (playback failed) or warning.
    public var severity: TelemetryError.Severity
    /// An expected business outcome (no entitlement, geo-block), not a technical fault.
    public var businessException: Bool

    /// An error with the given values (default: fatal, not a business exception).
    public init(code: Int, message: String, context: String = "", severity: TelemetryError.Severity = .fatal, businessException: Bool = false) {
        self.code = code
        self.message = message
        self.context = context
        self.severity = severity
        self.businessException = businessException
    }
}

/// A playback event as Mux's core SDK takes it.
public enum MuxEvent: Sendable, Hashable {
    case viewInit, playerReady, play, playing, pause, seeking, seeked, rebufferStart, rebufferEnd, renditionChange, ended, viewEnd
    /// The play head moved (`player_playhead_time` on later records).
    case timeUpdate(playhead: Duration)
    /// An error.
    case error(MuxError)
    /// New data (video, rendition, counters).
    case data(MuxDataEvent)

    /// Mux's event name (`"viewinit"`, `"timeupdate"`, `"data"` …).
    public var name: String {
        switch self {
        case .viewInit: "viewinit"
        case .playerReady: "playerready"
        case .play: "play"
        case .playing: "playing"
        case .pause: "pause"
        case .seeking: "seeking"
        case .seeked: "seeked"
        case .rebufferStart: "rebufferstart"
        case .rebufferEnd: "rebufferend"
        case .renditionChange: "renditionchange"
        case .ended: "ended"
        case .viewEnd: "viewend"
        case .timeUpdate: "timeupdate"
        case .error: "error"
        case .data: "data"
        }
    }
}

/// The rules of Mux Data's custom integrations (the "Build a custom integration" overview, the
/// Objective-C/Swift core SDK guides and the "Mux playback events" list) that ``MuxCore`` checks
/// on every dispatch. A broken rule is recorded in conformance mode and the event is not
/// forwarded; the session goes on.
public enum MuxRule: String, Sendable, Hashable, CaseIterable {
    /// The guides: the environment key (`env_key`) is required, and the global data carrying it
    /// is dispatched before the players' events. Broken by a playback event with no global data
    /// holding a non-empty key.
    case missingEnvironmentKey
    /// The playback events guide: `viewinit` signals that a new view begins and must come before
    /// any other playback event of the view. Broken by a playback event on a player with no open
    /// view (never begun, or ended by `viewend`).
    case viewInitFirst
    /// The guides' video change: a new video in the same player is `viewend`, then a data event
    /// with the new video's data, then `viewinit`. Broken by a `viewinit` while a view is open,
    /// or after a `viewend` with no new video data in between.
    case videoChangeWithoutData
    /// The playback events guide: `renditionchange` is sent after the player's data is updated
    /// with the new rendition (source width, height and bitrate). Broken by a `renditionchange`
    /// with no data event carrying a whole rendition since the last one.
    case renditionChangeWithoutData
    /// The guides: `rebufferend` ends the rebuffering that `rebufferstart` began, `seeked` the
    /// seek that `seeking` began. Broken by an end with no start open.
    case unmatchedEnd
    /// The guides: an error carries its code and a message (with severity fatal or warning and
    /// the business-exception flag). Broken by an empty or oversized message.
    case invalidError
    /// Metadata is strings and numbers; Playout bounds strings to
    /// ``MuxLimits/maximumMetadataBytes``, players to ``MuxLimits/maximumPlayers``, and numbers to
    /// finite, non-negative values. Broken by data or a player name outside those bounds.
    case invalidMetadata
}
