internal import CFFmpeg
public import PlayoutCore

/// An FFmpeg error at Playout's boundary: a ``PlayoutError`` with one of the codes below.
public typealias CodecError = PlayoutError

extension PlayoutError.Code {
    /// This FFmpeg build has no decoder (or encoder) for the codec.
    public static let decoderNotFound = Self("decoderNotFound")
    /// libavcodec or libavformat refused to open or configure something.
    public static let openFailed = Self("openFailed")
    /// A frame could not be decoded (corrupt or truncated); decoding goes on with the next.
    public static let invalidData = Self("invalidData")
    /// Any other FFmpeg failure (the message has FFmpeg's text).
    public static let library = Self("library")
}

/// FFmpeg's text for an AVERROR code.
func ffmpegErrorText(_ error: Int32) -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    playout_error_string(error, &buffer, buffer.count)
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// A decoded picture or block of audio samples, lent to the callback that receives it: it cannot
/// be copied out (the decoder reuses its storage after the callback).
public struct DecodedFrame: ~Copyable {
    let frame: UnsafeMutablePointer<AVFrame>
    /// How long `avcodec_send_packet` + `avcodec_receive_frame` took for the packet that produced
    /// this frame.
    public let decodeTime: Duration
    /// Whether the decoder marked it as a key frame.
    public let isKeyframe: Bool

    init(frame: UnsafeMutablePointer<AVFrame>, decodeTime: Duration) {
        self.frame = frame
        self.decodeTime = decodeTime
        isKeyframe = frame.pointee.key_frame != 0
    }

    /// Width and height in pixels (0 for audio).
    public var width: Int { Int(frame.pointee.width) }
    /// The picture height (0 for audio).
    public var height: Int { Int(frame.pointee.height) }
    /// Audio: samples per channel in this frame (0 for video).
    public var sampleCount: Int { Int(frame.pointee.nb_samples) }
    /// Audio: the sample rate.
    public var sampleRate: Int { Int(frame.pointee.sample_rate) }
    /// Audio: the number of channels.
    public var channelCount: Int { Int(frame.pointee.ch_layout.nb_channels) }

    /// The MD5 of the audio samples converted to interleaved 32-bit float (what
    /// `ffmpeg -c:a pcm_f32le -f framemd5` prints for the same decoded audio frame). Nil for video
    /// or a sample format other than float/s16 (planar or packed).
    public var audioMD5: String? {
        interleavedFloatSamples().map { samples in
            samples.withUnsafeBytes { FFmpegDecoder.md5(Array($0)) }
        }
    }

    /// The audio samples as interleaved 32-bit floats (nil for video).
    public func interleavedFloatSamples() -> [Float]? {
        guard frame.pointee.width == 0, frame.pointee.nb_samples > 0 else { return nil }
        let channels = Int(frame.pointee.ch_layout.nb_channels)
        let count = Int(frame.pointee.nb_samples)
        let format = AVSampleFormat(rawValue: frame.pointee.format)
        var output = [Float](repeating: 0, count: channels * count)
        let planes = withUnsafePointer(to: frame.pointee.data) { pointer in
            pointer.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { Array(UnsafeBufferPointer(start: $0, count: 8)) }
        }
        switch format {
        case AV_SAMPLE_FMT_FLTP:
            for channel in 0..<channels {
                guard let plane = planes[channel] else { return nil }
                let samples = UnsafeRawPointer(plane).assumingMemoryBound(to: Float.self)
                for index in 0..<count { output[index * channels + channel] = samples[index] }
            }
        case AV_SAMPLE_FMT_FLT:
            guard let plane = planes[0] else { return nil }
            let samples = UnsafeRawPointer(plane).assumingMemoryBound(to: Float.self)
            for index in 0..<(count * channels) { output[index] = samples[index] }
        case AV_SAMPLE_FMT_S16P:
            for channel in 0..<channels {
                guard let plane = planes[channel] else { return nil }
                let samples = UnsafeRawPointer(plane).assumingMemoryBound(to: Int16.self)
                for index in 0..<count { output[index * channels + channel] = Float(samples[index]) / 32_768 }
            }
        case AV_SAMPLE_FMT_S16:
            guard let plane = planes[0] else { return nil }
            let samples = UnsafeRawPointer(plane).assumingMemoryBound(to: Int16.self)
            for index in 0..<(count * channels) { output[index] = Float(samples[index]) / 32_768 }
        default:
            return nil
        }
        return output
    }

    /// The pixel format of a picture (e.g. `"yuv420p"`) or the sample format of audio
    /// (e.g. `"fltp"`), by FFmpeg's name.
    public var formatName: String {
        if frame.pointee.width > 0 {
            guard let name = av_get_pix_fmt_name(AVPixelFormat(rawValue: frame.pointee.format)) else { return "unknown" }
            return String(cString: name)
        }
        guard let name = av_get_sample_fmt_name(AVSampleFormat(rawValue: frame.pointee.format)) else { return "unknown" }
        return String(cString: name)
    }

    /// The MD5 of a picture's pixels packed without padding (planes in order, rows tight) — what
    /// `ffmpeg -f framemd5` prints for the same decoded video frame. Nil for audio.
    public var pictureMD5: String? {
        packedPicture().map(FFmpegDecoder.md5)
    }
}

extension DecodedFrame {
    /// Keeps this frame beyond the callback that lent it: a new reference to the same buffers
    /// (no pixel copy), for presenting later. Nil when libavutil cannot allocate.
    public func retained() -> RetainedFrame? {
        RetainedFrame(referencing: frame, decodeTime: decodeTime)
    }
}

/// A decoded frame kept for later (see ``DecodedFrame/retained()``): holds a reference to the
/// decoder's buffers until it is released. Owned by one thread at a time.
public final class RetainedFrame: @unchecked Sendable {
    private let frame: UnsafeMutablePointer<AVFrame>
    private let decodeTime: Duration

    init?(referencing source: UnsafeMutablePointer<AVFrame>, decodeTime: Duration) {
        guard let frame = av_frame_alloc() else { return nil }
        guard av_frame_ref(frame, source) >= 0 else {
            var frame: UnsafeMutablePointer<AVFrame>? = frame
            av_frame_free(&frame)
            return nil
        }
        self.frame = frame
        self.decodeTime = decodeTime
    }

    deinit {
        var frame: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&frame)
    }

    /// Lends the frame to `body`, as the decoder's callback does.
    public func withDecodedFrame<Result>(_ body: (borrowing DecodedFrame) throws -> Result) rethrows -> Result {
        try body(DecodedFrame(frame: frame, decodeTime: decodeTime))
    }
}

/// Decodes the encoded frames of one track with libavcodec.
///
/// Configured from the stream description: the codec and, where the codec needs it, extradata
/// (for H.264/H.265 the SDP's parameter sets in Annex B form work, since FFmpeg's parsers accept
/// them). A corrupt or truncated frame is counted and decoding continues with the next;
/// ``decode(_:output:_:)`` with `output: false` decodes without presenting (for frames the
/// scheduler skips but the decoder needs as references).
///
/// Owned by one task (not `Sendable`).
public final class FFmpegDecoder {
    /// Decoder settings.
    public struct Configuration: Equatable, Sendable {
        /// How libavcodec spreads decoding over threads.
        public enum Threading: Equatable, Sendable {
            /// Several frames in flight at once (adds a frame of latency per thread).
            case frame
            /// Slices of one frame in parallel (no added latency; the default for live).
            case slice
        }

        /// Decoding threads (default 2: this machine's cores; 1 disables threading).
        public var threadCount: Int
        /// How the threads split the work.
        public var threading: Threading

        /// A configuration; the default is two slice threads.
        public init(threadCount: Int = 2, threading: Threading = .slice) {
            self.threadCount = max(1, threadCount)
            self.threading = threading
        }

        /// For decoding a file as fast as possible (benchmarks, batch checks): two frames in
        /// flight on this 2-core machine. ≈ 1.7× the frames per second of one thread at the same
        /// CPU per frame; the default (slice threads) adds no latency, which live playback needs.
        public static let batch = Configuration(threadCount: 2, threading: .frame)
    }

    /// Counters since creation (W3C names where they exist).
    public struct Statistics: Equatable, Sendable {
        /// Frames the decoder output.
        public var framesDecoded = 0
        /// Key frames among them.
        public var keyFramesDecoded = 0
        /// Encoded frames libavcodec rejected (corrupt, truncated); decoding went on.
        public var decodeErrors = 0
        /// Time spent in libavcodec for all frames.
        public var totalDecodeTime: Duration = .zero

        public init() {}
    }

    /// The codec it decodes.
    public let codec: Codec
    /// The threading it was opened with.
    public let configuration: Configuration
    /// The counters so far.
    public private(set) var statistics = Statistics()

    private let context: UnsafeMutablePointer<AVCodecContext>
    private let packet: UnsafeMutablePointer<AVPacket>
    private let frame: UnsafeMutablePointer<AVFrame>
    /// The clock decode time is measured on (a manual clock measures none: a simulation's
    /// statistics come out the same on every run).
    private let clock: any PlayoutClock

    /// Opens a decoder for `codec`.
    ///
    /// - Parameters:
    ///   - extradata: codec configuration (H.264/H.265 parameter sets in Annex B form, AAC
    ///     AudioSpecificConfig, …), or empty.
    ///   - sampleRate, channelCount: for audio codecs whose configuration does not carry them.
    ///   - clock: what ``Statistics/totalDecodeTime`` is measured on (default: the real clock).
    /// - Throws: ``CodecError`` when this FFmpeg has no decoder for the codec or cannot open it.
    public init(
        codec: Codec, extradata: [UInt8] = [], sampleRate: Int = 0, channelCount: Int = 0, configuration: Configuration = Configuration(),
        clock: any PlayoutClock = MonotonicClock()
    ) throws(CodecError) {
        FFmpegLibrary.routeLogs()
        self.clock = clock
        self.codec = codec
        self.configuration = configuration
        guard let decoder = avcodec_find_decoder(codec.avCodecID) else {
            throw CodecError(.decoderNotFound, "this FFmpeg has no \(codec.rawValue) decoder: install a fuller libavcodec (make setup)")
        }
        guard let context = avcodec_alloc_context3(decoder) else {
            throw CodecError(.openFailed, "could not allocate a \(codec.rawValue) decoder context")
        }
        if !extradata.isEmpty {
            let padding = Int(playout_input_buffer_padding())
            if let buffer = av_mallocz(extradata.count + padding)?.assumingMemoryBound(to: UInt8.self) {
                extradata.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress!, count: extradata.count) }
                context.pointee.extradata = buffer
                context.pointee.extradata_size = Int32(extradata.count)
            }
        }
        if sampleRate > 0 { context.pointee.sample_rate = Int32(sampleRate) }
        if channelCount > 0 { av_channel_layout_default(&context.pointee.ch_layout, Int32(channelCount)) }
        context.pointee.thread_count = Int32(configuration.threadCount)
        context.pointee.thread_type = configuration.threading == .frame ? playout_thread_frame() : playout_thread_slice()
        let opened = avcodec_open2(context, decoder, nil)
        guard opened >= 0, let packet = av_packet_alloc(), let frame = av_frame_alloc() else {
            var context: UnsafeMutablePointer<AVCodecContext>? = context
            avcodec_free_context(&context)
            throw CodecError(.openFailed, "could not open the \(codec.rawValue) decoder: \(ffmpegErrorText(opened))")
        }
        self.context = context
        self.packet = packet
        self.frame = frame
    }

    deinit {
        var context: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&context)
        var packet: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&packet)
        var frame: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&frame)
    }

    /// Decodes one encoded frame and calls `body` with every frame it yields (none while the
    /// decoder is filling its pipeline, one usually). With `output: false` the frame is decoded
    /// — so later frames that reference it decode correctly — but not handed out.
    ///
    /// - Throws: ``CodecError`` with ``CodecError/Code/invalidData`` for a frame libavcodec
    ///   rejects; the decoder stays usable.
    public func decode(_ bytes: [UInt8], trim: SampleTrim? = nil, output: Bool = true, _ body: (borrowing DecodedFrame) -> Void = { _ in }) throws(CodecError) {
        let start = clock.now
        av_packet_unref(packet)
        guard av_new_packet(packet, Int32(bytes.count)) >= 0 else {
            throw CodecError(.library, "could not allocate a packet of \(bytes.count) bytes")
        }
        bytes.withUnsafeBufferPointer { packet.pointee.data.update(from: $0.baseAddress!, count: bytes.count) }
        if let trim, let data = av_packet_new_side_data(packet, AV_PKT_DATA_SKIP_SAMPLES, 10) {
            let raw = UnsafeMutableRawPointer(data)
            raw.storeBytes(of: UInt32(trim.start).littleEndian, toByteOffset: 0, as: UInt32.self)
            raw.storeBytes(of: UInt32(trim.end).littleEndian, toByteOffset: 4, as: UInt32.self)
            raw.storeBytes(of: UInt16(0), toByteOffset: 8, as: UInt16.self)
        }
        let sent = avcodec_send_packet(context, packet)
        if sent < 0, sent != playout_averror_eagain() {
            statistics.decodeErrors += 1
            throw CodecError(sent == playout_averror_invaliddata() ? .invalidData : .library,
                             "\(codec.rawValue) decoder rejected a frame of \(bytes.count) bytes: \(ffmpegErrorText(sent))")
        }
        try receiveFrames(start: start, output: output, body)
    }

    /// Decodes `frame`: its bytes and, for audio, its sample trim (see the bytes variant).
    public func decode(_ frame: EncodedFrame, output: Bool = true, _ body: (borrowing DecodedFrame) -> Void = { _ in }) throws(CodecError) {
        try decode(frame.bytes, trim: frame.trimmedSamples, output: output, body)
    }

    /// Drains the frames the decoder still holds (end of stream), then resets it so decoding can
    /// start again (e.g. at the next key frame after a jump).
    public func flush(_ body: (borrowing DecodedFrame) -> Void = { _ in }) throws(CodecError) {
        let start = clock.now
        _ = avcodec_send_packet(context, nil)
        try receiveFrames(start: start, output: true, body)
        avcodec_flush_buffers(context)
    }

    private func receiveFrames(start: MonotonicInstant, output: Bool, _ body: (borrowing DecodedFrame) -> Void) throws(CodecError) {
        while true {
            let received = avcodec_receive_frame(context, frame)
            if received == playout_averror_eagain() || received == playout_averror_eof() { break }
            if received < 0 {
                statistics.decodeErrors += 1
                throw CodecError(received == playout_averror_invaliddata() ? .invalidData : .library,
                                 "\(codec.rawValue) decoding failed: \(ffmpegErrorText(received))")
            }
            let elapsed = start.duration(to: clock.now)
            statistics.framesDecoded += 1
            if frame.pointee.key_frame != 0 { statistics.keyFramesDecoded += 1 }
            statistics.totalDecodeTime += elapsed
            if output { body(DecodedFrame(frame: frame, decodeTime: elapsed)) }
            av_frame_unref(frame)
        }
    }

    /// The MD5 of `bytes` as lowercase hex, through libavutil.
    static func md5(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: 16)
        bytes.withUnsafeBufferPointer { av_md5_sum(&digest, $0.baseAddress, $0.count) }
        return digest.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}

extension Codec {
    /// libavcodec's identifier of this codec.
    var avCodecID: AVCodecID {
        switch self {
        case .h264: AV_CODEC_ID_H264
        case .h265: AV_CODEC_ID_HEVC
        case .vp8: AV_CODEC_ID_VP8
        case .vp9: AV_CODEC_ID_VP9
        case .av1: AV_CODEC_ID_AV1
        case .opus: AV_CODEC_ID_OPUS
        case .aac: AV_CODEC_ID_AAC
        case .pcmu: AV_CODEC_ID_PCM_MULAW
        case .pcma: AV_CODEC_ID_PCM_ALAW
        }
    }
}
