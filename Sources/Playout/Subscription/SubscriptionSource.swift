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
    /// A WHEP endpoint (WebRTC): connected when the subscription opens.
    case whep(WHEPConnector)

    /// The source `text` names: an SDP file, or any input libavformat opens (a media file or a
    /// URL), opened now so a bad one fails before anything starts. Reading an SDP from a FIFO or a
    /// device waits at most `options.duration` (a writer that never comes does not hang the run).
    init(parsing source: String, options: Subscriber.Options) throws {
        if options.whep.isEndpoint(source) {
            self = .whep(try WHEPConnector(url: source, options: options))
            return
        }
        let isURL = source.contains("://") && !source.hasPrefix("file://")
        let path = source.hasPrefix("file://") ? String(source.dropFirst(7)) : source
        if !isURL, let text = try SDPFile.read(path, timeout: options.duration) {
            let description: SessionDescription
            do {
                description = try SessionDescription(parsing: text)
            } catch {
                throw PlayoutError(.invalidSource, "\(source): \(error)")
            }
            try self.init(sessionDescription: description, options: options)
            return
        }
        if !isURL, access(path, R_OK) != 0 {
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
        try Self.checkPorts(media.map(\.1))
        self = .rtp(session: sessionDescription, media: media.map { (kind: $0.0, description: $0.1) })
    }

    /// Two sections of one SDP cannot share a port: RTP on the same port, or one's RTP on the
    /// other's RTCP port (the port + 1 unless `a=rtcp-mux` or `a=rtcp` says otherwise).
    private static func checkPorts(_ sections: [MediaDescription]) throws {
        func ports(_ section: MediaDescription) -> (rtp: UInt16, rtcp: UInt16?) {
            (section.port, section.rtcpMux ? nil : section.rtcp?.port ?? (section.port < .max ? section.port + 1 : nil))
        }
        for (index, first) in sections.enumerated() {
            for second in sections[(index + 1)...] {
                let (a, b) = (ports(first), ports(second))
                let clash: String?
                if a.rtp == b.rtp {
                    clash = "both on port \(a.rtp)"
                } else if let rtcp = a.rtcp, rtcp == b.rtp || rtcp == b.rtcp {
                    clash = "\(second.kind) on port \(rtcp), which \(first.kind) uses for RTCP"
                } else if let rtcp = b.rtcp, rtcp == a.rtp {
                    clash = "\(first.kind) on port \(rtcp), which \(second.kind) uses for RTCP"
                } else {
                    clash = nil
                }
                if let clash {
                    throw PlayoutError(.invalidSource, "the SDP's \(first.kind) and \(second.kind) sections clash: \(clash); give each stream its own even port with the next one free for RTCP (e.g. video 5004, audio 5006)")
                }
            }
        }
    }

    /// The kinds of media received.
    var mediaKinds: Set<MediaKind> {
        switch self {
        case .rtp(_, let media): Set(media.map(\.kind))
        case .demuxer(let input): Set(input.streams.compactMap(\.kind))
        case .whep(let connector): connector.mediaKinds
        }
    }

    /// How many tracks it makes.
    var trackCount: Int {
        switch self {
        case .rtp(_, let media): media.count
        case .demuxer(let input): input.streams.count
        case .whep(let connector): connector.mediaKinds.count
        }
    }

    /// The session description (nil for a libavformat input).
    var sessionDescription: SessionDescription? {
        if case .rtp(let session, _) = self { return session }
        return nil
    }

    /// The tracks, in order; `bind` binds their sockets (an RTP source). A track plays another
    /// valid RTP source once its own said BYE or was silent for `switchAfterSilence`.
    /// With `feedback`, each track talks back to its sender in the kinds its SDP announces (one
    /// receiver SSRC per track, one CNAME for all).
    func makeTracks(
        delay: Duration, switchAfterSilence: Duration = .seconds(1), bind: Bool = true, feedback: Bool = false,
        feedbackDestinations: [MediaKind: SocketAddress] = [:], seed: UInt64? = nil, multicastInterface: UInt32? = nil
    ) throws -> [SubscribedTrack] {
        switch self {
        case .rtp(let session, let media):
            // The CNAME and the RTCP SSRCs (which seed the report times): drawn afresh, or from `seed`.
            var seeded = seed.map { SeededRandomNumberGenerator(seed: $0) }
            func draw<T: FixedWidthInteger>(_ range: ClosedRange<T>) -> T {
                if seeded != nil { return T.random(in: range, using: &seeded!) }
                return T.random(in: range)
            }
            let cname = "playout-\(String(draw(1...UInt64.max), radix: 16))@\(Self.hostName)"
            return try media.enumerated().map { index, entry in
                try SubscribedTrack(
                    index: index, kind: entry.kind, media: entry.description, session: session, delay: delay, switchAfterSilence: switchAfterSilence,
                    feedback: feedback ? TrackReceiver.FeedbackSettings(ssrc: draw(1...UInt32.max), cname: cname) : nil,
                    feedbackDestination: feedbackDestinations[entry.kind], bind: bind, multicastInterface: multicastInterface
                )
            }
        case .demuxer(let input):
            return try input.streams.enumerated().map { index, stream in try SubscribedTrack(index: index, stream: stream, delay: delay) }
        case .whep:
            return []  // made from the answer when the subscription connects
        }
    }

    /// This host's name, for the SDES CNAME.
    private static var hostName: String {
        var name = [CChar](repeating: 0, count: 256)
        guard gethostname(&name, name.count - 1) == 0 else { return "localhost" }
        return String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The tracks as encoded streams, in track order (for a remux sink): what the SDP or the
    /// container says of each (nothing for a WHEP source, whose codecs the answer names later). H.264/H.265 configuration is left to the first key frame's
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
        case .whep:
            return []
        }
    }
}

/// Reads an SDP file without ever blocking for good or reading more than an SDP may hold.
package enum SDPFile {
    /// The text of `path` when it is an SDP (starts with `v=`); nil when it is something else (a
    /// media file) or cannot be opened. Reads at most ``SessionDescription/maximumSize`` + 1
    /// bytes: a larger file that starts with `v=` is refused with the parser's size message.
    /// A FIFO, socket or device is read without waiting for it longer than `timeout` in all (nil:
    /// until its writer closes), polling every 100 ms; the waits are counted, no clock is read.
    ///
    /// - Throws: ``PlayoutError`` for an SDP over the size limit, a FIFO that is not an SDP, or a
    ///   read that did not finish within `timeout`.
    package static func read(_ path: String, timeout: Duration?, limit: Int = SessionDescription.maximumSize) throws -> String? {
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return nil }
        let isRegular = status.st_mode & S_IFMT == S_IFREG
        guard isRegular || status.st_mode & S_IFMT != S_IFDIR else { return nil }
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        var count = 0
        var remaining = timeout.map { max(0, $0.nanoseconds / 1_000_000) }  // milliseconds
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress! + count, $0.count - count) }
            if got > 0 {
                count += got
                // Not an SDP: stop reading at once (a regular media file goes to libavformat).
                if count >= 2, !(bytes[0] == UInt8(ascii: "v") && bytes[1] == UInt8(ascii: "=")) { break }
                continue
            }
            // A regular file ends here; a FIFO reads 0 also before its first writer came.
            if got == 0, isRegular { break }
            guard got == 0 || errno == EAGAIN || errno == EINTR else {
                throw PlayoutError(.invalidSource, "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if let remaining, remaining <= 0 {
                throw PlayoutError(.invalidSource, "\(path): no complete SDP before the end of the run (\(count) bytes read); a FIFO needs a writer that writes the SDP and closes it")
            }
            var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
            let wait = remaining.map { min(100, max(1, $0)) } ?? 100
            // POLLHUP: a writer came and went (the end); nothing at all: no writer yet, wait on.
            let ready = poll(&descriptors, 1, Int32(wait))
            if ready > 0, descriptors[0].revents & Int16(POLLHUP) != 0, descriptors[0].revents & Int16(POLLIN) == 0 { break }
            if ready == 0 { remaining = remaining.map { $0 - wait } }
        }
        guard count >= 2, bytes[0] == UInt8(ascii: "v"), bytes[1] == UInt8(ascii: "=") else {
            if !isRegular, count > 0 {
                throw PlayoutError(.invalidSource, "\(path) is not a regular file and does not start with v=: only an SDP can be read from a FIFO or a device")
            }
            return nil
        }
        guard count <= limit else {
            throw PlayoutError(.invalidSource, "\(path): \(SDPParseError.tooLarge(bytes: isRegular ? Int(status.st_size) : count, limit: limit))")
        }
        return String(decoding: bytes[..<count], as: UTF8.self)
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
        let demuxer = try FFmpegDemuxer(url: url, options: formatOptions, clock: options.clock)
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
}
