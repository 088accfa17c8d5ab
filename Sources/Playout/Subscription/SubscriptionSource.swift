#if canImport(Glibc)
import Glibc
#endif
import Logging
import PlayoutCodec
import PlayoutCore
import PlayoutRTP

/// Where a subscription's frames come from: RTP/SRTP on the ports of an SDP's media sections, or
/// a libavformat input. Decides which from the source text, checks it can be received (codec,
/// key), and creates the tracks.
enum SubscriptionSource {
    /// RTP/SRTP on the ports of these SDP media sections.
    case rtp(session: SessionDescription, media: [(kind: MediaKind, description: MediaDescription)])
    /// A libavformat input.
    case demuxer(DemuxedInput)

    /// The largest SDP file read.
    static let maximumSDPSize = 1 << 20

    /// The source `text` names: an SDP file, or any input libavformat opens (a media file or a
    /// URL), opened now so a bad one fails before anything starts.
    init(parsing source: String, options: Subscriber.Options) throws {
        let isURL = source.contains("://") && !source.hasPrefix("file://")
        if !isURL, let text = Self.sdpText(at: source) {
            let description: SessionDescription
            do {
                description = try SessionDescription(parsing: text)
            } catch {
                throw PlayoutError(.invalidSource, "\(source): \(error)")
            }
            try self.init(sessionDescription: description, options: options)
            return
        }
        if !isURL, access(source.hasPrefix("file://") ? String(source.dropFirst(7)) : source, R_OK) != 0 {
            throw PlayoutError(.invalidSource, "cannot read \(source): no such file (give an SDP file, a media file or a URL)")
        }
        self = .demuxer(try DemuxedInput(url: source, isFile: !isURL, options: options))
    }

    /// The media sections of `sessionDescription` Playout receives (the first audio and the first
    /// video), with `options.srtpKey` in place of their `a=crypto` lines when given.
    init(sessionDescription: SessionDescription, options: Subscriber.Options) throws {
        let logger = Logger(label: "playout.subscriber")
        var media: [(MediaKind, MediaDescription)] = []
        for var section in sessionDescription.media {
            guard let kind = section.kind == .video ? MediaKind.video : section.kind == .audio ? MediaKind.audio : nil else { continue }
            guard !media.contains(where: { $0.0 == kind }) else {
                logger.warning("only the first \(kind.rawValue) section is received; ignoring the one on port \(section.port)")
                continue
            }
            if let key = options.srtpKey {
                section.crypto = [CryptoAttribute(suite: SDPCryptoSuite(rawValue: key.suite.name), keys: [.init(keyAndSalt: key.concatenated)])]
            }
            // Fail now, not after start, on a codec or key the pipeline cannot take.
            _ = try TrackPipeline(track: TrackID(rawValue: UInt32(media.count)), media: section, delay: options.playoutDelay.delay)
            media.append((kind, section))
        }
        guard !media.isEmpty else { throw PlayoutError(.unsupportedMedia, "the SDP has no audio or video section to receive") }
        self = .rtp(session: sessionDescription, media: media.map { (kind: $0.0, description: $0.1) })
    }

    /// The text of `path` when it is an SDP file (starts with `v=`).
    private static func sdpText(at path: String) -> String? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        // An SDP is small; a larger file is media (or not an SDP).
        var bytes = [UInt8](repeating: 0, count: maximumSDPSize)
        let count = fread(&bytes, 1, bytes.count, file)
        guard count >= 2, count < bytes.count, bytes[0] == UInt8(ascii: "v"), bytes[1] == UInt8(ascii: "=") else { return nil }
        return String(decoding: bytes[..<count], as: UTF8.self)
    }

    /// The kinds of media received.
    var mediaKinds: Set<MediaKind> {
        switch self {
        case .rtp(_, let media): Set(media.map(\.kind))
        case .demuxer(let input): Set(input.streams.compactMap(\.kind))
        }
    }

    /// The session description (nil for a libavformat input).
    var sessionDescription: SessionDescription? {
        if case .rtp(let session, _) = self { return session }
        return nil
    }

    /// The tracks, in order; `bind` binds their sockets (an RTP source).
    func makeTracks(delay: Duration, bind: Bool = true) throws -> [SubscribedTrack] {
        switch self {
        case .rtp(let session, let media):
            return try media.enumerated().map { index, entry in
                try SubscribedTrack(index: index, kind: entry.kind, media: entry.description, session: session, delay: delay, bind: bind)
            }
        case .demuxer(let input):
            return try input.streams.enumerated().map { index, stream in try SubscribedTrack(index: index, stream: stream, delay: delay) }
        }
    }

    /// The tracks as encoded streams, in track order (for a remux sink): what the SDP or the
    /// container says of each. H.264/H.265 configuration is left to the first key frame's
    /// parameter sets (the frames are Annex B, while an MP4's extradata is avcC). Every entry
    /// has a codec (checked when the source was created), so positions match the tracks'.
    var encodedStreams: [EncodedStreamDescription] {
        switch self {
        case .rtp(_, let media):
            return media.compactMap { _, section in
                guard let payloadType = section.payloadTypes.first, let map = section.rtpMap(for: payloadType),
                      let codec = Codec(encodingName: map.encodingName) else { return nil }
                let isAudio = codec.kind == .audio
                return EncodedStreamDescription(
                    codec: codec, clockRate: Int32(clamping: map.clockRate),
                    extradata: codec == .aac ? section.formatParameters(for: payloadType)?.config ?? [] : [],
                    sampleRate: isAudio ? Int(map.clockRate) : 0, channelCount: isAudio ? Int(map.channels ?? 1) : 0
                )
            }
        case .demuxer(let demuxed):
            return demuxed.streams.compactMap { stream in
                guard let codec = stream.codec else { return nil }
                let isAnnexB = codec == .h264 || codec == .h265
                return EncodedStreamDescription(
                    codec: codec, clockRate: stream.clockRate, extradata: isAnnexB ? [] : stream.extradata,
                    width: stream.width, height: stream.height, sampleRate: stream.sampleRate, channelCount: stream.channelCount
                )
            }
        }
    }
}

/// A libavformat input, opened once up front and handed to the reading thread.
final class DemuxedInput: @unchecked Sendable {
    let url: String
    let options: [String: String]
    let isFile: Bool
    let streams: [FFmpegDemuxer.Stream]
    private let opened: LockedValue<FFmpegDemuxer?>

    /// Opens `url` now (so a bad one fails before anything starts) and picks its first decodable
    /// video and audio streams.
    init(url: String, isFile: Bool, options: Subscriber.Options) throws {
        // A live input that stops sending fails after 2 s instead of blocking; it is reopened.
        var formatOptions: [String: String] = isFile ? [:] : ["rw_timeout": "2000000", "timeout": "2000000"]
        if let key = options.srtpKey {
            formatOptions["srtp_in_suite"] = key.suite.name
            formatOptions["srtp_in_params"] = key.base64
        }
        let demuxer = try FFmpegDemuxer(url: url, options: formatOptions)
        var streams: [FFmpegDemuxer.Stream] = []
        for kind in [MediaKind.video, .audio] {
            guard let stream = demuxer.streams.first(where: { $0.kind == kind && $0.codec != nil && $0.codec != .av1 }) else { continue }
            streams.append(stream)
        }
        guard !streams.isEmpty else {
            let found = demuxer.streams.map(\.codecName).joined(separator: ", ")
            throw PlayoutError(.unsupportedMedia, "\(url) has no stream Playout decodes (found: \(found.isEmpty ? "none" : found))")
        }
        self.url = url
        self.options = formatOptions
        self.isFile = isFile
        self.streams = streams
        opened = LockedValue(demuxer)
    }

    /// The demuxer opened up front, once.
    func takeOpened() -> FFmpegDemuxer? {
        opened.withLock { demuxer in
            defer { demuxer = nil }
            return demuxer
        }
    }

    /// Demuxer stream index → the track of its kind.
    static func trackMapping(_ streams: [FFmpegDemuxer.Stream], tracks: [SubscribedTrack]) -> [Int: SubscribedTrack] {
        var mapping: [Int: SubscribedTrack] = [:]
        for track in tracks {
            if let stream = streams.first(where: { $0.kind == track.kind && $0.codec == track.codec }) { mapping[stream.index] = track }
        }
        return mapping
    }
}

extension PlayoutError.Code {
    /// A source (SDP file, URL) cannot be read or understood.
    public static let invalidSource = Self("invalidSource")
    /// An operation that does not fit the object's state (starting twice).
    public static let invalidState = Self("invalidState")
}
