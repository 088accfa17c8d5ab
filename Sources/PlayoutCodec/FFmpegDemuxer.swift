internal import CFFmpeg
public import PlayoutCore

/// Reads any input libavformat opens — files (mp4, mkv, webm, ts, …) and URLs (rtsp, srt, udp
/// MPEG-TS, http) — as the same ``EncodedFrame`` values the RTP path produces, so the jitter
/// buffer, scheduler and decoder don't care where frames came from.
///
/// H.264 and H.265 from MP4/MKV (length-prefixed NAL units) are converted to Annex B, as RTP
/// depacketizers deliver them. Frames come in file order; pace them like a live sender with
/// ``RealTimePacer`` or take them as fast as possible (benchmarks).
///
/// Owned by one task (not `Sendable`).
public final class FFmpegDemuxer {
    /// One stream of the input.
    public struct Stream: Equatable, Sendable {
        /// The stream's index in the input; frames of it carry `TrackID(rawValue: index)`.
        public var index: Int
        /// The codec, when Playout supports it.
        public var codec: Codec?
        /// FFmpeg's name of the codec (e.g. `"h264"`, `"mp3"`), also for unsupported ones.
        public var codecName: String
        /// Audio or video (nil for other streams).
        public var kind: MediaKind?
        /// Codec configuration (avcC/hvcC for MP4 video, AudioSpecificConfig for AAC, …).
        public var extradata: [UInt8]
        /// Picture width (video).
        public var width: Int
        /// Picture height (video).
        public var height: Int
        /// Sample rate (audio).
        public var sampleRate: Int
        /// Channels (audio).
        public var channelCount: Int
        /// Ticks per second of the frames' media times.
        public var clockRate: Int32
    }

    /// The streams of the input.
    public let streams: [Stream]
    /// The input's URL or path.
    public let url: String

    private var format: UnsafeMutablePointer<AVFormatContext>?
    private let packet: UnsafeMutablePointer<AVPacket>
    /// Annex B converters for MP4-style H.264/H.265 streams, by stream index.
    private var filters: [Int: UnsafeMutablePointer<AVBSFContext>] = [:]
    private var pending: [EncodedFrame] = []
    /// The clock frames' arrival instants are read from.
    private let clock: any PlayoutClock
    /// Stamp frames with their decoding time instead of their presentation time, strictly
    /// increasing per stream: frames then come in media-time order even with B-frames, which a
    /// live scheduler needs.
    public var usesDecodingTimestamps = false
    private var lastDecodingTimestamp: [Int: Int64] = [:]

    /// Opens `url` and reads its stream information.
    ///
    /// - Parameters:
    ///   - options: libavformat options, e.g. `["rtsp_transport": "tcp"]`.
    ///   - clock: where each frame's arrival instant is read (default: the real clock).
    /// - Throws: ``CodecError`` naming the input when it cannot be opened or understood.
    public init(url: String, options: [String: String] = [:], clock: any PlayoutClock = MonotonicClock()) throws(CodecError) {
        FFmpegLibrary.routeLogs()
        self.clock = clock
        self.url = url
        var dictionary: OpaquePointer?
        for (key, value) in options { av_dict_set(&dictionary, key, value, 0) }
        defer { av_dict_free(&dictionary) }
        var format: UnsafeMutablePointer<AVFormatContext>?
        let opened = avformat_open_input(&format, url, nil, &dictionary)
        guard opened >= 0, let format else {
            throw CodecError(.openFailed, "cannot open \(url): \(ffmpegErrorText(opened))")
        }
        let found = avformat_find_stream_info(format, nil)
        guard found >= 0, let packet = av_packet_alloc() else {
            var closing: UnsafeMutablePointer<AVFormatContext>? = format
            avformat_close_input(&closing)
            throw CodecError(.openFailed, "cannot read the streams of \(url): \(ffmpegErrorText(found))")
        }
        self.format = format
        self.packet = packet
        var streams: [Stream] = []
        for index in 0..<Int(format.pointee.nb_streams) {
            guard let avStream = format.pointee.streams[index], let parameters = avStream.pointee.codecpar else { continue }
            let codec = Codec(avCodecID: parameters.pointee.codec_id)
            let extradata = parameters.pointee.extradata.map { Array(UnsafeBufferPointer(start: $0, count: Int(parameters.pointee.extradata_size))) } ?? []
            let name = avcodec_get_name(parameters.pointee.codec_id).map { String(cString: $0) } ?? "unknown"
            let kind: MediaKind? = parameters.pointee.codec_type == AVMEDIA_TYPE_VIDEO ? .video : parameters.pointee.codec_type == AVMEDIA_TYPE_AUDIO ? .audio : nil
            let timeBase = avStream.pointee.time_base
            streams.append(Stream(
                index: index, codec: codec, codecName: name, kind: kind, extradata: extradata,
                width: Int(parameters.pointee.width), height: Int(parameters.pointee.height),
                sampleRate: Int(parameters.pointee.sample_rate), channelCount: Int(parameters.pointee.ch_layout.nb_channels),
                clockRate: timeBase.num == 1 ? timeBase.den : Int32(clamping: Int64(timeBase.den) / max(1, Int64(timeBase.num)))
            ))
            // Length-prefixed H.264/H.265 (extradata starts with configurationVersion 1): to Annex B.
            if (codec == .h264 || codec == .h265), extradata.first == 1 {
                let filterName = codec == .h264 ? "h264_mp4toannexb" : "hevc_mp4toannexb"
                var filter: UnsafeMutablePointer<AVBSFContext>?
                if let bsf = av_bsf_get_by_name(filterName), av_bsf_alloc(bsf, &filter) >= 0, let filter {
                    avcodec_parameters_copy(filter.pointee.par_in, parameters)
                    filter.pointee.time_base_in = timeBase
                    if av_bsf_init(filter) >= 0 {
                        filters[index] = filter
                    } else {
                        var failed: UnsafeMutablePointer<AVBSFContext>? = filter
                        av_bsf_free(&failed)
                    }
                }
            }
        }
        self.streams = streams
    }

    deinit {
        for filter in filters.values {
            var filter: UnsafeMutablePointer<AVBSFContext>? = filter
            av_bsf_free(&filter)
        }
        var packet: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&packet)
        avformat_close_input(&format)
    }

    /// The next frame of any supported stream, in input order; nil at the end of the input.
    /// Frames of unsupported streams (e.g. subtitles) are skipped. `arrival` is when it was read.
    ///
    /// - Throws: ``CodecError`` when reading fails other than at the end.
    public func read() throws(CodecError) -> EncodedFrame? {
        while true {
            if !pending.isEmpty { return pending.removeFirst() }
            av_packet_unref(packet)
            let result = av_read_frame(format, packet)
            if result == playout_averror_eof() {
                try drainFilters()
                return pending.isEmpty ? nil : pending.removeFirst()
            }
            if result < 0 { throw CodecError(.library, "reading \(url) failed: \(ffmpegErrorText(result))") }
            let index = Int(packet.pointee.stream_index)
            guard index < streams.count, streams[index].codec != nil else { continue }
            if let filter = filters[index] {
                _ = av_bsf_send_packet(filter, packet)
                try receiveFiltered(filter, stream: index)
            } else {
                pending.append(frame(from: packet, stream: index))
            }
        }
    }

    private func receiveFiltered(_ filter: UnsafeMutablePointer<AVBSFContext>, stream index: Int) throws(CodecError) {
        let filtered = av_packet_alloc()
        defer {
            var filtered = filtered
            av_packet_free(&filtered)
        }
        guard let filtered else { return }
        while av_bsf_receive_packet(filter, filtered) >= 0 {
            pending.append(frame(from: filtered, stream: index))
            av_packet_unref(filtered)
        }
    }

    private func drainFilters() throws(CodecError) {
        for (index, filter) in filters.sorted(by: { $0.key < $1.key }) {
            _ = av_bsf_send_packet(filter, nil)
            try receiveFiltered(filter, stream: index)
        }
    }

    private func frame(from packet: UnsafeMutablePointer<AVPacket>, stream index: Int) -> EncodedFrame {
        let stream = streams[index]
        let noTimestamp = Int64.min  // AV_NOPTS_VALUE
        var timestamp = packet.pointee.pts != noTimestamp ? packet.pointee.pts : packet.pointee.dts
        var presentationOffset: Int64 = 0
        if usesDecodingTimestamps {
            if packet.pointee.pts != noTimestamp, packet.pointee.dts != noTimestamp, packet.pointee.pts > packet.pointee.dts {
                presentationOffset = packet.pointee.pts &- packet.pointee.dts
            }
            // Without a decoding time (Matroska's first frames), one tick after the previous
            // frame's: order is what matters, and the presentation time may be far ahead.
            let previous = lastDecodingTimestamp[index]
            timestamp = packet.pointee.dts != noTimestamp ? packet.pointee.dts : previous.map { $0 + 1 } ?? timestamp
            // Small steps back are reordering; a large jump (a restarted source) passes through.
            if let previous, timestamp != noTimestamp, timestamp <= previous, previous - timestamp < Int64(max(1, stream.clockRate)) {
                timestamp = previous + 1
            }
            lastDecodingTimestamp[index] = timestamp
        }
        let bytes = packet.pointee.data.map { Array(UnsafeBufferPointer(start: $0, count: Int(packet.pointee.size))) } ?? []
        let now = clock.now
        var frame = EncodedFrame(
            track: TrackID(rawValue: UInt32(index)), codec: stream.codec ?? .h264,
            mediaTime: MediaTime(ticks: timestamp == noTimestamp ? 0 : timestamp, clockRate: max(1, stream.clockRate)),
            firstArrival: now, lastArrival: now,
            isKeyframe: packet.pointee.flags & 1 != 0 || stream.kind == .audio,  // AV_PKT_FLAG_KEY
            bytes: bytes
        )
        frame.presentationOffset = presentationOffset
        // AV_PKT_DATA_SKIP_SAMPLES: u32le samples to skip at the start, u32le at the end.
        var size = 0
        if let data = av_packet_get_side_data(packet, AV_PKT_DATA_SKIP_SAMPLES, &size), size >= 8 {
            let raw = UnsafeRawPointer(data)
            let start = Int(UInt32(littleEndian: raw.loadUnaligned(as: UInt32.self)))
            let end = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
            if start > 0 || end > 0 { frame.trimmedSamples = SampleTrim(start: start, end: end) }
        }
        return frame
    }
}

extension Codec {
    /// The Playout codec for a libavcodec identifier, if supported.
    init?(avCodecID id: AVCodecID) {
        guard let codec = Codec.allCases.first(where: { $0.avCodecID == id }) else { return nil }
        self = codec
    }
}

/// Paces frames read from a file like a live sender (ffmpeg's `-re`): each frame is released
/// when as much time has passed on `clock` since the first as media time since the first frame.
/// Generic over the clock, so tests drive it with a manual clock.
public struct RealTimePacer<C: PlayoutClock>: Sendable {
    /// The clock it paces on.
    public let clock: C
    private var origin: (local: MonotonicInstant, media: Duration)?

    /// A pacer on `clock`; the first frame sets the origin.
    public init(clock: C) {
        self.clock = clock
    }

    /// The instant at which media time `mediaTime` is due (the first call sets the origin).
    public mutating func dueInstant(for mediaTime: Duration) -> MonotonicInstant {
        guard let origin else {
            let now = clock.now
            origin = (now, mediaTime)
            return now
        }
        return origin.local.advanced(by: mediaTime - origin.media)
    }

    /// Suspends until `mediaTime` is due.
    public mutating func wait(for mediaTime: Duration) async throws {
        let due = dueInstant(for: mediaTime)
        if due > clock.now { try await clock.sleep(until: due, tolerance: nil) }
    }
}
