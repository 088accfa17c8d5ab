public import PlayoutTelemetry
import PlayoutCore

/// The longest metadata string the Mux adapter accepts: 1,024 UTF-8 bytes (Playout's bound; the
/// guide sets none), and the most players one ``MuxCore`` tracks at once: 1,024.
public enum MuxLimits {
    /// Longest string, in UTF-8 bytes.
    public static let maximumMetadataBytes = 1_024
    /// Most players at once.
    public static let maximumPlayers = 1_024

    /// Why one of `fields` is too long (by its Mux name), or nil.
    static func oversized(_ fields: [TelemetryField]) -> String? {
        for field in fields {
            if case .string(let text) = field.value, text.utf8.count > maximumMetadataBytes {
                return "\(field.name) is \(text.utf8.count) bytes; at most \(maximumMetadataBytes)"
            }
        }
        return nil
    }
}

/// The data Mux's core SDK holds for every player, dispatched with
/// ``MuxCore/dispatchGlobalDataEvent(_:)`` (the guide's "Initialize the SDK": a
/// `MUXSDKDataEvent` with `MUXSDKEnvironmentData` and `MUXSDKViewerData`): the device's
/// `muxViewerId` and the viewer data (Mux's `mux_viewer_id` and `viewer_*` fields).
///
/// The guide puts the environment key in the customer player data
/// (``MuxCustomerPlayerData/environmentKey``); ``environmentKey`` here is Playout's older place for
/// it, still accepted, that every player inherits.
public struct MuxGlobalData: Sendable, Hashable {
    /// An environment key every player inherits (`env_key`; empty: none — give it in each
    /// player's ``MuxCustomerPlayerData`` as the guide does).
    public var environmentKey: String
    /// The viewer's user id (`viewer_user_id`; the guide sets it in the customer data).
    public var viewerUserId: String
    /// `MUXSDKEnvironmentData.muxViewerId` (`mux_viewer_id`): a device-specific id, the Viewer ID
    /// when no user id is given.
    public var muxViewerId: String
    /// The device's name (`viewer_device_name`).
    public var deviceName: String
    /// The device's category (`viewer_device_category`: desktop, tv, phone …).
    public var deviceCategory: String
    /// The operating system (`viewer_os_family`).
    public var osFamily: String
    /// Its version (`viewer_os_version`).
    public var osVersion: String
    /// `viewerApplicationEngine` (`viewer_application_engine`).
    public var applicationEngine: String
    /// `viewerApplicationName` (`viewer_application_name`; the guide sets the bundle id).
    public var applicationName: String
    /// `viewerApplicationVersion` (`viewer_application_version`).
    public var applicationVersion: String
    /// `viewerConnectionType` (`viewer_connection_type`).
    public var connectionType: String
    /// `viewerDeviceManufacturer` (`viewer_device_manufacturer`).
    public var deviceManufacturer: String
    /// `viewerOsArchitecture` (`viewer_os_architecture`).
    public var osArchitecture: String

    /// Global data with the given values (all optional; empty: not sent).
    public init(
        environmentKey: String = "", viewerUserId: String = "", deviceName: String = "", deviceCategory: String = "", osFamily: String = "",
        osVersion: String = "", muxViewerId: String = "", applicationEngine: String = "", applicationName: String = "", applicationVersion: String = "",
        connectionType: String = "", deviceManufacturer: String = "", osArchitecture: String = ""
    ) {
        self.environmentKey = environmentKey
        self.viewerUserId = viewerUserId
        self.deviceName = deviceName
        self.deviceCategory = deviceCategory
        self.osFamily = osFamily
        self.osVersion = osVersion
        self.muxViewerId = muxViewerId
        self.applicationEngine = applicationEngine
        self.applicationName = applicationName
        self.applicationVersion = applicationVersion
        self.connectionType = connectionType
        self.deviceManufacturer = deviceManufacturer
        self.osArchitecture = osArchitecture
    }

    /// The non-empty values by Mux's field names.
    var fields: [TelemetryField] {
        [
            ("env_key", environmentKey), ("viewer_user_id", viewerUserId), ("mux_viewer_id", muxViewerId), ("viewer_device_name", deviceName),
            ("viewer_device_category", deviceCategory), ("viewer_os_family", osFamily), ("viewer_os_version", osVersion),
            ("viewer_application_engine", applicationEngine), ("viewer_application_name", applicationName),
            ("viewer_application_version", applicationVersion), ("viewer_connection_type", connectionType),
            ("viewer_device_manufacturer", deviceManufacturer), ("viewer_os_architecture", osArchitecture),
        ].filter { !$0.1.isEmpty }.map { TelemetryField($0.0, .string($0.1)) }
    }
}

/// `MUXSDKCustomerPlayerData`: the environment key and the player's own description, dispatched in
/// a data event after `viewinit` (the guide's sample sequence, step 3: "customerPlayerData must
/// include your environment key").
public struct MuxCustomerPlayerData: Sendable, Hashable {
    /// `env_key`; nil opts in to Mux inferring the environment from the player's HTTP traffic
    /// (Mux Video assets; core SDK v3.11 and later).
    public var environmentKey: String?
    /// `player_name` (the customer's name of the player; default: the name events are dispatched for).
    public var playerName: String
    /// `player_version`.
    public var playerVersion: String
    /// `experiment_name` (core SDK v3.9 "experiment fields").
    public var experimentName: String
    /// `sub_property_id`.
    public var subPropertyId: String
    /// `viewer_user_id`.
    public var viewerUserId: String
    /// `page_type`.
    public var pageType: String

    /// Customer player data with the given values (empty: not sent).
    public init(
        environmentKey: String?, playerName: String = "", playerVersion: String = "", experimentName: String = "", subPropertyId: String = "",
        viewerUserId: String = "", pageType: String = ""
    ) {
        self.environmentKey = environmentKey
        self.playerName = playerName
        self.playerVersion = playerVersion
        self.experimentName = experimentName
        self.subPropertyId = subPropertyId
        self.viewerUserId = viewerUserId
        self.pageType = pageType
    }

    var fields: [TelemetryField] {
        [
            ("env_key", environmentKey ?? ""), ("player_name", playerName), ("player_version", playerVersion), ("experiment_name", experimentName),
            ("sub_property_id", subPropertyId), ("viewer_user_id", viewerUserId), ("page_type", pageType),
        ].filter { !$0.1.isEmpty }.map { TelemetryField($0.0, .string($0.1)) }
    }
}

/// `MUXSDKCustomerViewData`: the view's own data (core SDK v2.4: `view_session_id`; v4.5: DRM type).
public struct MuxCustomerViewData: Sendable, Hashable {
    /// `view_session_id`.
    public var viewSessionId: String
    /// `view_drm_type`.
    public var viewDrmType: String

    /// Customer view data with the given values (empty: not sent).
    public init(viewSessionId: String = "", viewDrmType: String = "") {
        self.viewSessionId = viewSessionId
        self.viewDrmType = viewDrmType
    }

    var fields: [TelemetryField] {
        [("view_session_id", viewSessionId), ("view_drm_type", viewDrmType)].filter { !$0.1.isEmpty }.map { TelemetryField($0.0, .string($0.1)) }
    }
}

/// `MUXSDKCustomData`: the custom dimensions `custom_1` … `custom_10` (core SDK v3.4, more in v4.2).
public struct MuxCustomData: Sendable, Hashable {
    /// The highest dimension: `custom_10`.
    public static let dimensions = 1...10
    /// The values by dimension number (1 … 10).
    public var values: [Int: String]

    /// Custom dimensions by number: `MuxCustomData([1: "premium", 2: "eu"])`.
    public init(_ values: [Int: String] = [:]) {
        self.values = values
    }

    var fields: [TelemetryField] {
        values.keys.sorted().filter { Self.dimensions.contains($0) }.map { TelemetryField("custom_\($0)", .string(values[$0]!)) }
    }
}

/// The video being played: `MUXSDKCustomerVideoData` (Mux's `video_*` fields).
public struct MuxVideoData: Sendable, Hashable {
    /// `video_id`.
    public var id: String
    /// `video_title`.
    public var title: String
    /// `video_duration`, sent in milliseconds as Mux's metadata has it (nil: live or unknown).
    public var duration: Duration?
    /// `video_stream_type` (`live`, `on-demand`).
    public var streamType: String
    /// `video_series`.
    public var series: String
    /// `video_cdn`.
    public var cdn: String
    /// `video_content_type`.
    public var contentType: String
    /// `video_source_url` (core SDK v2.1.1).
    public var sourceUrl: String
    /// `video_experiments` (core SDK v3.9/v3.10: experiment values).
    public var experiments: String

    /// Video data with the given values.
    public init(
        id: String, title: String = "", duration: Duration? = nil, streamType: String = "live", series: String = "", cdn: String = "",
        contentType: String = "", sourceUrl: String = "", experiments: String = ""
    ) {
        self.id = id
        self.title = title
        self.duration = duration
        self.streamType = streamType
        self.series = series
        self.cdn = cdn
        self.contentType = contentType
        self.sourceUrl = sourceUrl
        self.experiments = experiments
    }

    /// Every `video_*` field name this type can set (a video change clears those the new video lacks).
    static let fieldNames = [
        "video_id", "video_title", "video_stream_type", "video_duration", "video_series", "video_cdn", "video_content_type", "video_source_url",
        "video_experiments",
    ]

    var fields: [TelemetryField] {
        var fields = [TelemetryField("video_id", .string(id)), TelemetryField("video_title", .string(title)),
                      TelemetryField("video_stream_type", .string(streamType))]
        if let duration { fields.append(TelemetryField("video_duration", .int(duration.muxMilliseconds))) }
        for (name, value) in [("video_series", series), ("video_cdn", cdn), ("video_content_type", contentType), ("video_source_url", sourceUrl),
                              ("video_experiments", experiments)] where !value.isEmpty {
            fields.append(TelemetryField(name, .string(value)))
        }
        return fields
    }

}

/// `MUXSDKCustomerVideoData`, by the guide's name.
public typealias MuxCustomerVideoData = MuxVideoData

extension Duration {
    /// Whole milliseconds, the unit of Mux's player and video data (playhead, durations).
    var muxMilliseconds: Int64 { nanoseconds / 1_000_000 }
}

/// A data event (`MUXSDKDataEvent` dispatched for a player): the video (`MUXSDKVideoData`:
/// the source's size, liveness, duration, bitrate, dropped frames), the customer's player, video
/// and view data, custom dimensions, and the guide's `videoChange` flag. Only the values set
/// change.
public struct MuxDataEvent: Sendable, Hashable {
    /// `MUXSDKCustomerVideoData`: a new video (with ``videoChange``, the video-change sequence's
    /// data, after `viewend` and `viewinit`).
    public var video: MuxVideoData?
    /// `videoSourceWidth` (`video_source_width`, pixels).
    public var sourceWidth: Int?
    /// `videoSourceHeight` (`video_source_height`, pixels).
    public var sourceHeight: Int?
    /// `videoSourceAdvertisedBitrate` (`video_source_advertised_bitrate`, bits/s).
    public var sourceBitrate: Double?
    /// `videoSourceFrameDrops` (`view_dropped_frame_count`): frames dropped in the view so far.
    public var droppedFrames: Int?
    /// What the player measured over the last interval, sent as a heartbeat record's fields:
    /// the rendition's bitrate over it (`renditionBitrate`, bits/s: the time-weighted
    /// `weighted_average_bitrate` is computed from these).
    public var measuredBitrate: Double?
    /// The frame rate the viewer saw over the last interval (`framesPerSecond`, frames/s), on the
    /// same heartbeat record.
    public var framesPerSecond: Double?
    /// `videoSourceIsLive` (`video_source_is_live`).
    public var sourceIsLive: Bool?
    /// `videoSourceDuration` (`video_source_duration`, sent in milliseconds).
    public var sourceDuration: Duration?
    /// `MUXSDKCustomerPlayerData`: the environment key (nil inside: inferred) and the player's description.
    public var customerPlayerData: MuxCustomerPlayerData?
    /// `MUXSDKCustomerViewData`: `view_session_id`, DRM type.
    public var customerViewData: MuxCustomerViewData?
    /// `MUXSDKCustomData`: custom dimensions.
    public var customData: MuxCustomData?
    /// The guide's `videoChange = YES`: this data is the new video's, after `viewend` and `viewinit`.
    public var videoChange: Bool

    /// A data event with the given values.
    public init(
        video: MuxVideoData? = nil, sourceWidth: Int? = nil, sourceHeight: Int? = nil, sourceBitrate: Double? = nil, droppedFrames: Int? = nil,
        sourceIsLive: Bool? = nil, sourceDuration: Duration? = nil, customerPlayerData: MuxCustomerPlayerData? = nil,
        customerViewData: MuxCustomerViewData? = nil, customData: MuxCustomData? = nil, videoChange: Bool = false,
        measuredBitrate: Double? = nil, framesPerSecond: Double? = nil
    ) {
        self.measuredBitrate = measuredBitrate
        self.framesPerSecond = framesPerSecond
        self.video = video
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
        self.sourceBitrate = sourceBitrate
        self.droppedFrames = droppedFrames
        self.sourceIsLive = sourceIsLive
        self.sourceDuration = sourceDuration
        self.customerPlayerData = customerPlayerData
        self.customerViewData = customerViewData
        self.customData = customData
        self.videoChange = videoChange
    }

    /// The guide's names: `MUXSDKDataEvent` with `setCustomerPlayerData:` and `setCustomerVideoData:`.
    public init(customerPlayerData: MuxCustomerPlayerData?, customerVideoData: MuxCustomerVideoData?, videoChange: Bool = false) {
        self.init(video: customerVideoData, customerPlayerData: customerPlayerData, videoChange: videoChange)
    }

    /// Whether it carries `MUXSDKVideoData` (the data `renditionchange` follows).
    var hasVideoData: Bool {
        sourceWidth != nil || sourceHeight != nil || sourceBitrate != nil || droppedFrames != nil || sourceIsLive != nil || sourceDuration != nil
    }

    /// Why the data is unusable, or nil.
    var problem: String? {
        if let video {
            if video.id.isEmpty { return "video.id is empty" }
            if let duration = video.duration, duration < .zero { return "video.duration is negative (\(duration))" }
        }
        if let key = customData?.values.keys.sorted().first(where: { !MuxCustomData.dimensions.contains($0) }) {
            return "customData has dimension \(key); Mux has custom_1 to custom_10"
        }
        if let oversized = MuxLimits.oversized(
            (customerPlayerData?.fields ?? []) + (video?.fields ?? []) + (customerViewData?.fields ?? []) + (customData?.fields ?? [])) {
            return oversized
        }
        if let sourceWidth, sourceWidth < 0 { return "sourceWidth is \(sourceWidth)" }
        if let sourceHeight, sourceHeight < 0 { return "sourceHeight is \(sourceHeight)" }
        if let sourceBitrate, !sourceBitrate.isFinite || sourceBitrate < 0 { return "sourceBitrate is \(sourceBitrate); it must be finite and ≥ 0" }
        if let droppedFrames, droppedFrames < 0 { return "droppedFrames is \(droppedFrames)" }
        if let measuredBitrate, !measuredBitrate.isFinite || measuredBitrate < 0 { return "measuredBitrate is \(measuredBitrate); it must be finite and ≥ 0" }
        if let framesPerSecond, !framesPerSecond.isFinite || framesPerSecond < 0 { return "framesPerSecond is \(framesPerSecond); it must be finite and ≥ 0" }
        if let sourceDuration, sourceDuration < .zero { return "sourceDuration is negative (\(sourceDuration))" }
        return nil
    }

    /// The heartbeat its measures make (nil: it has none).
    var measures: TelemetryEvent? {
        var fields: [TelemetryField] = []
        if let measuredBitrate { fields.append(TelemetryField("renditionBitrate", .double(measuredBitrate))) }
        if let framesPerSecond { fields.append(TelemetryField("framesPerSecond", .double(framesPerSecond))) }
        return fields.isEmpty ? nil : .heartbeat(fields)
    }

    /// The attributes it sets.
    var attributes: [TelemetryEvent] {
        var fields = customerPlayerData?.fields ?? []
        fields += video?.fields ?? []
        fields += customerViewData?.fields ?? []
        fields += customData?.fields ?? []
        var events = fields.map { TelemetryEvent.attribute($0.name, $0.value) }
        if let sourceWidth { events.append(.attribute("video_source_width", .int(Int64(sourceWidth)))) }
        if let sourceHeight { events.append(.attribute("video_source_height", .int(Int64(sourceHeight)))) }
        if let sourceBitrate { events.append(.attribute("video_source_advertised_bitrate", .double(sourceBitrate))) }
        if let droppedFrames { events.append(.attribute("view_dropped_frame_count", .int(Int64(droppedFrames)))) }
        if let sourceIsLive { events.append(.attribute("video_source_is_live", .bool(sourceIsLive))) }
        if let sourceDuration { events.append(.attribute("video_source_duration", .int(sourceDuration.muxMilliseconds))) }
        return events
    }
}

/// `MUXSDKPlayerData`: the player's state, attached to every playback event (the guide's
/// "Playback Events"); the values set become the player's latest (`player_*` fields on later
/// records). Its error fields are sent only with an `error` event, on that record alone (core SDK v5).
public struct MuxPlayerData: Sendable, Hashable {
    /// `playerMuxPluginName` (`player_mux_plugin_name`).
    public var pluginName: String?
    /// `playerMuxPluginVersion` (`player_mux_plugin_version`).
    public var pluginVersion: String?
    /// `playerSoftwareName` (`player_software_name`).
    public var softwareName: String?
    /// `playerSoftwareVersion` (`player_software_version`, core SDK v4.6).
    public var softwareVersion: String?
    /// `playerSoftwareLanguageCode` (`player_language_code`).
    public var softwareLanguageCode: String?
    /// `playerWidth` (`player_width`, logical pixels).
    public var width: Int?
    /// `playerHeight` (`player_height`, logical pixels).
    public var height: Int?
    /// `playerIsFullscreen` (`player_is_fullscreen`).
    public var isFullscreen: Bool?
    /// `playerIsPaused` (`player_is_paused`).
    public var isPaused: Bool?
    /// `playerPlayheadTime` (`player_playhead_time`, sent in milliseconds).
    public var playheadTime: Duration?
    /// `playerErrorCode` (`player_error_code`; only with an `error` event).
    public var errorCode: String?
    /// `playerErrorMessage` (`player_error_message`; only with an `error` event).
    public var errorMessage: String?
    /// `playerErrorContext` (`player_error_context`, core SDK v4.3; only with an `error` event).
    public var errorContext: String?

    /// Player data with the given values (nil: unchanged).
    public init(
        pluginName: String? = nil, pluginVersion: String? = nil, softwareName: String? = nil, softwareVersion: String? = nil,
        softwareLanguageCode: String? = nil, width: Int? = nil, height: Int? = nil, isFullscreen: Bool? = nil, isPaused: Bool? = nil,
        playheadTime: Duration? = nil, errorCode: String? = nil, errorMessage: String? = nil, errorContext: String? = nil
    ) {
        self.pluginName = pluginName
        self.pluginVersion = pluginVersion
        self.softwareName = softwareName
        self.softwareVersion = softwareVersion
        self.softwareLanguageCode = softwareLanguageCode
        self.width = width
        self.height = height
        self.isFullscreen = isFullscreen
        self.isPaused = isPaused
        self.playheadTime = playheadTime
        self.errorCode = errorCode
        self.errorMessage = errorMessage
        self.errorContext = errorContext
    }

    /// Why the data is unusable, or nil.
    var problem: String? {
        let errors = [("player_error_code", errorCode), ("player_error_message", errorMessage), ("player_error_context", errorContext)]
            .compactMap { name, value in value.map { TelemetryField(name, .string($0)) } }
        if let oversized = MuxLimits.oversized(errors + attributes.compactMap { event in
            if case .attribute(let name, let value?) = event { TelemetryField(name, value) } else { nil }
        }) {
            return oversized
        }
        if let width, width < 0 { return "playerData.width is \(width)" }
        if let height, height < 0 { return "playerData.height is \(height)" }
        if let playheadTime, playheadTime < .zero { return "playerData.playheadTime is negative (\(playheadTime))" }
        return nil
    }

    /// The player's state as attributes (the error fields are the error record's own).
    var attributes: [TelemetryEvent] {
        var events: [TelemetryEvent] = []
        for (name, value) in [("player_mux_plugin_name", pluginName), ("player_mux_plugin_version", pluginVersion), ("player_software_name", softwareName),
                              ("player_software_version", softwareVersion), ("player_language_code", softwareLanguageCode)] {
            if let value { events.append(.attribute(name, .string(value))) }
        }
        if let width { events.append(.attribute("player_width", .int(Int64(width)))) }
        if let height { events.append(.attribute("player_height", .int(Int64(height)))) }
        if let isFullscreen { events.append(.attribute("player_is_fullscreen", .bool(isFullscreen))) }
        if let isPaused { events.append(.attribute("player_is_paused", .bool(isPaused))) }
        if let playheadTime { events.append(.attribute("player_playhead_time", .int(playheadTime.muxMilliseconds))) }
        return events
    }
}

/// An error as Mux takes it (`MUXSDKErrorEvent`): code, message, context, severity and the
/// business-exception flag. The guide sets code and message on the ``MuxPlayerData`` dispatched
/// with the event; those given there win over these.
public struct MuxError: Sendable, Hashable {
    /// `player_error_code` (the guide's codes are numeric strings, `"100123"`: give them in
    /// ``MuxPlayerData/errorCode``).
    public var code: Int
    /// `player_error_message` (required, here or in the player data).
    public var message: String
    /// `player_error_context`.
    public var context: String
    /// Fatal (the default: a playback failure; tracking goes on, core SDK v5) or warning.
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

    /// The guide's `[[MUXSDKErrorEvent alloc] initWithSeverity:context:]` (and `init`, fatal):
    /// code and message come from the ``MuxPlayerData`` dispatched with it.
    public init(severity: TelemetryError.Severity = .fatal, context: String? = nil, isBusinessException: Bool = false) {
        self.init(code: 0, message: "", context: context ?? "", severity: severity, businessException: isBusinessException)
    }
}

/// A playback event as Mux's core SDK takes it (`MUXSDK<Name>Event`, the "Mux Playback Events").
public enum MuxEvent: Sendable, Hashable {
    /// `viewinit`, `playerready`, `play`, `playing`, `pause`, `seeking`, `seeked`,
    /// `rebufferstart`, `rebufferend`, `renditionchange`, `ended`, `viewend`.
    case viewInit, playerReady, play, playing, pause, seeking, seeked, rebufferStart, rebufferEnd, renditionChange, ended, viewEnd
    /// `orientationchange` (core SDK v2.2): the device's orientation changed.
    case orientationChange
    /// The play head moved (`player_playhead_time` on later records, in milliseconds).
    case timeUpdate(playhead: Duration)
    /// An error (fatal by default; since core SDK v5 tracking goes on after it).
    case error(MuxError)
    /// New data (video, rendition, counters, customer data).
    case data(MuxDataEvent)
    /// `MUXSDKRequestBandwidthEvent` with its `MUXSDKBandwidthMetricData` (a network request's
    /// throughput, and the stream's rendition list when the player has one).
    case requestBandwidth(MuxBandwidthMetricData)

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
        case .orientationChange: "orientationchange"
        case .timeUpdate: "timeupdate"
        case .error: "error"
        case .data: "data"
        case .requestBandwidth(let data): data.outcome.rawValue
        }
    }
}

/// One rendition of a stream's rendition list (`MUXSDKBandwidthMetricData.renditionLists`:
/// resolution, frame rate, bitrate and the RFC 6381 `CODECS` tag; core SDK v4.1 name).
public struct MuxRendition: Sendable, Hashable {
    /// Width, pixels.
    public var width: Int
    /// Height, pixels.
    public var height: Int
    /// Bitrate, bits/s.
    public var bitrate: Int
    /// Frames per second (nil: unknown).
    public var frameRate: Double?
    /// The `CODECS` tag (`avc1.64001f`).
    public var codec: String
    /// The rendition's name.
    public var name: String

    /// A rendition.
    public init(width: Int, height: Int, bitrate: Int, frameRate: Double? = nil, codec: String = "", name: String = "") {
        self.width = width
        self.height = height
        self.bitrate = bitrate
        self.frameRate = frameRate
        self.codec = codec
        self.name = name
    }

    /// `WIDTHxHEIGHT@BITRATE[/FPS][ CODEC][ "NAME"]`.
    var text: String {
        var text = "\(width)x\(height)@\(bitrate)"
        if let frameRate { text += "/\(frameRate)" }
        if !codec.isEmpty { text += " \(codec)" }
        if !name.isEmpty { text += " \"\(name)\"" }
        return text
    }
}

/// `MUXSDKBandwidthMetricData`: one network request (a segment, a manifest) and its outcome.
public struct MuxBandwidthMetricData: Sendable, Hashable {
    /// How the request ended: Mux's `requestcompleted`, `requestfailed`, `requestcanceled`.
    public enum Outcome: String, Sendable, Hashable {
        /// `requestcompleted`.
        case completed = "requestcompleted"
        /// `requestfailed`.
        case failed = "requestfailed"
        /// `requestcanceled`.
        case canceled = "requestcanceled"
    }

    /// How it ended.
    public var outcome: Outcome
    /// `request_type` (`media`, `manifest`, `video_init` …).
    public var requestType: String
    /// `request_bytes_loaded`.
    public var bytesLoaded: Int?
    /// `request_start` (ms, the view's clock).
    public var requestStart: Duration?
    /// `request_response_end` (ms).
    public var responseEnd: Duration?
    /// `request_hostname`.
    public var hostname: String
    /// The stream's renditions, when the player knows them (`request_rendition_lists`).
    public var renditionLists: [MuxRendition]

    /// Bandwidth data with the given values.
    public init(
        outcome: Outcome = .completed, requestType: String, bytesLoaded: Int? = nil, requestStart: Duration? = nil, responseEnd: Duration? = nil,
        hostname: String = "", renditionLists: [MuxRendition] = []
    ) {
        self.outcome = outcome
        self.requestType = requestType
        self.bytesLoaded = bytesLoaded
        self.requestStart = requestStart
        self.responseEnd = responseEnd
        self.hostname = hostname
        self.renditionLists = renditionLists
    }

    /// Why it is unusable, or nil.
    var problem: String? {
        if requestType.isEmpty { return "requestType is empty" }
        if let oversized = MuxLimits.oversized([TelemetryField("request_type", .string(requestType)), TelemetryField("request_hostname", .string(hostname))]) {
            return oversized
        }
        if let bytesLoaded, bytesLoaded < 0 { return "bytesLoaded is \(bytesLoaded)" }
        if let requestStart, let responseEnd, responseEnd < requestStart { return "responseEnd is before requestStart" }
        if renditionLists.count > 64 { return "\(renditionLists.count) renditions; at most 64" }
        if renditionLists.contains(where: { $0.width < 0 || $0.height < 0 || $0.bitrate < 0 || !($0.frameRate ?? 0).isFinite || $0.codec.utf8.count > 256 || $0.name.utf8.count > 256 }) {
            return "a rendition has a negative or non-finite number, or a codec or name over 256 bytes"
        }
        return nil
    }

    /// The fields of its record.
    var fields: [TelemetryField] {
        var fields = [TelemetryField("request_type", .string(requestType))]
        if let bytesLoaded { fields.append(TelemetryField("request_bytes_loaded", .int(Int64(bytesLoaded)))) }
        if let requestStart { fields.append(TelemetryField("request_start", .int(requestStart.muxMilliseconds))) }
        if let responseEnd { fields.append(TelemetryField("request_response_end", .int(responseEnd.muxMilliseconds))) }
        if !hostname.isEmpty { fields.append(TelemetryField("request_hostname", .string(hostname))) }
        if !renditionLists.isEmpty {
            fields.append(TelemetryField("request_rendition_lists", .string(renditionLists.map(\.text).joined(separator: ", "))))
        }
        return fields
    }
}

/// An ad event, dispatched with ``MuxCore/dispatchAdEvent(_:player:adData:)`` (the guide: "Ad
/// events are emitted via a special method, dispatchAdEvent"; the names of Mux's playback events).
public enum MuxAdEvent: String, Sendable, Hashable, CaseIterable {
    /// `adbreakstart`: an ad break begins (content pauses).
    case adBreakStart = "adbreakstart"
    /// `adrequest`.
    case adRequest = "adrequest"
    /// `adresponse`.
    case adResponse = "adresponse"
    /// `adplay`.
    case adPlay = "adplay"
    /// `adplaying`.
    case adPlaying = "adplaying"
    /// `adpause`.
    case adPause = "adpause"
    /// `adfirstquartile`.
    case adFirstQuartile = "adfirstquartile"
    /// `admidpoint`.
    case adMidpoint = "admidpoint"
    /// `adthirdquartile`.
    case adThirdQuartile = "adthirdquartile"
    /// `adended`.
    case adEnded = "adended"
    /// `aderror`.
    case adError = "aderror"
    /// `adbreakend`: the ad break is over (content resumes).
    case adBreakEnd = "adbreakend"
}

/// The ad's own data on an ad event (core SDK v4.4 "per-ad metadata").
public struct MuxAdData: Sendable, Hashable {
    /// `ad_id`.
    public var adId: String
    /// `ad_creative_id`.
    public var creativeId: String
    /// `ad_universal_id`.
    public var universalId: String
    /// `ad_asset_url`.
    public var assetUrl: String
    /// `ad_tag_url`.
    public var tagUrl: String

    /// Ad data with the given values (empty: not sent).
    public init(adId: String = "", creativeId: String = "", universalId: String = "", assetUrl: String = "", tagUrl: String = "") {
        self.adId = adId
        self.creativeId = creativeId
        self.universalId = universalId
        self.assetUrl = assetUrl
        self.tagUrl = tagUrl
    }

    var fields: [TelemetryField] {
        [("ad_id", adId), ("ad_creative_id", creativeId), ("ad_universal_id", universalId), ("ad_asset_url", assetUrl), ("ad_tag_url", tagUrl)]
            .filter { !$0.1.isEmpty }.map { TelemetryField($0.0, .string($0.1)) }
    }
}

/// The rules of Mux Data's custom Objective-C integration guide that ``MuxCore`` checks on every
/// dispatch, each naming the guide's section (``guideSection``). A broken rule is recorded in
/// conformance mode (its detail ends with the section) and the event is not forwarded; the
/// session goes on.
public enum MuxRule: String, Sendable, Hashable, CaseIterable {
    /// "Sample event sequence": customer player data carrying the environment key ("customerPlayerData
    /// must include your environment key"; a nil key opts in to inference) is dispatched after
    /// `viewinit`, before the other playback events. Broken by a playback event after `viewinit`
    /// with neither customer player data for the player nor an environment key in the global data.
    case missingEnvironmentKey
    /// "Sample event sequence": `viewinit` prepares the view "before you emit any other playback
    /// events". Broken by a playback event on a player with no open view (never begun, or ended by `viewend`).
    case viewInitFirst
    /// "Changing the Video": `viewend`, then `viewinit`, then a data event with the new video's
    /// data and `videoChange` set (then `play`, `playing`). Broken by a `viewinit` while a view is
    /// open, or a data event with `videoChange` set while no view is open (before its `viewinit`).
    case videoChangeOrder
    /// "Playback Events": dispatch a data event with the latest `MUXSDKVideoData` immediately
    /// before `renditionchange`. Broken by a `renditionchange` whose previous event for the
    /// player was not a data event carrying video data.
    case renditionChangeWithoutData
    /// "Mux Playback Events": `rebufferend` ends the rebuffering `rebufferstart` began, `seeked`
    /// the seek `seeking` began, `adbreakend` the ad break `adbreakstart` began. Broken by an end
    /// with no start open.
    case unmatchedEnd
    /// "Sending Error events": an error carries its code and message (in the player data, or the
    /// error), with severity fatal or warning and the business-exception flag. Broken by an error
    /// with no message, or an oversized one.
    case invalidError
    /// Metadata is strings and numbers; Playout bounds strings to
    /// ``MuxLimits/maximumMetadataBytes``, players to ``MuxLimits/maximumPlayers``, numbers to
    /// finite, non-negative values, custom dimensions to 1 … 10. Broken by data or a player name
    /// outside those bounds.
    case invalidMetadata

    /// The previous name of ``videoChangeOrder`` (whose order was viewend, data, viewinit).
    @available(*, deprecated, renamed: "videoChangeOrder")
    public static var videoChangeWithoutData: MuxRule { .videoChangeOrder }

    /// The section of the guide (seed 000, Mux Data custom Objective-C integration) that states the rule.
    public var guideSection: String {
        switch self {
        case .missingEnvironmentKey, .viewInitFirst: "Sample event sequence"
        case .videoChangeOrder: "Changing the Video"
        case .renditionChangeWithoutData: "Playback Events"
        case .unmatchedEnd: "Mux Playback Events"
        case .invalidError: "Sending Error events"
        case .invalidMetadata: "Emit events (Data Events)"
        }
    }
}
