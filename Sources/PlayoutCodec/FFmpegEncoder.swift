internal import CFFmpeg
public import PlayoutCore

/// Encodes video (H.264 through libx264 with zero-latency tuning, VP8 through libvpx) and audio
/// (Opus through libopus) for the test publisher.
///
/// Every encoded packet comes out as an ``EncodedFrame`` in the framing the RTP packetizers take
/// (Annex B for H.264, raw frames for VP8 and Opus), timestamped in the codec's RTP clock
/// (90 kHz video, 48 kHz Opus). Owned by one task (not `Sendable`).
public final class FFmpegEncoder {
    /// Video encoder settings.
    public struct VideoSettings: Equatable, Sendable {
        /// The codec to encode with.
        public var codec: Codec
        /// Picture width in pixels.
        public var width: Int
        /// Picture height in pixels.
        public var height: Int
        /// Frames per second.
        public var frameRate: Int
        /// Target bitrate in bits per second.
        public var bitrate: Int
        /// Frames between key frames.
        public var keyframeInterval: Int
        /// Encoder threads (default 2). With more than one, libx264's slices share the VBV's
        /// row-level rate control, so the bytes depend on how the threads were scheduled (seen:
        /// different sizes from the same pictures on a busy machine); 1 gives the same bytes for
        /// the same pictures, as a test fixture needs.
        public var threadCount: Int

        /// Settings with the defaults: 720p30 H.264 at 2.5 Mbit/s, a key frame every 60 frames,
        /// two threads.
        public init(
            codec: Codec = .h264, width: Int = 1280, height: Int = 720, frameRate: Int = 30, bitrate: Int = 2_500_000, keyframeInterval: Int = 60,
            threadCount: Int = 2
        ) {
            self.codec = codec
            self.width = width
            self.height = height
            self.frameRate = frameRate
            self.bitrate = bitrate
            self.keyframeInterval = keyframeInterval
            self.threadCount = max(1, threadCount)
        }
    }

    /// Audio encoder settings.
    public struct AudioSettings: Equatable, Sendable {
        /// The codec to encode with.
        public var codec: Codec
        /// Samples per second.
        public var sampleRate: Int
        /// Channels.
        public var channelCount: Int
        /// Bits per second.
        public var bitrate: Int

        /// Settings with the defaults: 48 kHz stereo Opus at 64 kbit/s.
        public init(codec: Codec = .opus, sampleRate: Int = 48_000, channelCount: Int = 2, bitrate: Int = 64_000) {
            self.codec = codec
            self.sampleRate = sampleRate
            self.channelCount = channelCount
            self.bitrate = bitrate
        }
    }

    /// The codec it encodes.
    public let codec: Codec
    /// The RTP clock rate of the frames produced.
    public let clockRate: Int32
    /// Samples per channel each audio input must have (the codec's frame size), 0 for video.
    public let audioFrameSize: Int

    private var context: UnsafeMutablePointer<AVCodecContext>
    /// A video encoder's settings, kept to reopen it at another bit rate (VP8).
    private var videoSettings: VideoSettings?
    private let frame: UnsafeMutablePointer<AVFrame>
    private let packet: UnsafeMutablePointer<AVPacket>
    private let track: TrackID

    /// Opens a video encoder.
    ///
    /// - Throws: ``CodecError`` when this FFmpeg lacks the encoder (libx264, libvpx) or refuses
    ///   the settings.
    public init(video settings: VideoSettings, track: TrackID = 0) throws(CodecError) {
        FFmpegLibrary.routeLogs()
        codec = settings.codec
        clockRate = 90_000
        audioFrameSize = 0
        self.track = track
        let name = settings.codec == .vp8 ? "libvpx" : settings.codec == .h264 ? "libx264" : ""
        guard let frame = av_frame_alloc(), let packet = av_packet_alloc() else {
            throw CodecError(.openFailed, "out of memory opening \(name)")
        }
        self.frame = frame
        self.packet = packet
        context = try Self.openVideo(settings)
        videoSettings = settings
        frame.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        frame.pointee.width = context.pointee.width
        frame.pointee.height = context.pointee.height
        guard av_frame_get_buffer(frame, 0) >= 0 else { throw CodecError(.openFailed, "out of memory for \(name) frames") }
    }

    /// Opens an audio encoder (Opus).
    public init(audio settings: AudioSettings, track: TrackID = 1) throws(CodecError) {
        FFmpegLibrary.routeLogs()
        codec = settings.codec
        clockRate = Int32(settings.sampleRate)
        self.track = track
        guard let encoder = avcodec_find_encoder_by_name(settings.codec == .opus ? "libopus" : "") else {
            throw CodecError(.decoderNotFound, "this FFmpeg has no libopus encoder: audio test streams are Opus")
        }
        guard let context = avcodec_alloc_context3(encoder), let frame = av_frame_alloc(), let packet = av_packet_alloc() else {
            throw CodecError(.openFailed, "out of memory opening libopus")
        }
        self.context = context
        self.frame = frame
        self.packet = packet
        context.pointee.sample_rate = Int32(settings.sampleRate)
        context.pointee.sample_fmt = AV_SAMPLE_FMT_FLT
        av_channel_layout_default(&context.pointee.ch_layout, Int32(settings.channelCount))
        context.pointee.bit_rate = Int64(settings.bitrate)
        context.pointee.time_base = AVRational(num: 1, den: Int32(settings.sampleRate))
        try Self.open(context, encoder, name: "libopus")
        audioFrameSize = Int(context.pointee.frame_size)
        frame.pointee.format = AV_SAMPLE_FMT_FLT.rawValue
        frame.pointee.nb_samples = context.pointee.frame_size
        av_channel_layout_copy(&frame.pointee.ch_layout, &context.pointee.ch_layout)
        frame.pointee.sample_rate = context.pointee.sample_rate
        guard av_frame_get_buffer(frame, 0) >= 0 else { throw CodecError(.openFailed, "out of memory for libopus frames") }
    }

    /// A video encoder context for `settings`, open.
    private static func openVideo(_ settings: VideoSettings) throws(CodecError) -> UnsafeMutablePointer<AVCodecContext> {
        let name = settings.codec == .vp8 ? "libvpx" : settings.codec == .h264 ? "libx264" : ""
        guard let encoder = avcodec_find_encoder_by_name(name) else {
            throw CodecError(.decoderNotFound, "this FFmpeg has no \(name.isEmpty ? settings.codec.rawValue : name) encoder: video test streams are H.264 or VP8")
        }
        guard let context = avcodec_alloc_context3(encoder) else { throw CodecError(.openFailed, "out of memory opening \(name)") }
        context.pointee.width = Int32(settings.width)
        context.pointee.height = Int32(settings.height)
        context.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        context.pointee.time_base = AVRational(num: 1, den: 90_000)
        context.pointee.framerate = AVRational(num: Int32(settings.frameRate), den: 1)
        context.pointee.bit_rate = Int64(settings.bitrate)
        if settings.codec == .h264 {
            // A half-second VBV at the bit rate: the rate a receiver's limit asks for holds over
            // any second, key frames included (ABR alone averages over the whole stream).
            context.pointee.rc_max_rate = Int64(settings.bitrate)
            context.pointee.rc_buffer_size = Int32(clamping: settings.bitrate / 2)
        }
        context.pointee.gop_size = Int32(settings.keyframeInterval)
        context.pointee.max_b_frames = 0
        context.pointee.thread_count = Int32(clamping: settings.threadCount)
        if settings.codec == .h264 {
            av_opt_set(context.pointee.priv_data, "preset", "veryfast", 0)
            av_opt_set(context.pointee.priv_data, "tune", "zerolatency", 0)
            // Parameter sets with every key frame, so a receiver can join at any key frame.
            av_opt_set(context.pointee.priv_data, "x264-params", "repeat-headers=1:scenecut=0", 0)
        } else {
            av_opt_set(context.pointee.priv_data, "deadline", "realtime", 0)
            av_opt_set(context.pointee.priv_data, "lag-in-frames", "0", 0)
        }
        do {
            try open(context, encoder, name: name)
        } catch {
            var failed: UnsafeMutablePointer<AVCodecContext>? = context
            avcodec_free_context(&failed)
            throw error
        }
        return context
    }

    private static func open(_ context: UnsafeMutablePointer<AVCodecContext>, _ encoder: UnsafePointer<AVCodec>, name: String) throws(CodecError) {
        let opened = avcodec_open2(context, encoder, nil)
        guard opened >= 0 else { throw CodecError(.openFailed, "could not open \(name): \(ffmpegErrorText(opened))") }
    }

    deinit {
        var context: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&context)
        var frame: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&frame)
        var packet: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&packet)
    }

    /// Encodes one packed YUV 4:2:0 picture (e.g. from ``TestPattern``) presented at `timestamp`
    /// (90 kHz ticks); calls `body` with each frame the encoder emits.
    /// With `forceKeyFrame`, the picture is encoded as a key frame (an IDR for H.264) — what a
    /// sender does for a receiver's PLI or FIR.
    public func encode(picture: [UInt8], timestamp: Int64, forceKeyFrame: Bool = false, _ body: (EncodedFrame) -> Void) throws(CodecError) {
        let width = Int(context.pointee.width)
        let height = Int(context.pointee.height)
        guard picture.count == width * height * 3 / 2 else {
            throw CodecError(.invalidData, "a \(width)×\(height) picture has \(width * height * 3 / 2) bytes, not \(picture.count)")
        }
        guard av_frame_make_writable(frame) >= 0 else { throw CodecError(.openFailed, "out of memory for a frame") }
        picture.withUnsafeBufferPointer { source in
            let planes = [(frame.pointee.data.0, frame.pointee.linesize.0, 0, width, height),
                          (frame.pointee.data.1, frame.pointee.linesize.1, width * height, width / 2, height / 2),
                          (frame.pointee.data.2, frame.pointee.linesize.2, width * height * 5 / 4, width / 2, height / 2)]
            for (destination, stride, offset, planeWidth, planeHeight) in planes {
                guard let destination else { continue }
                for row in 0..<planeHeight {
                    (destination + row * Int(stride)).update(from: source.baseAddress! + offset + row * planeWidth, count: planeWidth)
                }
            }
        }
        frame.pointee.pts = timestamp
        frame.pointee.pict_type = forceKeyFrame ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        try send(frame, body)
    }

    /// The video bit rate the encoder aims at, bits per second.
    public var bitrate: Int { Int(context.pointee.bit_rate) }

    /// Aims at `bitsPerSecond` from the next picture on. What a sender does for a receiver's
    /// REMB or TMMBR. H.264: libx264 reconfigures its rate control, VBV included. VP8: this
    /// FFmpeg's libvpx wrapper reads the rate only when it opens, so the encoder is reopened at
    /// the new rate (libvpx starts again with a key frame; with no lag nothing is held); if that
    /// fails it goes on at the old rate.
    public func setBitrate(_ bitsPerSecond: Int) {
        let rate = Int64(max(bitsPerSecond, 10_000))
        guard rate != context.pointee.bit_rate else { return }
        if codec == .vp8, var settings = videoSettings {
            settings.bitrate = Int(rate)
            guard let reopened = try? Self.openVideo(settings) else { return }
            var old: UnsafeMutablePointer<AVCodecContext>? = context
            avcodec_free_context(&old)
            context = reopened
            videoSettings = settings
            return
        }
        context.pointee.bit_rate = rate
        if codec == .h264 {
            context.pointee.rc_max_rate = rate
            context.pointee.rc_buffer_size = Int32(clamping: rate / 2)
        }
    }

    /// Encodes one block of interleaved float samples (``audioFrameSize`` per channel) whose first
    /// sample is at `timestamp` (sample ticks).
    public func encode(samples: [Float], timestamp: Int64, _ body: (EncodedFrame) -> Void) throws(CodecError) {
        let channels = Int(context.pointee.ch_layout.nb_channels)
        guard samples.count == audioFrameSize * channels else {
            throw CodecError(.invalidData, "an audio block has \(audioFrameSize) samples per channel × \(channels), not \(samples.count) samples")
        }
        guard av_frame_make_writable(frame) >= 0, let data = frame.pointee.data.0 else { throw CodecError(.openFailed, "out of memory for a frame") }
        samples.withUnsafeBytes { UnsafeMutableRawPointer(data).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        frame.pointee.pts = timestamp
        try send(frame, body)
    }

    /// Drains the frames the encoder still holds (end of stream).
    public func flush(_ body: (EncodedFrame) -> Void) throws(CodecError) {
        try send(nil, body)
    }

    private func send(_ frame: UnsafeMutablePointer<AVFrame>?, _ body: (EncodedFrame) -> Void) throws(CodecError) {
        let sent = avcodec_send_frame(context, frame)
        guard sent >= 0 || sent == playout_averror_eof() else {
            throw CodecError(.library, "\(codec.rawValue) encoding failed: \(ffmpegErrorText(sent))")
        }
        while true {
            let received = avcodec_receive_packet(context, packet)
            if received == playout_averror_eagain() || received == playout_averror_eof() { return }
            guard received >= 0 else { throw CodecError(.library, "\(codec.rawValue) encoding failed: \(ffmpegErrorText(received))") }
            let bytes = packet.pointee.data.map { Array(UnsafeBufferPointer(start: $0, count: Int(packet.pointee.size))) } ?? []
            let timestamp = packet.pointee.pts == Int64.min ? 0 : packet.pointee.pts
            let isKey = packet.pointee.flags & 1 != 0 || codec.kind == .audio
            av_packet_unref(packet)
            body(EncodedFrame(
                track: track, codec: codec, mediaTime: MediaTime(ticks: timestamp, clockRate: clockRate),
                firstArrival: .zero, lastArrival: .zero, isKeyframe: isKey, bytes: bytes
            ))
        }
    }
}
